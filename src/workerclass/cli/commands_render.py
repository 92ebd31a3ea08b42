"""``render`` and ``plan``: Cluster API objects for the pools, and which machines a change replaces.

The door over :mod:`workerclass.render` and :mod:`workerclass.ops.plan`: it reads STATE folders,
prints, and maps outcomes to exit codes (0 ok, 1 a selected pool denied, 2 unreadable input).
Manifests go to stdout and nothing else does, so ``workerclass render STATE | kubectl apply -f -``
works; denials and warnings go to stderr.
"""

from __future__ import annotations

import inspect
import json
import sys
from collections.abc import Callable, Iterable, Iterator
from enum import StrEnum
from typing import Annotated, Any

import typer

from ..ops.plan import IN_PLACE, NEW_MACHINES_ONLY, REBUILD_ONLY, REFUSED, Plan, plan
from ..render import RenderError, render, sort_manifests
from ..render.text import iter_manifests_yaml
from ..resolve import resolve_all
from ..state import State
from ..violations import Violation
from .app import QuietOption, app, set_quiet
from .chart import chart_line
from .commands_core import ChartOption, StateArgument, load_state, render_denials, selected_pool
from .output import (
    EXIT_DENIED,
    EXIT_OK,
    Format,
    Styled,
    collector_paused,
    denial_line,
    fail,
    print_denials,
    print_json,
    stderr,
    stdout,
    summary,
    table,
    warn,
)


class ManifestFormat(StrEnum):
    yaml = "yaml"
    json = "json"


def _iter_render_json(items: Iterable[dict[str, Any]], pools: list[dict[str, Any]]) -> Iterator[str]:
    """``{"items": [...], "pools": [...]}`` (API.md section 4, exactly those keys), one item at a time."""
    yield '{\n  "items": ['
    first = True
    for item in items:
        text = json.dumps(item, indent=2, sort_keys=True, ensure_ascii=False).replace("\n", "\n    ")
        yield ("\n    " if first else ",\n    ") + text
        first = False
    yield "]" if first else "\n  ]"
    yield ',\n  "pools": ' + json.dumps(pools, indent=2, ensure_ascii=False).replace("\n", "\n  ") + "\n}\n"


@app.command("render")
def render_command(
    state_path: StateArgument,
    pool: Annotated[str | None, typer.Option("--pool", metavar="NS/NAME", help="Only this pool.")] = None,
    output: Annotated[
        ManifestFormat,
        typer.Option("--output", "-o", help='yaml: documents separated by ---; json: {"items", "pools"}.'),
    ] = ManifestFormat.yaml,
    talos_config_template: Annotated[
        bool,
        typer.Option(
            "--talos-config-template",
            help="Also print each Talos pool's TalosConfigTemplate (the one the chart's Job applies), with the "
            "Job's run-time inputs as ${NAME} placeholders.",
        ),
    ] = False,
    chart: ChartOption = None,
    quiet: QuietOption = False,
) -> None:
    """The Cluster API objects for the pools of STATE, sorted by kind, then name.

    Manifests go to stdout and nothing else does; warnings and denials go to stderr (a denial as
    NS/NAME: CODE field: message). -o json prints {"items":
    [objects], "pools": [{"pool", "denials", "warnings"}]} with a row for every pool.

    Exit 0 when every selected pool renders, 1 when one is denied (the other pools are still
    printed), 2 when STATE cannot be read.
    """
    set_quiet(quiet)
    if talos_config_template and not RENDER_TALOS_CONFIG_TEMPLATE:
        fail("--talos-config-template: this renderer cannot print the TalosConfigTemplate yet")
    with collector_paused():
        state = load_state(state_path, chart)
        pool = selected_pool(state, pool, state_path)
        manifests, rows, denied = _render_pools(state, pool, talos_config_template)
        ordered = sort_manifests(manifests)
        del manifests
        # Written piece by piece: one string of 10,000 pools' manifests would double peak memory.
        chunks = _iter_render_json(ordered, rows) if output is ManifestFormat.json else iter_manifests_yaml(ordered)
        write = sys.stdout.write
        for chunk in chunks:
            write(chunk)
    raise typer.Exit(EXIT_DENIED if denied else EXIT_OK)


#: Whether the renderer takes ``talos_config_template=True`` (print the stable-named TalosConfigTemplate).
RENDER_TALOS_CONFIG_TEMPLATE = "talos_config_template" in inspect.signature(render).parameters
_render: Callable[..., list[dict[str, Any]]] = render


def _render_pools(
    state: State, pool: str | None, talos_config_template: bool = False
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], bool]:
    """Manifests of the selected pools, a ``{"pool", "denials", "warnings"}`` row each, and whether one was denied."""
    denied = False
    manifests: list[dict[str, Any]] = []
    rows: list[dict[str, Any]] = []
    for record, effective, denials, warnings in resolve_all(state):
        if pool is not None and record.identity != pool:
            continue
        for warning in warnings:
            warn(f"{record.identity}: {warning}")
        if effective is not None:
            try:
                if talos_config_template:
                    manifests.extend(_render(effective, talos_config_template=True))
                else:
                    manifests.extend(render(effective))
            except RenderError as error:
                denials = render_denials(record, error)
        if denials or effective is None:
            denied = True
            print_denials(record.identity, denials)
        rows.append(
            {
                "pool": record.identity,
                "denials": [violation.as_dict() for violation in denials],
                "warnings": list(warnings),
            }
        )
    return manifests, rows, denied


