"""The State is an immutable snapshot: frozen fields, a memo of its own, the API table's kinds."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from workerclass.adapters.folder import load_state
from workerclass.api import resources
from workerclass.state import KINDS, POOL_KINDS, Memo, State, identify

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_a_state_cannot_be_changed_in_place() -> None:
    state = load_state(EXAMPLES)
    with pytest.raises(dataclasses.FrozenInstanceError):
        state.pools = {}  # type: ignore[misc]
    assert isinstance(state.warnings, tuple) and isinstance(state.auxiliary, tuple)
    assert state.objects is state.objects  # cached on the frozen instance


def test_every_snapshot_has_a_memo_of_its_own() -> None:
    state = load_state(EXAMPLES)
    assert isinstance(state.memo, Memo) and state.memo["pool-names"] is state.pool_names
    state.memo[("probe", "x")] = 1
    names = [record.name for record in state.objects]  # cached on this snapshot, not carried
    pool = state.sorted_pools()[0]
    changed = state.without(pool.kind, pool.namespace, pool.name)
    copied = dataclasses.replace(state)
    for other in (changed, copied):
        assert other.memo is not state.memo and ("probe", "x") not in other.memo
        assert other.memo["pool-names"] is other.pool_names
    assert "objects" not in changed.__dict__
    assert [record.name for record in changed.objects] == [name for name in names if name != pool.name]


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
