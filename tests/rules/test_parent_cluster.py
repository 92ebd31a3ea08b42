"""A pool stays in its parent cluster: a move is refused on UPDATE, and its message quotes a
cluster name only when it is a DNS label.
"""

from __future__ import annotations

from typing import Any

from tests.builders import has_denial, make_cluster, make_pool, make_state
from workerclass.admission import admit, validate
from workerclass.state import State


def _state(*objects: Any) -> State:
    return State.from_objects([make_cluster(), *objects])


def test_the_parent_cluster_move_quotes_a_cluster_only_when_it_is_a_dns_label() -> None:
    secret = "Hunter2-Secret+x"
    old = make_pool("m", workerClassName=None)
    old["spec"]["cluster"] = secret
    new = make_pool("m", workerClassName=None)
    (moved,) = [v for v in admit(_state(), "UPDATE", new, old).denials if v.field == "spec.cluster"]
    assert secret not in moved.message and "(not shown: not a DNS label)" in moved.message
    assert "'example'" in moved.message


def test_a_pool_cannot_move_to_another_parent_cluster() -> None:
    state = make_state(clusters=[make_cluster(), make_cluster("other")])
    old = make_pool()
    decision = validate(state, "UPDATE", make_pool(cluster="other"), old)
    assert has_denial(decision.denials, "Invalid", "spec.cluster"), [str(v) for v in decision.denials]
    assert validate(state, "UPDATE", make_pool(maxReplicas=5), old).allowed
