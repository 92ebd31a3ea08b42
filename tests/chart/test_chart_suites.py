"""The chart's own helm-unittest suites (``kubernetes-nodes/tests/*_test.yaml``) as fixtures.

Every suite that targets ``templates/nodegroup.yaml`` runs against our port: the suite's and
case's ``set`` values in (no platform values, as helm-unittest), our nodegroup objects out, and
each assert evaluated by the oracle script's own helm-unittest subset (``_check_assert``). A
``failedTemplate`` assert passes when ``chart_failures`` is non-empty and our first failure's
code is the README's mapping of the expected ``errorMessage``/``errorPattern``; where the chart's
message is one we keep verbatim (the durations) it must also be equal.

Suites of other templates (the talos-reconcile Job, the dashboard) are A2's.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
from types import ModuleType
from typing import Any

import pytest

from workerclass.chart import chart_failures, chart_input, nodegroup_objects, sizing

from .cases import code_of_message
from .oracle import ORACLE, require_oracle

require_oracle()

SUITES = ORACLE.parents[1] / "upstream-cozystack" / "kubernetes-nodes" / "tests"
OURS = {"templates/nodegroup.yaml"}


def _oracle_module() -> ModuleType:
    loader = importlib.machinery.SourceFileLoader("cozystack_render_suites", str(ORACLE))
    spec = importlib.util.spec_from_loader("cozystack_render_suites", loader)
    assert spec is not None
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


MOD = _oracle_module()


def _cases() -> list[Any]:
    yaml, loader = MOD.k8s_yaml()
    out = []
    for path in sorted(SUITES.glob("*_test.yaml")):
        for suite in yaml.load_all(path.read_text(), Loader=loader):
            if not suite:
                continue
            suite = MOD.jsonable(suite)
            if not set(suite.get("templates") or []) <= OURS:
                continue
            for test in suite.get("tests", []):
                out.append(pytest.param(suite, test, id=f"{path.name}: {test.get('it')}"))
    return out


CASES = _cases()


def _values(suite: dict[str, Any], test: dict[str, Any]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for layer in (suite.get("set") or {}, test.get("set") or {}):
        for k, v in layer.items():
            parts = k.split(".")
            node: dict[str, Any] = {parts[-1]: v}
            for p in reversed(parts[:-1]):
                node = {p: node}
            values = MOD.deep_merge(values, node)
    return values


def test_the_suites_are_found() -> None:
    assert len(CASES) >= 40, len(CASES)


@pytest.mark.parametrize(("suite", "test"), CASES)
def test_chart_suite_case(suite: dict[str, Any], test: dict[str, Any]) -> None:
    rel = dict(suite.get("release") or {}, **(test.get("release") or {}))
    inp = chart_input(
        _values(suite, test),
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
        problems += MOD._check_assert(a, test, suite, docs, None)
    assert not problems, problems
