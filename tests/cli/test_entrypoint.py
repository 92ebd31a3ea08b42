"""The command line through its real entry point (a subprocess), as a CI job runs it.

STATE folders are written here with pools named by Cozystack's rule (namespace ``tenant-x``,
KubernetesNodes ``<cluster>-<pool>`` with ``spec.cluster``, a parent ``Kubernetes`` ``example``):
the assertions are on behaviour (actions, exit codes, rows), not on the renderer's hash strings.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest
import yaml

from tests.shared import chart_path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
TIMEOUT = 180


def cli(*args: str, input: str | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, "-m", "workerclass", *args],
        input=input,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
        env=env,
    )
    assert "Traceback" not in result.stderr, result.stderr
    return result


def chart() -> list[str]:
    """``--chart`` with the mirror's main chart, gated: render and plan of Talos pools need its text."""
    return ["--chart", str(chart_path("main+gate"))]


def cluster(name: str = "example", version: str = "v1.35") -> dict[str, Any]:
    return {
        "apiVersion": "apps.cozystack.io/v1alpha1",
        "kind": "Kubernetes",
        "metadata": {"name": name, "namespace": "tenant-x"},
        "spec": {"version": version},
    }


def nodes(pool: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps.cozystack.io/v1alpha1",
        "kind": "KubernetesNodes",
        "metadata": {"name": f"example-{pool}", "namespace": "tenant-x"},
        "spec": {"cluster": "example", **spec},
    }


def write_state(folder: Path, *objects: dict[str, Any]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "state.yaml").write_text(yaml.safe_dump_all([cluster(), *objects], sort_keys=False))
    return folder


BASE: dict[str, dict[str, Any]] = {
    "md1": {"workerClassName": "talos", "minReplicas": 1, "maxReplicas": 3},
    "md2": {"workerClassName": "talos"},
    "md3": {"workerClassName": "talos"},
    "md5": {},
}


