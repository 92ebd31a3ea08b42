"""Help that matches what the commands and the install do."""

from __future__ import annotations

from tests.cli.test_commands_core import run
from workerclass.deploy import controller_manifests


def test_admit_help_cites_the_contract_file() -> None:
    text = run("admit", "--help").stdout
    assert "docs/contract.md" in text and "API.md" not in text


def test_manifests_help_says_how_many_controller_replicas() -> None:
    (deployment,) = [o for o in controller_manifests() if o["kind"] == "Deployment"]
    assert deployment["spec"]["replicas"] == 2
    text = " ".join(run("manifests", "--help").stdout.split())
    assert "one replica" not in text and "two replicas" in text


def test_readme_plan_and_restore_shapes_list_chart() -> None:
    """``plan -o json`` and ``restore -o json`` carry ``"chart"`` beside ``"pools"`` (the contract)."""
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    (plan,) = [line for line in readme.splitlines() if line.startswith("| `workerclass plan ")]
    (restore,) = [line for line in readme.splitlines() if line.startswith("| `workerclass restore ")]
    assert '{"chart": {' in plan and '{"chart": {' in restore
