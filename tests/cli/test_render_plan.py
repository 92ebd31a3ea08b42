"""``workerclass render`` and ``workerclass plan``: output, exit codes, errors without tracebacks."""

from __future__ import annotations

import importlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from tests.render.schemas import REPO, crd_directory, validation_errors
from workerclass.cli.main import _register, app
from workerclass.render import RenderError
from workerclass.violations import Violation

EXAMPLES = REPO / "examples"
_register()


def run(*args: str) -> Any:
    result = CliRunner().invoke(app, list(args))
    assert "Traceback" not in result.stdout + result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "\x1b[" not in result.stdout + result.stderr, "colour outside a terminal"
    return result


@pytest.fixture
def state(tmp_path: Path) -> Path:
    target = tmp_path / "state"
    shutil.copytree(EXAMPLES, target)
    return target


@pytest.mark.usefixtures("chart_text")
def test_render_prints_yaml_for_every_pool() -> None:
    result = run("render", str(EXAMPLES))
    assert result.exit_code == 0, result.stderr
    documents = list(yaml.safe_load_all(result.stdout))
    deployments = sorted(doc["metadata"]["name"] for doc in documents if doc["kind"] == "MachineDeployment")
    assert deployments == [
        "kubernetes-example-custom-kairos",
        "kubernetes-example-kairos",
        "kubernetes-example-legacy",
        "kubernetes-example-talos",
    ]
    for kind in ("MachineHealthCheck", "WorkloadMonitor", "KubevirtMachineTemplate"):
        assert sum(doc["kind"] == kind for doc in documents) == 4, kind
    # a cluster without a Kairos bootstrap provider (STATE holds no CRD): the data-secret path
    assert sum(doc["kind"] == "KairosConfigTemplate" for doc in documents) == 0
    assert sum(doc["kind"] == "Secret" and doc["type"] == "cluster.x-k8s.io/secret" for doc in documents) == 2
    assert sum(doc["kind"] == "Job" for doc in documents) == 2  # the Talos pools' talos-reconcile Jobs
    if crd_directory() is not None:
        assert all(validation_errors(doc) == [] for doc in documents)
    # Warnings go to stderr so stdout stays pure manifests.
    assert "experimental" in result.stderr


@pytest.mark.usefixtures("chart_text")
def test_render_one_pool_as_json_list() -> None:
    result = run("render", str(EXAMPLES), "--pool", "tenant-example/example-talos", "-o", "json")
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    assert list(document) == ["items", "pools"]  # API.md section 4: exactly these keys
    kinds = [item["kind"] for item in document["items"]]
    for kind in ("KubevirtMachineTemplate", "MachineDeployment", "MachineHealthCheck", "WorkloadMonitor", "Job"):
        assert kinds.count(kind) == 1, kind
    assert "TalosConfigTemplate" not in kinds  # the Job applies it; --talos-config-template prints it
    assert all("example-talos" in item["metadata"]["name"] for item in document["items"])


def test_render_is_byte_stable() -> None:
    assert run("render", str(EXAMPLES)).stdout == run("render", str(EXAMPLES)).stdout


@pytest.mark.usefixtures("chart_text")
def test_render_denied_pool_exits_1_with_denials_on_stderr(state: Path) -> None:
    pools = state / "tenant-example" / "pools.yaml"
    pools.write_text(pools.read_text().replace("workerClassName: kairos\n", "workerClassName: missing\n"))
    result = run("render", str(state))
    assert result.exit_code == 1
    assert "ClassNotFound spec.workerClassName: " in result.stderr
    names = {doc["metadata"]["name"] for doc in yaml.safe_load_all(result.stdout)}
    assert "kubernetes-example-talos" in names and "kubernetes-example-kairos" not in names
    selected = run("render", str(state), "--pool", "tenant-example/example-talos")
    assert selected.exit_code == 0


def test_render_unknown_pool_exits_2() -> None:
    result = run("render", str(EXAMPLES), "--pool", "tenant-example/nope")
    assert result.exit_code == 2
    assert "no pool tenant-example/nope" in result.stderr


@pytest.mark.parametrize("command", ["render", "plan"])
def test_load_errors_are_one_clean_line(state: Path, command: str) -> None:
    (state / "broken.yaml").write_text("kind: [unclosed\n")
    args = [command, str(state)] + (["--to", str(EXAMPLES)] if command == "plan" else [])
    result = run(*args)
    assert result.exit_code == 2
    assert result.stderr.startswith("error: ")
    assert "broken.yaml" in result.stderr and "invalid YAML" in result.stderr
    missing = run("plan", str(EXAMPLES), "--to", str(state / "missing"))
    assert missing.exit_code == 2 and "no such file or folder" in missing.stderr


