"""The controller's ClusterRole holds what the RBAC rendered for classified pools grants, and no more
power to grant: no ``escalate``, no unnamed ``bind``, no ``impersonate``, no ``*``.

Kubernetes' escalation check lets a subject without ``escalate`` write a Role or ClusterRole only
while it holds every permission the role grants, and without ``bind`` bind one only on the same
terms; the controller's binding is cluster-wide, so its ClusterRole must cover every rule of every
Role and ClusterRole it applies. The pools are rendered as the controller renders them
(:func:`workerclass.ops.workers.desired_workers`) and the covering rule is written here, apart from
the one the install uses, from the RBAC documentation: a rule grants a request when its groups,
resources and verbs hold the request's (``*`` holds anything) and it names no resources or names
the one asked for.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from typing import Any

import pytest

from tests.builders import (
    CERTIFICATE,
    KAIROS_FIXED,
    SSH_KEY,
    TALOS_EXAMPLE,
    make_class,
    make_cluster,
    make_pool,
    make_state,
)
from workerclass.deploy import controller_manifests, controller_rbac_rules, rule_reasons
from workerclass.ops.workers import WORKER_KINDS, DesiredPool, desired_workers
from workerclass.render.templates import KAIROS_DATA_SECRET_PATH, KAIROS_PROVIDER_PATH

#: the talos-reconcile Job is the chart's own text: the mirror's gated main chart
pytestmark = pytest.mark.usefixtures("chart_text")

OTHER_NAMESPACE = "tenant-other"


def _release(pool: Mapping[str, Any]) -> dict[str, Any]:
    """The HelmRelease Cozystack's API keeps a KubernetesNodes as, with a uid (the pool's owner)."""
    name = f"kubernetes-nodes-{pool['metadata']['name']}"
    return {
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {
            "name": name,
            "namespace": pool["metadata"]["namespace"],
            "uid": f"uid-{name}",
            "labels": {"apps.cozystack.io/application.kind": "KubernetesNodes"},
        },
        "spec": {"values": copy.deepcopy(pool["spec"])},
    }


POOLS = [
    make_pool("talos", workerClassName="talos"),
    make_pool("kairos", workerClassName="kairos", sshKeys=[SSH_KEY], version="v1.35"),
    make_pool("talos", cluster="second", workerClassName="talos"),  # another parent: other names
    make_pool("workers", namespace=OTHER_NAMESPACE, cluster="other", workerClassName="talos"),
    make_pool("private", workerClassName="factory-ca"),  # a private Image Factory: its CA's ConfigMap
]
#: a class whose disk is imported from an Image Factory with its own CA (PR 3797's ConfigMap)
FACTORY_CA = make_class("factory-ca", talos={"version": "v1.13.6", "imageFactoryCA": CERTIFICATE})


def _rendered(kairos_path: str) -> list[DesiredPool]:
    clusters = [
        make_cluster(),
        make_cluster("second"),
        make_cluster("other", OTHER_NAMESPACE),
    ]
    state = make_state(
        [obj for pool in POOLS for obj in (pool, _release(pool))],
        clusters=clusters,
        classes=[TALOS_EXAMPLE, KAIROS_FIXED, FACTORY_CA],
    )
    pools = desired_workers(state, kairos_path=kairos_path)
    assert [(pool.identity, pool.state) for pool in pools] == [
        (f"{pool['metadata']['namespace']}/{pool['metadata']['name']}", "ready")
        for pool in sorted(POOLS, key=lambda p: (p["metadata"]["namespace"], p["metadata"]["name"]))
    ]
    assert {pool.bootstrap for pool in pools} == {"talos", "kairos"}
    assert any(obj["kind"] == "ConfigMap" for pool in pools for obj in pool.objects)
    return pools


def _grants(rule: Mapping[str, Any], group: str, resource: str, verb: str, name: str | None) -> bool:
    def holds(key: str, value: str) -> bool:
        items = rule.get(key) or []
        return "*" in items or value in items

    names = rule.get("resourceNames") or []
    return (
        holds("apiGroups", group)
        and holds("resources", resource)
        and holds("verbs", verb)
        and (not names or (name is not None and name in names))
    )


def covers(rule_set: Iterable[Mapping[str, Any]], rule: Mapping[str, Any]) -> list[str]:
    """What of ``rule`` no rule of ``rule_set`` grants (``group/resource verb name``; empty: covered)."""
    rules = list(rule_set)
    names: list[str | None] = list(rule.get("resourceNames") or []) or [None]
    return [
        f"{group}/{resource} {verb} {name or '*'}"
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
        for name in names
        if not any(_grants(held, group, resource, verb, name) for held in rules)
    ]


def test_the_covering_rule_honours_names_and_wildcards() -> None:
    wanted = {"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["a"], "verbs": ["get"]}
    assert covers([{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}], wanted) == []
    assert covers([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}], wanted) == []
    assert covers([{**wanted, "resourceNames": ["b"]}], wanted) == ["/secrets get a"]
    assert covers([wanted], {**wanted, "resourceNames": []}) == ["/secrets get *"]  # one name is not all
    assert covers([{**wanted, "verbs": ["list"]}], wanted) == ["/secrets get a"]
    assert covers([{**wanted, "apiGroups": ["apps"]}], wanted) == ["/secrets get a"]


@pytest.mark.parametrize(
    "kairos_path", [KAIROS_DATA_SECRET_PATH, KAIROS_PROVIDER_PATH], ids=["data-secret", "provider"]
)
def test_the_controller_holds_every_permission_the_rendered_roles_grant(kairos_path: str) -> None:
    held = controller_rbac_rules()
    roles = [obj for pool in _rendered(kairos_path) for obj in pool.objects if obj["kind"] in ("Role", "ClusterRole")]
    assert {obj["kind"] for obj in roles} == {"Role", "ClusterRole"}
    assert len({json.dumps(rule, sort_keys=True) for obj in roles for rule in obj["rules"]}) >= 8
    missing = {
        f"{obj['kind']} {obj['metadata']['name']}": gaps
        for obj in roles
        for rule in obj["rules"]
        if (gaps := covers(held, rule))
    }
    assert missing == {}


@pytest.mark.parametrize(
    "kairos_path", [KAIROS_DATA_SECRET_PATH, KAIROS_PROVIDER_PATH], ids=["data-secret", "provider"]
)
def test_the_controller_may_apply_and_prune_every_object_it_renders(kairos_path: str) -> None:
    """Server-side apply is a patch, and a create where the object is new; pruning is a delete."""
    held = controller_rbac_rules()
    by_kind = {kind.kind: kind for kind in WORKER_KINDS}
    for pool in _rendered(kairos_path):
        for obj in pool.objects:
            kind = by_kind[obj["kind"]]
            wanted = {
                "apiGroups": [kind.group],
                "resources": [kind.plural],
                "verbs": ["list", "create", "patch", "delete"],
            }
            assert covers(held, wanted) == [], obj["kind"]


def test_no_rule_of_the_controller_grants_the_power_to_grant() -> None:
    roles = [obj for obj in controller_manifests() if obj["kind"] in ("Role", "ClusterRole")]
    rules = [rule for obj in roles for rule in obj["rules"]]
    assert rules and rules == [*controller_rbac_rules(), *roles[1]["rules"]]
    for rule in rules:
        assert "escalate" not in rule["verbs"], rule
        assert "impersonate" not in rule["verbs"], rule
        assert "bind" not in rule["verbs"] or rule.get("resourceNames"), rule
        for key in ("apiGroups", "resources", "verbs"):
            assert "*" not in rule[key], rule
    reasons = rule_reasons()
    assert all(json.dumps(rule, sort_keys=True) in reasons for rule in rules)


def test_secrets_are_neither_watched_nor_updated() -> None:
    """No Secret is cached (no watch) and none is written with a PUT (no update): what remains
    reaches every Secret, which RBAC cannot narrow by name pattern or label, and its reason says so."""
    (secrets,) = [rule for rule in controller_rbac_rules() if "secrets" in rule["resources"]]
    assert secrets["verbs"] == ["get", "list", "create", "patch", "delete"]
    reason = rule_reasons()[json.dumps(secrets, sort_keys=True)]
    assert "every Secret" in reason and "label" in reason
