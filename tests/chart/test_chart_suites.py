"""The chart's own helm-unittest suites (``kubernetes-nodes/tests/*_test.yaml``) as fixtures.

Every suite that targets ``templates/nodegroup.yaml`` runs against our port: the suite's and
case's ``set`` values in (no platform values, as helm-unittest), our nodegroup objects out, and
each assert evaluated by the helm-unittest subset of ``tests/chart/unittest_subset.py``. A
``failedTemplate`` assert passes when ``chart_failures`` is non-empty and our first failure's
code is the README's mapping of the expected ``errorMessage``/``errorPattern``; where the chart's
message is one we keep verbatim (the durations) it must also be equal.

Suites of other templates (the talos-reconcile Job, the dashboard) are A2's.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.shared import chart_path
from workerclass.chart import chart_failures, chart_input, nodegroup_objects, sizing

from . import unittest_subset
from .cases import code_of_message

SUITES = chart_path("main", module=True) / "tests"
OURS = {"templates/nodegroup.yaml"}


def _cases() -> list[Any]:
    out = []
    for path, suite in unittest_subset.suites(SUITES):
        if not set(suite.get("templates") or []) <= OURS:
            continue
        for test in suite.get("tests", []):
            out.append(pytest.param(suite, test, id=f"{path.name}: {test.get('it')}"))
    return out


CASES = _cases()


def test_the_suites_are_found() -> None:
    assert len(CASES) >= 40, len(CASES)


@pytest.mark.parametrize(("suite", "test"), CASES)
def test_chart_suite_case(suite: dict[str, Any], test: dict[str, Any]) -> None:
    rel = dict(suite.get("release") or {}, **(test.get("release") or {}))
    inp = chart_input(
        unittest_subset.values(suite, test),
        namespace=rel.get("namespace", "default"),
        release=rel.get("name", "release-name"),
        cluster_values={},
    )
    failures = chart_failures(inp)
    docs = []
    if not failures:
        docs = [
            {"template": "kubernetes-nodes/templates/nodegroup.yaml", "object": o}
            for o in nodegroup_objects(inp, sizing(inp))
        ]
    problems: list[str] = []
    for a in test.get("asserts", []):
        if "failedTemplate" in a:
            spec = a["failedTemplate"] or {}
            if not failures:
                problems.append("expected a failure, ours renders")
                continue
            expected = spec.get("errorMessage") or spec.get("errorPattern") or ""
            code = code_of_message(expected)
            if expected and code != "Unknown" and failures[0].code != code:
                problems.append(f"first failure {failures[0]} is not {code} ({expected!r})")
            if "errorMessage" in spec and "must be a whole number" in expected and failures[0].message != expected:
                problems.append(f"message {failures[0].message!r} != {expected!r}")
            continue
        if failures:
            problems.append(f"ours refuses: {failures}")
            break
        problems += unittest_subset.check(a, test, suite, docs, None)
    assert not problems, problems
