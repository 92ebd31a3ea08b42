"""rules.family: one family lookup for admission (unknown stays unknown) and resolution (unknown is Talos)."""

from __future__ import annotations

from tests.builders import KAIROS_FIXED, make_class, make_state
from workerclass.rules.family import assumed_family, class_family, family_of


def test_a_classless_pool_is_talos() -> None:
    state = make_state()
    assert family_of(state, None) == "talos"
    assert family_of(state, "") == "talos"
    assert assumed_family(state, None) == "talos"


def test_a_class_names_its_family() -> None:
    state = make_state()
    assert family_of(state, KAIROS_FIXED["metadata"]["name"]) == "kairos"
    assert family_of(state, "talos") == "talos"
    assert class_family(state.classes["kairos"].spec) == "kairos"


def test_an_unknown_or_unreadable_class_has_no_family_but_resolution_assumes_talos() -> None:
    state = make_state(classes=[make_class("broken", bootstrap="windows")])
    assert family_of(state, "missing") is None
    assert family_of(state, "broken") is None
    assert assumed_family(state, "missing") == "talos"
    assert assumed_family(state, "broken") == "talos"
    assert class_family(None) is None
