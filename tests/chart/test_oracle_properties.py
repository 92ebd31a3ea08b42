"""Property test against the real chart: over the chart's value space, ``chart_failures`` is empty
exactly when the oracle renders; a refusal's code is the README's mapping of the oracle's message
(and our first failure, since both follow Helm's order); a render's nodegroup.yaml objects equal
the oracle's parsed objects.

``CHART_ORACLE_EXAMPLES`` sets the number of examples (default 200, ~15 s through the batched
driver); e.g. ``CHART_ORACLE_EXAMPLES=3000 pytest tests/chart/test_oracle_properties.py``.
"""

from __future__ import annotations

import os
from typing import Any

from hypothesis import HealthCheck, assume, given, settings

from workerclass.chart import chart_failures, kubevirtmachinetemplate_text, nodegroup_objects, sizing

from .cases import NODEGROUP_KINDS, code_of_message, free_pools, make_input, pools
from .oracle import OracleResult, diff_paths, get_oracle, require_oracle

require_oracle()

EXAMPLES = int(os.environ.get("CHART_ORACLE_EXAMPLES", "200"))


def _oracle_kmt_text(result: OracleResult) -> str:
    """The define's text as the chart rendered it: the KMT document's ``spec.template`` block, de-indented by 4."""
    (i,) = [n for n, o in enumerate(result.objects) if o.get("kind") == "KubevirtMachineTemplate"]
    lines = result.texts[i].split("\n")
    start = lines.index("  template:") + 1
    return "\n".join(line[4:] for line in lines[start:])


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    database=None,
)
@given(pools())
def test_chart_failures_and_objects_match_the_oracle(case: tuple[dict[str, Any], str, str, Any]) -> None:
    values, release, namespace, platform = case
    result = get_oracle().render(values, release=release, namespace=namespace, cluster_values=platform)
    assume(not result.error.startswith("values schema:"))
    inp = make_input(values, release, namespace, platform)
    failures = chart_failures(inp)
    context = f"values={values!r} release={release} ns={namespace} platform={platform!r}"
    if not result.ok:
        expected = code_of_message(result.error)
        assert expected != "Unknown", f"unmapped oracle message {result.error!r}; {context}"
        assert failures, f"the oracle refused ({result.error!r}) but chart_failures is empty; {context}"
        assert failures[0].code == expected, (
            f"oracle: {result.error!r} -> {expected}; ours: {[(f.code, f.field) for f in failures]}; {context}"
        )
        return
    assert not failures, f"the oracle rendered but chart_failures = {failures}; {context}"
    size = sizing(inp)
    assert kubevirtmachinetemplate_text(inp, size) == _oracle_kmt_text(result), context
    ours = {o["kind"]: o for o in nodegroup_objects(inp, size)}
    problems: list[str] = []
    for kind in NODEGROUP_KINDS:
        problems += [f"{kind}: {p}" for p in diff_paths(ours[kind], result.one(kind))]
    assert not problems, "\n".join(problems[:20]) + f"\n{context}"


FREE_EXAMPLES = int(os.environ.get("CHART_ORACLE_FREE_EXAMPLES", "100"))


@settings(
    max_examples=FREE_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    database=None,
)
@given(free_pools())
def test_free_form_strings_match_the_oracle(case: tuple[dict[str, Any], str, str, Any]) -> None:
    test_chart_failures_and_objects_match_the_oracle.hypothesis.inner_test(case)  # type: ignore[attr-defined]
