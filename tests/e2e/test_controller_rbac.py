"""The controller's ClusterRole against the API server's own escalation check: enough to apply the RBAC
rendered for a classified Talos pool, and no power to grant what it does not hold.

The controller's ServiceAccount, ClusterRole and binding are taken from
:func:`workerclass.deploy.controller_manifests` (the cluster-scoped two renamed, so that the
session's bundle, applied by the ``install`` fixture under the real names, is left alone), and
requests go as that ServiceAccount (a client certificate for ``system:serviceaccount:NS:NAME``
with the groups the API server gives one). What it applies is what the controller applies for the
pool (:func:`workerclass.ops.workers.desired_workers`): its ServiceAccount, the talos-reconcile
Job's Role, CoreDNS ClusterRole and bindings, the dashboard's Role and binding, server-side applied
under the controller's field manager. Their owner references name the pool's HelmRelease, which is
not on the bed: they are left out (the garbage collector would delete the objects).

Seen to fail on the tree before (``bind`` and ``escalate`` granted): a ClusterRole granting ``*`` on
Secrets was created, and so was a binding of a ClusterRole of everything. Without the rows the
ClusterRole holds for the chart's roles (here: TalosConfigTemplates), the talos-reconcile Role is
refused, which shows the bed enforces the check the unit tests reason about.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.builders import make_cluster, make_pool, make_state
from workerclass.controller.workers import FIELD_MANAGER
from workerclass.deploy import CONTROLLER, InstallOptions, controller_manifests
from workerclass.ops.workers import desired_workers

from .kube import Kube, KubeError
from .testbed import ApiServer

#: Talos pools render the talos-reconcile Job from the chart's own text: the mirror's gated main chart
pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("chart_text")]

#: short: the ServiceAccount's user name is a client certificate's CN (at most 64 characters)
CONTROLLER_NAMESPACE = "wc-rbac"
TENANT = "tenant-rbac"
SUFFIX = "-rbac-e2e"
RBAC = "rbac.authorization.k8s.io/v1"
RBAC_KINDS = ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")


def _controller_identity(keep: Callable[[dict[str, Any]], bool] | None = None) -> list[dict[str, Any]]:
    """The controller's ServiceAccount, ClusterRole and binding, the cluster-scoped two renamed;
    with ``keep``, only the rules it keeps, under other names (an account of its own)."""
    objects = controller_manifests(InstallOptions(namespace=CONTROLLER_NAMESPACE))
    account, role, binding = (copy.deepcopy(obj) for obj in objects[:3])
    assert [account["kind"], role["kind"], binding["kind"]] == ["ServiceAccount", "ClusterRole", "ClusterRoleBinding"]
    if keep is not None:
        role["rules"] = [rule for rule in role["rules"] if keep(rule)]
        role["metadata"]["name"] += "-partial"
        binding["metadata"]["name"] += "-partial"
        account["metadata"]["name"] += "-partial"
        binding["subjects"][0]["name"] = account["metadata"]["name"]
    role["metadata"]["name"] += SUFFIX
    binding["metadata"]["name"] += SUFFIX
    binding["roleRef"]["name"] = role["metadata"]["name"]
    return [account, role, binding]


def _as(cluster: ApiServer, account: str) -> Kube:
    user = f"system:serviceaccount:{CONTROLLER_NAMESPACE}:{account}"
    groups = ("system:serviceaccounts", f"system:serviceaccounts:{CONTROLLER_NAMESPACE}")
    return Kube(cluster.url, cluster.ssl_context(cluster.identity(user, groups)))


def _pool_rbac() -> list[dict[str, Any]]:
    """What the controller applies for a classified Talos pool in ``TENANT``, its RBAC only."""
    pool = make_pool("workers", namespace=TENANT, cluster="rbac", workerClassName="talos")
    release = {
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {
            "name": f"kubernetes-nodes-{pool['metadata']['name']}",
            "namespace": TENANT,
            "uid": "uid-e2e",
            "labels": {"apps.cozystack.io/application.kind": "KubernetesNodes"},
        },
        "spec": {"values": copy.deepcopy(pool["spec"])},
    }
    state = make_state([pool, release], clusters=[make_cluster("rbac", TENANT)])
    (desired,) = desired_workers(state)
    assert desired.state == "ready" and desired.bootstrap == "talos", desired.message
    out = []
    for obj in desired.objects:
        if obj["kind"] in RBAC_KINDS:
            obj = copy.deepcopy(obj)
            obj["metadata"].pop("ownerReferences", None)
            out.append(obj)
    return out


def _delete(kube: Kube, objects: list[dict[str, Any]]) -> None:
    for obj in reversed(objects):
        meta = obj["metadata"]
        kube.delete(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"))


@pytest.fixture(scope="module")
def namespaces(kube: Kube) -> None:
    for name in (CONTROLLER_NAMESPACE, TENANT):
        if kube.find("v1", "Namespace", name) is None:
            kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})


@pytest.fixture
def controller(cluster: ApiServer, kube: Kube, namespaces: None) -> Iterator[Kube]:
    """Requests as the controller's ServiceAccount, bound to its ClusterRole as the bundle binds it."""
    identity = _controller_identity()
    for obj in identity:
        kube.apply(obj, manager="workerclass-e2e-install")
    client = _as(cluster, CONTROLLER)
    yield client
    client.close()
    _delete(kube, identity)


