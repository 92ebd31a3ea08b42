"""One chart input per arguments: resolution's checks and the render of the same pool share it.

``chart_input`` hands the same :class:`ChartInput` to every caller with equal arguments (the last
few built), and the input keeps its sizing and refusals. That is only right while nothing writes
to a shared input: these tests render over the chart's value space and check that the input's
values are the same afterwards, that a second caller gets what a fresh input would give, and that
arguments that differ (instance types, chart, lookups, a null) never share.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import HealthCheck, given, settings

from workerclass.chart import ChartRefused, chart_failures, render_chart, sizing
from workerclass.chart.source import ChartSource
from workerclass.chart.values import _INPUTS, chart_input, load_instancetypes

from .cases import make_input, pool_release, pools


def _render(inp: Any) -> Any:
    try:
        return render_chart(inp, chart_text=False)
    except ChartRefused as refused:
        return [(v.code, v.field, v.message) for v in refused.failures]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pools())
def test_a_shared_input_is_never_written_and_renders_as_a_fresh_one(case: Any) -> None:
    values, release, namespace, platform = case
    first = make_input(values, release, namespace, platform)
    before = copy.deepcopy(dict(first.values))
    rendered = _render(first)
    failures = chart_failures(first)
    assert dict(first.values) == before  # the render and the checks left the input as it was
    again = make_input(copy.deepcopy(values), release, namespace, copy.deepcopy(platform))
    if again is first:
        assert _render(again) == rendered
        assert chart_failures(again) == failures
    _INPUTS.clear()
    fresh = make_input(values, release, namespace, platform)
    assert fresh is not first
    assert _render(fresh) == rendered  # what the shared input gave is what a fresh one gives
    assert chart_failures(fresh) == failures


def test_equal_arguments_share_one_input_and_its_derived_results() -> None:
    values = {"cluster": "example", "instanceType": "u1.medium", "minReplicas": 1}
    first = chart_input(values, namespace="tenant-x", release=pool_release("md1"))
    second = chart_input(dict(values), namespace="tenant-x", release=pool_release("md1"))
    assert second is first
    assert sizing(second) is sizing(first)
    listed = chart_failures(first)
    listed.append("not a failure")  # a caller's list is its own
    assert "not a failure" not in chart_failures(second)


def test_arguments_that_differ_never_share() -> None:
    values = {"cluster": "example", "instanceType": "u1.medium"}
    release = pool_release("md1")
    first = chart_input(values, namespace="tenant-x", release=release)
    assert chart_input(values, namespace="tenant-y", release=release) is not first
    assert chart_input(values, namespace="tenant-x", release=release, instancetypes=load_instancetypes()) is not first
    for lookup in ("existing_machinedeployment_cluster", "existing_machinedeployment_release"):
        assert chart_input(values, namespace="tenant-x", release=release, **{lookup: ""}) is not first
    other = ChartSource.unverified("not read")
    assert chart_input(values, namespace="tenant-x", release=release, chart=other).chart is other
    assert chart_input({**values, "minReplicas": 1}, namespace="tenant-x", release=release) is not first
    assert chart_input({**values, "minReplicas": 1.0}, namespace="tenant-x", release=release) is not chart_input(
        {**values, "minReplicas": 1}, namespace="tenant-x", release=release
    )
    assert chart_input({**values, "minReplicas": True}, namespace="tenant-x", release=release) is not chart_input(
        {**values, "minReplicas": 1}, namespace="tenant-x", release=release
    )


def test_values_with_a_null_or_not_plain_data_are_never_shared() -> None:
    release = pool_release("md1")
    for values in (
        {"cluster": "example", "instanceType": None},
        {"cluster": "example", "maxReplicas": float("nan")},
        {"cluster": "example", "instanceType": type("Text", (str,), {})("u1.medium")},
    ):
        first = chart_input(values, namespace="tenant-x", release=release)
        assert chart_input(values, namespace="tenant-x", release=release) is not first
