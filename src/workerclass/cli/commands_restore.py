"""``restore``: the legacy-layout values of each classified Talos pool, with the template-hash proof.

The door over :mod:`workerclass.ops.restore`: it reads a STATE folder, prints, and maps the
outcome to an exit code (0 every classified Talos pool can be restored, 1 one cannot, 2
unreadable input). It prints and never writes: the values are data for the release's restore
interface, applied with hoster authorization.
"""

from __future__ import annotations

from typing import Annotated

import typer

from ..ops.restore import GUIDANCE, Restore, RestoreRow, restore
from ..render.text import yaml_document
from .app import Command, QuietOption, app, set_quiet
from .chart import chart_line
from .commands_core import (
    ChartOption,
    ExcludeOption,
    NamespaceOption,
    OutputOption,
    StateArgument,
    load_state,
    pool_option_check,
)
from .output import SETTINGS, Format, Styled, outcome, print_json, stdout, summary, table

_RESULTS = {
    "classless": Styled("no restore needed", "green"),
    "restorable": Styled("restorable", "green"),
    "kairos": Styled("not restorable", "red"),
    "denied": Styled("not restorable", "red"),
    "mismatch": Styled("not restorable", "red"),
    # a class-era setting the legacy chart cannot express: restoring it would roll the workers
    "rollout": Styled("not restorable", "red"),
}


def _result(row: RestoreRow) -> Styled:
    """The RESULT cell: a status this door does not know yet still says whether it restores."""
    known = _RESULTS.get(row.status)
    if known is not None:
        return known
    return Styled("restorable", "green") if row.restorable else Styled("not restorable", "red")


def _details(row: RestoreRow) -> str:
    lines = list(row.reasons)
    if row.status == "restorable":
        lines = [f"template hash {row.hash_current} (class) = {row.hash_restored} (restored)"]
    elif row.status in ("mismatch", "rollout") and row.hash_current != row.hash_restored:
        lines.insert(1, f"template hash {row.hash_current} (class) != {row.hash_restored or 'none'} (restored)")
    return "\n".join(lines)


def _print_restore(result: Restore) -> None:
    console = stdout()
    if not result.rows:
        console.line("no pools in STATE: nothing to restore")
    else:
        out = table("POOL", "CLASS", "RESULT", "DETAILS")
        for row in result.rows:
            out.add_row(
                row.pool,
                row.class_name if row.class_name else Styled("(none)", "dim"),
                _result(row),
                _details(row),
            )
        console.table(out)
    for row in result.rows:
        if row.status == "restorable" and row.values is not None:
            console.line("")
            console.line(Styled(row.pool, "bold"), f" ({row.kind} {row.field}), legacy layout:")
            # Verbatim: text meant to be applied.
            console.stream.write(yaml_document(dict(row.values)))
    if SETTINGS.quiet:
        return
    console.line("")
    console.line(Styled("Before reverting to a chart without class support:", "bold"))
    for line in GUIDANCE:
        console.line(f"- {line}")
    blocked = len(result.blocked)
    restorable = sum(1 for row in result.rows if row.status == "restorable")
    classless = sum(1 for row in result.rows if row.status == "classless")
    count = len(result.rows)
    text = f"{count} pool{'' if count == 1 else 's'}: {restorable} restorable, {classless} already classless, "
    text += f"{blocked} cannot be restored"
    summary(console, chart_line(result.chart))
    summary(console, text, "red" if blocked else "green")


@app.command("restore", cls=Command)
def restore_command(
    state_path: StateArgument,
    pool: Annotated[str | None, typer.Option("--pool", metavar="NS/NAME", help="Only this pool.")] = None,
    output: OutputOption = Format.table,
    exclude: ExcludeOption = None,
    chart: ChartOption = None,
    namespace: NamespaceOption = None,
    quiet: QuietOption = False,
) -> None:
    """The legacy-layout values of each classified Talos pool of STATE, with the template-hash proof.

    For a rollback to a chart without class support. Each classified Talos pool's values are
    printed without workerClassName and with its effective Talos settings written out; they
    are restorable when, resolved as a classless pool and rendered, they give the same template
    hash and rendered objects. Already-classless pools need nothing; Kairos pools cannot be
    restored (migrate workloads and get removal approved first); denied pools cannot either, nor
    pools using a class-era setting the legacy chart cannot express (kernel modules, a builtin
    golden or custom factory disk, an Image Factory CA): restoring those would roll the workers.

    Nothing is written or applied: give the values to the release's restore interface with
    hoster authorization, then verify the old chart's resources and template hashes.

    -o json prints {"chart": {the chart emulated}, "pools": [{"pool": "NS/NAME", "class": str|null, "bootstrap":
    "talos"|"kairos", "restorable": bool, "values": {legacy values}|null, "templateHash":
    {"current": str|null, "restored": str|null, "version": str}, "reasons": [str]}]}.

    Exit 0 when every classified Talos pool can be restored, 1 when a pool cannot (Kairos,
    denied, a class-era setting, hash mismatch), 2 when STATE cannot be read.
    """
    set_quiet(quiet)
    state = load_state(state_path, exclude, chart=chart, namespace=namespace)
    pool_option_check(state, pool, state_path)
    result = restore(state, pool=pool)
    if output is Format.json:
        print_json(result.as_dict())
    else:
        _print_restore(result)
    raise typer.Exit(outcome(bool(result.blocked)))


__all__ = ["restore_command"]
