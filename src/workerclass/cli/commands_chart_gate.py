"""``chart-gate``: put our chart gate on exactly the chart it was derived for, or refuse.

The door over :func:`workerclass.chart.gate.gate_chart` (identify by digest, insert that identity's
guards, check the result is the known gated identity) and :func:`workerclass.adapters.chart_gate.write_gated`
(write it whole or not at all). It takes a chart folder or a packaged ``.tgz``; without ``--out`` it
gates it in place, with ``--out PATH`` it writes a new folder or archive (by PATH's name) and leaves
the input alone. ``--check`` only says what the chart is.

Exit codes (docs/contract.md, section 4): 0 the chart is (now) a known gated chart; 1 ``--check``
on a known chart without the gate, or a gated result that did not verify (nothing written); 2 a chart
workerclass does not know, one it cannot read, a destination it cannot write, or a usage error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from ..adapters.chart import ChartReadError, read_chart
from ..adapters.chart_gate import GateWriteError, write_gated
from ..chart.gate import GateOutcome, gate_chart
from .app import Command, QuietOption, app, set_quiet
from .commands_core import OutputOption
from .output import EXIT_DENIED, EXIT_OK, EXIT_USAGE, Format, Styled, print_json, stderr, stdout

_HELP = """Gate a kubernetes-nodes chart (a folder or its packaged .tgz) for worker classes: identify it by
its digest, insert exactly that chart's guards (deploy/chart-gate/ holds them as patches, one per chart
version), check the result is the gated chart workerclass knows, and write it whole or not at all.
A chart workerclass does not know is refused: its gate must be derived for it, never forced onto it.

In place by default (a folder is swapped for its gated copy, an archive replaced); --out PATH writes
a new folder, or an archive when PATH ends in .tgz or .tar.gz, and leaves the input untouched. An
already gated chart is left as it is (copied to --out when given).

Exit 0 the chart is (now) gated and known (--check: it is); 1 --check: a known chart without the
gate (or a result that did not verify: nothing written); 2 a chart workerclass does not know, an
unreadable chart or an unwritable destination."""


def _report(chart: str, outcome: GateOutcome | None, *, written: Path | None, message: str) -> dict[str, Any]:
    identity = outcome.identity if outcome is not None else None
    gated = outcome.gated if outcome is not None else None
    return {
        "chart": chart,
        "status": outcome.status if outcome is not None else "unreadable",
        "identity": identity.name if identity is not None else None,
        "digest": outcome.digest if outcome is not None else None,
        "gated": gated.name if gated is not None and outcome is not None and outcome.ok else None,
        "written": str(written) if written is not None else None,
        "message": message,
    }


def _finish(report: dict[str, Any], code: int, output: Format) -> None:
    if output is Format.json:
        print_json(report)
    elif code == EXIT_OK:
        stdout().line(Styled("ok:", "green"), " ", report["message"])
    else:
        stderr().line(Styled("refused:" if code == EXIT_USAGE else "not gated:", "bold red"), " ", report["message"])
    raise typer.Exit(code)


@app.command("chart-gate", cls=Command, help=_HELP)
def chart_gate(
    chart: Annotated[
        str, typer.Argument(metavar="DIR|TGZ", help="The chart: a folder of kubernetes-nodes or its packaged .tgz.")
    ],
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            metavar="PATH",
            help="Write the gated chart here (a new path: a folder, or an archive when it ends in .tgz or "
            ".tar.gz) and leave the input untouched; default: gate the input in place.",
            show_default=False,
        ),
    ] = None,
    check: Annotated[
        bool, typer.Option("--check", help="Only say whether the chart is a known gated chart; write nothing.")
    ] = False,
    output: OutputOption = Format.table,
    quiet: QuietOption = False,
) -> None:
    set_quiet(quiet)
    if check and out is not None:
        _finish(_report(chart, None, written=None, message="--check writes nothing: leave out --out"), EXIT_USAGE,
                output)  # fmt: skip
    source = Path(chart)
    try:
        files = read_chart(source)
    except ChartReadError as error:
        _finish(_report(chart, None, written=None, message=str(error)), EXIT_USAGE, output)
    outcome = gate_chart(files)
    if outcome.status == "unknown":
        _finish(_report(chart, outcome, written=None, message=f"{chart}: {outcome.reason}"), EXIT_USAGE, output)
    if outcome.status == "mismatch":
        _finish(_report(chart, outcome, written=None, message=f"{chart}: {outcome.reason}"), EXIT_DENIED, output)
    assert outcome.gated is not None and outcome.identity is not None
    if check:
        if outcome.status == "gated":
            message = f"{chart}: {outcome.reason}"
            _finish(_report(chart, outcome, written=None, message=message), EXIT_OK, output)
        message = (
            f"{chart}: {outcome.identity.describe()}, without the workerclass chart gate; "
            f"`workerclass chart-gate {chart}` makes it {outcome.gated.name}"
        )
        report = _report(chart, outcome, written=None, message=message)
        report["gated"] = None
        _finish(report, EXIT_DENIED, output)
    if outcome.status == "gated" and out is None:
        _finish(_report(chart, outcome, written=None, message=f"{chart}: {outcome.reason}; nothing to do"), EXIT_OK,
                output)  # fmt: skip
    dest = out if out is not None else source
    changed = {path: (outcome.files or files)[path] for path in outcome.changed}
    try:
        write_gated(source, files, changed, dest, outcome.gated)
    except GateWriteError as error:
        message = f"{chart}: {outcome.reason}, but nothing was written: {error}"
        _finish(_report(chart, outcome, written=None, message=message), EXIT_USAGE, output)
    where = "in place" if out is None else f"written to {out}"
    message = f"{chart}: {outcome.reason}; {where}"
    _finish(_report(chart, outcome, written=dest, message=message), EXIT_OK, output)
