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
from typing import Annotated, Any

import typer
from typer import _click

from ..ops.plan import IN_PLACE, NEW_MACHINES_ONLY, REBUILD_ONLY, REFUSED, Plan, plan
from ..ops.providers import kairos_path_of
from ..render import RenderError, render, sort_manifests
from ..render.text import iter_manifests_yaml
from ..resolve import resolve_all
from ..state import State
from ..violations import Violation
from .app import Command, QuietOption, app, set_quiet
from .chart import chart_line
from .commands_core import (
    ChartOption,
    ExcludeOption,
    NamespaceOption,
    StateArgument,
    load_state,
    render_denials,
    selected_pool,
)
from .output import (
    EXIT_DENIED,
    EXIT_DETAILED_ERROR,
    EXIT_OK,
    SETTINGS,
    Format,
    ManifestFormat,
    Styled,
    collector_paused,
    fail,
    outcome,
    print_denials,
    print_json,
    stdout,
    summary,
    table,
    warn,
)


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


@app.command("render", cls=Command)
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
    exclude: ExcludeOption = None,
    chart: ChartOption = None,
    namespace: NamespaceOption = None,
    quiet: QuietOption = False,
) -> None:
    """The Cluster API objects for the pools of STATE, in apply order: templates, bootstrap data,
    MachineDeployments, health checks, WorkloadMonitors, then the rest, each by namespace and name.

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
        state = load_state(state_path, exclude, chart=chart, namespace=namespace)
        pool = selected_pool(state, pool, state_path)
        manifests, rows, denied = _render_pools(state, pool, talos_config_template)
        ordered = sort_manifests(manifests)
        del manifests
        # Written piece by piece: one string of 10,000 pools' manifests would double peak memory.
        chunks = _iter_render_json(ordered, rows) if output is ManifestFormat.json else iter_manifests_yaml(ordered)
        write = sys.stdout.write
        for chunk in chunks:
            write(chunk)
    raise typer.Exit(outcome(denied))


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
    kairos_path = kairos_path_of(state)  # the bootstrap path the STATE's cluster gives Kairos pools
    for record, effective, denials, warnings in resolve_all(state):
        if pool is not None and record.identity != pool:
            continue
        for warning in warnings:
            warn(f"{record.identity}: {warning}")
        if effective is not None:
            try:
                if talos_config_template:
                    manifests.extend(_render(effective, talos_config_template=True, kairos_path=kairos_path))
                else:
                    manifests.extend(render(effective, kairos_path=kairos_path))
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


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def plan_summary(result: Plan) -> str:
    """The plan's last line: pools counted as pools, and the refused class and platform changes apart."""
    replacing = result.replacing
    rebuilds = sum(1 for row in replacing if row.rebuild_only)
    text = f"{_plural(len(result.rows), 'pool')}, {len(replacing)} would replace machines"
    if rebuilds:
        text += f", {rebuilds} only because a platform Kairos image was rebuilt"
    if result.deleting:
        text += f", {len(result.deleting)} deleted"
    if result.refused:
        text += f", {len(result.refused)} refused (by admission or the Talos provider) or denied"
    if result.unpredicted:
        text += f", {len(result.unpredicted)} not predicted (another chart)"
    if result.refusals:
        changes = _plural(len(result.refusals), "WorkerClass or WorkerPlatform change")
        text += f"; {changes} refused"
    return text


def _print_plan(result: Plan) -> None:
    console = stdout()
    if result.rows:
        out = table("POOL", "ACTION", "REPLACE", "REFUSED", "REASONS")
        for row in result.rows:
            if row.replace is None:
                verdict = Styled("?", "red")  # another chart: not predicted
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
    if result.refusals:
        # Class and platform changes admission refuses: rows of their own (the pools that select
        # the class say so too).
        changes = table("OBJECT", "REFUSED", "REASONS")
        for refusal in result.refusals:
            changes.add_row(
                f"{refusal.kind} {refusal.name}",
                Styled(", ".join(refusal.refused), "red"),
                [Styled(f"{REFUSED} ({v.code}) {v.field}: {v.message}", "red") for v in refusal.denials],
            )
        if result.rows:
            console.line("")
        console.table(changes)
    if not result.rows and not result.refusals:
        summary(console, "no pools in either STATE")
        return
    bad = result.replacing or result.deleting or result.refused or result.refusals or result.unpredicted
    summary(console, chart_line(result.chart))
    summary(console, plan_summary(result), "red" if bad else "green")


