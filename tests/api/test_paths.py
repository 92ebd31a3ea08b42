"""Typed field paths: built from segments, equal to their text, taken apart by segment, never by text."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from workerclass.api.paths import FieldPath

PRIVATE = "-----BEGIN OPENSSH PRIVATE KEY-----"


def test_a_path_is_its_text() -> None:
    path = FieldPath("spec", "talos") / "version"
    assert path == "spec.talos.version" and str(path) == "spec.talos.version"
    assert json.dumps({"field": path}) == '{"field": "spec.talos.version"}'
    assert {path: 1}["spec.talos.version"] == 1


def test_indexes_and_parents() -> None:
    path = FieldPath("spec", "gpus").at(0) / "vgpu"
    assert path == "spec.gpus[0].vgpu"
    assert path.segments == ("spec", "gpus", 0, "vgpu")
    assert path.parent == "spec.gpus[0]" and path.leaf == "vgpu"
    assert FieldPath().parent == "" and FieldPath().leaf is None


def test_under_and_relative_to_go_by_segment_not_by_text() -> None:
    prefix = FieldPath("spec", "talos")
    assert (prefix / "version").under(prefix)
    assert not FieldPath("spec", "talosExtra").under(prefix)  # a text prefix, not a path prefix
    assert (prefix / "registryMirrors" / "docker.io").relative_to(prefix) == ("registryMirrors", "docker.io")
    with pytest.raises(ValueError):
        FieldPath("metadata").relative_to(prefix)


def test_a_key_that_holds_private_key_material_is_never_added() -> None:
    path = FieldPath("spec", "labels")
    assert path / f"x{PRIVATE}" == "spec.labels"
    assert path / "node-role" == "spec.labels.node-role"


@given(st.lists(st.one_of(st.from_regex(r"[A-Za-z][A-Za-z0-9]{0,8}", fullmatch=True), st.integers(0, 99)), max_size=6))
def test_parse_reads_back_the_segments_of_plain_keys(segments: list[str | int]) -> None:
    if segments and isinstance(segments[0], int):
        segments = ["spec", *segments]
    path = FieldPath(*segments)
    assert FieldPath.parse(str(path)).segments == path.segments
    assert FieldPath.parse(path) is path
