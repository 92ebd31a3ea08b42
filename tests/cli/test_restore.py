"""``restore``: every status prints as the README says, and -o json keeps the README's shape."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from workerclass.cli.main import _register, app

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
_register()


def run(*args: str) -> Any:
    result = CliRunner().invoke(app, list(args))
    assert "Traceback" not in result.stdout + result.stderr
    return result


def _result_cell(stdout: str, pool: str) -> str:
    """The RESULT column of a pool's first table line (columns are separated by two spaces or more)."""
    header = stdout.splitlines()[0]
    start = header.index("RESULT")
    end = header.index("DETAILS")
    line = next(line for line in stdout.splitlines() if line.startswith(pool + " "))
    return line[start:end].strip()


@pytest.mark.usefixtures("chart_text")
def test_a_class_era_pool_prints_not_restorable_and_exits_one() -> None:
    # examples' example-talos loads the kernel module nvme_tcp: the legacy chart cannot express it.
    result = run("restore", str(EXAMPLES), "--pool", "tenant-example/example-talos")
    assert result.exit_code == 1, result.stdout + result.stderr
    assert _result_cell(result.stdout, "tenant-example/example-talos") == "not restorable"
    assert "not restorable without a rollout: the legacy chart cannot express kernelModules (nvme_tcp)" in (
        result.stdout
    )
    assert "1 pool: 0 restorable, 0 already classless, 1 cannot be restored" in result.stdout
    # the values are printed only for a restorable pool
    assert "legacy layout:" not in result.stdout


@pytest.mark.usefixtures("chart_text")
def test_every_status_of_the_examples_has_its_result() -> None:
    result = run("restore", str(EXAMPLES))
    assert result.exit_code == 1
    cells = {
        pool: _result_cell(result.stdout, pool)
        for pool in (
            "tenant-example/example-custom-kairos",
            "tenant-example/example-kairos",
            "tenant-example/example-legacy",
            "tenant-example/example-talos",
        )
    }
    assert cells == {
        "tenant-example/example-custom-kairos": "not restorable",
        "tenant-example/example-kairos": "not restorable",
        "tenant-example/example-legacy": "no restore needed",
        "tenant-example/example-talos": "not restorable",
    }


@pytest.mark.usefixtures("chart_text")
def test_restore_json_keeps_the_readme_shape_for_a_rollout_row() -> None:
    result = run("restore", str(EXAMPLES), "-o", "json")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert list(data) == ["chart", "pools"]
    for row in data["pools"]:
        assert list(row) == ["pool", "class", "bootstrap", "restorable", "values", "templateHash", "reasons"]
        assert list(row["templateHash"]) == ["current", "restored", "version"]
        assert all(isinstance(reason, str) for reason in row["reasons"])
    talos = next(row for row in data["pools"] if row["pool"] == "tenant-example/example-talos")
    assert talos["restorable"] is False
    assert talos["class"] == "talos-example-r1"
    assert talos["bootstrap"] == "talos"
    assert talos["reasons"][0].startswith("not restorable without a rollout")
    # the values a restore would write are still shown, in the legacy layout
    assert "workerClassName" not in talos["values"]
    assert "kernelModules" not in talos["values"]
    assert talos["values"]["talos"]["version"] == "v1.13.6"
    assert talos["templateHash"]["current"] == talos["templateHash"]["restored"]
