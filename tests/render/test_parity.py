"""Parity with Cozystack's chart: classless pools render exactly what the chart renders.

Three layers, every object compared field by field (the differing paths are printed):

- the golden files (``golden/*.json``, facts written by the oracle through
  ``scripts/regen-render-golden.py``: a pool in, the chart's objects out) through the public path
  (a State with the parent Kubernetes, the pool object, ``resolve``, ``render``); they need no
  oracle, so they run in every clone;
- hypothesis-generated classless pools over the chart's value space (both sizing modes, GPUs,
  kubelet reservations, serial console, podCpu pairs, timeouts, mirrors, Talos settings,
  versions, names, KubernetesNodes and HelmRelease) against the live oracle, one oracle process
  for all of them (``tests/chart/oracle.py``);
- the classified-pool equivalence: a pool selecting a Talos class that resolves to the classless
  pool's settings renders the same objects.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from tests.chart.cases import chart_text_free
from workerclass import render, resolve
from workerclass.state import State, pool_from_object

#: these tests render the talos-reconcile Job, the chart's own text: the mirror's chart is given
pytestmark = pytest.mark.usefixtures("chart_text")

GOLDEN = Path(__file__).parent / "golden"
NAMESPACE = "tenant-example"
CLUSTER = "example"
PARENT = {
    "apiVersion": "apps.cozystack.io/v1alpha1",
    "kind": "Kubernetes",
    "metadata": {"name": CLUSTER, "namespace": NAMESPACE},
    "spec": {"version": "v1.35"},
}


def diff_paths(ours: Any, theirs: Any, path: str = "") -> list[str]:
    """Field paths where two parsed objects differ (type-strict: 1 and "1" differ)."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        out: list[str] = []
        for key in sorted(set(ours) | set(theirs)):
            where = f"{path}.{key}" if path else str(key)
            if key not in ours:
                out.append(f"{where}: missing in ours (chart: {theirs[key]!r:.100})")
            elif key not in theirs:
                out.append(f"{where}: extra in ours ({ours[key]!r:.100})")
            else:
                out += diff_paths(ours[key], theirs[key], where)
        return out
    if isinstance(ours, list) and isinstance(theirs, list):
        if len(ours) != len(theirs):
            return [f"{path}: {len(ours)} items in ours, {len(theirs)} in the chart's"]
        return [
            line for i, (a, b) in enumerate(zip(ours, theirs, strict=True)) for line in diff_paths(a, b, f"{path}[{i}]")
        ]
    if type(ours) is not type(theirs) or ours != theirs:
        return [f"{path}: ours {ours!r:.100} != chart {theirs!r:.100}"]
    return []


def _key(obj: dict[str, Any]) -> str:
    return f"{obj['kind']}/{obj['metadata']['name']}"


def object_differences(ours: list[dict[str, Any]], theirs: list[dict[str, Any]]) -> list[str]:
    """Every difference between two renders: objects missing or extra by kind/name, then fields."""
    mine = {_key(obj): obj for obj in ours}
    chart = {_key(obj): obj for obj in theirs}
    out = [f"{key}: not rendered by us" for key in sorted(chart.keys() - mine.keys())]
    out += [f"{key}: rendered by us only" for key in sorted(mine.keys() - chart.keys())]
    for key in sorted(mine.keys() & chart.keys()):
        out += [f"{key} {line}" for line in diff_paths(mine[key], chart[key])]
    return out


def assert_same(ours: list[dict[str, Any]], theirs: list[dict[str, Any]], what: str) -> None:
    """``ours`` (a render) against ``theirs`` (a golden file's objects, without the chart's text)."""
    differences = object_differences(chart_text_free(ours), theirs)
    if differences:
        pytest.fail(f"{what}: {len(differences)} differences:\n  " + "\n  ".join(differences[:60]), pytrace=False)


def render_pool(objects: list[dict[str, Any]], pool: dict[str, Any], *, tct: bool = True) -> list[dict[str, Any]]:
    """The public path: a State with the parent and the pool, ``resolve``, ``render``."""
    state = State.from_objects([*objects, pool])
    record = pool_from_object(pool)
    assert record is not None
    stored = state.pool(record.identity)
    assert stored is not None
    return render(resolve(state, stored), talos_config_template=tct)


# --------------------------------------------------------------------------- golden files

GOLDENS = sorted(path.stem for path in GOLDEN.glob("*.json"))
MAIN_GOLDENS = [name for name in GOLDENS if json.loads((GOLDEN / f"{name}.json").read_text())["chart"] == "main"]


