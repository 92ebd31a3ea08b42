"""``preflight``: is the installed webhook safe to rely on before class-defaulting creates are exposed?

The door over :mod:`workerclass.ops.preflight`: it reads a STATE folder, prints the checks (a
table and a one-line verdict, or the JSON of API.md section 4) and maps the verdict to an exit
code (0 safe, 1 not, 2 unreadable STATE).
"""

from __future__ import annotations

import typer

from ..ops.preflight import Preflight, preflight
from .app import QuietOption, app, set_quiet
from .commands_core import OutputOption, StateArgument, load_state
from .output import EXIT_DENIED, EXIT_OK, Format, Styled, print_json, stdout, summary, table

_STYLE = {"ok": "green", "warn": "yellow", "fail": "red"}


def _print_table(result: Preflight) -> None:
    out = table("CHECK", "VERDICT", "OBJECT", "FIELD", "MESSAGE")
    for check in result.checks:
        out.add_row(
            check.check,
            Styled(check.verdict, _STYLE[check.verdict]),
            check.object or "",
            check.field or "",
            check.message,
        )
    console = stdout()
    console.table(out)
    failed = sum(1 for check in result.checks if check.verdict == "fail")
    warned = sum(1 for check in result.checks if check.verdict == "warn")
    warnings = f"{warned} warning{'' if warned == 1 else 's'}"
    if result.safe:
        summary(console, f"safe: no check failed ({warnings})", "green")
    else:
        summary(console, f"not safe: {failed} check{'' if failed == 1 else 's'} failed ({warnings})", "red")


@app.command("preflight")
def preflight_command(
    state_path: StateArgument, output: OutputOption = Format.table, quiet: QuietOption = False
) -> None:
    """Verify the installed webhook's matching, failure policy and readiness from STATE.

    STATE holds the install (webhook configurations, Service, Deployment with its status,
    PodDisruptionBudget), best exported from the live cluster. Exit 0 when safe (warnings
    allowed), 1 when any check fails, 2 when STATE cannot be read.
    """
    set_quiet(quiet)
    result = preflight(load_state(state_path))
    if output is Format.json:
        print_json(result.as_dict())
    else:
        _print_table(result)
    raise typer.Exit(EXIT_OK if result.safe else EXIT_DENIED)
