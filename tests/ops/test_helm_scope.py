"""What Helm's engine renders for a chart no digest vouches for is applied only within the chart's
known kinds and the pool's namespace (:mod:`workerclass.chart.scope`).

The chart is the hoster's, but its templates see the pool's values, which a tenant writes: an
object outside the pool's namespace, of a kind the chart is not known to render, or a cluster-wide
grant beyond the talos-reconcile Job's CoreDNS read refuses that pool (``refused``, nothing
applied), and the other pools of the same chart are applied as before.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

import pytest

from tests.builders import NAMESPACE, make_release, make_state
from workerclass.chart.scope import CHART_KINDS
from workerclass.chart.source import ChartSource
from workerclass.ops.workers import WORKER_KINDS, desired_workers

RBAC = "rbac.authorization.k8s.io/v1"
EVIL = "kubernetes-nodes-example-evil"  # the pool whose render the cases below change


def coredns(release: str, namespace: str = NAMESPACE) -> str:
    return f"{namespace}-{release}-talos-reconcile-coredns"


def chart_objects(release: str, namespace: str) -> list[dict[str, Any]]:
    """What the known chart renders for a pool, in its shapes (names, RBAC, scope)."""
    reconcile = f"{release}-talos-reconcile"
    subject = {"kind": "ServiceAccount", "name": reconcile, "namespace": namespace}
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": reconcile, "namespace": namespace}},
        {
            "apiVersion": RBAC,
            "kind": "Role",
            "metadata": {"name": reconcile},
            "rules": [
                {"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["x-talos-secrets"], "verbs": ["get"]},
                {
                    "apiGroups": ["bootstrap.cluster.x-k8s.io"],
                    "resources": ["talosconfigtemplates"],
                    "verbs": ["get", "create", "patch", "update"],
                },
            ],
        },
        {
            "apiVersion": RBAC,
            "kind": "RoleBinding",
            "metadata": {"name": reconcile, "namespace": namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": reconcile},
            "subjects": [subject],
        },
        {
            "apiVersion": RBAC,
            "kind": "ClusterRole",
            "metadata": {"name": coredns(release, namespace)},
            "rules": [{"apiGroups": [""], "resources": ["services"], "resourceNames": ["kube-dns"], "verbs": ["get"]}],
        },
        {
            "apiVersion": RBAC,
            "kind": "ClusterRoleBinding",
            "metadata": {"name": coredns(release, namespace)},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": coredns(release, namespace),
            },
            "subjects": [subject],
        },
        {
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1alpha1",
            "kind": "KubevirtMachineTemplate",
            "metadata": {"name": f"{release}-abcdef"},
            "spec": {},
        },
        {"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "MachineDeployment", "metadata": {"name": release}},
    ]


def with_release(release: str, namespace: str, obj: Mapping[str, Any]) -> dict[str, Any]:
    """``obj`` with ``{release}`` and ``{namespace}`` in its names filled in."""
    text = json.dumps(obj).replace("{release}", release).replace("{namespace}", namespace)
    out: dict[str, Any] = json.loads(text)
    return out


#: (what the engine adds to the evil pool's objects, or replaces in them, and a word of the refusal)
OUT_OF_SCOPE: dict[str, tuple[dict[str, Any], str]] = {
    "other-namespace": (
        {"apiVersion": RBAC, "kind": "Role", "metadata": {"name": "x", "namespace": "kube-system"}, "rules": []},
        "outside the pool's namespace",
    ),
    "unknown-kind": (
        {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "miner"}, "spec": {}},
        "not a kind the chart is known to render",
    ),
    "known-kind-other-api": (
        {"apiVersion": "evil.example/v1", "kind": "Job", "metadata": {"name": "x"}},
        "not a kind the chart is known to render",
    ),
    "a-secret": (
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "kubernetes-example-talos-secrets"}},
        "not a kind the chart is known to render",
    ),
    "another-cluster-role": (
        {
            "apiVersion": RBAC,
            "kind": "ClusterRole",
            "metadata": {"name": "escalator"},
            "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}],
        },
        "cluster-wide",
    ),
    "coredns-role-with-more-rules": (
        {
            "apiVersion": RBAC,
            "kind": "ClusterRole",
            "metadata": {"name": coredns("{release}", "{namespace}")},
            "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list"]}],
        },
        "cluster-wide",
    ),
    "binding-to-cluster-admin": (
        {
            "apiVersion": RBAC,
            "kind": "ClusterRoleBinding",
            "metadata": {"name": coredns("{release}", "{namespace}")},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"kind": "ServiceAccount", "name": "x", "namespace": "{namespace}"}],
        },
        "cluster-wide",
    ),
    "binding-a-subject-elsewhere": (
        {
            "apiVersion": RBAC,
            "kind": "ClusterRoleBinding",
            "metadata": {"name": coredns("{release}", "{namespace}")},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": coredns("{release}", "{namespace}"),
            },
            "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": "kube-system"}],
        },
        "cluster-wide",
    ),
    "namespaced-binding-to-a-cluster-role": (
        {
            "apiVersion": RBAC,
            "kind": "RoleBinding",
            "metadata": {"name": "x"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin"},
            "subjects": [{"kind": "Group", "name": "tenant-example-view", "apiGroup": "rbac.authorization.k8s.io"}],
        },
        "binds the ClusterRole admin",
    ),
    "role-beyond-the-charts-grants": (
        {
            "apiVersion": RBAC,
            "kind": "Role",
            "metadata": {"name": "x"},
            "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list"]}],
        },
        "grants more than the chart is known to",
    ),
}


def engine_chart(extra: dict[str, Any] | None) -> ChartSource:
    """A chart no digest vouches for, gated, whose engine renders :func:`chart_objects` for every
    pool and ``extra`` for the pool :data:`EVIL` too (an object of the same kind and name replaced)."""

    def engine(values: Any, *, release: str, namespace: str, instancetypes: Any = None) -> list[dict[str, Any]]:
        objects = chart_objects(release, namespace)
        if extra is not None and release == EVIL:
            added = with_release(release, namespace, extra)
            key = (added["kind"], added["metadata"]["name"])
            objects = [obj for obj in objects if (obj["kind"], obj["metadata"]["name"]) != key] + [added]
        return objects

    chart = ChartSource.from_files(
        {"Chart.yaml": b"apiVersion: v2\nname: kubernetes-nodes\nversion: 9.9.9\n"}, origin="test", engine=engine
    )
    return dataclasses.replace(chart, probed_gate=True)


def pools_under(chart: ChartSource) -> dict[str, Any]:
    evil, fine = make_release("evil", workerClassName="talos"), make_release("fine", workerClassName="talos")
    for obj, uid in ((evil, "u1"), (fine, "u2")):
        obj["metadata"]["uid"] = uid
    desired = desired_workers(make_state([evil, fine]).with_chart(chart))
    return {pool.release.rsplit("-", 1)[-1]: pool for pool in desired}


def test_what_the_chart_is_known_to_render_is_applied() -> None:
    pools = pools_under(engine_chart(None))
    assert {name: pool.state for name, pool in pools.items()} == {"evil": "ready", "fine": "ready"}
    kinds = {obj["kind"] for obj in pools["evil"].objects}
    assert {"ClusterRole", "ClusterRoleBinding", "Role", "MachineDeployment"} <= kinds
    assert all(
        obj["metadata"].get("namespace") == NAMESPACE
        for obj in pools["evil"].objects
        if obj["kind"] != "ClusterRole" and obj["kind"] != "ClusterRoleBinding"
    )


@pytest.mark.parametrize(("extra", "says"), list(OUT_OF_SCOPE.values()), ids=list(OUT_OF_SCOPE))
def test_what_leaves_the_pools_scope_refuses_that_pool_only(extra: dict[str, Any], says: str) -> None:
    pools = pools_under(engine_chart(extra))
    assert pools["fine"].state == "ready" and pools["fine"].objects
    evil = pools["evil"]
    assert evil.state == "refused" and evil.objects == ()
    messages = " ".join(denial.message for denial in evil.denials)
    assert says in messages, messages
    assert "Helm's engine" in messages


def test_the_chart_kinds_are_worker_kinds() -> None:
    """The controller can apply (and prune) every kind the scope admits, with the same API and scope."""
    workers = {kind.kind: kind for kind in WORKER_KINDS}
    for kind, (api_version, namespaced) in CHART_KINDS.items():
        assert kind in workers
        assert (workers[kind].api_version, workers[kind].namespaced) == (api_version, namespaced)


@pytest.mark.parametrize("name", ["main+gate", "pr3315+gate"], ids=["main", "pr3315"])
@pytest.mark.parametrize("real_engine", [False, True], ids=["port", "helm-engine"])
def test_what_the_proved_charts_render_lies_in_the_scope(name: str, real_engine: bool) -> None:
    """The scope is the proved charts' own: every object the port renders for a Talos pool, and
    what Helm's real engine renders for the same chart, passes it."""
    from tests.shared import given_chart
    from workerclass.chart.scope import scope_failures
    from workerclass.render import render
    from workerclass.resolve import resolve_pool

    chart = given_chart(name)
    if real_engine:
        pytest.importorskip("helm_python", reason="Helm's engine is the optional helm extra")
        from workerclass.adapters.chart import with_engine
        from workerclass.adapters.helm import helm_engine

        engine = helm_engine(dict(chart.files or {}))
        assert engine is not None
        unknown = ChartSource.from_files(dict(chart.files or {}), origin="test", known=())
        chart = with_engine(unknown, engine)
    release = make_release("md1", workerClassName="talos")
    release["metadata"]["uid"] = "u1"
    state = make_state([release]).with_chart(chart)
    (record,) = [record for record in state.sorted_pools() if record.kind == "HelmRelease"]
    effective, denials, _ = resolve_pool(state, record)
    assert effective is not None, denials
    objects = render(effective)
    assert objects and {obj["kind"] for obj in objects} >= {"ClusterRole", "Role", "MachineDeployment"}
    assert scope_failures(objects, namespace=NAMESPACE, release=record.release or record.name) == []
    if real_engine:
        (pool,) = desired_workers(state)
        assert pool.state == "ready", (pool.message, pool.denials)
