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
