"""Output for people and scripts: JSON exactly as API.md fixes it, tables for people.

Colour only on a terminal (rich detects it; NO_COLOR is honoured). Errors go to stderr as one
line, never a traceback.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from enum import StrEnum
from typing import Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ..violations import Violation

EXIT_OK = 0
EXIT_DENIED = 1
EXIT_USAGE = 2


class Format(StrEnum):
    table = "table"
    json = "json"


def stdout() -> Console:
    # A pipe or a CI log has no width: never fold a value there (references and URLs stay copyable).
    return Console(highlight=False, soft_wrap=False, width=None if sys.stdout.isatty() else 4096)


def stderr() -> Console:
    return Console(stderr=True, highlight=False, soft_wrap=True)


def fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    """One clean line on stderr, then exit (2: bad input or unreadable state).

    ``message`` is plain text: paths and values that look like rich markup (``[/x]``) are shown as they are.
    """
    stderr().print(Text.assemble(("error:", "bold red"), " ", message), soft_wrap=True)
    raise typer.Exit(code)


def no_pool(pool: str, state_path: object) -> str:
    """The error for a ``--pool`` that names no pool (and says the form when it is not NS/NAME)."""
    if pool.count("/") != 1 or not all(pool.split("/")):
        return f"--pool takes NS/NAME (a namespace and a pool name), not {pool!r}"
    return f"no pool {pool} in {state_path}"


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=False) + "\n")


def table(*columns: str, title: str | None = None) -> Table:
    out = Table(title=title, title_justify="left", show_edge=False, pad_edge=False, box=None, header_style="bold")
    for column in columns:
        out.add_column(column, overflow="fold")
    return out


def print_denials(label: str, denials: Iterable[Violation]) -> None:
    console = stderr()
    for violation in denials:
        # Field paths and messages carry tenant text (label keys, values): never markup.
        console.print(
            f"{escape(label)}: [red]{violation.code}[/] {escape(violation.field)}: {escape(violation.message)}",
            markup=True,
        )
