"""``--chart DIR|TGZ``: the chart the cluster runs, for every command that reads STATE.

Owns the option (:data:`ChartOption`) and reading it (:func:`load_chart`): a chart folder or its
packaged archive, identified by its digest (a known chart renders through the port; another needs
Helm's engine, the ``helm`` extra, or is refused naming the chart). Without it, the chart the
shipped facts describe applies, without its text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

import typer

from ..adapters.chart import ChartReadError, UnknownChart, read_chart_source
from ..chart.source import ChartSource
from .output import fail

__all__ = ["ChartOption", "chart_line", "load_chart"]

ChartOption = Annotated[
    str | None,
    typer.Option(
        "--chart",
        metavar="DIR|TGZ",
        help="The kubernetes-nodes chart the cluster runs: a chart folder or its packaged .tgz. Admission "
        "follows its rules and render reads its text. Known charts (main 3c780acd4, PR 3315, each with or without "
        "the workerclass chart gate) render through the port; another renders through Helm's engine when the "
        "'helm' extra is installed, and is refused otherwise. Without it: the facts the package ships (main), "
        "and Talos pools cannot be rendered, planned or restored.",
        show_default=False,
    ),
]


def load_chart(path: str | None) -> ChartSource:
    """The chart ``--chart`` names (the shipped facts without it); an unreadable or unusable one fails."""
    if path is None:
        return ChartSource.shipped()
    try:
        source = read_chart_source(path)
    except ChartReadError as error:
        fail(f"--chart: {error}")
    except UnknownChart as unknown:
        fail(f"--chart: {unknown}")
    return source


def chart_line(chart: Mapping[str, Any] | None) -> str:
    """``chart emulated: main (cozystack main 3c780acd4), version 0.0.0, sha256:...``: for people."""
    if not chart:
        return "chart emulated: not said"
    text = "" if chart.get("text") else " (its text not given)"
    gate = ", gated" if chart.get("gated") else ""
    return (
        f"chart emulated: {chart.get('name')} ({chart.get('source')}{gate}), version {chart.get('version')}, "
        f"{str(chart.get('digest'))[:19]}{text}"
    )
