"""A KubernetesNodes pool and the HelmRelease Cozystack stores it as are one pool: listed once,
with the release's values as its stored values.
"""

from __future__ import annotations

from tests.builders import make_cluster, make_pool, make_state, pairs
from workerclass.admission import validate


def test_a_pool_and_its_backing_release_are_one_pool() -> None:
    """Cozystack stores KubernetesNodes N as HelmRelease kubernetes-nodes-N: one pool, not two."""
    from tests.builders import make_release

    pool, release = make_pool("twin"), make_release("twin", maxReplicas=7)
    state = make_state([pool, release])
    assert [p.kind for p in state.sorted_pools() if p.name.endswith("twin")] == ["KubernetesNodes"]
    assert state.stored_values(pool["metadata"]["namespace"], pool["metadata"]["name"]) == release["spec"]["values"]
    assert validate(state, "CREATE", pool).allowed


def _parent_release(name: str = "kubernetes-example", **values: object) -> dict[str, object]:
    """The HelmRelease Cozystack stores a Kubernetes app ``example`` as (what a GitOps repository holds)."""
    return {
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {
            "name": name,
            "namespace": "tenant-example",
            "labels": {"apps.cozystack.io/application.kind": "Kubernetes"},
        },
        "spec": {"chart": {"spec": {"chart": "kubernetes"}}, "values": values},
    }


def test_a_parent_cluster_stored_as_its_helm_release_is_a_parent_cluster() -> None:
    pool = make_pool("md1")
    state = make_state([_parent_release(version="v1.35")], clusters=[])
    decision = validate(state, "CREATE", pool)
    assert decision.allowed, [str(v) for v in decision.denials]
    assert state.cluster("tenant-example", "example") is not None


def test_the_parent_releases_version_and_infrastructure_are_read() -> None:
    older = make_state([_parent_release(version="v1.33")], clusters=[])
    assert ("ControlPlaneTooOld", "spec.version") in pairs(validate(older, "CREATE", make_pool("md1")).denials)
    proxmox = make_state([_parent_release(version="v1.35", infrastructure="proxmox")], clusters=[])
    kairos = make_pool("md1", workerClassName="kairos")
    assert "KairosOnProxmox" in {v.code for v in validate(proxmox, "CREATE", kairos).denials}


def test_a_kubernetes_object_beside_its_release_is_the_one_read() -> None:
    state = make_state([_parent_release(version="v1.33")], clusters=[make_cluster(version="v1.35")])
    assert validate(state, "CREATE", make_pool("md1")).allowed
    reversed_order = make_state([], clusters=[make_cluster(version="v1.35"), _parent_release(version="v1.33")])
    assert validate(reversed_order, "CREATE", make_pool("md1")).allowed


def test_a_release_of_another_application_is_no_parent() -> None:
    other = _parent_release()
    other["metadata"]["labels"] = {"apps.cozystack.io/application.kind": "Postgres"}  # type: ignore[index]
    state = make_state([other], clusters=[])
    assert ("ClusterNotFound", "spec.cluster") in pairs(validate(state, "CREATE", make_pool("md1")).denials)


def test_a_parent_release_is_checked_as_its_cluster() -> None:
    broken = _parent_release(version="latest")
    decision = validate(make_state([broken], clusters=[]), "CREATE", broken)
    assert ("Invalid", "spec.values.version") in pairs(decision.denials)
