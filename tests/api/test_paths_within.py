"""``api.paths.is_within``: the text test of a field path against a prefix (a key boundary)."""

from __future__ import annotations

import pytest

from workerclass.api.paths import FieldPath, is_within


@pytest.mark.parametrize(
    ("path", "prefix", "within"),
    [
        ("spec", "spec", True),
        ("spec.talos", "spec", True),
        ("spec.talos.version", "spec.talos", True),
        ("spec.talosx", "spec.talos", False),
        ("spec", "spec.talos", False),
        ("spec.values.talos", "spec", True),
        ("status.spec", "spec", False),
        # an index right below is not counted: a bracketed key cannot be told from it in text
        ("spec.nodeGroups.a[0]", "spec.nodeGroups.a", False),
        ("spec.gpus[0].name", "spec.gpus[0]", True),
    ],
)
def test_is_within(path: str, prefix: str, within: bool) -> None:
    assert is_within(path, prefix) is within


def test_is_within_takes_field_paths_as_text() -> None:
    assert is_within(FieldPath("spec", "talos", "version"), FieldPath("spec", "talos"))
    assert not is_within(FieldPath("spec", "talosx"), "spec.talos")
