"""The bench scripts start: each answers ``--help``, so their imports of the suite's helpers hold.

The benches run on demand, never in the suite (their figures are bench/README.md's); what the
suite checks is that a refactor of ``tests/`` or ``src/`` has not left one unable to start.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
SCRIPTS = sorted(BENCH.glob("*_bench.py"))


def test_there_are_bench_scripts() -> None:
    assert len(SCRIPTS) >= 5, SCRIPTS


@pytest.mark.parametrize("script", SCRIPTS, ids=[path.name for path in SCRIPTS])
def test_a_bench_script_answers_help(script: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=120, cwd=BENCH.parent
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "usage:" in done.stdout