def test_the_controller_applies_a_talos_pools_rbac_without_escalate_or_bind(controller: Kube, kube: Kube) -> None:
    objects = _pool_rbac()
    assert {obj["kind"] for obj in objects} == set(RBAC_KINDS)
    try:
        for obj in objects:  # in the controller's apply order: roles before their bindings
            controller.apply(obj, manager=FIELD_MANAGER)
        for obj in objects:
            meta = obj["metadata"]
            live = kube.get(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"))
            assert live["metadata"]["labels"] == meta["labels"]
            for key in ("rules", "roleRef", "subjects"):
                assert live.get(key) == obj.get(key), (obj["kind"], key)
        for obj in objects:  # again: an unchanged apply (the controller's resync) passes the check too
            controller.apply(obj, manager=FIELD_MANAGER)
        # the controller prunes what a pool left behind
        for obj in reversed(objects):
            meta = obj["metadata"]
            controller.delete(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"), missing_ok=False)
    finally:
        _delete(kube, objects)


def _forbidden(call: Any) -> str:
    with pytest.raises(KubeError) as refused:
        call()
    assert refused.value.code == 403, refused.value
    return refused.value.message


def test_the_controller_cannot_grant_what_it_does_not_hold(controller: Kube, kube: Kube) -> None:
    everything = {
        "apiVersion": RBAC,
        "kind": "ClusterRole",
        "metadata": {"name": "wc-rbac-e2e-everything"},
        "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}],
    }
    kube.apply(everything, manager="workerclass-e2e")
    account = {"kind": "ServiceAccount", "name": CONTROLLER, "namespace": CONTROLLER_NAMESPACE}
    attempts = [
        {
            "apiVersion": RBAC,
            "kind": "ClusterRole",
            "metadata": {"name": "wc-rbac-e2e-all-secrets"},
            "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["*"]}],
        },
        {
            "apiVersion": RBAC,
            "kind": "Role",
            "metadata": {"name": "wc-rbac-e2e-impersonate", "namespace": TENANT},
            "rules": [{"apiGroups": [""], "resources": ["serviceaccounts"], "verbs": ["impersonate"]}],
        },
        {
            "apiVersion": RBAC,
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "wc-rbac-e2e-everything"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": everything["metadata"]["name"],
            },
            "subjects": [account],
        },
        {
            "apiVersion": RBAC,
            "kind": "RoleBinding",
            "metadata": {"name": "wc-rbac-e2e-everything", "namespace": TENANT},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": everything["metadata"]["name"],
            },
            "subjects": [account],
        },
    ]
    try:
        for attempt in attempts:
            message = _forbidden(lambda attempt=attempt: controller.apply(attempt, manager=FIELD_MANAGER))
            assert "not currently held" in message, (attempt["metadata"]["name"], message)
            meta = attempt["metadata"]
            assert kube.find(attempt["apiVersion"], attempt["kind"], meta["name"], meta.get("namespace")) is None
        # and it may not widen a role it wrote: the dashboard's Role patched to read every Secret
        (role,) = [
            obj
            for obj in _pool_rbac()
            if obj["kind"] == "Role" and obj["metadata"]["name"].endswith("-dashboard-resources")
        ]
        controller.apply(role, manager=FIELD_MANAGER)
        widened = copy.deepcopy(role)
        widened["rules"].append(
            {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list", "watch", "update"]}
        )
        assert "not currently held" in _forbidden(lambda: controller.apply(widened, manager=FIELD_MANAGER))
        _delete(kube, [role])
    finally:
        _delete(kube, [everything, *attempts])


def test_without_the_rows_held_for_the_chart_the_talos_role_is_refused(
    cluster: ApiServer, kube: Kube, namespaces: None
) -> None:
    """The control: the same ClusterRole less its TalosConfigTemplates row cannot write the
    talos-reconcile Role (so the rows held for the chart's roles are what lets it through)."""
    identity = _controller_identity(lambda rule: "talosconfigtemplates" not in rule["resources"])
    for obj in identity:
        kube.apply(obj, manager="workerclass-e2e-install")
    client = _as(cluster, identity[0]["metadata"]["name"])
    (role,) = [
        obj for obj in _pool_rbac() if obj["kind"] == "Role" and obj["metadata"]["name"].endswith("-talos-reconcile")
    ]
    try:
        message = _forbidden(lambda: client.apply(role, manager=FIELD_MANAGER))
        assert "not currently held" in message and "talosconfigtemplates" in message, message
    finally:
        client.close()
        _delete(kube, [role, *identity])
