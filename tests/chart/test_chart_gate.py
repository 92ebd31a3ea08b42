"""The chart gate (``deploy/chart-gate/*.patch``) on Cozystack's ``kubernetes-nodes`` chart, main and PR 3315.

Each patch only adds guard lines tagged ``workerclass chart gate`` (checked without the oracle). At
test time it is applied (``patch -p1``, and ``git apply``) to a copy of the upstream chart (the
mirror's or a Cozystack checkout's: ``tests/shared.py``) and the copy is rendered by the oracle
(Helm's engine, ``tests/chart/oracle.py``) beside the untouched chart:

- a classless pool (``workerClassName`` absent, ``""`` or ``null``) renders byte for byte what the
  untouched chart renders, refusals included (same message): the chart's golden pools, the classless
  render goldens and one row per outcome of the chart's check table;
- a classified pool (``talos``, ``kairos``, a custom class) renders no object at all: no
  MachineDeployment, KubevirtMachineTemplate, MachineHealthCheck, WorkloadMonitor, Job (nor the
  TalosConfigTemplate it would apply), RBAC or PR 3315's pre-delete unpin hook; it is refused only
  for a values-schema violation, an empty ``cluster`` or a release name that is not ``<cluster>-<pool>``.

Without the upstream chart these tests skip with the reason; under ``CI=true`` they fail instead.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.shared import unavailable, upstream_chart, upstream_missing

from .oracle import REPO_ROOT, OracleResult, absent_reason, get_oracle
from .test_checks import ROWS

GATE = REPO_ROOT / "deploy" / "chart-gate"
#: the upstream charts the gate is made for, by name (their folders: ``tests.shared.upstream_chart``)
CHARTS = ("main", "pr3315")
PATCHES = {name: GATE / f"kubernetes-nodes-{name}.patch" for name in CHARTS}
#: the templates each patch touches (NOTES.txt and the helpers are left alone: no objects there)
PATCHED = {
    "main": ["dashboard-resourcemap.yaml", "nodegroup.yaml", "talos-reconcile-job.yaml"],
    "pr3315": ["dashboard-resourcemap.yaml", "nodegroup.yaml", "pre-delete-unpin.yaml", "talos-reconcile-job.yaml"],
}
TAG = "workerclass chart gate"
GUARD_LINES = re.compile(
    r"\{\{- if not \.Values\.workerClassName \}\}\{\{- /\* workerclass chart gate \*/\}\}"
    r"|\{\{- end \}\}\{\{- /\* workerclass chart gate \*/\}\}"
    r"|\{\{- /\* workerclass chart gate: [^*]* \*/\}\}"
)
TOOLS = ("patch", "git")

CHART_GOLDEN = sorted((Path(__file__).parent / "golden").glob("*.json"))
RENDER_GOLDEN = sorted((REPO_ROOT / "tests" / "render" / "golden").glob("classless-*.json"))


def _need(*names: str, oracle: bool = False) -> None:
    """Skip (with the reason) without the upstream charts ``names`` (or Helm's engine, when ``oracle``);
    under CI=true that is a failure."""
    reasons = [upstream_missing(name) for name in names] + ([absent_reason()] if oracle else [])
    missing = [reason for reason in reasons if reason is not None]
    if missing:
        unavailable("; ".join(dict.fromkeys(missing)))


def _copy_chart(name: str, into: Path) -> Path:
    """A writable copy of the upstream chart (the shared copies are read-only)."""
    target = into / f"kubernetes-nodes-{name}"
    shutil.copytree(upstream_chart(name), target)
    for path in [target, *target.rglob("*")]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)
    return target


def _apply(tool: str, patch: Path, chart: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    if shutil.which(tool) is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{tool} is not installed", pytrace=False)
        pytest.skip(f"{tool} is not installed")
    command = (
        ["patch", "-p1", "--fuzz=0", "--no-backup-if-mismatch", *extra, "-i", str(patch)]
        if tool == "patch"
        else ["git", "apply", "--verbose", "--unidiff-zero", *extra, str(patch)]
    )
    return subprocess.run(command, cwd=chart, capture_output=True, text=True, check=False)


def _added_lines(patch_text: str) -> dict[str, list[str]]:
    """The patch's added lines by file, after checking it removes nothing."""
    added: dict[str, list[str]] = {}
    current = ""
    in_hunk = False
    for line in patch_text.splitlines():
        if line.startswith("diff --git "):
            in_hunk = False
        elif line.startswith("+++ b/"):
            current = line.removeprefix("+++ b/")
            added[current] = []
        elif line.startswith("@@ "):
            in_hunk = True
        elif in_hunk and line.startswith("-"):
            raise AssertionError(f"{current}: the patch removes a line of the chart: {line!r}")
        elif in_hunk and line.startswith("+"):
            added[current].append(line[1:])
    return added


# --- the patches themselves (no oracle needed) ---------------------------------------------------


@pytest.mark.parametrize("name", CHARTS)
def test_the_patch_only_adds_tagged_guard_lines(name: str) -> None:
    added = _added_lines(PATCHES[name].read_text(encoding="utf-8"))
    assert sorted(added) == [f"templates/{template}" for template in PATCHED[name]]
    for path, lines in added.items():
        strays = [line for line in lines if not GUARD_LINES.fullmatch(line)]
        assert strays == [], f"{path}: lines that are no gate guard: {strays}"
        opened = sum(line.startswith("{{- if not .Values.workerClassName }}") for line in lines)
        closed = sum(line.startswith("{{- end }}") for line in lines)
        assert opened == closed >= 1, f"{path}: {opened} guards opened, {closed} closed"
        assert sum(TAG + ":" in line for line in lines) == 1, f"{path}: one explaining comment per template"


# --- applying them ----------------------------------------------------------------------------------


@pytest.mark.parametrize("tool", TOOLS)
@pytest.mark.parametrize("name", CHARTS)
def test_the_patch_applies_cleanly_and_reverses_to_the_upstream_bytes(name: str, tool: str, tmp_path: Path) -> None:
    _need(name)
    chart = _copy_chart(name, tmp_path)
    before = {path.relative_to(chart): path.read_bytes() for path in chart.rglob("*") if path.is_file()}
    applied = _apply(tool, PATCHES[name], chart)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert not re.search(r"offset|fuzz|fail|reject|warning", applied.stdout + applied.stderr, re.IGNORECASE), (
        applied.stdout + applied.stderr
    )
    after = {path.relative_to(chart): path.read_bytes() for path in chart.rglob("*") if path.is_file()}
    assert sorted(after) == sorted(before), "the patch adds or removes files"
    assert sorted(str(path) for path in after if after[path] != before[path]) == [
        f"templates/{template}" for template in PATCHED[name]
    ]
    reverted = _apply(tool, PATCHES[name], chart, "-R")
    assert reverted.returncode == 0, reverted.stdout + reverted.stderr
    assert {path.relative_to(chart): path.read_bytes() for path in chart.rglob("*") if path.is_file()} == before


# --- rendering the gated charts -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def gated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each upstream chart, copied and patched with its gate."""
    _need(*CHARTS, oracle=True)
    charts = {}
    for name in CHARTS:
        chart = _copy_chart(name, tmp_path_factory.mktemp(f"gate-{name}"))
        applied = _apply("patch" if shutil.which("patch") else "git", PATCHES[name], chart)
        assert applied.returncode == 0, applied.stdout + applied.stderr
        charts[name] = chart
    return charts


@pytest.mark.parametrize("name", CHARTS)
def test_every_guard_line_is_whitespace_neutral(gated: dict[str, Path], name: str) -> None:
    """Text-level proof beside the renders (the oracle trims each document, so it cannot see a stray
    newline between documents): every added line opens with ``{{-``, so it eats the newline before it,
    and its own newline is eaten by a next line opening with ``{{-``; where the next line is text (or
    the end of the file), the line before must end in a plain ``}}`` or in text without trailing blanks,
    whose newline the original kept."""
    for template in PATCHED[name]:
        lines = (gated[name] / "templates" / template).read_text(encoding="utf-8").split("\n")
        assert lines[-1] == "", f"{template} ends without a newline"
        lines = lines[:-1]
        i = 0
        while i < len(lines):
            if TAG not in lines[i]:
                i += 1
                continue
            start = i
            while i < len(lines) and TAG in lines[i]:
                assert lines[i].startswith("{{-") and lines[i].endswith(" */}}"), lines[i]
                i += 1
            before = lines[start - 1] if start else None
            after = lines[i] if i < len(lines) else None
            if after is not None and after.startswith("{{-"):
                continue
            assert before is not None, f"{template}:{start + 1}: a guard at the top needs a trimming line after it"
            assert not before.endswith("-}}") and before == before.rstrip(" \t"), f"{template}:{start}: {before!r}"


def _classless_cases() -> list[tuple[str, dict[str, Any]]]:
    """(id, render request): the chart goldens, the classless render goldens, one check-table row per outcome."""
    cases: list[tuple[str, dict[str, Any]]] = []
    for path in CHART_GOLDEN:
        g = json.loads(path.read_text(encoding="utf-8"))
        cases.append(
            (
                f"chart-golden-{path.stem}",
                {
                    "values": g["values"],
                    "release": g["release"],
                    "namespace": g["namespace"],
                    "cluster_values": g["cluster_values"],
                    "talos_config_template": g["talos_config_template"],
                },
            )
        )
    for path in RENDER_GOLDEN:
        g = json.loads(path.read_text(encoding="utf-8"))
        pool = g["pool"]
        meta = pool["metadata"]
        if pool["kind"] == "HelmRelease":
            values, release = pool["spec"].get("values", {}), pool["spec"].get("releaseName", meta["name"])
        else:
            values, release = pool.get("spec", {}), f"kubernetes-nodes-{meta['name']}"
        cluster_values = {"_cluster": g["clusterValues"]} if "clusterValues" in g else None
        request = {"values": values, "release": release, "namespace": meta["namespace"]}
        cases.append(
            (f"render-golden-{path.stem}", {**request, "cluster_values": cluster_values, "talos_config_template": True})
        )
    outcomes: set[tuple[Any, bool]] = set()
    for row_id, values, release, namespace, expected, schema in ROWS:
        outcome = (expected[0] if expected else None, schema)
        if outcome not in outcomes:
            outcomes.add(outcome)
            cases.append((f"check-row-{row_id}", {"values": values, "release": release, "namespace": namespace}))
    return cases


CLASSLESS = _classless_cases()
#: how a classless pool can carry the key: absent, empty, null (Helm keeps a null the defaults lack)
SPELLINGS: tuple[tuple[str, Any], ...] = (("absent", None), ("empty", ""), ("null", None))


def _render(chart: str | Path, request: dict[str, Any]) -> OracleResult:
    request = dict(request)
    return get_oracle().render(request.pop("values"), chart=str(chart), **request)


@pytest.mark.parametrize("name", CHARTS)
@pytest.mark.parametrize(("index", "case"), list(enumerate(CLASSLESS)), ids=[case_id for case_id, _ in CLASSLESS])
def test_a_classless_pool_renders_byte_identical_through_the_gate(
    gated: dict[str, Path], name: str, index: int, case: tuple[str, dict[str, Any]]
) -> None:
    _, request = case
    spelling, value = SPELLINGS[index % len(SPELLINGS)]
    through_gate = dict(request, values=dict(request["values"]))
    if spelling != "absent":
        through_gate["values"]["workerClassName"] = value
    upstream = _render(name, request)
    ours = _render(gated[name], through_gate)
    assert (ours.ok, ours.error) == (upstream.ok, upstream.error), f"workerClassName {spelling}"
    assert ours.texts == upstream.texts, f"workerClassName {spelling}: the rendered text differs"
    assert ours.objects == upstream.objects


def test_the_classless_sample_renders_and_refuses() -> None:
    """The sample holds rendering and refused pools: every golden, a HelmRelease, each check-table outcome."""
    ids = [case_id for case_id, _ in CLASSLESS]
    assert len(ids) >= 25
    assert "render-golden-classless-helmrelease" in ids and "check-row-renders-defaults" in ids
    assert sum(case_id.startswith("check-row-") for case_id in ids) >= 10  # one per outcome of the table


POOLS: dict[str, dict[str, Any]] = {
    # the design page's examples
    "kairos": {"cluster": "example", "workerClassName": "kairos", "version": "v1.35", "minReplicas": 2,
               "maxReplicas": 3, "sshKeys": []},
    "custom-talos": {"cluster": "example", "workerClassName": "talos-example-r1", "version": "v1.35",
                     "talos": {"version": "v1.13.6"}, "kernelModules": [{"name": "nvme_tcp"}]},
    "custom-kairos": {"cluster": "example", "workerClassName": "kairos-example-v1-35-6-r1", "version": "v1.35"},
    "talos": {"cluster": "example", "workerClassName": "talos"},
    "talos-resources-gpu": {"cluster": "example", "workerClassName": "talos", "instanceType": "",
                            "resources": {"cpu": "4", "memory": "8Gi"}, "gpus": [{"name": "nvidia.com/AD102GL_L40S"}],
                            "roles": ["ingress-nginx"], "labels": {"a": "b"}, "taints": []},
    # values the classless chart refuses: the gate does not hold a classified pool to the Talos chart's rules
    "kairos-chart-refusals": {"cluster": "example", "workerClassName": "kairos", "maxUnhealthy": "12.5%",
                              "readyFalseTimeout": "0s", "instanceType": "zz.huge", "podCpuLimit": -1},
}  # fmt: skip


@pytest.mark.parametrize("name", CHARTS)
@pytest.mark.parametrize("pool", POOLS)
def test_a_classified_pool_renders_no_object(gated: dict[str, Path], name: str, pool: str) -> None:
    request = {"values": POOLS[pool], "release": f"kubernetes-nodes-example-{pool}", "namespace": "tenant-x"}
    ours = _render(gated[name], {**request, "talos_config_template": True})
    assert ours.ok, ours.error
    assert [(o["kind"], o["metadata"]["name"]) for o in ours.objects] == []
    assert ours.texts == []


@pytest.mark.parametrize("name", CHARTS)
def test_without_the_gate_a_kairos_pool_renders_as_talos_machines(name: str) -> None:
    """What the gate is for: the chart alone ignores ``workerClassName``."""
    _need(name, oracle=True)
    request = {"values": POOLS["kairos"], "release": "kubernetes-nodes-example-kairos", "namespace": "tenant-x"}
    kinds = {o["kind"] for o in _render(name, {**request, "talos_config_template": True}).objects}
    assert {"MachineDeployment", "KubevirtMachineTemplate", "MachineHealthCheck", "Job", "TalosConfigTemplate"} <= kinds


@pytest.mark.parametrize("name", CHARTS)
def test_a_classified_pool_renders_nothing_in_any_namespace(gated: dict[str, Path], name: str) -> None:
    """The dashboard RBAC (cozy-lib's tenant check) is gated too: the controller renders it for the pool."""
    values = POOLS["kairos"]
    ours = _render(
        gated[name], {"values": values, "release": "kubernetes-nodes-example-kairos", "namespace": "default"}
    )
    assert ours.ok and ours.objects == [], ours.error


KAIROS = {"cluster": "example", "workerClassName": "kairos"}
REFUSED = [
    ("cluster-missing", {"workerClassName": "kairos"}, "md1", "kubernetes-nodes: .Values.cluster is required"),
    ("release-name", KAIROS, "other-md1", "kubernetes-nodes: release name "),
    ("schema", {**KAIROS, "version": "v1.30"}, "example-md1", "values schema:"),
]


@pytest.mark.parametrize("name", CHARTS)
@pytest.mark.parametrize(("values", "release", "message"), [r[1:] for r in REFUSED], ids=[r[0] for r in REFUSED])
def test_a_classified_pool_is_refused_only_for_what_every_pool_needs(
    gated: dict[str, Path], name: str, values: dict[str, Any], release: str, message: str
) -> None:
    ours = _render(gated[name], {"values": values, "release": f"kubernetes-nodes-{release}", "namespace": "tenant-x"})
    assert not ours.ok and ours.error.startswith(message), ours.error


@pytest.mark.parametrize("name", CHARTS)
def test_helm_template_renders_nothing_for_a_kairos_pool(gated: dict[str, Path], name: str, tmp_path: Path) -> None:
    """The hoster's check in the README: ``helm template kubernetes-nodes-<cluster>-<pool> PATCHED_DIR
    -n tenant-... -f values.yaml`` for a Kairos pool prints nothing (values as the file gives them:
    no platform values)."""
    path = tmp_path / "values.yaml"
    path.write_text(yaml.safe_dump(POOLS["kairos"]), encoding="utf-8")
    values = yaml.safe_load(path.read_text(encoding="utf-8"))
    release, namespace = "kubernetes-nodes-example-kairos", "tenant-x"
    done = get_oracle().render(values, release=release, namespace=namespace, cluster_values={}, chart=str(gated[name]))
    assert done.ok, done.error
    assert done.objects == []
