"""An UPDATE's old object: when a request carries none, admission takes the stored pool (its
class, its family); a malformed one is no crash.
"""

from __future__ import annotations

from tests.builders import TALOS_EXAMPLE, make_cluster, make_pool, make_state, pairs
from workerclass.admission import admit
from workerclass.state import State


def test_python_update_without_old_takes_the_stored_pool() -> None:
    stored = make_pool("tal", workerClassName="talos-example-r1")
    state = State.from_objects([make_cluster(), TALOS_EXAMPLE, stored])
    omitted = make_pool("tal", workerClassName=None)
    restored = admit(state, "UPDATE", omitted)
    assert restored.allowed, restored.denials
    assert {"op": "add", "path": "/spec/workerClassName", "value": "talos-example-r1"} in restored.patch
    switched = admit(state, "UPDATE", make_pool("tal", workerClassName="kairos"))
    assert ("BootstrapFamilyChange", "spec.workerClassName") in pairs(switched.denials)


def test_a_malformed_old_object_is_not_a_crash() -> None:
    for old in ([1], "x", 3):
        decision = admit(make_state(), "UPDATE", make_pool(), old)  # type: ignore[arg-type]
        assert isinstance(decision.allowed, bool)