def _reasons_cell(reasons: tuple[str, ...]) -> list[Styled]:
    lines = []
    for reason in reasons:
        style = ""
        if reason.startswith(IN_PLACE):
            style = "dim"
        elif reason.startswith(REBUILD_ONLY) or NEW_MACHINES_ONLY in reason:
            style = "yellow"
        elif reason.startswith(REFUSED) or reason.startswith("denied"):
            style = "red"
        lines.append(Styled(reason, style))
    return lines


_ACTION_STYLE = {
    "create": "green",
    "delete": "red",
    "replace": "red",
    "update": "yellow",
    "unchanged": "dim",
    "unpredicted": "red",
}


def _print_plan(result: Plan) -> None:
    console = stdout()
    for refusal in result.refusals:
        for violation in refusal.denials:
            console_err = stderr()
            console_err.line(*denial_line(f"{refusal.kind} {refusal.name}", violation))
    if not result.rows:
        summary(console, "no pools in either STATE")
        return
    out = table("POOL", "ACTION", "REPLACE", "REFUSED", "REASONS")
    for row in result.rows:
        if row.replace is None:
            verdict = Styled("?", "red")
        elif row.replace:
            verdict = Styled("yes" + (" (rebuild only)" if row.rebuild_only else ""), "red")
        else:
            verdict = Styled("no", "green")
        out.add_row(
            row.pool,
            Styled(row.action, _ACTION_STYLE.get(row.action, "")),
            verdict,
            Styled(", ".join(row.refused), "red"),
            _reasons_cell(row.reasons) or [Styled("unchanged", "dim")],
        )
    console.table(out)
    replacing = result.replacing
    rebuilds = sum(1 for row in replacing if row.rebuild_only)
    count = len(result.rows)
    text = f"{count} pool{'' if count == 1 else 's'}, {len(replacing)} would replace machines"
    if rebuilds:
        text += f", {rebuilds} only because a platform Kairos image was rebuilt"
    deleting, refused = len(result.deleting), len(result.refused)
    if deleting:
        text += f", {deleting} deleted"
    if refused or result.refusals:
        text += f", {refused + len(result.refusals)} refused by admission or denied"
    bad = replacing or deleting or refused or result.refusals or result.unpredicted
    if result.unpredicted:
        text += f", {len(result.unpredicted)} not predicted (another chart)"
    summary(console, chart_line(result.chart))
    summary(console, text, "red" if bad else "green")


@app.command("plan")
def plan_command(
    state_path: StateArgument,
    to: Annotated[
        list[str],
        typer.Option(
            "--to",
            metavar="STATE2",
            help="The STATE after the change (repeat for several paths; - for stdin).",
            show_default=False,
        ),
    ],
    output: Annotated[
        Format, typer.Option("--output", "-o", help="table for people, json for scripts.")
    ] = Format.table,
    detailed_exitcode: Annotated[
        bool,
        typer.Option(
            "--detailed-exitcode",
            help="Exit 0 nothing replaced, deleted or refused; 2 machines would be replaced or deleted; "
            "1 a change is refused or a pool denied.",
        ),
    ] = False,
    chart: ChartOption = None,
    quiet: QuietOption = False,
) -> None:
    """What going from STATE to STATE2 does to each pool's machines, and why.

    A row for every pool in either state: action create, delete, replace, update or unchanged;
    replace (running machines would be replaced: the MachineDeployment's machine template rolls);
    refused (the admission codes that refuse the change, or that deny the pool in STATE2; action
    then says what it would do if let through); rebuildOnly (the replacement comes only from a
    rebuilt platform Kairos image); newMachinesOnly (settings, such as a TalosConfigTemplate's,
    that change under an unchanged name and reach only machines created afterwards: running
    machines keep the old config until they are replaced). STATE2 is read as admission would
    store it: an UPDATE of the pool in STATE (a pool that omits its class keeps the stored one),
    a CREATE for a new pool.

    -o json prints {"chart": {the chart emulated}, "pools": [{"pool", "action", "replace", "refused",
    "rebuildOnly", "newMachinesOnly", "reasons"}]}; a pool whose release runs another chart than the one
    emulated (as STATE shows it) is "unpredicted", with "replace": null.

    Exit 0; 2 when a STATE cannot be read. With --detailed-exitcode, as terraform plan: 0 nothing
    replaced and nothing refused (creates and in-place updates are fine), 2 machines would be
    replaced or deleted (a destroy is a change: deleting a pool removes its machines), 1 a change
    is refused or a pool denied (refusals win over replacements).
    """
    set_quiet(quiet)
    if "-" in state_path and "-" in to:
        fail("stdin (-) can be STATE or STATE2, not both")
    with collector_paused():
        before = load_state(state_path, chart)
        after = load_state(to, chart)
        try:
            result = plan(before, after)
        except RenderError as error:
            # A pool the chart refuses is a denied row of the plan; one that escapes it still
            # ends as a denial line, never a traceback.
            label, _, message = str(error).partition(": ")
            print_denials(label if message else "plan", [Violation("Invalid", "spec", message or str(error))])
            raise typer.Exit(EXIT_DENIED) from None
    if output is Format.json:
        for refusal in result.refusals:
            print_denials(f"{refusal.kind} {refusal.name}", refusal.denials)
        print_json(result.as_dict())
    else:
        _print_plan(result)
    raise typer.Exit(result.detailed_exit_code() if detailed_exitcode else EXIT_OK)


__all__ = ["RENDER_TALOS_CONFIG_TEMPLATE", "plan_command", "render_command"]