_TO = "--to"
_DETAILED = "--detailed-exitcode"


def spread_to(args: list[str]) -> list[str]:
    """``--to A B C`` as ``--to A --to B --to C``: ``--to`` takes every path up to the next option
    (``-`` is a path: stdin), as STATE takes several; ``--to=A`` and anything after ``--`` stay."""
    out: list[str] = []
    taking = False
    for index, arg in enumerate(args):
        if arg == "--":
            return out + args[index:]
        if arg == _TO:
            taking = False
            out.append(arg)
            if index + 1 < len(args) and args[index + 1] != "--":
                taking = True
            continue
        if taking and out[-1] != _TO:
            if arg.startswith("-") and arg != "-":
                taking = False
            else:
                out.append(_TO)
        elif taking and arg.startswith("-") and arg != "-":
            taking = False  # ``--to`` followed by an option: click says the value is missing
        out.append(arg)
    return out


class PlanCommand(Command):
    """``plan``'s parsing: ``--to`` takes several paths (:func:`spread_to`), and under
    ``--detailed-exitcode`` a usage error exits 1, as every other error there (2 keeps one meaning)."""

    def make_context(
        self, info_name: str | None, args: list[str], parent: _click.Context | None = None, **extra: Any
    ) -> _click.Context:
        options = args[: args.index("--")] if "--" in args else args
        detailed = _DETAILED in options
        if detailed:
            SETTINGS.error_exit = EXIT_DETAILED_ERROR
        try:
            return super().make_context(info_name, spread_to(list(args)), parent=parent, **extra)
        except _click.exceptions.UsageError as error:
            if detailed:
                error.exit_code = EXIT_DETAILED_ERROR
            raise


@app.command("plan", cls=PlanCommand)
def plan_command(
    state_path: StateArgument,
    to: Annotated[
        list[str],
        typer.Option(
            "--to",
            metavar="STATE2...",
            help="The STATE after the change: every path up to the next option (or --to again); - for stdin.",
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
            help="Exit 0 nothing replaced, deleted or refused; 2 machines would be replaced or deleted, and "
            "nothing else; 1 a change is refused, a pool denied, or an error (unreadable STATE, usage).",
        ),
    ] = False,
    exclude: ExcludeOption = None,
    chart: ChartOption = None,
    namespace: NamespaceOption = None,
    quiet: QuietOption = False,
) -> None:
    """What going from STATE to STATE2 does to each pool's machines, and why.

    A row for every pool in either state: action create, delete, replace, update or unchanged;
    replace (running machines would be replaced: the MachineDeployment's machine template rolls);
    refused (the admission codes that refuse the change, or that deny the pool in STATE2; action
    then says what it would do if let through; TalosConfigImmutable: the TalosConfigTemplate
    changes under its stable name, which the Talos provider refuses, so the change reaches no
    machine); rebuildOnly (the replacement comes only from a rebuilt platform Kairos image);
    newMachinesOnly (settings of another template that change under an unchanged name and reach
    only machines created afterwards: running machines keep the old config until they are
    replaced). STATE2 is read as admission would store it: an UPDATE of the pool in STATE (a pool
    that omits its class keeps the stored one), a CREATE for a new pool.

    Class and platform changes admission refuses are rows of their own: -o json prints {"chart": {the
    chart emulated}, "pools": [{"pool", "action", "replace", "refused", "rebuildOnly", "newMachinesOnly",
    "reasons"}], "refusals": [{"kind", "name", "refused", "denials"}]}; a pool whose release runs another
    chart than the one emulated (as STATE shows it) is "unpredicted", with "replace": null.

    Exit 0; 2 when a STATE cannot be read or the command line is wrong. With --detailed-exitcode, as
    terraform plan: 0 nothing replaced and nothing refused (creates and in-place updates are fine),
    2 machines would be replaced or deleted and nothing else (a destroy is a change: deleting a pool
    removes its machines), 1 a change is refused, a pool denied, or an error (an unreadable STATE,
    a usage error): refusals and errors win over replacements.
    """
    set_quiet(quiet)
    if detailed_exitcode:
        SETTINGS.error_exit = EXIT_DETAILED_ERROR
    if "-" in state_path and "-" in to:
        fail("stdin (-) can be STATE or STATE2, not both")
    with collector_paused():
        # Both whole: a pool whose file could not be read would show as deleted.
        before = load_state(state_path, exclude, whole=True, chart=chart, namespace=namespace)
        after = load_state(to, exclude, whole=True, chart=chart, namespace=namespace)
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
