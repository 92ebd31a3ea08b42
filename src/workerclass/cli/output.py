"""Output for people and scripts: JSON exactly as API.md fixes it, tables for people.

Tables are plain text laid out here (not by rich): columns two spaces apart, no padding after
the last column and no trailing blanks, never folded, so a piped table stays greppable and
copyable and 10,000 pools print in well under a second. Colour only on a terminal (NO_COLOR
is honoured). Errors go to stderr as one line, never a traceback. ``-q`` silences warnings and
summaries (:data:`SETTINGS`), never results or errors.
"""

from __future__ import annotations

import gc
import json
import os
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, NoReturn, TextIO, cast

import typer

from ..violations import Violation

EXIT_OK = 0
EXIT_DENIED = 1
EXIT_USAGE = 2
#: ``plan --detailed-exitcode``: machines would be replaced (or deleted).
EXIT_REPLACE = 2
#: ``plan --detailed-exitcode``: an error (unreadable input, a usage error), as terraform says it,
#: so that 2 keeps its one meaning there
EXIT_DETAILED_ERROR = 1
#: Ctrl-C, as shells report a process ended by SIGINT (128 + 2).
EXIT_INTERRUPTED = 130
#: The reader of stdout went away (``| head``), as shells report SIGPIPE (128 + 13).
EXIT_BROKEN_PIPE = 141


class Format(StrEnum):
    table = "table"
    json = "json"


class ManifestFormat(StrEnum):
    """``-o`` of the commands that print Kubernetes objects."""

    yaml = "yaml"
    json = "json"


@dataclass
class Settings:
    quiet: bool = False
    #: the exit code of :func:`fail` (input or usage errors): 2, or 1 under ``plan --detailed-exitcode``
    error_exit: int = EXIT_USAGE
    #: parts of STATE that could not be read (said on stderr): the command goes on with the rest
    #: and exits :attr:`error_exit` at the end (:func:`outcome`)
    read_errors: int = 0
    #: those parts, each a line naming file and line (for ``-o json`` and ``-o junit``)
    read_error_lines: list[str] = field(default_factory=list)


SETTINGS = Settings()

_CODES = {"red": "31", "green": "32", "yellow": "33", "cyan": "36", "dim": "2", "bold": "1"}