def golden(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((GOLDEN / f"{name}.json").read_text(encoding="utf-8"))
    return loaded


def test_golden_files_cover_the_value_space() -> None:
    assert len(MAIN_GOLDENS) >= 10
    kinds = {golden(name)["pool"]["kind"] for name in MAIN_GOLDENS}
    assert kinds == {"KubernetesNodes", "HelmRelease"}


def _context(fact: dict[str, Any]) -> list[dict[str, Any]]:
    """The parent cluster and, for a case with ``_cluster`` values, a WorkerPlatform carrying them."""
    objects = [fact["cluster"]]
    if "clusterValues" in fact:
        platform = copy.deepcopy(dict(State.from_objects([]).platform_object))
        platform["spec"]["clusterValues"] = fact["clusterValues"]
        objects.append(platform)
    return objects


@pytest.mark.parametrize("name", MAIN_GOLDENS, ids=MAIN_GOLDENS)
def test_classless_pool_renders_the_charts_objects(name: str) -> None:
    fact = golden(name)
    ours = render_pool(_context(fact), fact["pool"])
    assert_same(ours, fact["objects"], f"golden/{name}.json")
    # the chart's order (template files in path order), which the oracle keeps
    assert [_key(obj) for obj in ours] == [_key(obj) for obj in fact["objects"]]


@pytest.mark.parametrize("name", MAIN_GOLDENS, ids=MAIN_GOLDENS)
def test_nothing_of_ours_is_added(name: str) -> None:
    fact = golden(name)
    for obj in render_pool(_context(fact), fact["pool"]):
        text = json.dumps(obj)
        assert "workerclass" not in text, _key(obj)


def test_default_render_leaves_the_talos_config_template_to_the_job() -> None:
    fact = golden("classless-minimal")
    kinds = [obj["kind"] for obj in render_pool([fact["cluster"]], fact["pool"], tct=False)]
    assert "TalosConfigTemplate" not in kinds
    assert "Job" in kinds and "KubevirtMachineTemplate" in kinds


# --------------------------------------------------------------------------- classified equivalence


def _classified(pool: dict[str, Any], class_name: str) -> dict[str, Any]:
    pool = copy.deepcopy(pool)
    values = pool["spec"] if pool["kind"] == "KubernetesNodes" else pool["spec"]["values"]
    values["workerClassName"] = class_name
    if values.get("gpus"):
        values["kernelModules"] = []  # the NVIDIA rule: classified pools only; [] keeps the legacy render
    return pool


TALOS_CLASS = {
    "apiVersion": "cozystack.io/v1alpha1",
    "kind": "WorkerClass",
    "metadata": {"name": "talos-chart-defaults-r1"},
    "spec": {
        "bootstrap": "talos",
        "talos": {
            "version": "v1.13.6",
            "schematicID": "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515",
            "imageFactoryURL": "https://factory.talos.dev",
            "installerRepository": "factory.talos.dev/installer",
        },
    },
}


@pytest.mark.parametrize("name", MAIN_GOLDENS, ids=MAIN_GOLDENS)
@pytest.mark.parametrize("class_name", ["talos", "talos-chart-defaults-r1"])
def test_a_class_resolving_to_the_classless_settings_renders_the_same_objects(name: str, class_name: str) -> None:
    fact = golden(name)
    ours = render_pool([*_context(fact), TALOS_CLASS], _classified(fact["pool"], class_name))
    assert_same(ours, fact["objects"], f"{class_name} class over golden/{name}.json")


# --------------------------------------------------------------------------- PR 3571 kernel modules


def _machine_config(objects: list[dict[str, Any]]) -> dict[str, Any]:
    (tct,) = [obj for obj in chart_text_free(objects) if obj["kind"] == "TalosConfigTemplate"]
    config: dict[str, Any] = tct["spec"]["template"]["spec"]["data"]
    return config


def test_kernel_modules_take_the_pr3571_shape() -> None:
    fact = golden("pr3571-kernel-modules")
    ours = render_pool([fact["cluster"]], _classified(fact["pool"], "talos"))
    assert _machine_config(ours)["machine"]["kernel"] == _machine_config(fact["objects"])["machine"]["kernel"]


def test_a_classless_pool_loads_no_kernel_modules() -> None:
    # The legacy render (main) has no kernelModules: a classless pool keeps it, whatever it stores.
    fact = golden("pr3571-kernel-modules")
    assert "kernel" not in _machine_config(render_pool([fact["cluster"]], fact["pool"]))["machine"]
