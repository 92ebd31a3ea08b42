"""Class status counted by change (``ClassUsage``) says what counting every pool says.

The controller writes each class's status on every announced State. Counting the pools that
select a class on each one costs the cluster's size per change; :class:`ClassUsage` keeps the
counts up from what changed (the State's pool journal, the worker controller's state changes) and
reads every pool only where it cannot tell. These tests fold random histories of pools, worker
states and batch reads, and compare each class's status with the one made from scratch.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.builders import PoolStatesLog, make_class, make_state
from workerclass.ops.status import ClassUsage, class_status
from workerclass.state import State
from workerclass.state.snapshot import JOURNAL_SPAN

#: few names, so that a history often comes back to the same pool
NAMESPACES = ("tenant-a", "tenant-b")
NAMES = ("one", "two")
CLASSES = ("gold", "silver")
WORKER_STATES = (None, "applied", "refused", "not-resolvable", "failing", "waiting-for-release", "waiting-for-rollout")
LABEL = "apps.cozystack.io/application.kind"


def _values(klass: str | None) -> dict[str, Any]:
    values: dict[str, Any] = {"cluster": "example", "version": "v1.35", "minReplicas": 1, "maxReplicas": 2}
    if klass is not None:
        values["workerClassName"] = klass
    return values


def nodes(namespace: str, name: str, klass: str | None) -> dict[str, Any]:
    return {
        "apiVersion": "apps.cozystack.io/v1alpha1",
        "kind": "KubernetesNodes",
        "metadata": {"name": f"example-{name}", "namespace": namespace},
        "spec": _values(klass),
    }


def release(namespace: str, name: str, klass: str | None) -> dict[str, Any]:
    return {
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {
            "name": f"kubernetes-nodes-example-{name}",
            "namespace": namespace,
            "labels": {LABEL: "KubernetesNodes"},
        },
        "spec": {"values": _values(klass)},
    }


def base() -> State:
    return make_state(classes=[make_class(name, talos={"version": "v1.13.6"}) for name in CLASSES])


def from_scratch(state: State, workers: Mapping[str, str] | None) -> dict[str, Any]:
    return {
        name: class_status(state, name, 1, dict(workers) if workers is not None else None) for name in state.classes
    }


def counted(state: State, usage: ClassUsage) -> dict[str, Any]:
    return {name: class_status(state, name, 1, usage=usage.of(name)) for name in state.classes}


where = st.tuples(st.sampled_from(NAMESPACES), st.sampled_from(NAMES))
steps = st.one_of(
    st.tuples(st.just("nodes"), where, st.sampled_from((*CLASSES, None))),
    st.tuples(st.just("release"), where, st.sampled_from((*CLASSES, None))),
    st.tuples(st.just("delete nodes"), where, st.none()),
    st.tuples(st.just("delete release"), where, st.none()),
    st.tuples(st.just("worker"), where, st.sampled_from(WORKER_STATES)),
    st.tuples(st.just("batch"), st.none(), st.none()),
    st.tuples(st.just("forget"), st.none(), st.none()),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(steps, st.booleans()), max_size=40), st.booleans())
def test_counts_kept_by_change_are_the_counts_of_every_pool(history: list[Any], with_workers: bool) -> None:
    """Each step may be folded at once or with the next ones (several changes between two States)."""
    state = base()
    workers = PoolStatesLog() if with_workers else None
    usage = ClassUsage()
    usage.fold(state, workers)
    reads = 1
    for (step, at, value), fold in history:
        if step in ("nodes", "release"):
            make = nodes if step == "nodes" else release
            state = state.with_object(make(at[0], at[1], value))
        elif step == "delete nodes":
            state = state.without("KubernetesNodes", at[0], f"example-{at[1]}")
        elif step == "delete release":
            state = state.without("HelmRelease", at[0], f"kubernetes-nodes-example-{at[1]}")
        elif step == "worker":
            if workers is not None:
                workers.set(f"{at[0]}/example-{at[1]}", value)
        elif step == "batch":  # a fresh read of the same objects: nothing to tell it from the last
            state = State.from_objects([record.obj for record in state.records.values()])
            reads += 1
        elif step == "forget" and workers is not None and workers.changes:
            workers.forget()
            reads += 1
        if fold:
            usage.fold(state, workers)
            assert counted(state, usage) == from_scratch(state, workers.states if workers else None)
            # a "forget" or "batch" before this fold is read once, by this fold
            assert usage.reads <= reads
            reads = usage.reads
    usage.fold(state, workers)
    assert counted(state, usage) == from_scratch(state, workers.states if workers else None)


def test_a_change_is_counted_without_reading_every_pool() -> None:
    state = base()
    for index in range(200):
        state = state.with_object(
            nodes(("tenant-a", "tenant-b", "tenant-c")[index % 3], f"pool{index}", CLASSES[index % 2])
        )
    workers = PoolStatesLog()
    usage = ClassUsage()
    usage.fold(state, workers)
    assert usage.reads == 1
    state = state.with_object(nodes("tenant-a", "pool0", "silver"))  # moved from gold
    workers.set("tenant-b/example-pool1", "refused")
    state = state.without("KubernetesNodes", "tenant-c", "example-pool2")
    usage.fold(state, workers)
    assert usage.reads == 1
    assert counted(state, usage) == from_scratch(state, workers.states)
    gold = class_status(state, "gold", 1, usage=usage.of("gold"))
    assert gold is not None and gold["pools"] == 98


def test_a_state_tells_which_pools_changed_since_one_it_was_folded_from() -> None:
    first = base().with_object(nodes("tenant-a", "one", "gold"))
    second = first.with_object(nodes("tenant-a", "two", "gold")).with_object(release("tenant-b", "one", None))
    third = second.without("KubernetesNodes", "tenant-a", "example-one")
    assert third.pools_changed_since(first) == {
        ("KubernetesNodes", "tenant-a", "example-two"),
        ("HelmRelease", "tenant-b", "kubernetes-nodes-example-one"),
        ("KubernetesNodes", "tenant-a", "example-one"),
    }
    assert third.pools_changed_since(third) == set()
    # a class changes no pool: the same pools, nothing to say
    classed = third.with_object(make_class("bronze", talos={"version": "v1.13.6"}))
    assert classed.pools_changed_since(third) == set()
    # a sibling fold, a batch read, or a State folded before: it cannot say, so it does not
    sibling = first.with_object(nodes("tenant-c", "three", "silver"))
    assert third.pools_changed_since(sibling) is None
    assert sibling.pools_changed_since(third) is None
    batch = State.from_objects([record.obj for record in third.records.values()])
    assert batch.pools_changed_since(third) is None and third.pools_changed_since(batch) is None
    assert first.pools_changed_since(third) is None


def test_a_journal_reaches_back_a_bounded_number_of_changes() -> None:
    start = base().with_object(nodes("tenant-a", "one", "gold"))
    state = start
    for index in range(JOURNAL_SPAN + 1):
        state = state.with_object(nodes("tenant-a", "one", CLASSES[index % 2]))
    assert state.pools_changed_since(start) is None  # too long ago: the caller reads every pool
    usage = ClassUsage()
    usage.fold(start)
    usage.fold(state)
    assert usage.reads == 2
    assert counted(state, usage) == from_scratch(state, None)