def colour(stream: TextIO) -> bool:
    """Colour only on a terminal, and never with NO_COLOR set."""
    if os.environ.get("NO_COLOR"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


@dataclass(frozen=True, slots=True)
class Styled:
    """A table cell or a line with one style (``red``, ``green``, ``yellow``, ``cyan``, ``dim``, ``bold``)."""

    text: str
    style: str = ""


Cell = str | Styled | list[Styled]


def paint(text: str, style: str, enabled: bool) -> str:
    if not enabled or not style or not text:
        return text
    codes = ";".join(_CODES[part] for part in style.split() if part in _CODES)
    return f"\x1b[{codes}m{text}\x1b[0m" if codes else text


def _lines(cell: Cell) -> tuple[list[str], list[str] | None]:
    """A cell as its lines and their styles (``None``: all plain)."""
    if type(cell) is str:
        return (cell.split("\n") if "\n" in cell else [cell]), None
    if isinstance(cell, Styled):
        texts = cell.text.split("\n")
        return texts, [cell.style] * len(texts)
    assert isinstance(cell, list)
    texts, styles = [], []
    for piece in cell:
        for text in piece.text.split("\n"):
            texts.append(text)
            styles.append(piece.style)
    return (texts or [""]), (styles or None)


#: a row as :meth:`Table.add_row` keeps it: its cells' texts when each is one unstyled line (the
#: common row, kept as given), else each cell's lines and their styles
_Row = tuple[str, ...] | list[tuple[list[str], list[str] | None]]


class Table:
    """A plain text table: a bold header, rows of cells (multi-line cells allowed)."""

    def __init__(self, *columns: str, title: str | None = None) -> None:
        self.columns = columns
        self.title = title
        self.rows: list[_Row] = []

    def add_row(self, *cells: Cell) -> None:
        if len(cells) == len(self.columns):
            for cell in cells:
                if type(cell) is not str or "\n" in cell:
                    break
            else:
                self.rows.append(cast(tuple[str, ...], cells))  # every cell a str: checked just above
                return
        row = [_lines(cell) for cell in cells]
        while len(row) < len(self.columns):
            row.append(([""], None))
        self.rows.append(row)

    def __len__(self) -> int:
        return len(self.rows)

    def lines(self, *, colour_on: bool = False) -> list[str]:
        widths = [len(column) for column in self.columns]
        for row in self.rows:
            if isinstance(row, tuple):
                for index, text in enumerate(row):
                    if len(text) > widths[index]:
                        widths[index] = len(text)
                continue
            for index, (texts, _) in enumerate(row):
                for text in texts:
                    if len(text) > widths[index]:
                        widths[index] = len(text)
        last = len(self.columns) - 1
        out: list[str] = []
        if self.title:
            out.append(paint(self.title, "bold", colour_on))
        header = "  ".join(column.ljust(widths[i]) if i < last else column for i, column in enumerate(self.columns))
        out.append(paint(header.rstrip(), "bold", colour_on))
        plain = not colour_on
        three = last == 2
        if three:
            first, second = widths[0], widths[1]
        for row in self.rows:
            if isinstance(row, tuple):
                # The common row: one line per cell, nothing to paint.
                if three:  # SETTING VALUE WHY, the tables of resolve and check: the join unrolled
                    out.append(f"{row[0].ljust(first)}  {row[1].ljust(second)}  {row[2]}".rstrip())
                elif last:
                    line = "  ".join([text.ljust(widths[i]) for i, text in enumerate(row[:last])])
                    out.append((line + "  " + row[last]).rstrip())
                else:
                    out.append(row[0].rstrip())
                continue
            height = max(len(texts) for texts, _ in row)
            if height == 1 and (plain or all(styles is None for _, styles in row)):
                line = "  ".join([texts[0].ljust(widths[i]) for i, (texts, _) in enumerate(row[:last])])
                out.append((line + "  " + row[last][0][0]).rstrip() if last else row[0][0][0].rstrip())
                continue
            for depth in range(height):
                parts: list[str] = []
                for index, (texts, styles) in enumerate(row):
                    text = texts[depth] if depth < len(texts) else ""
                    pad = "" if index == last else " " * (widths[index] - len(text))
                    if colour_on and styles is not None and depth < len(styles):
                        text = paint(text, styles[depth], True)
                    parts.append(text + pad)
                out.append("  ".join(parts).rstrip())
        return out


class Printer:
    """Lines to one stream, coloured only on a terminal."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.colour = colour(stream)

    def line(self, *pieces: str | Styled) -> None:
        text = "".join(
            paint(piece.text, piece.style, self.colour) if isinstance(piece, Styled) else piece for piece in pieces
        )
        self.stream.write(text + "\n")

    def table(self, table: Table) -> None:
        self.stream.write("\n".join(table.lines(colour_on=self.colour)) + "\n")


def stdout() -> Printer:
    return Printer(sys.stdout)


def stderr() -> Printer:
    return Printer(sys.stderr)


def warn(message: str) -> None:
    """``warning: message`` on stderr, unless ``-q``."""
    if not SETTINGS.quiet:
        stderr().line(Styled("warning:", "yellow"), " ", message)


def summary(printer: Printer, text: str, style: str = "") -> None:
    """A summary line for people, unless ``-q``."""
    if not SETTINGS.quiet:
        printer.line(Styled(text, style))


def error(message: str) -> None:
    """``error: message`` on stderr (never silenced by ``-q``), without ending the command."""
    stderr().line(Styled("error:", "bold red"), " ", message)


def outcome(denied: bool) -> int:
    """A command's exit code: an error first (part of STATE unreadable), then a denial, else 0."""
    if SETTINGS.read_errors:
        return SETTINGS.error_exit
    return EXIT_DENIED if denied else EXIT_OK


def fail(message: str, code: int | None = None) -> NoReturn:
    """One clean line on stderr, then exit (by default :attr:`Settings.error_exit`: 2, bad input or
    unreadable state; 1 under ``plan --detailed-exitcode``)."""
    stderr().line(Styled("error:", "bold red"), " ", message)
    raise typer.Exit(SETTINGS.error_exit if code is None else code)


def no_pool(pool: str, state_path: object) -> str:
    """The error for a ``--pool`` that names no pool (and says the form when it is not NS/NAME)."""
    if pool.count("/") != 1 or not all(pool.split("/")):
        return f"--pool takes NS/NAME (a namespace and a pool name), not {pool!r}"
    return f"no pool {pool} in {state_path}"


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=False) + "\n")


def table(*columns: str, title: str | None = None) -> Table:
    return Table(*columns, title=title)


def denial_line(label: str, violation: Violation) -> list[str | Styled]:
    """``NS/NAME: CODE field: message``, the code in red on a terminal."""
    return [f"{label}: ", Styled(violation.code, "red"), f" {violation.field}: {violation.message}"]


def print_denials(label: str, denials: Iterable[Violation]) -> None:
    """Each denial on stderr as ``NS/NAME: CODE field: message`` (denials are never silenced by ``-q``)."""
    console = stderr()
    for violation in denials:
        console.line(*denial_line(label, violation))


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a one-shot command builds large acyclic trees.

    Loaded objects and rendered manifests are plain nested dicts and lists without cycles;
    every collector pass would rescan all of them as they grow, which costs several times the
    rendering itself on 10,000 pools (see bench/README.md). Reference counting still frees
    everything; the collector is restored on the way out, also on errors.

    What the command made while paused is counted as young: enabled as it is, the collector would
    scan all of it at the next allocation (0.16 s after a 10,000-pool ``resolve``, while the
    command is already exiting). Freezing and unfreezing first moves it to the oldest generation
    unscanned (two list splices), where a full collection finds it as usual; skipped when objects
    are frozen already (they are someone else's to unfreeze).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            if not gc.get_freeze_count():
                gc.freeze()
                gc.unfreeze()
            gc.enable()
