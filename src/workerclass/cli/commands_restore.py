"""``restore``: the legacy-layout values of each classified Talos pool, with the template-hash proof.

The door over :mod:`workerclass.ops.restore`: it reads a STATE folder, prints, and maps the
outcome to an exit code (0 every classified Talos pool can be restored, 1 one cannot, 2
unreadable input). It prints and never writes: the values are data for the release's restore
interface, applied with hoster authorization.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape

from ..ops.restore import GUIDANCE, Restore, RestoreRow, restore
from ..render.text import yaml_document
from .commands_core import OutputOption, StateArgument, load_state
from .main import app
from .output import EXIT_DENIED, EXIT_OK, Format, fail, no_pool, print_json, stdout, table

_RESULTS = {
    "classless": "[green]no restore needed[/]",
    "restorable": "[green]restorable[/]",
    "kairos": "[red]not restorable[/]",
    "denied": "[red]not restorable[/]",
    "mismatch": "[red]not restorable[/]",
}


def _details(row: RestoreRow) -> str:
    lines = [escape(reason) for reason in row.reasons]
    if row.status == "restorable":
        lines = [f"template hash {row.hash_current} (class) = {row.hash_restored} (restored)"]
    elif row.status == "mismatch":
        lines.insert(1, f"template hash {row.hash_current} (class) != {row.hash_restored or 'none'} (restored)")
    return "\n".join(lines)


def _print_restore(result: Restore) -> None:
    console = stdout()
    if not result.rows:
        console.print("no pools in STATE: nothing to restore")
    else:
        out = table("POOL", "CLASS", "RESULT", "DETAILS")
        for row in result.rows:
            out.add_row(
                escape(row.pool),
                escape(row.class_name) if row.class_name else "[dim](none)[/]",
                _RESULTS.get(row.status, escape(row.status)),
                _details(row),
            )
        console.print(out)
    for row in result.rows:
        if row.status == "restorable" and row.values is not None:
            console.print()
            console.print(f"[bold]{escape(row.pool)}[/] ({row.kind} {row.field}), legacy layout:")
            # Verbatim: no markup, emoji codes or folding of long values in text meant to be applied.
            console.out(yaml_document(dict(row.values)), end="", highlight=False)
    console.print()
    console.print("[bold]Before reverting to a chart without class support:[/]")
    for line in GUIDANCE:
        console.print(f"- {escape(line)}", soft_wrap=True)
    blocked = len(result.blocked)
    restorable = sum(1 for row in result.rows if row.status == "restorable")
    classless = sum(1 for row in result.rows if row.status == "classless")
    count = len(result.rows)
    summary = f"{count} pool{'' if count == 1 else 's'}: {restorable} restorable, {classless} already classless, "
    summary += f"{blocked} cannot be restored"
    console.print(f"[{'red' if blocked else 'green'}]{summary}[/]")


@app.command("restore")
def restore_command(
    state_path: StateArgument,
    pool: Annotated[str | None, typer.Option("--pool", metavar="NS/NAME", help="Only this pool.")] = None,
    output: OutputOption = Format.table,
) -> None:
    """The legacy-layout values of each classified Talos pool of STATE, with the template-hash proof.

    For a rollback to a chart without class support. Each classified Talos pool's values are
    printed without workerClassName and with its effective Talos settings written out; they
    are restorable when, resolved as a classless pool and rendered, they give the same template
    hash and rendered objects. Already-classless pools need nothing; Kairos pools cannot be
    restored (migrate workloads and get removal approved first); denied pools cannot either.

    Nothing is written or applied: give the values to the release's restore interface with
    hoster authorization, then verify the old chart's resources and template hashes.

    -o json prints {"pools": [{"pool": "NS/NAME", "class": str|null, "bootstrap":
    "talos"|"kairos", "restorable": bool, "values": {legacy values}|null, "templateHash":
    {"current": str|null, "restored": str|null, "version": str}, "reasons": [str]}]}.

    Exit 0 when every classified Talos pool can be restored, 1 when a pool cannot (Kairos,
    denied, hash mismatch), 2 when STATE cannot be read.
    """
    state = load_state(state_path)
    if pool is not None and state.pool(pool) is None:
        fail(no_pool(pool, state_path))
    result = restore(state, pool=pool)
    if output is Format.json:
        print_json(result.as_dict())
    else:
        _print_restore(result)
    raise typer.Exit(EXIT_DENIED if result.blocked else EXIT_OK)


__all__ = ["restore_command"]
