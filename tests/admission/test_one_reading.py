"""One reading of a request: the bounds text answers the private-key search, and admission asks
resolution for its verdict only.

The request's orjson text, made once to judge its bounds, also tells that no string in it can hold
private key material (:func:`~workerclass.rules.keys.text_cannot_hold_private`): the values are then
not serialized again for the search. Admission drops the effective settings, so resolution stops
before building them. Both are counted here, beside the denials they must not change.
"""

from __future__ import annotations

import importlib
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import workerclass.rules.keys as keys_module
from tests.builders import make_pool, make_state
from workerclass.admission import admit, validate
from workerclass.admission.bounds import request_reading
from workerclass.rules.keys import holds_private

# ``workerclass.resolve`` is also a function of the package: the modules are looked up by name.
talos_module = importlib.import_module("workerclass.resolve.talos")
kairos_module = importlib.import_module("workerclass.resolve.kairos")

_PRIVATE = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----"
_TEXT = st.one_of(
    st.text(max_size=8),
    st.sampled_from([_PRIVATE, "PRIVATE KEY", "private\u212akey", "PuTTY-User-Key-File-3: ssh-rsa", '"\\']),
)
_VALUES: st.SearchStrategy[Any] = st.recursive(
    st.one_of(_TEXT, st.integers(), st.booleans(), st.none()),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_TEXT, inner, max_size=4)),
    max_leaves=16,
)


@settings(max_examples=300, deadline=None)
@given(_VALUES)
def test_a_clean_reading_never_hides_a_private_key(value: Any) -> None:
    _, _, clean = request_reading({"spec": value})
    if clean:
        assert not holds_private(value)


class _Count:
    def __init__(self, function: Any) -> None:
        self.function = function
        self.calls = 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return self.function(*args, **kwargs)


def _no_effective(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("admission built effective settings it does not read")


@pytest.mark.parametrize(
    "spec",
    [
        {},
        {"workerClassName": None},
        {"sshKeys": ["ssh-ed25519 AAAA"]},
        {"workerClassName": "kairos", "sshKeys": []},
    ],
)
def test_the_values_are_read_once_and_no_effective_is_built(monkeypatch: pytest.MonkeyPatch, spec: Any) -> None:
    state = make_state()
    pool = make_pool("counted", **spec)
    if spec.get("workerClassName", "") is None:
        del pool["spec"]["workerClassName"]
    expected = admit(state, "CREATE", pool)
    searches = _Count(keys_module._cannot_hold_private)
    monkeypatch.setattr(keys_module, "_cannot_hold_private", searches)
    monkeypatch.setattr(talos_module, "Effective", _no_effective)
    monkeypatch.setattr(kairos_module, "Effective", _no_effective)
    decision = admit(state, "CREATE", pool)
    assert (decision.allowed, decision.patch, decision.denials, decision.warnings) == (
        expected.allowed,
        expected.patch,
        expected.denials,
        expected.warnings,
    )
    again = validate(state, "CREATE", decision.object)
    assert (again.allowed, again.denials) == (decision.allowed, decision.denials)
    # The ops' values (a class name, a minor) are searched apart: a few bytes, never the values.
    assert searches.calls <= (1 if decision.patch else 0)


@pytest.mark.parametrize("where", ["labels", "sshKeys", "key"])
def test_a_private_key_is_still_refused(where: str) -> None:
    state = make_state()
    if where == "labels":
        pool = make_pool("leaky", labels={"note": _PRIVATE})
    elif where == "sshKeys":
        pool = make_pool("leaky", workerClassName="kairos", sshKeys=[_PRIVATE])
    else:
        pool = make_pool("leaky", talos={"registryMirrors": {_PRIVATE: {"endpoints": []}}})
    _, _, clean = request_reading(pool)
    assert not clean
    for decision in (admit(state, "CREATE", pool), validate(state, "CREATE", pool)):
        assert "PrivateKeyMaterial" in {denial.code for denial in decision.denials}
        assert _PRIVATE not in orjson.dumps([d.message for d in decision.denials]).decode()


@pytest.mark.parametrize(
    "spec",
    [{}, {"workerClassName": None}, {"workerClassName": "kairos", "sshKeys": []}],
)
def test_a_create_runs_the_chart_checks_once_and_keeps_no_input(monkeypatch: pytest.MonkeyPatch, spec: Any) -> None:
    """Its verdict and the name rules read one run of the chart's checks; a decision renders
    nothing, so no chart input is kept for it."""
    chart_module = importlib.import_module("workerclass.resolve.chart")
    monkeypatch.setattr(chart_module, "_SHARED_CHECKS", type(chart_module._SHARED_CHECKS)())
    monkeypatch.setattr(chart_module, "_SHARED_PASSES", type(chart_module._SHARED_PASSES)())
    runs = _Count(chart_module.chart_failures)
    monkeypatch.setattr(chart_module, "chart_failures", runs)
    pool = make_pool("once", **spec)
    if spec.get("workerClassName", "") is None:
        del pool["spec"]["workerClassName"]
    admit(make_state(), "CREATE", pool)
    assert runs.calls == 1
    assert len(chart_module._SHARED_PASSES) == 0