@pytest.mark.usefixtures("chart_text")
def test_plan_json(state: Path) -> None:
    platform = state / "platform" / "workerplatform.yaml"
    platform.write_text(platform.read_text().replace("ab712e0c41c4a395", "0000000000000000"))
    result = run("plan", str(EXAMPLES), "--to", str(state), "-o", "json")
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    assert list(document) == ["chart", "pools", "refusals"]
    by_pool = {row["pool"]: row for row in document["pools"]}
    assert len(by_pool) == 4
    # the platform Kairos image's new digest renames the Kairos machine template: a rebuild-only roll
    assert by_pool["tenant-example/example-kairos"]["replace"] is True
    assert by_pool["tenant-example/example-kairos"]["rebuildOnly"] is True
    assert by_pool["tenant-example/example-talos"]["replace"] is False


@pytest.mark.usefixtures("chart_text")
def test_plan_table_for_people(state: Path) -> None:
    platform = state / "platform" / "workerplatform.yaml"
    platform.write_text(platform.read_text().replace("ab712e0c41c4a395", "0000000000000000"))
    result = run("plan", str(EXAMPLES), "--to", str(state))
    assert result.exit_code == 0
    assert "POOL" in result.stdout and "REPLACE" in result.stdout
    assert "yes (rebuild only)" in result.stdout
    assert "4 pools, 1 would replace machines, 1 only because a platform Kairos image was rebuilt" in result.stdout


def test_denials_with_markup_like_tenant_text_print_cleanly(state: Path) -> None:
    pools = state / "tenant-example" / "pools.yaml"
    pools.write_text(pools.read_text().replace("  sshKeys: []\n", '  sshKeys: []\n  labels: {"[/x]": v}\n', 1))
    result = run("render", str(state), "--pool", "tenant-example/example-kairos")
    assert result.exit_code == 1
    (line,) = [line for line in result.stderr.splitlines() if "Invalid spec.labels" in line]
    assert line.startswith("tenant-example/example-kairos: Invalid spec.labels")
    # the key is part of the field path or not shown at all, but never eaten as markup
    assert "[/x" not in line or "spec.labels.[/x]: " in line


# ------------------------------------------------------------------ a pool the chart refuses at render time


@pytest.fixture
def chart_refuses_example_talos(monkeypatch: pytest.MonkeyPatch) -> None:
    """The chart refuses example-talos at render time although admission let it through.

    The doors' render entry points raise what :func:`workerclass.render.render` raises for a
    chart refusal: a :class:`RenderError` carrying the chart's failures.
    """
    failure = Violation("InvalidStorageClass", "spec.storageClass", "no such StorageClass")

    def refusing(real: Callable[..., Any]) -> Callable[..., Any]:
        def call(effective: Any, **options: Any) -> Any:
            if effective.identity == "tenant-example/example-talos":
                message = f"{effective.identity}: the chart refuses the pool: {failure.message}"
                raise RenderError(message, [failure])
            return real(effective, **options)

        return call

    commands_core = importlib.import_module("workerclass.cli.commands_core")
    commands_render = importlib.import_module("workerclass.cli.commands_render")
    ops_plan = importlib.import_module("workerclass.ops.plan")
    monkeypatch.setattr(commands_core, "template_hash", refusing(commands_core.template_hash))
    monkeypatch.setattr(commands_render, "render", refusing(commands_render.render))
    monkeypatch.setattr(commands_render, "_render", refusing(commands_render._render))
    monkeypatch.setattr(ops_plan, "_render", refusing(ops_plan._render))


REFUSED_LINE = (
    "tenant-example/example-talos: InvalidStorageClass spec.storageClass: "
    "the chart refuses to render the pool: no such StorageClass"
)


@pytest.mark.usefixtures("chart_text")
@pytest.mark.usefixtures("chart_refuses_example_talos")
def test_render_reports_a_pool_the_chart_refuses_as_denied() -> None:
    result = run("render", str(EXAMPLES), "-o", "json")
    assert result.exit_code == 1
    assert REFUSED_LINE in result.stderr.splitlines()
    document = json.loads(result.stdout)
    rows = {row["pool"]: row for row in document["pools"]}
    assert rows["tenant-example/example-talos"]["denials"] == [
        {
            "code": "InvalidStorageClass",
            "field": "spec.storageClass",
            "message": "the chart refuses to render the pool: no such StorageClass",
        }
    ]
    # the other pools still render
    names = {item["metadata"]["name"] for item in document["items"]}
    assert "kubernetes-example-legacy" in names and "kubernetes-example-talos" not in names


