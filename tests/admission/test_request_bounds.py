"""A request's bounds judged once, off its orjson text: always the walk's answer.

:func:`~workerclass.admission.bounds.request_excess` spares the walk of
:func:`~workerclass.api.bounds.excess` when the text shows the object within; on generated objects
(strings with quotes, backslashes and brackets, nesting on both sides of the depth bound, values
that are not plain JSON data) it answers what the walk answers. ``admit`` judges the bounds once
per request and parses the pool once: counted here.
"""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import workerclass.admission as admission
import workerclass.admission.bounds as request_bounds_module
from tests.builders import make_pool, make_state
from workerclass.admission import admit, validate
from workerclass.admission.bounds import glance, patch_may_cross, request_excess, within_at_a_glance
from workerclass.admission.patch import PatchError, apply_ops
from workerclass.api.bounds import MAX_BYTES, MAX_DEPTH, excess, measure
from workerclass.state import pool_from_object

_TEXT = st.one_of(st.text(max_size=6), st.sampled_from(['"', "\\", '\\"', "[", "]]", "{}", 'a"b[c', "\u212a"]))
_SCALARS = st.one_of(
    _TEXT,
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
)
_JSONISH: st.SearchStrategy[Any] = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.tuples(inner, inner),
        st.dictionaries(_TEXT, inner, max_size=4),
    ),
    max_leaves=20,
)


def _nested(depth: int, leaf: Any = 1) -> Any:
    value: Any = leaf
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


@settings(max_examples=400, deadline=None)
@given(_JSONISH)
def test_the_answer_is_the_walks(value: Any) -> None:
    assert request_excess(value) == excess(value)
    if within_at_a_glance(value):
        assert excess(value) is None


@pytest.mark.parametrize("depth", [MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1, MAX_DEPTH + 5])
@pytest.mark.parametrize("leaf", [1, "x", "]]{", [], {}])
def test_nesting_on_both_sides_of_the_bound(depth: int, leaf: Any) -> None:
    value = _nested(depth, leaf)
    assert request_excess(value) == excess(value)
    found = glance(value)
    assert found is not None
    walked, _ = measure(value)
    assert found[1] >= min(walked, MAX_DEPTH + 1)
    assert (found[1] > MAX_DEPTH) is (walked > MAX_DEPTH)


@settings(max_examples=300, deadline=None)
@given(_JSONISH)
def test_the_glance_never_reads_less_than_the_walk(value: Any) -> None:
    found = glance(value)
    if found is not None:
        depth, size = measure(value)
        assert found[0] >= size
        assert found[1] >= min(depth, MAX_DEPTH + 1)


def test_a_large_object_is_the_walks() -> None:
    near = {"spec": {"blob": "x" * (MAX_BYTES // 8)}}
    assert glance(near) is None  # too long to tell from the text: walked
    assert request_excess(near) == excess(near) is None
    beyond = {"spec": {"blob": "x" * MAX_BYTES}}
    found = request_excess(beyond)
    assert found is not None and found == excess(beyond) and found.reason == "size"


@pytest.mark.parametrize(
    "value",
    [
        {"when": datetime.datetime(2026, 1, 1)},
        {1: "a non-str key"},
        {"big": 2**80},
        {"set": {1, 2}},
        {"surrogate": "\ud800"},
    ],
)
def test_what_is_not_plain_json_is_walked(value: Any) -> None:
    assert glance(value) is None
    assert request_excess(value) == excess(value)


_OPS = st.lists(
    st.one_of(
        st.builds(
            lambda key, text: {"op": "add", "path": f"/spec/{key}", "value": text},
            st.sampled_from(["workerClassName", "version"]),
            st.text(max_size=40),
        ),
        st.builds(
            lambda text: {"op": "add", "path": "/spec", "value": {"workerClassName": text}}, st.text(max_size=40)
        ),
        st.just({"op": "remove", "path": "/spec/a"}),
    ),
    max_size=3,
)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(["a", "b", "c"]), _JSONISH, max_size=3), _OPS, st.integers(0, 40))
def test_a_patch_that_cannot_cross_leaves_the_object_within(spec: dict[str, Any], ops: Any, padding: int) -> None:
    obj = {"kind": "KubernetesNodes", "spec": {**spec, "a": "x" * padding}}
    found = glance(obj)
    if found is None or excess(obj) is not None:
        return
    try:
        patched = apply_ops(obj, ops)
    except PatchError:  # a removal after the spec was replaced: no mutation writes that
        return
    if not patch_may_cross(found[0], ops):
        assert excess(patched) is None


def test_a_patch_near_the_size_bound_is_judged_again() -> None:
    ops = [{"op": "add", "path": "/spec/workerClassName", "value": "talos"}]
    assert patch_may_cross(MAX_BYTES - 8, ops)
    assert not patch_may_cross(1000, ops)
    assert patch_may_cross(1000, [{"op": "add", "path": "/spec/a/b/c", "value": "x"}])  # deeper than it reasons about
    assert patch_may_cross(1000, [{"op": "add", "path": "/spec/x", "value": [[1]]}])


class _Count:
    def __init__(self, function: Any) -> None:
        self.function = function
        self.calls = 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return self.function(*args, **kwargs)


@pytest.mark.parametrize(
    ("spec", "patched"),
    [({"workerClassName": None}, True), ({}, False), ({"sshKeys": ["ssh-ed25519 AAAA"]}, False)],
)
def test_one_judgement_and_one_parse_per_request(
    monkeypatch: pytest.MonkeyPatch, spec: dict[str, Any], patched: bool
) -> None:
    state = make_state()
    pool = make_pool("counted", **spec)
    if spec.get("workerClassName", "") is None:
        del pool["spec"]["workerClassName"]
    expected = admit(state, "CREATE", pool)
    glances = _Count(request_bounds_module.glance)
    walks = _Count(excess)
    parses = _Count(pool_from_object)
    monkeypatch.setattr(request_bounds_module, "glance", glances)
    monkeypatch.setattr(request_bounds_module, "excess", walks)
    monkeypatch.setattr(admission, "pool_from_object", parses)
    decision = admit(state, "CREATE", pool)
    assert bool(decision.patch) is patched
    assert (decision.allowed, decision.patch, decision.denials, decision.warnings) == (
        expected.allowed,
        expected.patch,
        expected.denials,
        expected.warnings,
    )
    assert glances.calls == 1, "the bounds are judged once per request"
    assert walks.calls == 0, "a plain pool well inside the bounds is not walked"
    assert parses.calls == 1, "the pool is parsed once per request"


def test_a_mutated_object_beyond_the_bounds_is_still_refused() -> None:
    """The mutated object is judged again where its ops could cross: as validating it would."""
    state = make_state()
    pool = make_pool("big")
    del pool["spec"]["workerClassName"]
    pool["metadata"]["annotations"] = {"pad": ""}
    pool["metadata"]["annotations"]["pad"] = "y" * (MAX_BYTES - 10 - measure(pool)[1])
    assert excess(pool) is None
    decision = admit(state, "CREATE", pool)
    mutated = decision.object
    assert mutated is not None and mutated is not pool and decision.patch
    assert excess(mutated) is not None
    assert not decision.allowed
    validated = validate(state, "CREATE", mutated).denials
    assert [(v.code, v.field) for v in decision.denials] == [(v.code, v.field) for v in validated]
    assert [v.code for v in decision.denials] == ["ObjectTooLarge"]
