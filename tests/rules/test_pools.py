"""rules.pools: a pool keeps its family and its parent cluster."""

from __future__ import annotations

from workerclass.rules.pools import cluster_move, family_switch, shown_name


def test_a_family_switch_is_refused_only_between_known_families() -> None:
    assert family_switch("talos", "talos", "talos", "spec.workerClassName") is None
    assert family_switch(None, "kairos", "gone", "spec.workerClassName") is None
    assert family_switch("talos", None, None, "spec.workerClassName") is None
    switch = family_switch("talos", "kairos", None, "spec.workerClassName")
    assert switch is not None
    assert (switch.code, switch.field) == ("BootstrapFamilyChange", "spec.workerClassName")
    assert switch.message.startswith(
        "switching a running pool from talos (class none (legacy Talos)) to kairos in place"
    )


def test_a_pool_never_moves_to_another_parent_cluster() -> None:
    assert cluster_move("a", "a", "spec.cluster") is None
    assert cluster_move("", "b", "spec.cluster") is None
    move = cluster_move("a", "b", "spec.cluster")
    assert move is not None and (move.code, move.field) == ("Invalid", "spec.cluster")
    assert move.message == (
        "a pool cannot move to another parent cluster ('a' -> 'b'): its machines would be recreated there; "
        "create a pool in cluster 'b' instead"
    )
    assert shown_name("Not A Label") == "(not shown: not a DNS label)"
