"""The command line reads as English: usage lines (``STATE...``), counts (``1 object``), no Python
reprs in messages, each value of ``resolve -o json`` with its WHY, and a missing kubeconfig naming
the sources it was looked for in."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from workerclass.cli.main import _register, app

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
_register()


def run(*args: str, env: dict[str, str] | None = None) -> Any:
    result = CliRunner().invoke(app, list(args), env=env)
    assert "Traceback" not in result.stdout + result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result


STATE_COMMANDS = ["check", "admit", "resolve", "render", "plan", "restore"]


@pytest.mark.parametrize("command", [*STATE_COMMANDS, "preflight"], ids=[*STATE_COMMANDS, "preflight"])
def test_usage_lines_name_state_as_people_write_it(command: str) -> None:
    usage = run(command, "--help").stdout.splitlines()[0]
    expected = "[STATE...]" if command == "preflight" else "STATE..."
    assert usage.startswith(f"Usage: workerclass {command} [OPTIONS] {expected}"), usage
    assert "{" not in usage and "}" not in usage, usage
    missing = run(command) if command != "preflight" else None
    if missing is not None:
        assert "{" not in missing.stderr, missing.stderr


@pytest.mark.usefixtures("chart_text")
def test_counts_agree_with_their_number(tmp_path: Path) -> None:
    one = tmp_path / "one.yaml"
    one.write_text(
        yaml.safe_dump(
            {"apiVersion": "cozystack.io/v1alpha1", "kind": "WorkerClass", "metadata": {"name": "c"}, "spec": None}
        )
    )
    assert run("check", str(one)).stdout.splitlines()[-1].startswith("1 object, 1 denied")
    state = tmp_path / "state"
    shutil.copytree(EXAMPLES, state)
    pools = state / "tenant-example" / "pools.yaml"
    kept = [doc for doc in yaml.safe_load_all(pools.read_text()) if doc["metadata"]["name"] == "example-talos"]
    pools.write_text(yaml.safe_dump_all(kept))
    (state / "tenant-example" / "legacy-pool.yaml").unlink()
    assert run("plan", str(state), "--to", str(state)).stdout.splitlines()[-1].startswith("1 pool, ")


def test_messages_show_no_python_reprs(tmp_path: Path) -> None:
    documents = [
        {"kind": "WorkerClass", "metadata": {"name": "no-api-version"}, "spec": {"bootstrap": "talos"}},
        {"apiVersion": 3, "kind": "KubernetesNodes", "metadata": {"name": "x-y", "namespace": "t"}},
        {"apiVersion": "v1", "kind": "Kubernetes", "metadata": {"name": "x", "namespace": "t"}},
        {"apiVersion": "cozystack.io/v1alpha1", "kind": "WorkerClass", "metadata": {"name": "ok"}, "spec": None},
    ]
    path = tmp_path / "state.yaml"
    path.write_text(yaml.safe_dump_all(documents))
    result = run("check", str(path))
    said = result.stdout + result.stderr
    for repr_text in ("None", "'v1'", "apiVersion 3", "<class"):
        assert repr_text not in said, said
    assert "apiVersion absent" in said and "apiVersion v1 is not in" in said


def test_resolve_json_carries_each_values_why() -> None:
    rows = {row["pool"]: row for row in json.loads(run("resolve", str(EXAMPLES), "-o", "json").stdout)["pools"]}
    talos = rows["tenant-example/example-talos"]
    table = run("resolve", str(EXAMPLES), "--pool", "tenant-example/example-talos").stdout.splitlines()
    why = talos["why"]
    assert why["class"] == "spec.workerClassName"
    assert why["talos.version"] == "pool"
    assert why["kubernetesVersion"].startswith("chart version map")
    # every setting the table explains is explained in the JSON, with the same words
    for line in table[2:]:
        cells = [cell for cell in line.split("  ") if cell.strip()]
        if len(cells) == 3:
            assert why[cells[0].strip()] == cells[2].strip(), line


def test_a_missing_kubeconfig_names_the_sources_tried(tmp_path: Path, tmp_certs: Any) -> None:
    env = {"KUBECONFIG": "", "HOME": str(tmp_path), "KUBERNETES_SERVICE_HOST": ""}
    for args in (
        ["preflight", "--live"],
        ["serve", "controller"],
        ["serve", "webhook", "--tls-cert", str(tmp_certs.cert), "--tls-key", str(tmp_certs.key)],
    ):
        result = run(*args, env=env)
        assert result.exit_code == 2, (args, result.stderr)
        line = result.stderr.strip()
        for source in ("in-cluster service account", "KUBECONFIG", "~/.kube/config"):
            assert source in line, (args, line)
        assert "--kubeconfig" in line
