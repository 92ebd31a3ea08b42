"""Pool names and namespaces (``InvalidPoolName``): a pool outside a tenant namespace is refused on
every write, a badly named one on CREATE only, and a badly named HelmRelease is told to rename the
HelmRelease. Each chart code's own cases are in tests/admission/test_chart_codes.py.
"""

from __future__ import annotations

import copy
from typing import Any

from tests.builders import make_cluster, make_pool, make_release, pairs, rename
from workerclass.admission import admit
from workerclass.state import State


def _state(*objects: Any) -> State:
    return State.from_objects([make_cluster(), *objects])


def test_a_pool_outside_a_tenant_namespace_is_refused_on_update_too() -> None:
    cluster = make_cluster(namespace="apps")
    pool = make_pool("tal", namespace="apps", workerClassName=None)
    state = State.from_objects([cluster, pool])
    for operation in ("CREATE", "UPDATE"):
        decision = admit(state, operation, pool, pool, ratcheting=False)  # judged as stored (no ratchet)
        found = [(v.code, v.field) for v in decision.denials]
        assert found.count(("InvalidPoolName", "metadata.namespace")) == 1, (operation, found)


def test_a_badly_named_pool_is_refused_on_create_only() -> None:
    pool = rename(make_pool("tal", workerClassName=None), "tal")
    state = _state(pool)
    assert ("InvalidPoolName", "metadata.name") in pairs(admit(state, "CREATE", pool).denials)
    assert admit(state, "UPDATE", pool, pool).denials == []


def test_a_helm_release_with_a_bad_name_is_told_to_rename_the_helm_release() -> None:
    release = make_release("kubernetes-nodes-other-h1")
    decision = admit(_state(), "CREATE", release)
    messages = [v.message for v in decision.denials if (v.code, v.field) == ("InvalidPoolName", "metadata.name")]
    assert messages and all("name the HelmRelease kubernetes-nodes-<cluster>-<pool>" in m for m in messages)
    assert not any("KubernetesNodes" in m for m in messages)


def test_a_helm_release_the_chart_refuses_for_its_name_is_refused_on_update_too() -> None:
    """The chart fails such a release at every render (its release name is the HelmRelease's
    name); skipping names on UPDATE is cozystack-api's rule for KubernetesNodes, which it serves."""
    stored = rename(make_release("h1"), "example-legacy")
    changed = copy.deepcopy(stored)
    changed["spec"]["values"]["maxReplicas"] = 5
    decision = admit(_state(stored), "UPDATE", changed, stored)
    assert ("InvalidPoolName", "metadata.name") in pairs(decision.denials)
    assert any("name the HelmRelease" in v.message for v in decision.denials)
