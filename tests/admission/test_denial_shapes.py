"""What a refusal looks like to a caller: each denial reads as the documented mapping (code, field,
message) and serialises to JSON; resolving a refused pool raises ``Denied(denials)`` (API.md section 6).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.builders import make_cluster, make_pool, make_state
from workerclass import Denied, resolve
from workerclass.admission import admit
from workerclass.state import State


def _state(*objects: Any) -> State:
    return State.from_objects([make_cluster(), *objects])


def test_denials_read_as_the_documented_mappings() -> None:
    decision = admit(_state(), "CREATE", make_pool("x", workerClassName="nope"))
    first = decision.denials[0]
    assert first["code"] == "ClassNotFound" and first["field"] == "spec.workerClassName"
    assert dict(first) == first.as_dict() == {"code": first.code, "field": first.field, "message": first.message}
    assert json.loads(json.dumps([dict(v) for v in decision.denials]))[0]["code"] == "ClassNotFound"


def test_denied_carries_denials() -> None:
    with pytest.raises(Denied) as raised:
        resolve(make_state(), make_pool(workerClassName="nope"))
    assert raised.value.denials == raised.value.violations
    assert [v.code for v in raised.value.denials] == ["ClassNotFound"]
