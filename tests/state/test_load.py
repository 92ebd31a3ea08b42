"""``load_state``: one path or several, and the loader's skipped-document warnings kept on the State."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from workerclass.adapters.folder import LoadError, load_state

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def test_one_folder_as_a_string_or_a_path() -> None:
    by_text, by_path = load_state(str(EXAMPLES)), load_state(EXAMPLES)
    assert [r.origin for r in by_text.objects] == [r.origin for r in by_path.objects]
    assert len(by_path.pools) == 4  # the legacy pool's HelmRelease is its stored record, not a pool
    assert ("tenant-example", "example-legacy") in by_path.backing_values
    assert by_path.warnings == ()


def test_several_paths_make_one_state(tmp_path: Path) -> None:
    classes = tmp_path / "classes"
    shutil.copytree(EXAMPLES / "classes", classes)
    state = load_state([EXAMPLES / "platform", classes, EXAMPLES / "tenant-example" / "pools.yaml"])
    assert sorted(name for name in state.classes if not state.classes[name].builtin) == [
        "kairos-example-v1-35-6-r1",
        "talos-example-r1",
    ]
    assert sorted(record.name for record in state.pools.values()) == [
        "example-custom-kairos",
        "example-kairos",
        "example-talos",
    ]
    # the tenant's parent cluster was not among the paths
    assert state.clusters == {}


def test_a_file_named_twice_is_read_once() -> None:
    pools = EXAMPLES / "tenant-example" / "pools.yaml"
    state = load_state([EXAMPLES, pools])  # strict loading: a second read would be a duplicate identity
    assert [r.origin for r in state.objects] == [r.origin for r in load_state(EXAMPLES).objects]


def test_skipped_documents_are_recorded_before_indexing_warnings(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    shutil.copytree(EXAMPLES, state_dir)
    (state_dir / "site.yml").write_text("- hosts: all\n  tasks: []\n")
    (state_dir / "other.yaml").write_text(
        yaml.safe_dump(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "tenant-example"}}
        )
    )
    state = load_state(state_dir)
    assert list(state.warnings) == [
        f"{state_dir / 'site.yml'}#1: a list, not a Kubernetes object: skipped",
        f"skipped 1 ConfigMap object (first at {state_dir / 'other.yaml'}:1): workerclass does not read this kind",
    ]  # what the reader skipped first, then what indexing skipped


def test_a_missing_path_raises_load_error(tmp_path: Path) -> None:
    with pytest.raises(LoadError, match="no such file or folder"):
        load_state([EXAMPLES, tmp_path / "missing"])
