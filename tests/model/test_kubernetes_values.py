"""Labels, taints, roles, the storage class and the instance type are values Kubernetes accepts, or
they are ``Invalid``; only Cluster API's own label prefixes are reserved.
"""

from __future__ import annotations

import pytest

from tests.builders import has_denial, make_pool, make_state
from workerclass.admission import admit


# Rendered labels, taints and roles must be valid Kubernetes values, or the API server (or Cluster
# API's webhook) refuses the rendered objects after admission allowed the pool.
@pytest.mark.parametrize(
    ("spec", "field"),
    [
        pytest.param(
            {"labels": {"cluster.x-k8s.io/deployment-name": "hijack"}},
            "spec.labels.cluster.x-k8s.io/deployment-name",
            id="cluster-api-label",
        ),
        pytest.param(
            {"labels": {"topology.cluster.x-k8s.io/owned": ""}},
            "spec.labels.topology.cluster.x-k8s.io/owned",
            id="cluster-api-subdomain-label",
        ),
        pytest.param({"labels": {"team": "has space"}}, "spec.labels.team", id="label-value-space"),
        pytest.param({"labels": {"team": "a" * 64}}, "spec.labels.team", id="label-value-64"),
        pytest.param({"labels": {"x" * 64: "a"}}, "spec.labels." + "x" * 64, id="label-name-64"),
        pytest.param({"taints": [{"key": "a b", "effect": "NoSchedule"}]}, "spec.taints[0].key", id="taint-key"),
        pytest.param(
            {"taints": [{"key": "dedicated", "value": "v v", "effect": "NoSchedule"}]},
            "spec.taints[0].value",
            id="taint-value",
        ),
        pytest.param({"roles": ["r" * 64]}, "spec.roles[0]", id="role-64"),
        pytest.param({"storageClass": "Bad Class"}, "spec.storageClass", id="storage-class"),
        pytest.param({"instanceType": "u1 medium"}, "spec.instanceType", id="instance-type"),
    ],
)
def test_values_kubernetes_would_refuse_are_invalid(spec: dict, field: str) -> None:
    decision = admit(make_state(), "CREATE", make_pool(**spec))
    assert not decision.allowed
    assert has_denial(decision.denials, "Invalid", field), [str(v) for v in decision.denials]


def test_valid_labels_taints_and_roles_are_allowed() -> None:
    pool = make_pool(
        labels={"team": "a", "example.com/tier": "gold-1", "empty": ""},
        taints=[{"key": "example.com/dedicated", "value": "gpu", "effect": "NoSchedule"}],
        roles=["ingress-nginx", "r" * 63],
        storageClass="replicated",
        instanceType="u1.medium",
    )
    decision = admit(make_state(), "CREATE", pool)
    assert decision.allowed, [str(v) for v in decision.denials]


@pytest.mark.parametrize(
    ("labels", "allowed"),
    [
        ({"node.cluster.x-k8s.io/pool": "gpu"}, True),  # the prefix Cluster API copies to Nodes
        ({"mycluster.x-k8s.io/a": "b"}, True),
        ({"cluster.x-k8s.io/cluster-name": "other"}, False),
    ],
)
def test_only_cluster_api_own_label_prefixes_are_reserved(labels: dict, allowed: bool) -> None:
    assert admit(make_state(), "CREATE", make_pool(labels=labels)).allowed is allowed


def test_text_that_mentions_a_private_key_is_still_validated_as_a_label() -> None:
    decision = admit(make_state(), "CREATE", make_pool(labels={"a": "NO PRIVATE KEY"}))
    assert has_denial(decision.denials, "Invalid", "spec.labels.a"), [str(v) for v in decision.denials]
    taint = {"key": "a", "value": "MY PRIVATE KEY", "effect": "NoSchedule"}
    decision = admit(make_state(), "CREATE", make_pool(taints=[taint]))
    assert has_denial(decision.denials, "Invalid", "spec.taints[0].value")