@pytest.mark.usefixtures("chart_refuses_example_talos")
def test_resolve_reports_a_pool_the_chart_refuses_as_denied() -> None:
    table_run = run("resolve", str(EXAMPLES))
    assert table_run.exit_code == 1
    assert REFUSED_LINE in table_run.stderr.splitlines()
    assert "tenant-example/example-talos (KubernetesNodes)" not in table_run.stdout
    assert "tenant-example/example-legacy (KubernetesNodes)" in table_run.stdout
    json_run = run("resolve", str(EXAMPLES), "-o", "json")
    assert json_run.exit_code == 1
    rows = {row["pool"]: row for row in json.loads(json_run.stdout)["pools"]}
    assert rows["tenant-example/example-talos"] == {
        "pool": "tenant-example/example-talos",
        "class": "talos-example-r1",
        "denials": [
            {
                "code": "InvalidStorageClass",
                "field": "spec.storageClass",
                "message": "the chart refuses to render the pool: no such StorageClass",
            }
        ],
        "warnings": [],
    }
    assert rows["tenant-example/example-legacy"]["denials"] == []


@pytest.mark.usefixtures("chart_text")
@pytest.mark.usefixtures("chart_refuses_example_talos")
def test_plan_reports_a_pool_the_chart_refuses_as_denied() -> None:
    result = run("plan", str(EXAMPLES), "--to", str(EXAMPLES), "--detailed-exitcode", "-o", "json")
    assert result.exit_code == 1
    rows = {row["pool"]: row for row in json.loads(result.stdout)["pools"]}
    assert rows["tenant-example/example-talos"]["refused"] == ["Invalid"]
    assert rows["tenant-example/example-talos"]["replace"] is False


def test_plan_turns_a_render_error_that_escapes_it_into_a_denial_line(monkeypatch: pytest.MonkeyPatch) -> None:
    ops_plan = importlib.import_module("workerclass.ops.plan")

    def refused(effective: Any) -> str:
        raise RenderError(f"{effective.identity}: the chart refuses the pool: no such StorageClass")

    monkeypatch.setattr(ops_plan, "template_hash", refused)
    result = run("plan", str(EXAMPLES), "--to", str(EXAMPLES))
    assert result.exit_code == 1
    assert result.stderr.splitlines()[-1].endswith(": Invalid spec: the chart refuses the pool: no such StorageClass")
    assert result.stderr.splitlines()[-1].startswith("tenant-example/")


@pytest.mark.usefixtures("chart_text")
def test_plan_to_takes_several_paths_as_state_does(tmp_path: Path) -> None:
    """``--to STATE2...``: every path up to the next option is STATE2, as STATE takes several."""
    after = tmp_path / "after"
    shutil.copytree(EXAMPLES, after)
    extra = tmp_path / "extra.yaml"
    new = {
        "apiVersion": "apps.cozystack.io/v1alpha1",
        "kind": "KubernetesNodes",
        "metadata": {"name": "example-extra", "namespace": "tenant-example"},
        "spec": {"cluster": "example", "workerClassName": "talos"},
    }
    extra.write_text(yaml.safe_dump(new))
    for args in (
        ["plan", str(EXAMPLES), "--to", str(after), str(extra), "-o", "json"],
        ["plan", str(EXAMPLES), "-o", "json", "--to", str(after), str(extra)],
        ["plan", str(EXAMPLES), "--to", str(after), "--to", str(extra), "-o", "json"],
    ):
        result = run(*args)
        assert result.exit_code == 0, (args, result.stderr)
        rows = {row["pool"]: row for row in json.loads(result.stdout)["pools"]}
        assert rows["tenant-example/example-extra"]["action"] == "create", args
        assert rows["tenant-example/example-talos"]["action"] == "unchanged", args
    usage = run("plan", "--help")
    assert "--to STATE2..." in usage.stdout


@pytest.mark.usefixtures("chart_text")
def test_plan_shows_class_and_platform_refusals_as_rows_and_counts_what_it_names(state: Path) -> None:
    """A refused class edit is a row of its own (table and JSON); the summary counts pools as pools
    and the refused class change apart."""
    cls = state / "classes" / "talos-example-r1.yaml"
    cls.write_text(cls.read_text().replace("version: v1.13.6", "version: v1.13.7"))
    document = run("plan", str(EXAMPLES), "--to", str(state), "-o", "json")
    assert document.exit_code == 0, document.stderr
    data = json.loads(document.stdout)
    assert [(row["kind"], row["name"], row["refused"]) for row in data["refusals"]] == [
        ("WorkerClass", "talos-example-r1", ["ClassImmutable"])
    ]
    refused_pools = [row["pool"] for row in data["pools"] if row["refused"]]
    assert refused_pools == ["tenant-example/example-talos"]
    result = run("plan", str(EXAMPLES), "--to", str(state))
    lines = result.stdout.splitlines()
    assert any(line.startswith("WorkerClass talos-example-r1") and "ClassImmutable" in line for line in lines), lines
    summary = lines[-1]
    assert summary.startswith("4 pools, "), summary
    assert "1 refused (by admission or the Talos provider) or denied" in summary, summary
    assert "1 WorkerClass or WorkerPlatform change refused" in summary, summary
