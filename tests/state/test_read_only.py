"""What a State shares with other States refuses writes: the instance types, the platform object, objects."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from workerclass.adapters.folder import load_state
from workerclass.state import State, embedded_instancetypes

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _instancetype(name: str, cpu: int) -> dict[str, Any]:
    return {
        "apiVersion": "instancetype.kubevirt.io/v1beta1",
        "kind": "VirtualMachineClusterInstancetype",
        "metadata": {"name": name},
        "spec": {"cpu": {"guest": cpu}, "memory": {"guest": "1Gi"}},
    }


def _write(mapping: Any) -> None:
    mapping["x"] = {}


def test_the_shipped_instance_types_refuse_writes() -> None:
    shipped = embedded_instancetypes()
    for write in (_write, lambda m: m.pop("u1.medium"), lambda m: m.clear(), lambda m: m.update(x={})):
        with pytest.raises((TypeError, AttributeError)):
            write(shipped)
    assert "x" not in embedded_instancetypes() and "u1.medium" in embedded_instancetypes()


def test_a_states_instance_types_refuse_writes_whether_shipped_or_read() -> None:
    shipped = State.from_objects([])
    read = State.from_objects([_instancetype("zz.huge", 64)])
    added = shipped.with_object(_instancetype("zz.tiny", 1))
    for state in (shipped, read, added, load_state(EXAMPLES)):
        with pytest.raises(TypeError):
            _write(state.instancetypes)
        assert "x" not in state.instancetypes


def test_two_states_share_no_writable_instance_type_mapping() -> None:
    first, second = State.from_objects([]), load_state(EXAMPLES)
    for state in (first, second):  # the shipped set serves every State of the process: none may write it
        with pytest.raises(TypeError):
            _write(state.instancetypes)
    assert "x" not in second.instancetypes and "x" not in State.from_objects([]).instancetypes
    # a State's own instance types are its own mapping, and do not leak into the shipped set
    read = State.from_objects([_instancetype("zz.huge", 64)])
    assert "zz.huge" in read.instancetypes and "zz.huge" not in first.instancetypes
    assert "zz.huge" not in embedded_instancetypes()


def test_the_platform_object_refuses_writes() -> None:
    embedded, read = State.from_objects([]), load_state(EXAMPLES)
    for state in (embedded, read):
        with pytest.raises(TypeError):
            _write(state.platform_object)
        with pytest.raises(TypeError):
            state.platform_object["spec"] = {}  # type: ignore[index]
    assert "x" not in State.from_objects([]).platform_object
    changed = read.with_object({**dict(read.platform_object), "metadata": {"name": "default"}})
    with pytest.raises(TypeError):
        _write(changed.platform_object)


def test_objects_are_a_tuple() -> None:
    state = load_state(EXAMPLES)
    assert isinstance(state.objects, tuple) and state.objects
    with pytest.raises(AttributeError):
        state.objects.append(state.objects[0])  # type: ignore[attr-defined]


def test_the_read_only_mappings_still_serialise_and_copy_as_dicts() -> None:
    state = load_state(EXAMPLES)
    plain = dict(state.platform_object)
    assert plain == state.platform_object and json.loads(json.dumps(plain)) == plain
    assert copy.deepcopy(dict(state.instancetypes)) == state.instancetypes
    assert {**State.from_objects([]).instancetypes} == dict(embedded_instancetypes())
