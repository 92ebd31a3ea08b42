"""The object a mutation shows is what its RFC 6902 ops make: the reference (``jsonpatch``) agrees.

``apply_ops`` is checked against ``jsonpatch.apply_patch`` on the shapes ``mutate`` writes (a
member added at any depth, members removed, keys that need RFC 6901 escaping), and for what the
webhook relies on: the request's object is never written, and what no op touches is shared.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.builders import apply_patch, make_pool, make_state
from workerclass.admission import mutate
from workerclass.admission.patch import PatchError, apply_ops
from workerclass.rules.supplied import json_pointer

KEYS = st.sampled_from(["spec", "a", "b/c", "d~e", "talos", "x"])
NESTED: st.SearchStrategy[Any] = st.recursive(
    st.one_of(st.integers(), st.text(max_size=3), st.none()),
    lambda inner: st.dictionaries(KEYS, inner, max_size=3),
    max_leaves=12,
)


def _mapping_paths(node: dict[str, Any], prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """The paths of ``node`` and of every mapping below it."""
    out = [prefix]
    for key, value in node.items():
        if isinstance(value, dict):
            out += _mapping_paths(value, (*prefix, key))
    return out


@st.composite
def documents_and_ops(draw: st.DrawFn) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A document and ops that apply to it: adds below existing mappings, removes of existing members."""
    doc = draw(st.dictionaries(KEYS, NESTED, max_size=4))
    ops: list[dict[str, Any]] = []
    current = copy.deepcopy(doc)
    for _ in range(draw(st.integers(0, 4))):
        parent = draw(st.sampled_from(_mapping_paths(current)))
        node = current
        for key in parent:
            node = node[key]
        if node and draw(st.booleans()):
            key = draw(st.sampled_from(sorted(node)))
            op: dict[str, Any] = {"op": "remove", "path": json_pointer("", (*parent, key))}
        else:
            op = {"op": "add", "path": json_pointer("", (*parent, draw(KEYS))), "value": draw(NESTED)}
        ops.append(op)
        current = apply_patch(current, [op])
    return doc, ops


@given(documents_and_ops())
def test_apply_ops_makes_what_jsonpatch_makes(case: tuple[dict[str, Any], list[dict[str, Any]]]) -> None:
    doc, ops = case
    before = copy.deepcopy(doc)
    assert apply_ops(doc, ops) == apply_patch(doc, ops)
    assert doc == before, "the document given is never written"


def test_what_no_op_touches_is_shared() -> None:
    doc = {"metadata": {"name": "n"}, "spec": {"talos": {"version": "v1"}, "roles": ["a"]}}
    out = apply_ops(doc, [{"op": "add", "path": "/spec/workerClassName", "value": "talos"}])
    assert out["spec"] is not doc["spec"] and "workerClassName" not in doc["spec"]
    assert out["metadata"] is doc["metadata"] and out["spec"]["talos"] is doc["spec"]["talos"]


@pytest.mark.parametrize(
    "op",
    [
        {"op": "replace", "path": "/spec/a", "value": 1},
        {"op": "remove", "path": "/spec/absent"},
        {"op": "add", "path": "/spec/a/b", "value": 1},
        {"op": "add", "path": "spec", "value": 1},
    ],
    ids=["unsupported-op", "remove-absent", "through-a-scalar", "not-a-pointer"],
)
def test_an_op_that_cannot_apply_is_refused(op: dict[str, Any]) -> None:
    with pytest.raises(PatchError):
        apply_ops({"spec": {"a": 1}}, [op])


@pytest.mark.parametrize("operation", ["CREATE", "UPDATE"], ids=["create", "update"])
def test_the_decisions_object_is_its_patch_applied(operation: str) -> None:
    stored = make_pool("stored", workerClassName="talos")
    pool = make_pool("stored", workerClassName="", instanceType="u1.medium")
    decision = mutate(make_state([stored]), operation, pool, stored if operation == "UPDATE" else None)
    assert decision.patch
    assert decision.object == apply_patch(pool, decision.patch)
