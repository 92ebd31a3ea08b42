"""The State is an immutable snapshot: frozen fields, derived views that follow each snapshot's own
contents (never a stale one carried over), the API table's kinds."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

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
