"""A WorkerClass's fixed image: both fields or neither (``IncompleteImage``; a malformed one is
``Invalid``), and its reference pinned by digest (``ImageNotPinned``).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import make_class, make_cluster, make_state, pairs
from workerclass.admission import admit, validate
from workerclass.state import State


def _state(*objects: Any) -> State:
    return State.from_objects([make_cluster(), *objects])


def _class_codes(**image: Any) -> list[str]:
    cls = make_class("img", "kairos", image=image)
    return [v.code for v in validate(_state(), "CREATE", cls).denials]


def test_both_image_fields_set_one_malformed_is_invalid_not_incomplete() -> None:
    codes = _class_codes(kubernetesVersion="1.35", reference="x")
    assert "Invalid" in codes and "ImageNotPinned" in codes
    assert "IncompleteImage" not in codes


@pytest.mark.parametrize("empty", [None, ""])
def test_one_image_field_absent_or_empty_is_incomplete(empty: Any) -> None:
    image = (
        {"kubernetesVersion": "v1.35.6", "reference": empty} if empty is not None else {"kubernetesVersion": "v1.35.6"}
    )
    assert "IncompleteImage" in _class_codes(**image)


@pytest.mark.parametrize(
    "reference",
    [
        "registry.example.com/workers/kairos-worker@sha256:" + "a" * 64,
        "localhost:5000/kairos@sha256:" + "a" * 64,
        "ghcr.io/org/kairos-worker:v1.35.6@sha256:" + "a" * 64,
        "kairos@sha256:" + "a" * 64,
    ],
)
def test_pinned_references_are_accepted(reference: str) -> None:
    obj = make_class("fixed", "kairos", image={"kubernetesVersion": "v1.35.6", "reference": reference})
    assert admit(make_state(), "CREATE", obj).allowed


def test_an_unpinned_reference_is_still_image_not_pinned_only() -> None:
    obj = make_class("fixed", "kairos", image={"kubernetesVersion": "v1.35.6", "reference": "registry.example.com/w:1"})
    assert pairs(admit(make_state(), "CREATE", obj).denials) == {("ImageNotPinned", "spec.image.reference")}
