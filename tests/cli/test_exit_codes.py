"""The exit codes every command shares, ``plan --detailed-exitcode``'s own, and the README's one table of them.

Under ``--detailed-exitcode`` 2 means machines replaced or deleted and nothing else: an unreadable
path or a usage error exits 1 there, as ``terraform plan -detailed-exitcode`` does for errors.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from workerclass.cli.main import _register, app
from workerclass.cli.output import EXIT_BROKEN_PIPE, EXIT_DENIED, EXIT_INTERRUPTED, EXIT_OK, EXIT_REPLACE, EXIT_USAGE

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
_register()


def run(*args: str) -> Any:
    result = CliRunner().invoke(app, list(args))
    assert "Traceback" not in result.stdout + result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result


@pytest.mark.parametrize(
    ("args", "without"),
    [
        (["plan", "/nonexistent/state", "--to", str(EXAMPLES)], 2),
        (["plan", str(EXAMPLES), "--to", "/nonexistent/state"], 2),
        (["plan", str(EXAMPLES)], 2),  # --to missing: a usage error
        (["plan", str(EXAMPLES), "--to", str(EXAMPLES), "--no-such-option"], 2),
        (["plan", str(EXAMPLES), "--to", str(EXAMPLES), "-o", "yaml"], 2),  # a bad choice
        (["plan", "-", "--to", "-"], 2),  # stdin twice
    ],
    ids=["state-missing", "state2-missing", "no-to", "unknown-option", "bad-choice", "stdin-twice"],
)
def test_under_detailed_exitcode_an_error_is_never_two(args: list[str], without: int) -> None:
    plain = run(*args)
    assert plain.exit_code == without, plain.stderr
    detailed = run(*args, "--detailed-exitcode")
    assert detailed.exit_code == 1, detailed.stderr
    assert detailed.stderr.strip(), "the error is still said"
    assert len(detailed.stderr.strip().splitlines()) <= 4  # a short usage message, no traceback


def test_detailed_exitcode_before_the_paths_counts_too() -> None:
    result = run("plan", "--detailed-exitcode", "/nonexistent/state", "--to", str(EXAMPLES))
    assert result.exit_code == 1, result.stderr


@pytest.mark.usefixtures("chart_text")
def test_detailed_exitcode_still_says_two_for_a_replacement_and_zero_for_nothing(tmp_path: Path) -> None:
    same = run("plan", str(EXAMPLES), "--to", str(EXAMPLES), "--detailed-exitcode")
    assert same.exit_code == 0, same.stderr


def _exit_tables() -> list[list[str]]:
    """The README's tables whose first column is headed ``exit``."""
    lines = (ROOT / "README.md").read_text("utf-8").splitlines()
    tables, current = [], []
    for line in [*lines, ""]:
        if line.startswith("|"):
            current.append(line)
        elif current:
            tables.append(current)
            current = []
    return [table for table in tables if re.match(r"^\|\s*exit\b", table[0])]


def test_the_readme_documents_every_exit_code_in_one_table() -> None:
    tables = _exit_tables()
    assert len(tables) == 1, "one table of exit codes, headed `| exit ...`"
    rows = {cells[0]: cells for cells in ([c.strip() for c in row.strip("|").split("|")] for row in tables[0][2:])}
    for code in (EXIT_OK, EXIT_DENIED, EXIT_USAGE, EXIT_INTERRUPTED, EXIT_BROKEN_PIPE):
        assert str(code) in rows, f"exit {code} is not in the table"
    assert EXIT_REPLACE == 2
    assert "--detailed-exitcode" in " ".join(rows["2"]), "2 says what it means under plan --detailed-exitcode"
    assert "--detailed-exitcode" in " ".join(rows["1"]), "1 says errors under plan --detailed-exitcode"
