"""The rules of the chart the cluster runs, as admission applies them (``State.chart``).

PR 3315's chart makes ``cluster`` and ``storageClass`` immutable (``PoolFieldImmutable``; the
denial table has the rows) and refuses a render through two lookups, checked where STATE holds the
objects they find: a pool whose minor is ahead of the parent KamajiControlPlane's ``spec.version``
(``ControlPlaneTooOld``), and a pool whose live MachineDeployment runs another ``spec.clusterName``
(``PoolFieldImmutable``, field ``spec.cluster``). Without those objects the lookups find nothing
(as offline), and main's chart looks nothing up. A chart stated to lack our gate refuses pools that
select a class (``ChartNotGated``); the chart the package assumes when none is stated does not.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import ABSENT, CLUSTER, NAMESPACE, chart_known_as, make_cluster, make_pool, make_state
from workerclass import admit
from workerclass.chart.source import ChartSource


def _control_plane(version: str, name: str = f"kubernetes-{CLUSTER}") -> dict[str, Any]:
    return {
        "apiVersion": "controlplane.cluster.x-k8s.io/v1alpha1",
        "kind": "KamajiControlPlane",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"version": version},
    }


def _machine_deployment(cluster_name: str, pool: str = "pool") -> dict[str, Any]:
    return {
        "apiVersion": "cluster.x-k8s.io/v1beta1",
        "kind": "MachineDeployment",
        "metadata": {"name": f"kubernetes-{CLUSTER}-{pool}", "namespace": NAMESPACE},
        "spec": {"clusterName": cluster_name},
    }


def _codes(chart: str, *objects: dict[str, Any], **spec: Any) -> list[tuple[str, str]]:
    state = make_state(list(objects), clusters=[make_cluster(version="v1.35")])
    state = state.with_chart(chart_known_as(chart))
    decision = admit(state, "CREATE", make_pool(**spec))
    return [(violation.code, violation.field) for violation in decision.denials]


@pytest.mark.parametrize(
    ("chart", "parent", "expected"),
    [
        ("pr3315+gate", "v1.34.9", [("ControlPlaneTooOld", "spec.version")]),
        ("pr3315+gate", "v1.35.0", []),
        ("pr3315+gate", "1.36", []),
        ("pr3315+gate", None, []),
        ("main+gate", "v1.34.9", []),
    ],
    ids=["ahead-of-the-parent", "same-minor", "parent-ahead", "no-control-plane-held", "main-looks-nothing-up"],
)
def test_the_pool_minor_may_not_lead_the_parent_control_plane(
    chart: str, parent: str | None, expected: list[tuple[str, str]]
) -> None:
    objects = [_control_plane(parent)] if parent is not None else []
    assert _codes(chart, *objects, version="v1.35") == expected


@pytest.mark.parametrize(
    ("chart", "live", "expected"),
    [
        ("pr3315+gate", "kubernetes-other", [("PoolFieldImmutable", "spec.cluster")]),
        ("pr3315+gate", f"kubernetes-{CLUSTER}", []),
        ("pr3315+gate", None, []),
        ("main+gate", "kubernetes-other", []),
    ],
    ids=["drifted", "same-cluster", "no-machine-deployment-held", "main-looks-nothing-up"],
)
def test_the_live_machine_deployment_keeps_its_cluster(
    chart: str, live: str | None, expected: list[tuple[str, str]]
) -> None:
    objects = [_machine_deployment(live)] if live is not None else []
    assert _codes(chart, *objects) == expected


def test_another_pools_objects_are_not_looked_up() -> None:
    objects = [_control_plane("v1.30.0", name="kubernetes-other"), _machine_deployment("kubernetes-x", pool="other")]
    assert _codes("pr3315+gate", *objects, version="v1.35") == []


@pytest.mark.parametrize(
    ("chart", "expected"),
    [("main", ["ChartNotGated"]), ("pr3315", ["ChartNotGated"]), ("main+gate", []), ("pr3315+gate", [])],
)
def test_a_class_needs_a_gated_chart(chart: str, expected: list[str]) -> None:
    assert [code for code, _ in _codes(chart, workerClassName="talos")] == expected


def test_the_assumed_chart_refuses_no_class() -> None:
    state = make_state(clusters=[make_cluster(version="v1.35")])
    assert state.chart.assumed and admit(state, "CREATE", make_pool(workerClassName="talos")).allowed


@pytest.mark.parametrize("chart", ["main", "pr3315"])
@pytest.mark.parametrize("named", [ABSENT, ""], ids=["class-omitted", "class-empty"])
def test_an_ungated_chart_keeps_a_create_without_a_class_classless(chart: str, named: Any) -> None:
    """On a chart without our gate the platform default is not written: the pool stays on the
    chart's classless path (Cozystack keeps working), and a warning says why."""
    state = make_state(clusters=[make_cluster(version="v1.35")]).with_chart(chart_known_as(chart))
    decision = admit(state, "CREATE", make_pool(workerClassName=named))
    assert decision.allowed, decision.denials
    assert not any(op["path"].endswith("workerClassName") for op in decision.patch)
    assert any("lacks the workerclass chart gate" in w and "stays without a class" in w for w in decision.warnings)
    again = admit(state, "CREATE", decision.object)
    assert again.allowed and not again.patch


def test_an_unverified_chart_keeps_a_create_without_a_class_classless() -> None:
    state = make_state(clusters=[make_cluster(version="v1.35")]).with_chart(ChartSource.unverified("no artifact"))
    decision = admit(state, "CREATE", make_pool(workerClassName=ABSENT))
    assert decision.allowed and not decision.patch
    assert any("cannot be verified" in w for w in decision.warnings)
    assert [v.code for v in admit(state, "CREATE", make_pool(workerClassName="talos")).denials] == ["ChartNotGated"]


@pytest.mark.parametrize("chart", ["main+gate", "pr3315+gate"])
def test_a_gated_chart_still_writes_the_platform_default(chart: str) -> None:
    state = make_state(clusters=[make_cluster(version="v1.35")]).with_chart(chart_known_as(chart))
    decision = admit(state, "CREATE", make_pool(workerClassName=ABSENT))
    assert decision.allowed and (decision.object or {})["spec"]["workerClassName"] == "talos"