def base_pools(**changes: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The base pools with ``changes[pool]`` merged (``None`` removes the pool; a new name adds one)."""
    out = []
    merged: dict[str, dict[str, Any] | None] = {**BASE, **changes}
    for pool, spec in merged.items():
        if spec is None:
            continue
        out.append(nodes(pool, **{**BASE.get(pool, {}), **spec}))
    return out


def plan_json(before: Path, after: Path, *extra: str) -> tuple[int, dict[str, dict[str, Any]]]:
    result = cli("plan", str(before), "--to", str(after), "-o", "json", *chart(), *extra)
    assert result.returncode in (0, 1, 2), result.stderr
    document = json.loads(result.stdout)
    assert list(document) == ["chart", "pools", "refusals"]
    return result.returncode, {row["pool"]: row for row in document["pools"]}


PLAN_KEYS = ["pool", "action", "replace", "refused", "rebuildOnly", "newMachinesOnly", "reasons"]


# ------------------------------------------------------------------ plan


def test_plan_rows_for_every_pool_with_actions_and_detailed_exit_code(tmp_path: Path) -> None:
    before = write_state(tmp_path / "before", *base_pools())
    after = write_state(
        tmp_path / "after",
        *base_pools(
            md1={"maxReplicas": 6},  # in place
            md2={"instanceType": "u1.large"},  # the machine template rolls
            md3=None,  # deleted
            md4={"workerClassName": "talos"},  # created
        ),
    )
    code, rows = plan_json(before, after)
    assert code == 0  # without --detailed-exitcode a plan always exits 0
    assert set(rows) == {f"tenant-x/example-md{n}" for n in (1, 2, 3, 4, 5)}
    assert all(list(row) == PLAN_KEYS for row in rows.values())
    md1, md2, md3, md4, md5 = (rows[f"tenant-x/example-md{n}"] for n in (1, 2, 3, 4, 5))
    assert (md1["action"], md1["replace"], md1["refused"]) == ("update", False, [])
    assert "in place: maxReplicas: 3 -> 6" in md1["reasons"]
    # the instance type sizes the kubelet reservations in the machine config: a classified pool's
    # TalosConfigTemplate is then named by its content (the Talos provider would refuse the change
    # under the stable name), so the rollout's new machines boot the new config
    assert (md2["action"], md2["replace"], md2["refused"], md2["rebuildOnly"]) == ("replace", True, [], False)
    assert "instance type: u1.medium -> u1.large" in md2["reasons"]
    assert any(reason.startswith("machines replaced: MachineDeployment ") for reason in md2["reasons"])
    assert (md3["action"], md3["replace"], md3["refused"]) == ("delete", False, [])
    assert (md4["action"], md4["replace"], md4["refused"]) == ("create", False, [])
    assert (md5["action"], md5["replace"], md5["reasons"], md5["newMachinesOnly"]) == ("unchanged", False, [], [])
    code, _ = plan_json(before, after, "--detailed-exitcode")
    assert code == 2  # machines replaced and deleted, nothing refused


def test_plan_a_classless_pools_machine_config_change_is_refused_and_gates_ci(tmp_path: Path) -> None:
    """The chart's Job applies a classless pool's template under its stable name: the Talos
    provider refuses the change, and ``--detailed-exitcode`` says 1."""
    before = write_state(tmp_path / "before", *base_pools())
    after = write_state(tmp_path / "after", *base_pools(md5={"instanceType": "u1.large"}))
    code, rows = plan_json(before, after, "--detailed-exitcode")
    assert rows["tenant-x/example-md5"]["refused"] == ["TalosConfigImmutable"]
    assert code == 1


def test_plan_detailed_exit_code_zero_for_creates_and_in_place_updates(tmp_path: Path) -> None:
    before = write_state(tmp_path / "before", *base_pools())
    after = write_state(tmp_path / "after", *base_pools(md1={"minReplicas": 2}, md9={"workerClassName": "talos"}))
    code, rows = plan_json(before, after, "--detailed-exitcode")
    assert code == 0
    assert rows["tenant-x/example-md9"]["action"] == "create"
    assert rows["tenant-x/example-md1"]["action"] == "update"
    same = cli("plan", str(before), "--to", str(before), "--detailed-exitcode", *chart())
    assert same.returncode == 0, same.stderr
    assert "4 pools, 0 would replace machines" in same.stdout


def test_plan_a_deleted_pool_is_a_change_for_the_exit_code(tmp_path: Path) -> None:
    before = write_state(tmp_path / "before", *base_pools())
    after = write_state(tmp_path / "after", *base_pools(md3=None))
    code, rows = plan_json(before, after, "--detailed-exitcode")
    assert code == 2
    assert rows["tenant-x/example-md3"]["action"] == "delete"
    assert rows["tenant-x/example-md3"]["replace"] is False


def test_plan_a_class_typo_is_refused_and_exits_one(tmp_path: Path) -> None:
    before = write_state(tmp_path / "before", *base_pools())
    after = write_state(tmp_path / "after", *base_pools(md2={"workerClassName": "tlaos"}))
    code, rows = plan_json(before, after, "--detailed-exitcode")
    assert code == 1
    md2 = rows["tenant-x/example-md2"]
    assert md2["refused"] == ["ClassNotFound"] and md2["replace"] is False
    assert any(reason.startswith("refused by admission (ClassNotFound)") for reason in md2["reasons"])
    table = cli("plan", str(before), "--to", str(after), "--detailed-exitcode", *chart())
    assert table.returncode == 1
    assert "ClassNotFound" in table.stdout and "refused (by admission or the Talos provider) or denied" in table.stdout


def test_plan_a_family_switch_is_refused_over_its_replacement(tmp_path: Path) -> None:
    before = write_state(tmp_path / "before", *base_pools())
    after = write_state(tmp_path / "after", *base_pools(md1={"workerClassName": "kairos"}))
    code, rows = plan_json(before, after, "--detailed-exitcode")
    assert code == 1  # refusals win over replacements
    md1 = rows["tenant-x/example-md1"]
    assert "BootstrapFamilyChange" in md1["refused"]
    assert md1["action"] == "replace" and md1["replace"] is True  # what it would do if let through


def test_plan_reads_several_paths_and_stdin(tmp_path: Path) -> None:
    before = write_state(tmp_path / "before", *base_pools())
    extra = tmp_path / "extra.yaml"
    extra.write_text(yaml.safe_dump(nodes("md7", workerClassName="talos")))
    stdin = (before / "state.yaml").read_text()
    result = cli("plan", "-", "--to", str(before), "--to", str(extra), "-o", "json", *chart(), input=stdin)
    assert result.returncode == 0, result.stderr
    rows = {row["pool"]: row for row in json.loads(result.stdout)["pools"]}
    assert rows["tenant-x/example-md7"]["action"] == "create"
    assert rows["tenant-x/example-md1"]["action"] == "unchanged"


# ------------------------------------------------------------------ resolve and render JSON


def test_resolve_json_has_every_pool_with_denials_and_warnings(tmp_path: Path) -> None:
    state = write_state(tmp_path / "s", *base_pools(md2={"workerClassName": "tlaos"}))
    result = cli("resolve", str(state), "-o", "json")
    assert result.returncode == 1
    rows = {row["pool"]: row for row in json.loads(result.stdout)["pools"]}
    assert set(rows) == {f"tenant-x/example-md{n}" for n in (1, 2, 3, 5)}
    denied = rows["tenant-x/example-md2"]
    assert list(denied) == ["pool", "class", "denials", "warnings"]
    assert denied["class"] == "tlaos"
    assert [(d["code"], d["field"]) for d in denied["denials"]] == [("ClassNotFound", "spec.workerClassName")]
    for pool in ("md1", "md3", "md5"):
        row = rows[f"tenant-x/example-{pool}"]
        assert row["denials"] == [] and isinstance(row["warnings"], list)
        assert row["bootstrap"] == "talos" and row["kubernetesVersion"].startswith("v1.35.")
    assert rows["tenant-x/example-md5"]["class"] is None  # stored classless: legacy Talos
    assert "tenant-x/example-md2: ClassNotFound spec.workerClassName: " in result.stderr


def test_render_json_has_items_and_a_row_per_pool(tmp_path: Path) -> None:
    state = write_state(tmp_path / "s", *base_pools(md2={"workerClassName": "tlaos"}))
    result = cli("render", str(state), "-o", "json", *chart())
    assert result.returncode == 1
    document = json.loads(result.stdout)
    assert list(document) == ["items", "pools"]  # API.md section 4: exactly these keys
    names = [item["metadata"]["name"] for item in document["items"]]
    assert any("example-md1" in name for name in names)
    assert not any("example-md2" in name for name in names)
    pools = {row["pool"]: row for row in document["pools"]}
    assert set(pools) == {f"tenant-x/example-md{n}" for n in (1, 2, 3, 5)}
    assert all(list(row) == ["pool", "denials", "warnings"] for row in pools.values())
    assert [d["code"] for d in pools["tenant-x/example-md2"]["denials"]] == ["ClassNotFound"]
    assert pools["tenant-x/example-md1"]["denials"] == []


def test_render_talos_config_template_on_request(tmp_path: Path) -> None:
    from workerclass.cli.commands_render import RENDER_TALOS_CONFIG_TEMPLATE

    state = write_state(tmp_path / "s", *base_pools())
    result = cli(
        "render", str(state), "--pool", "tenant-x/example-md1", "--talos-config-template", "-o", "json", *chart()
    )
    if not RENDER_TALOS_CONFIG_TEMPLATE:  # a renderer without the keyword: a clear error, exit 2
        assert result.returncode == 2
        assert "--talos-config-template" in result.stderr
        return
    assert result.returncode == 0, result.stderr
    kinds = [item["kind"] for item in json.loads(result.stdout)["items"]]
    assert "TalosConfigTemplate" in kinds and "MachineDeployment" in kinds


# ------------------------------------------------------------------ reading STATE


def test_state_suffixes_in_any_case_several_paths_and_stdin(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    folder.mkdir()
    (folder / "cluster.JSON").write_text(json.dumps(cluster()))
    (folder / "md1.YML").write_text(yaml.safe_dump(nodes("md1", workerClassName="talos")))
    other = tmp_path / "other.yaml"
    other.write_text(yaml.safe_dump(nodes("md2", workerClassName="talos")))
    stdin = yaml.safe_dump(nodes("md3", workerClassName="talos"))
    result = cli("resolve", str(folder), str(other), "-", "-o", "json", input=stdin)
    assert result.returncode == 0, result.stderr
    pools = [row["pool"] for row in json.loads(result.stdout)["pools"]]
    assert pools == ["tenant-x/example-md1", "tenant-x/example-md2", "tenant-x/example-md3"]


def test_symlinked_folders_are_followed(tmp_path: Path) -> None:
    real = write_state(tmp_path / "real", *base_pools())
    state = tmp_path / "state"
    state.mkdir()
    os.symlink(real, state / "linked")
    os.symlink(state, real / "loop")
    result = cli("check", str(state), "-o", "json")
    assert result.returncode == 0, result.stderr
    assert len(json.loads(result.stdout)["objects"]) == 5
    assert "symbolic link loop" in result.stderr


def test_a_foreign_document_is_skipped_with_one_warning(tmp_path: Path) -> None:
    state = write_state(tmp_path / "s", *base_pools())
    (state / "site.yml").write_text("- hosts: all\n  tasks: []\n---\njust text\n")
    result = cli("check", str(state))
    assert result.returncode == 0, result.stderr
    assert f"{state / 'site.yml'}#1: a list, not a Kubernetes object: skipped" in result.stderr
    assert f"{state / 'site.yml'}#2: a string, not a Kubernetes object: skipped" in result.stderr
    assert result.stderr.count("site.yml") == 2
    quiet = cli("check", str(state), "-q")
    assert quiet.returncode == 0 and quiet.stderr == ""
    assert "objects, 0 denied" not in quiet.stdout and "KubernetesNodes tenant-x/example-md1" in quiet.stdout
    assert cli("-q", "check", str(state)).stderr == ""


def test_duplicate_keys_exit_two_with_file_and_line(tmp_path: Path) -> None:
    state = write_state(tmp_path / "s", *base_pools())
    (state / "dup.yaml").write_text("kind: Kubernetes\nmetadata:\n  name: a\n  name: b\n")
    result = cli("check", str(state))
    assert result.returncode == 2
    assert result.stderr.startswith(f"error: {state / 'dup.yaml'}:4: duplicate key 'name'")
    assert len(result.stderr.splitlines()) == 1


@pytest.mark.parametrize("value", ["yes", "0123"])
def test_names_read_as_booleans_or_numbers_say_to_quote_them(tmp_path: Path, value: str) -> None:
    state = write_state(tmp_path / "s", *base_pools())
    (state / "odd.yaml").write_text(f"kind: KubernetesNodes\nmetadata:\n  name: {value}\n  namespace: tenant-x\n")
    result = cli("check", str(state))
    assert result.returncode == 2
    assert f"odd.yaml:3: metadata.name '{value}' is read by YAML as" in result.stderr
    assert "quote it" in result.stderr


# ------------------------------------------------------------------ check


def test_check_reads_create_by_default_and_stored_with_the_flag(tmp_path: Path) -> None:
    state = write_state(tmp_path / "s", *base_pools())
    created = json.loads(cli("check", str(state), "-o", "json").stdout)
    md5 = next(o for o in created["objects"] if o["name"] == "example-md5")
    assert md5["operation"] == "CREATE"
    assert md5["patch"][0] == {"op": "add", "path": "/spec/workerClassName", "value": "talos"}
    # it names no minor either: a CREATE with a class writes the parent's
    assert md5["patch"][1:] in ([], [{"op": "add", "path": "/spec/version", "value": "v1.35"}])
    result = cli("check", str(state), "--stored", "-o", "json")
    assert result.returncode == 0, result.stderr
    md5 = next(o for o in json.loads(result.stdout)["objects"] if o["name"] == "example-md5")
    assert (md5["operation"], md5["patch"], md5["allowed"]) == ("UPDATE", [], True)
    table = cli("check", str(state)).stdout
    assert table.rstrip().endswith("5 objects, 0 denied (each admitted as a CREATE)")
    stored_table = cli("check", str(state), "--stored").stdout
    assert stored_table.rstrip().endswith("5 objects, 0 denied (read as stored: each an UPDATE of itself)")
    help_text = cli("check", "-h").stdout
    assert "--stored" in help_text and "CREATE" in help_text and "UPDATE" in help_text


def _check_junit_schema(root: ElementTree.Element) -> None:
    """The Ant JUnit XML schema (JUnit.xsd, the one Jenkins' and GitLab's readers accept), checked by
    structure: no XSD library is installed here (lxml and xmlschema are absent), so its rules are
    spelled out: element order, required attributes and their types."""
    decimal = r"^-?[0-9]+(\.[0-9]+)?$"
    import re

    assert root.tag == "testsuites" and root.attrib == {}
    for index, suite in enumerate(root):
        assert suite.tag == "testsuite"
        required = {"name", "package", "id", "timestamp", "hostname", "tests", "failures", "errors", "time"}
        assert set(suite.attrib) == required, suite.attrib
        assert suite.attrib["name"].strip() and suite.attrib["hostname"].strip() and suite.attrib["package"].strip()
        assert int(suite.attrib["id"]) == index
        assert re.match(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}$", suite.attrib["timestamp"])
        assert re.match(decimal, suite.attrib["time"])
        children = [child.tag for child in suite]
        assert children[0] == "properties" and children[-2:] == ["system-out", "system-err"]
        assert set(children[1:-2]) <= {"testcase"}
        for prop in suite.find("properties") or []:
            assert prop.tag == "property" and set(prop.attrib) == {"name", "value"}
        cases = suite.findall("testcase")
        failures = 0
        for case in cases:
            assert set(case.attrib) == {"name", "classname", "time"} and case.attrib["name"].strip()
            assert re.match(decimal, case.attrib["time"])
            outcome = list(case)
            assert len(outcome) <= 1 and all(child.tag in ("failure", "error") for child in outcome)
            for child in outcome:
                assert set(child.attrib) == {"message", "type"}
                failures += child.tag == "failure"
        assert int(suite.attrib["tests"]) == len(cases)
        assert int(suite.attrib["failures"]) == failures
        assert int(suite.attrib["errors"]) == 0


def test_check_junit_one_testcase_per_object_failures_carry_denials(tmp_path: Path) -> None:
    state = write_state(tmp_path / "s", *base_pools(md2={"workerClassName": "tlaos"}))
    result = cli("check", str(state), "-o", "junit")
    assert result.returncode == 1
    assert result.stdout.startswith('<?xml version="1.0" encoding="UTF-8"?>')
    root = ElementTree.fromstring(result.stdout.split("\n", 1)[1])
    _check_junit_schema(root)
    cases = {case.attrib["name"]: case for case in root.iter("testcase")}
    assert set(cases) == {"Kubernetes tenant-x/example"} | {
        f"KubernetesNodes tenant-x/example-md{n}" for n in (1, 2, 3, 5)
    }
    failure = cases["KubernetesNodes tenant-x/example-md2"].find("failure")
    assert failure is not None and failure.attrib["type"] == "ClassNotFound"
    assert failure.attrib["message"].startswith("ClassNotFound spec.workerClassName: ")
    assert "ClassNotFound spec.workerClassName: " in (failure.text or "")
    assert cases["KubernetesNodes tenant-x/example-md1"].find("failure") is None
    assert cases["KubernetesNodes tenant-x/example-md1"].attrib["classname"] == "KubernetesNodes"


# ------------------------------------------------------------------ the command line itself


def test_version_and_short_help() -> None:
    result = cli("--version")
    assert result.returncode == 0
    assert result.stdout == f"workerclass {metadata.version('workerclass')}\n"
    for args in (["-h"], ["check", "-h"], ["plan", "-h"], ["serve", "-h"], ["serve", "webhook", "-h"]):
        shown = cli(*args)
        assert shown.returncode == 0, (args, shown.stderr)
        assert "Usage:" in shown.stdout
    assert "--detailed-exitcode" in cli("plan", "-h").stdout
    assert "webhook" in cli("serve", "-h").stdout and "controller" in cli("serve", "-h").stdout
    assert "127.0.0.1" in cli("serve", "webhook", "-h").stdout
    assert "CRDs" in cli("manifests", "-h").stdout


def test_piped_tables_have_no_padding_and_no_colour(tmp_path: Path) -> None:
    state = write_state(tmp_path / "s", *base_pools())
    for args in (["check", str(state)], ["resolve", str(state)], ["plan", str(state), "--to", str(state), *chart()]):
        result = cli(*args)
        assert result.returncode == 0, result.stderr
        lines = result.stdout.splitlines()
        assert lines and all(line == line.rstrip() for line in lines), args
        assert "\x1b[" not in result.stdout


def _many_pools(folder: Path, count: int) -> Path:
    return write_state(folder, *(nodes(f"p{index}", workerClassName="talos") for index in range(count)))


def test_a_broken_pipe_exits_141_without_a_traceback(tmp_path: Path) -> None:
    state = _many_pools(tmp_path / "s", 150)
    process = subprocess.Popen(
        [sys.executable, "-m", "workerclass", "render", str(state), *chart()],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.read(100)
    process.stdout.close()  # the reader goes away, as `| head -c 100` does
    code = process.wait(timeout=TIMEOUT)
    stderr = process.stderr.read().decode()
    assert code == 141, stderr
    assert "Traceback" not in stderr and "Exception ignored" not in stderr


def _blocked_reading(pid: int) -> bool:
    try:
        return "pipe" in Path(f"/proc/{pid}/wchan").read_text()
    except OSError:
        return False


def _interruptible() -> None:
    # A shell that starts a job in the background without job control (``make test &``) hands it
    # SIGINT ignored, and Python keeps an ignored SIGINT ignored: Ctrl-C at a terminal is the default
    # disposition, so the child starts with it whatever the test runner inherited.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_exits_130(tmp_path: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "workerclass", "check", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=_interruptible,
    )
    deadline = time.monotonic() + 60
    time.sleep(0.5)
    while time.monotonic() < deadline and not _blocked_reading(process.pid):
        time.sleep(0.1)  # until the imports are done and it waits on stdin
    time.sleep(0.3)
    process.send_signal(signal.SIGINT)
    code = process.wait(timeout=TIMEOUT)
    assert process.stderr is not None
    stderr = process.stderr.read().decode()
    assert code == 130, stderr
    assert "Traceback" not in stderr


# ------------------------------------------------------------------ the image


def _dockerfile() -> str:
    return (ROOT / "Dockerfile").read_text()


def test_dockerfile_is_multi_stage_non_root_and_fits_a_read_only_root() -> None:
    text = _dockerfile()
    stages = [line for line in text.splitlines() if line.startswith("FROM ")]
    assert len(stages) >= 2 and "AS build" in stages[0]
    users = [line.split()[1] for line in text.splitlines() if line.startswith("USER ")]
    assert users and users[-1].count(":") == 1 and all(part.isdigit() and part != "0" for part in users[-1].split(":"))
    assert "PYTHONDONTWRITEBYTECODE=1" in text and "compileall" in text
    assert (ROOT / ".dockerignore").is_file()


def _containers(objects: list[dict[str, Any]]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    out = []
    for obj in objects:
        if obj.get("kind") != "Deployment":
            continue
        pod = obj["spec"]["template"]["spec"]
        out += [(pod, container) for container in pod["containers"]]
    return out


def test_the_manifests_run_the_image_the_dockerfile_builds_as_its_user() -> None:
    from workerclass.deploy import DEFAULT_IMAGE, InstallOptions, install_manifests

    version = metadata.version("workerclass")
    assert f"ghcr.io/cozystack/cozystack/workerclass:v{version}" == DEFAULT_IMAGE
    readme = (ROOT / "README.md").read_text()
    assert "-t ghcr.io/cozystack/cozystack/workerclass:v" in readme  # the README builds that name
    uid, gid = (
        int(part)
        for part in [line for line in _dockerfile().splitlines() if line.startswith("USER ")][-1].split()[1].split(":")
    )
    containers = _containers(install_manifests(InstallOptions(), controller=True))
    assert len(containers) >= 2  # the webhook and the controller
    for pod, container in containers:
        assert container["image"] == DEFAULT_IMAGE
        context = {**pod.get("securityContext", {}), **container.get("securityContext", {})}
        assert (context.get("runAsUser"), context.get("runAsGroup")) == (uid, gid), container["name"]
        assert context.get("runAsNonRoot") is True
        assert container["securityContext"].get("readOnlyRootFilesystem") is True, container["name"]


def test_the_wheel_builds_and_its_entry_point_runs(tmp_path: Path) -> None:
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q", "-w", str(tmp_path / "dist")],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert build.returncode == 0, build.stderr
    version = metadata.version("workerclass")
    (wheel,) = (tmp_path / "dist").glob("workerclass-*.whl")
    assert wheel.name == f"workerclass-{version}-py3-none-any.whl"
    target = tmp_path / "site"
    install = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert install.returncode == 0, install.stderr
    script = (
        "import sys, importlib.metadata as m, workerclass\n"
        "(ep,) = m.entry_points(group='console_scripts', name='workerclass')\n"
        "assert workerclass.__file__.startswith(sys.argv[1]), workerclass.__file__\n"
        "sys.argv = ['workerclass', '--version']\n"
        "ep.load()()\n"
    )
    env = {**os.environ, "PYTHONPATH": str(target)}
    result = subprocess.run(
        [sys.executable, "-c", script, str(target)], capture_output=True, text=True, timeout=120, env=env, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"workerclass {version}\n"
    data = [name for name in os.listdir(target / "workerclass" / "builtin")]
    assert "classes.yaml" in data and "platform.yaml" in data


def test_a_command_s_start_leaves_the_servers_and_the_preflight_checks_unimported() -> None:
    """Every command's start imports the whole command tree (typer registers them all): what only
    ``serve``, ``manifests --chart-source`` and ``preflight`` use (asyncio, the Flux follower, the
    x509 checks) is imported by those commands, so that ``resolve`` and ``check`` start without it."""
    probe = (
        "import sys, workerclass.cli.main as m; m._register(); "
        "assert 'workerclass.cli.commands_serve' in sys.modules; "
        "print(sorted(n for n in ('asyncio', 'cryptography', 'workerclass.adapters.flux', "
        "'workerclass.ops.preflight', 'workerclass.ops.uninstall') if n in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=TIMEOUT, check=True)
    assert result.stdout.strip() == "[]", result.stdout
