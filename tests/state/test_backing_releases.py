"""A KubernetesNodes pool and the HelmRelease Cozystack stores it as are one pool: listed once,
with the release's values as its stored values.
"""

from __future__ import annotations

from tests.builders import make_pool, make_state
from workerclass.admission import validate


def test_a_pool_and_its_backing_release_are_one_pool() -> None:
    """Cozystack stores KubernetesNodes N as HelmRelease kubernetes-nodes-N: one pool, not two."""
    from tests.builders import make_release

    pool, release = make_pool("twin"), make_release("twin", maxReplicas=7)
    state = make_state([pool, release])
    assert [p.kind for p in state.sorted_pools() if p.name.endswith("twin")] == ["KubernetesNodes"]
    assert state.stored_values(pool["metadata"]["namespace"], pool["metadata"]["name"]) == release["spec"]["values"]
    assert validate(state, "CREATE", pool).allowed
