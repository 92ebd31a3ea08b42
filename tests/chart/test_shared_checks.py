"""The chart's checks shared between inputs of equal content (a pool's resolution and its template hash).

Two inputs built apart from equal values share one computation of :func:`chart_failures`; an input
with other instance types, another chart, other values or lookups, or values with no content text
(a null, a NaN, a key that is no string) is checked on its own, and a caller may change the list it
gets without changing what the next one gets.
"""

from __future__ import annotations

from typing import Any

import pytest

from workerclass.chart import checks
from workerclass.chart.source import ChartSource
from workerclass.chart.values import chart_input, load_instancetypes

POOL = {"cluster": "c", "version": "v1.99", "minReplicas": 1}


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    real = checks._chart_failures

    def counting(inp: Any, size: Any) -> Any:
        seen.append(inp.release)
        return real(inp, size)

    monkeypatch.setattr(checks, "_chart_failures", counting)
    monkeypatch.setattr(checks, "_SHARED", {})
    return seen


def _input(values: dict[str, Any], **given: Any) -> Any:
    given.setdefault("instancetypes", TYPES)
    given.setdefault("chart", CHART)
    return chart_input(dict(values), namespace="t", release="kubernetes-nodes-c-p", **given)


TYPES = load_instancetypes()
CHART = ChartSource.shipped()


def test_equal_content_is_checked_once(counted: list[str]) -> None:
    first = checks.chart_failures(_input(POOL))
    assert first  # the version is outside the chart's map: a failure to share
    first.clear()  # the caller's own list
    second = checks.chart_failures(_input(POOL))
    assert second and len(counted) == 1


@pytest.mark.parametrize(
    "other",
    [
        {"values": {**POOL, "minReplicas": 2}},
        {"values": {**POOL, "minReplicas": 1.0}},
        {"instancetypes": load_instancetypes()},  # equal, but another object
        {"parent_control_plane_version": "v1.35.0"},
        {"parent_control_plane_version": ""},
    ],
    ids=["values", "float-for-int", "instancetypes", "lookup", "empty-lookup"],
)
def test_other_inputs_are_checked_on_their_own(counted: list[str], other: dict[str, Any]) -> None:
    values = other.pop("values", POOL)
    checks.chart_failures(_input(POOL))
    checks.chart_failures(_input(values, **other))
    assert len(counted) == 2


@pytest.mark.parametrize("values", [{**POOL, "diskSize": None}, {**POOL, "x": float("nan")}, {**POOL, 1: "a"}])
def test_values_without_a_content_text_are_never_shared(counted: list[str], values: dict[Any, Any]) -> None:
    assert _input(values).content is None
    checks.chart_failures(_input(values))
    checks.chart_failures(_input(values))
    assert len(counted) == 2
