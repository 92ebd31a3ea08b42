"""A WorkerPlatform that sets only some keys: each key it sets replaces the embedded platform's,
the rest keep the embedded defaults, and a changed default class applies to new pools only.
"""

from __future__ import annotations

from typing import Any

from tests.builders import make_cluster, make_pool
from workerclass.admission import admit, validate
from workerclass.state import State

PARTIAL_PLATFORM = {
    "apiVersion": "cozystack.io/v1alpha1",
    "kind": "WorkerPlatform",
    "metadata": {"name": "default"},
    "spec": {"defaultWorkerClass": "kairos"},
}


def _state(*objects: Any) -> State:
    return State.from_objects([make_cluster(), *objects])


def test_a_platform_that_sets_only_the_default_keeps_the_embedded_defaults() -> None:
    embedded = _state().platform
    state = _state(PARTIAL_PLATFORM)
    assert state.platform.default_worker_class == "kairos"
    assert state.platform.kubernetes_versions == embedded.kubernetes_versions != {}
    assert state.platform.talos_version == embedded.talos_version != ""
    assert state.platform.talos_schematic_id == embedded.talos_schematic_id != ""
    assert state.platform.kairos_images == embedded.kairos_images != {}
    assert state.platform.support_matrix == embedded.support_matrix != {}
    assert state.platform.goldens == embedded.goldens


def test_a_partial_platform_changes_only_the_default_for_new_pools() -> None:
    stored = make_pool("tal", workerClassName="talos")
    state = _state(PARTIAL_PLATFORM, stored)
    assert admit(state, "UPDATE", stored, stored).denials == []
    created = admit(state, "CREATE", make_pool("new", workerClassName=None))
    assert created.allowed, created.denials
    assert created.patch == [{"op": "add", "path": "/spec/workerClassName", "value": "kairos"}]
    assert validate(state, "CREATE", PARTIAL_PLATFORM).denials == []


def test_a_platform_key_it_sets_replaces_the_embedded_one_and_the_rest_stay() -> None:
    platform = {
        **PARTIAL_PLATFORM,
        "spec": {"talos": {"version": "v1.13.5"}, "kubernetesVersions": {"v1.35": {"patch": "v1.35.7"}}},
    }
    state = _state(platform)
    embedded = _state().platform
    assert state.platform.talos_version == "v1.13.5"
    assert state.platform.talos_schematic_id == embedded.talos_schematic_id
    assert state.platform.kubernetes_versions == {"v1.35": "v1.35.7"}
    assert state.platform.default_worker_class == "talos"
