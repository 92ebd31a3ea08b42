"""``render`` and ``plan``: Cluster API objects for the pools, and which machines a change replaces.

The door over :mod:`workerclass.render` and :mod:`workerclass.ops.plan`: it reads STATE folders,
prints, and maps outcomes to exit codes (0 ok, 1 a selected pool denied, 2 unreadable input).
Manifests go to stdout and nothing else does, so ``workerclass render STATE | kubectl apply -f -``
works; denials and warnings go to stderr.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from ..ops import Plan, plan
from ..render import RenderError, render, sort_manifests
from ..render.text import iter_list_json, iter_manifests_yaml
from ..resolve import resolve_all
from ..state import State
from ..violations import Violation
from .commands_core import StateArgument, load_state
from .main import app
from .output import EXIT_DENIED, EXIT_OK, Format, fail, no_pool, print_json, stderr, stdout, table


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a one-shot command builds large acyclic trees.

    Loaded objects and rendered manifests are plain nested dicts and lists without cycles;
    every collector pass would rescan all of them as they grow, which costs several times the
    rendering itself on 10,000 pools (see bench/README.md). Reference counting still frees
    everything; the collector is restored on the way out, also on errors.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class ManifestFormat(StrEnum):
    yaml = "yaml"
    json = "json"


@app.command("render")
def render_command(
    state_path: StateArgument,
    pool: Annotated[str | None, typer.Option("--pool", metavar="NS/NAME", help="Only this pool.")] = None,
    output: Annotated[
        ManifestFormat,
        typer.Option("--output", "-o", help="yaml: documents separated by ---; json: one v1 List."),
    ] = ManifestFormat.yaml,
) -> None:
    """The Cluster API objects for the pools of STATE, sorted by kind, then name.

    Exit 0 when every selected pool renders, 1 when one is denied (its denials on stderr as
    CODE field: message; the other pools are still printed), 2 when STATE cannot be read.
    """
    with collector_paused():
        state = load_state(state_path)
        if pool is not None and state.pool(pool) is None:
            fail(no_pool(pool, state_path))
        manifests, denied = _render_pools(state, pool)
        ordered = sort_manifests(manifests)
        del manifests
        # Written piece by piece: one string of 10,000 pools' manifests would double peak memory.
        chunks = iter_list_json(ordered) if output is ManifestFormat.json else iter_manifests_yaml(ordered)
        write = sys.stdout.write
        for chunk in chunks:
            write(chunk)
    raise typer.Exit(EXIT_DENIED if denied else EXIT_OK)


def _print_denials(identity: str, denials: Iterable[Violation]) -> None:
    """``NS/NAME: CODE field: message`` per denial on stderr; tenant text is escaped, never markup."""
    console = stderr()
    for violation in denials:
        where = f"{escape(violation.field)}: {escape(violation.message)}"
        console.print(f"{escape(identity)}: [red]{escape(violation.code)}[/] {where}", markup=True)


def _render_pools(state: State, pool: str | None) -> tuple[list[dict[str, Any]], bool]:
    """Manifests of the selected pools, and whether one was denied (reported on stderr)."""
    denied = False
    manifests: list[dict[str, Any]] = []
    console = stderr()
    for record, effective, denials, warnings in resolve_all(state):
        if pool is not None and record.identity != pool:
            continue
        for warning in warnings:
            console.print(f"[yellow]warning:[/] {escape(record.identity)}: {escape(warning)}", markup=True)
        if effective is None:
            denied = True
            _print_denials(record.identity, denials)
            continue
        try:
            manifests.extend(render(effective))
        except RenderError as error:
            denied = True
            _print_denials(record.identity, [Violation("Invalid", record.field, str(error))])
    return manifests, denied


def _reasons_cell(reasons: tuple[str, ...]) -> str:
    lines = []
    for reason in reasons:
        style = "dim" if reason.startswith("in place:") else "yellow" if reason.startswith("platform image") else ""
        lines.append(f"[{style}]{escape(reason)}[/]" if style else escape(reason))
    return "\n".join(lines)


def _print_plan(result: Plan) -> None:
    console = stdout()
    out = table("POOL", "REPLACE", "REASONS")
    for row in result.rows:
        if row.replace:
            verdict = "[red]yes[/]" + (" [yellow](rebuild only)[/]" if row.rebuild_only else "")
        else:
            verdict = "[green]no[/]"
        out.add_row(escape(row.pool), verdict, _reasons_cell(row.reasons) or "[dim]unchanged[/]")
    if not result.rows:
        console.print("no pools in either STATE")
        return
    console.print(out)
    replacing = result.replacing
    rebuilds = sum(1 for row in replacing if row.rebuild_only)
    summary = f"{len(result.rows)} pools, {len(replacing)} would replace machines"
    if rebuilds:
        summary += f", {rebuilds} only because a platform Kairos image was rebuilt"
    console.print(f"[{'red' if replacing else 'green'}]{summary}[/]")


@app.command("plan")
def plan_command(
    state_path: StateArgument,
    to: Annotated[
        Path,
        typer.Option("--to", metavar="STATE2", help="The STATE folder after the change.", show_default=False),
    ],
    output: Annotated[
        Format, typer.Option("--output", "-o", help="table for people, json for scripts.")
    ] = Format.table,
) -> None:
    """Which pools' machines would be replaced going from STATE to STATE2, and why.

    A row for every pool in either state. Replacements that come only from a rebuilt platform
    Kairos image (a new digest, the same Kubernetes version) are flagged. Exit 0; 2 when a
    STATE cannot be read.
    """
    with collector_paused():
        before = load_state(state_path)
        after = load_state(to)
        result = plan(before, after)
    if output is Format.json:
        print_json(result.as_dict())
    else:
        _print_plan(result)
    raise typer.Exit(EXIT_OK)


__all__ = ["plan_command", "render_command"]
