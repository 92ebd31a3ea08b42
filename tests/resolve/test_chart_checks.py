"""The chart's render-time refusals of a pool: values that differ are judged each for themselves,
even where one text of them could read alike (the checks are shared across States by content)."""

from __future__ import annotations

import importlib
from collections import OrderedDict
from dataclasses import replace
from typing import Any

import pytest

from tests.builders import make_pool, make_state
from workerclass import admit
from workerclass.resolve import chart_checks
from workerclass.state import pool_from_object

#: the module (the package's ``chart`` is no function, but its checks are read through the module)
resolve_chart = importlib.import_module("workerclass.resolve.chart")


def _checks(**spec: Any) -> list[tuple[str, str, str]]:
    record = pool_from_object(make_pool(**spec))
    assert record is not None
    return sorted((v.code, v.field, v.message) for v in chart_checks(make_state(), record))


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")], ids=["nan", "inf", "-inf"])
def test_a_null_value_and_a_non_finite_one_are_refused_for_different_reasons(value: float) -> None:
    # JSON has neither NaN nor infinity: a writer may put null for them, so one text could name both
    null, other = _checks(podCpuLimit=None), _checks(podCpuLimit=value)
    assert [code for code, _, _ in null] == [code for code, _, _ in other] == ["Invalid"]
    assert null != other


# --------------------------------------------------------------------------- the snapshot's memo


def _counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Runs of the chart's checks, counted (the shared cache cleared, so that each pool is run once)."""
    runs: list[int] = []
    real = resolve_chart.chart_failures

    def counting(*args: Any, **kwargs: Any) -> Any:
        runs.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(resolve_chart, "chart_failures", counting)
    monkeypatch.setattr(resolve_chart, "_SHARED_CHECKS", OrderedDict())
    monkeypatch.setattr(resolve_chart, "_SHARED_PASSES", OrderedDict())
    return runs


def test_requests_leave_the_snapshots_memo_as_it_was(monkeypatch: pytest.MonkeyPatch) -> None:
    """A snapshot may serve reviews for hours: what it remembers of pools that are not its own is one
    slot (the last request's), so 500 requests of 500 names hold one request's values, not 500."""
    runs = _counted(monkeypatch)
    state = make_state()
    before = len(state.memo)
    for index in range(500):
        decision = admit(state, "CREATE", make_pool(f"p{index}", labels={"team": f"t{index}"}))
        assert decision.allowed, [str(v) for v in decision.denials]
    # the slot, and the facts of the State's own (its classes' rules): none per request
    assert len(state.memo) <= before + 2
    assert [key for key in state.memo if isinstance(key, tuple) and key[0] == "chart-checks"] == [
        ("chart-checks", "request")
    ]
    # one decision runs the chart's checks once: its name rules and its resolution share the slot
    assert len(runs) == 500


def test_the_snapshots_own_pools_are_remembered(monkeypatch: pytest.MonkeyPatch) -> None:
    runs = _counted(monkeypatch)
    pools = [make_pool(f"p{index}", labels={"team": f"t{index}"}) for index in range(5)]
    state = make_state(pools)
    records = [pool_from_object(pool) for pool in pools]
    stored = [state.pools[(r.kind, r.namespace, r.name)] for r in records if r is not None]
    first = [chart_checks(state, record) for record in stored]
    admit(state, "CREATE", make_pool("other"))  # a request between: the State's own entries stay
    again = [chart_checks(state, record) for record in stored]
    assert first == again and len(runs) == 5 + 1


def test_the_slot_answers_only_the_pool_it_holds(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same values under another name are not the slot's: the chart judges the release name."""
    _counted(monkeypatch)
    state = make_state()
    one = pool_from_object(make_pool("one"))
    assert one is not None
    other = replace(one, name="two", release="kubernetes-nodes-two")  # not kubernetes-nodes-<cluster>-...
    assert chart_checks(state, one) == ()
    assert [v.code for v in chart_checks(state, other)] == ["InvalidPoolName"]
    assert chart_checks(state, one) == ()
