"""The README's ``make demo`` output is what ``check examples`` and ``resolve examples`` print today.

Abridged lines cut values with ``...``: each ``...`` stands for any text.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from workerclass.cli.main import _register, app

ROOT = Path(__file__).resolve().parents[2]
_register()


def _demo_block() -> list[str]:
    readme = (ROOT / "README.md").read_text("utf-8")
    start = readme.index("`make demo` runs `workerclass check examples`")
    block = readme[readme.index("```text\n", start) + len("```text\n") :]
    return block[: block.index("```")].splitlines()


def _pattern(text: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in text.split("...")) + r"\Z")


def _cells(line: str) -> list[str]:
    return re.split(r"\s{2,}", line.strip())


def _stdout(*args: str) -> list[str]:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.stderr
    return result.stdout.splitlines()


def test_the_check_table_of_the_readme_is_the_real_one(monkeypatch: pytest.MonkeyPatch) -> None:
    block = _demo_block()
    documented = block[: block.index("") if "" in block else len(block)]
    monkeypatch.chdir(ROOT)  # as `make demo` runs it: the FILE column shows examples/...
    real = _stdout("check", "examples")
    assert len(documented) == len(real)
    for shown, line in zip(documented, real, strict=True):
        assert _pattern(shown).match(line), (shown, line)


def test_the_resolve_table_of_the_readme_is_the_real_one() -> None:
    block = _demo_block()
    title = block.index("tenant-example/example-talos (KubernetesNodes)")
    documented = [_cells(line) for line in block[title + 1 :] if line.strip()]
    real_lines = _stdout("resolve", str(ROOT / "examples"), "--pool", "tenant-example/example-talos")
    assert real_lines[0] == block[title]
    real = [_cells(line) for line in real_lines[1:] if line.strip()]
    assert len(documented) == len(real)
    for shown, cells in zip(documented, real, strict=True):
        assert len(shown) == len(cells), (shown, cells)
        for shown_cell, cell in zip(shown, cells, strict=True):
            assert _pattern(shown_cell).match(cell), (shown_cell, cell)
