"""The chart's render-time refusals of a pool: values that differ are judged each for themselves,
even where one text of them could read alike (the checks are shared across States by content)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import make_pool, make_state
from workerclass.resolve import chart_checks
from workerclass.state import pool_from_object


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
