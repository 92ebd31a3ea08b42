"""Which chart each pool's release runs, as a State shows it (a HelmRelease's ``spec.chartRef`` to a
Flux source whose ``status.artifact.digest`` is held), against the chart emulated; and what ``plan``,
``restore`` and ``preflight`` do with a pool that runs another chart: no prediction, a failed check."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from tests.builders import chart_known_as, make_release, make_state
from tests.shared import given_chart
from workerclass.chart.source import ChartSource
from workerclass.ops.charts import release_chart
from workerclass.ops.plan import plan
from workerclass.ops.preflight import preflight
from workerclass.ops.preflight.report import emulated_chart
from workerclass.ops.restore import restore

SERVED = "sha256:" + "a" * 64
OTHER = "sha256:" + "b" * 64


def _artifact(digest: str | None, kind: str = "ExternalArtifact") -> dict[str, Any]:
    status = {"artifact": {"digest": digest, "revision": "1.2.3"}} if digest else {}
    return {
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": kind,
        "metadata": {"name": "kubernetes-nodes", "namespace": "cozy-system"},
        "status": status,
    }


def _release(**values: Any) -> dict[str, Any]:
    release = make_release(**values)
    release["spec"]["chartRef"] = {"kind": "ExternalArtifact", "name": "kubernetes-nodes", "namespace": "cozy-system"}
    return release


def _state(served: str | None, known: frozenset[str], *, text: bool = False) -> Any:
    """The release and its source; the chart emulated known by ``known`` archives (its text from the
    mirror when the test renders)."""
    state = make_state([_release(workerClassName="talos"), _artifact(served)])
    chart = chart_known_as("main+gate", artifacts=known)
    if text:
        chart = dataclasses.replace(given_chart("main+gate"), artifacts=known)
    return state.with_chart(chart)


@pytest.mark.parametrize(
    ("served", "known", "verdict"),
    [
        (SERVED, frozenset({SERVED}), "emulated"),
        (OTHER, frozenset({SERVED}), "other"),
        (OTHER, frozenset(), "unknown"),
        (None, frozenset({SERVED}), "unknown"),
    ],
    ids=["the-emulated-chart", "another-chart", "nothing-to-compare-with", "no-artifact-yet"],
)
def test_the_release_chart_verdict(served: str | None, known: frozenset[str], verdict: str) -> None:
    state = _state(served, known)
    (record,) = [record for record in state.sorted_pools() if record.kind == "HelmRelease"]
    assert release_chart(state, record).verdict == verdict


def test_a_pool_on_another_chart_is_not_predicted() -> None:
    state = _state(OTHER, frozenset({SERVED}))
    result = plan(state, state)
    (row,) = [row for row in result.rows if row.kind == "HelmRelease"]
    assert (row.action, row.replace) == ("unpredicted", None) and "another chart" in row.reasons[0]
    assert row.as_dict()["replace"] is None and result.detailed_exit_code() == 1
    assert result.as_dict()["chart"]["name"] == "main+gate"
    (restored,) = [row for row in restore(state).rows if row.kind == "HelmRelease"]
    assert restored.status == "unpredicted" and not restored.restorable
    failed = [check for check in preflight(state).of("chart") if check.verdict == "fail"]
    assert [check.object for check in failed] == [row.pool]


def test_a_pool_on_the_emulated_chart_is_predicted() -> None:
    state = _state(SERVED, frozenset({SERVED}), text=True)
    assert all(row.action != "unpredicted" for row in plan(state, state).rows)
    assert [check.verdict for check in preflight(state).of("chart")] == ["ok"]


def test_the_chart_check_is_ok_only_for_a_chart_known_by_its_digest() -> None:
    """No chart given: a warning (the shipped facts stand in); a chart of no known digest: a failure,
    or a warning where Helm's engine showed it renders nothing for a pool that names a class."""
    state = _state(SERVED, frozenset({SERVED}))
    unknown = ChartSource.from_files({"Chart.yaml": b"apiVersion: v2\nname: kubernetes-nodes\nversion: 0.0.0\n"})
    rows = {
        "known": state.chart,
        "assumed": ChartSource.shipped(),
        "unknown": unknown,
        "probed": dataclasses.replace(unknown, probed_gate=True),
        "unverified": ChartSource.unverified("no artifact yet"),
    }
    verdicts = {name: emulated_chart(state.with_chart(chart)).verdict for name, chart in rows.items()}
    assert verdicts == {"known": "ok", "assumed": "warn", "unknown": "fail", "probed": "warn", "unverified": "fail"}
    message = emulated_chart(state.with_chart(unknown)).message
    assert "not a chart workerclass was proved against" in message and "chart-gate" in message


@pytest.mark.parametrize(
    ("chart", "verdict", "says"),
    [
        ("main+gate", "ok", "a CREATE that names no class gets the platform default class 'talos'"),
        ("pr3315+gate", "ok", "a CREATE that names no class gets the platform default class 'talos'"),
        ("main", "warn", "a CREATE that names no class stays without a class"),
        ("pr3315", "warn", "a pool that names a class is refused (ChartNotGated)"),
    ],
    ids=["main-gated", "pr3315-gated", "main-ungated", "pr3315-ungated"],
)
def test_preflight_says_which_reading_new_pools_get(chart: str, verdict: str, says: str) -> None:
    state = make_state().with_chart(chart_known_as(chart))
    (check,) = preflight(state).of("chart")
    assert check.verdict == verdict and says in check.message, check
