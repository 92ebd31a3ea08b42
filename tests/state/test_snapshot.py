"""The State is an immutable snapshot: frozen fields, derived views that follow each snapshot's own
contents (never a stale one carried over), the API table's kinds."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.builders import make_pool, rename
from workerclass.adapters.folder import load_state
from workerclass.api import resources
from workerclass.state import KINDS, POOL_KINDS, State, identify

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_a_state_cannot_be_changed_in_place() -> None:
    state = load_state(EXAMPLES)
    with pytest.raises(dataclasses.FrozenInstanceError):
        state.pools = {}  # type: ignore[misc]
    assert isinstance(state.warnings, tuple) and isinstance(state.auxiliary, tuple)


def test_a_derived_snapshot_never_carries_its_parents_derived_views() -> None:
    state = load_state(EXAMPLES)
    state.memo[("probe", "x")] = 1
    names = [record.name for record in state.objects]  # computed on this snapshot first
    pool = state.sorted_pools()[0]
    changed = state.without(pool.kind, pool.namespace, pool.name)
    copied = dataclasses.replace(state)
    for other in (changed, copied):
        assert ("probe", "x") not in other.memo  # what one snapshot remembered is not another's
    assert [record.name for record in changed.objects] == [name for name in names if name != pool.name]
    assert [record.name for record in copied.objects] == names
    assert [record.name for record in state.objects] == names  # the parent is as it was


def test_the_kinds_are_the_api_tables() -> None:
    indexed = [r for r in resources.RESOURCES if r.role != "instancetype"]
    assert dict(KINDS) == {r.kind: (r.group, r.namespaced, r.rank) for r in indexed}
    assert POOL_KINDS == resources.POOL_KINDS
    # instance types are data, not indexed objects: identified as before (namespaced by default)
    assert identify({"kind": resources.INSTANCETYPE.kind, "metadata": {"name": "u1"}}) == (
        resources.INSTANCETYPE.kind,
        "default",
        "u1",
    )
    assert State.from_objects([]).records == {}


def _scoped_by_scan(state: State) -> dict[str, list[tuple[str, str, str]]]:
    """The by-scoped-name index worked out from every pool (what the State keeps incrementally)."""
    out: dict[str, list[tuple[str, str, str]]] = {}
    for pool in state.pools.values():
        if pool.kind in ("KubernetesNodes", "HelmRelease") and pool.release:
            out.setdefault(f"{pool.namespace}-{pool.release}", []).append((pool.created, pool.namespace, pool.release))
    return {name: sorted(entries) for name, entries in out.items()}


def _scoped_kept(state: State) -> dict[str, list[tuple[str, str, str]]]:
    return {name: sorted(state.pools_scoped_as(name)) for name in state.pools_by_scoped_name}


def _nodes(namespace: str, name: str, created: str | None = None) -> dict[str, Any]:
    """KubernetesNodes ``name`` exactly (the builders' pool, renamed), stamped ``created`` if given."""
    obj = rename(make_pool(namespace=namespace), name)
    if created is not None:
        obj["metadata"]["creationTimestamp"] = created
    return obj


# nested tenant namespaces, so that two pools of two namespaces can share one scoped name
NAMESPACES = ("tenant-a", "tenant-a-kubernetes-nodes-b", "tenant-b")
NAMES = ("b-kubernetes-nodes-c", "c", "d")
STEP = st.tuples(
    st.sampled_from(NAMESPACES),
    st.sampled_from(NAMES),
    st.sampled_from([None, "2026-01-01T00:00:00Z", "2026-06-01T00:00:00Z", "gone"]),
)


@given(st.lists(STEP, max_size=20))
def test_the_pools_by_scoped_name_follow_every_change(steps: list[tuple[str, str, str | None]]) -> None:
    """Pools added, re-stamped and deleted one event at a time: the kept index is at each step
    what a scan of the pools gives, and the same as a rebuild of the surviving objects."""
    state = State.from_objects([])
    live: dict[tuple[str, str], dict[str, Any]] = {}
    for namespace, name, created in steps:
        if created == "gone":
            state = state.without("KubernetesNodes", namespace, name)
            live.pop((namespace, name), None)
        else:
            obj = _nodes(namespace, name, created)
            state = state.with_object(obj)
            live[(namespace, name)] = obj
        assert _scoped_kept(state) == _scoped_by_scan(state)
    rebuilt = State.from_objects(list(live.values()))
    assert _scoped_kept(state) == _scoped_kept(rebuilt)
    assert all(state.pools_by_scoped_name.get(name) for name in state.pools_by_scoped_name)  # no empty entry left


def test_two_namespaces_pools_under_one_scoped_name_are_both_kept() -> None:
    outer = _nodes("tenant-a", "b-kubernetes-nodes-c", "2026-01-01T00:00:00Z")
    inner = _nodes("tenant-a-kubernetes-nodes-b", "c", "2026-06-01T00:00:00Z")
    state = State.from_objects([outer, inner])
    name = "tenant-a-kubernetes-nodes-b-kubernetes-nodes-c"
    assert sorted(state.pools_scoped_as(name)) == [
        ("2026-01-01T00:00:00Z", "tenant-a", "kubernetes-nodes-b-kubernetes-nodes-c"),
        ("2026-06-01T00:00:00Z", "tenant-a-kubernetes-nodes-b", "kubernetes-nodes-c"),
    ]
    assert state.without("KubernetesNodes", "tenant-a", "b-kubernetes-nodes-c").pools_scoped_as(name) == [
        ("2026-06-01T00:00:00Z", "tenant-a-kubernetes-nodes-b", "kubernetes-nodes-c")
    ]
