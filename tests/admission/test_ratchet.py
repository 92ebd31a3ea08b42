"""UPDATEs ratchet as Kubernetes' CRD validation does: what an UPDATE leaves as stored is said,
not refused; what it changes is judged.

A pool whose stored values no longer validate (its class removed by force, its minor dropped from
the platform, a name the chart refuses) takes a label, an annotation, a finalizer removal or a
change elsewhere in its values, each denial of the stored pool then said as a warning. A change to
what a denial judges, or a denial the stored pool did not have, is refused. ``ratcheting=False``
(``check --stored``) judges the stored object as it is.
"""

from __future__ import annotations

import copy
import importlib
from collections.abc import Callable
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.builders import (
    KUBERNETES_VERSIONS,
    make_cluster,
    make_compute_plane,
    make_platform,
    make_pool,
    make_release,
    make_state,
    pairs,
    rename,
)
from workerclass import State, admit
from workerclass.admission.ratchet import MISSING, ratchet, value_at
from workerclass.violations import Violation


def _edit(obj: dict[str, Any], change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    change(out)
    return out


def _label(obj: dict[str, Any]) -> None:
    obj["metadata"].setdefault("labels", {})["team"] = "a"


def _finalizer_removed(obj: dict[str, Any]) -> None:
    obj["metadata"]["finalizers"] = []


def _deleting(obj: dict[str, Any]) -> dict[str, Any]:
    return _edit(obj, lambda o: o["metadata"].update(deletionTimestamp="2026-01-01T00:00:00Z", finalizers=["x/y"]))


def _scale(obj: dict[str, Any]) -> None:
    obj["spec"]["maxReplicas"] = 7


ORPHAN = make_pool("md1", workerClassName="removed-by-force")
#: (stored pool, the State it is judged in, the denial it gets, edits that leave that denial's field as stored)
BROKEN: dict[str, tuple[dict[str, Any], State, tuple[str, str]]] = {
    "class-removed": (ORPHAN, make_state([ORPHAN]), ("ClassNotFound", "spec.workerClassName")),
    "class-removed-being-deleted": (
        _deleting(ORPHAN),
        make_state([_deleting(ORPHAN)]),
        ("ClassNotFound", "spec.workerClassName"),
    ),
    "minor-dropped-by-the-platform": (
        make_pool("md2", version="v1.31"),
        make_state(
            [make_pool("md2", version="v1.31")],
            platform=make_platform(
                kubernetesVersions={m: {"patch": p} for m, p in KUBERNETES_VERSIONS.items() if m != "v1.31"}
            ),
            clusters=[make_cluster(version="v1.31")],
        ),
        ("UnsupportedVersion", "spec.version"),
    ),
}


@pytest.mark.parametrize(("stored", "state", "denial"), BROKEN.values(), ids=BROKEN.keys())
@pytest.mark.parametrize("edit", [_label, _finalizer_removed, _scale], ids=["label", "finalizer-removed", "scale-up"])
def test_an_update_leaving_the_broken_field_as_stored_is_allowed_and_says_so(
    stored: dict[str, Any], state: State, denial: tuple[str, str], edit: Callable[[dict[str, Any]], None]
) -> None:
    assert denial in pairs(admit(state, "UPDATE", stored, stored, ratcheting=False).denials)
    decision = admit(state, "UPDATE", _edit(stored, edit), stored)
    assert decision.allowed, [str(v) for v in decision.denials]
    assert any(
        w.startswith(f"{denial[0]} {denial[1]}: ") and "allowed: the stored object" in w for w in decision.warnings
    )


def test_changing_the_broken_field_is_judged() -> None:
    stored, state, _ = BROKEN["class-removed"]
    other = _edit(stored, lambda o: o["spec"].update(workerClassName="also-missing"))
    assert ("ClassNotFound", "spec.workerClassName") in pairs(admit(state, "UPDATE", other, stored).denials)


def test_a_denial_this_update_brings_is_refused_though_its_field_is_unchanged() -> None:
    """The kubelet reservations (unset, both sides) leave a smaller instance type no memory: the
    denial sits at spec.kubelet, but the stored pool did not have it."""
    stored = make_pool("md1", workerClassName=None, instanceType="u1.medium")
    smaller = _edit(stored, lambda o: o["spec"].update(instanceType="u1.nano"))
    decision = admit(make_state([stored]), "UPDATE", smaller, stored)
    assert "InvalidKubeletReservation" in {v.code for v in decision.denials}


def test_a_list_is_unchanged_only_as_a_whole() -> None:
    stored = make_pool("md1", gpus=[{"name": "nvidia.com/AD102GL_L40S", "vgpu": True}])
    state = make_state([stored])
    assert admit(state, "UPDATE", _edit(stored, _label), stored).allowed
    more = _edit(stored, lambda o: o["spec"]["gpus"].append({"name": "nvidia.com/GA102GL_A10"}))
    assert ("TalosVGPU", "spec.gpus[0].vgpu") in pairs(admit(state, "UPDATE", more, stored).denials)


def test_a_helm_release_the_chart_refuses_for_its_name_takes_metadata_changes() -> None:
    stored = rename(make_release("h1"), "example-legacy")
    state = make_state([stored])
    decision = admit(state, "UPDATE", _edit(stored, _label), stored)
    assert decision.allowed, [str(v) for v in decision.denials]
    assert any(w.startswith("InvalidPoolName metadata.name: ") for w in decision.warnings)
    changed = _edit(stored, lambda o: o["spec"]["values"].update(maxReplicas=5))
    assert ("InvalidPoolName", "metadata.name") in pairs(admit(state, "UPDATE", changed, stored).denials)


def test_a_compute_plane_ratchets_per_node_group() -> None:
    stored = make_compute_plane(node_groups={"a": {"maxReplicas": 2, "version": "v1.35"}, "b": {"maxReplicas": 1}})
    state = make_state([stored])
    other_group = _edit(stored, lambda o: o["spec"]["nodeGroups"]["b"].update(maxReplicas=3))
    assert admit(state, "UPDATE", other_group, stored).allowed
    same_group = _edit(stored, lambda o: o["spec"]["nodeGroups"]["a"].update(version="v1.34"))
    assert ("NotAllowedInComputePlane", "spec.nodeGroups.a.version") in pairs(
        admit(state, "UPDATE", same_group, stored).denials
    )


def test_without_ratcheting_the_stored_object_is_judged_as_it_is() -> None:
    stored, state, denial = BROKEN["class-removed"]
    assert denial in pairs(admit(state, "UPDATE", _edit(stored, _label), stored, ratcheting=False).denials)


OBJ = {
    "spec": {
        "talos": {"version": "v1.13.6", "registryMirrors": {"docker.io": {"endpoints": ["https://m"]}}},
        "gpus": [{"name": "a"}, {"name": "b", "vgpu": True}],
    }
}


@pytest.mark.parametrize(
    ("field", "expected"),
    [
        ("spec.talos.registryMirrors.docker.io.endpoints[0]", ["https://m"]),
        ("spec.gpus[1].vgpu", [{"name": "a"}, {"name": "b", "vgpu": True}]),
        ("spec.talos.version", "v1.13.6"),
        ("spec.talos.registryMirrors.docker.io", {"endpoints": ["https://m"]}),
    ],
    ids=["dotted-key-then-list", "list-element", "scalar", "dotted-key"],
)
def test_a_field_is_found_through_dotted_keys_and_stops_at_a_list(field: str, expected: Any) -> None:
    assert value_at(OBJ, field) == expected


@pytest.mark.parametrize("field", ["spec.missing.key", "spec.talos.version.more", "spec.talos.versionx"])
def test_a_field_that_leads_nowhere_is_missing(field: str) -> None:
    assert value_at(OBJ, field) is MISSING


@pytest.mark.parametrize(
    ("field", "values"),
    [("spec.maxReplicas", "spec"), ("metadata.name", "spec"), ("spec.values.version", "spec.values")],
    ids=["changed-field", "outside-the-changed-values", "release-values"],
)
def test_the_stored_object_is_not_judged_when_no_denied_field_is_left_as_stored(field: str, values: str) -> None:
    old = {"metadata": {"name": "p"}, "spec": {"maxReplicas": 3, "values": {"version": "v1.34"}}}
    new = {"metadata": {"name": "p"}, "spec": {"maxReplicas": 4, "values": {"version": "v1.35"}}}
    denial = Violation("Invalid", field, "refused")

    def stored() -> list[Violation]:
        raise AssertionError("the stored object was judged though nothing denied was left as stored")

    assert ratchet([denial], new=new, old=old, values=values, stored=stored) == ([denial], [])


#: the module (the package's ``ratchet`` is its function)
RATCHET = importlib.import_module("workerclass.admission.ratchet")
#: keys made of a few parts that dotted paths can split anywhere, and keys of other types (YAML)
_KEY_PARTS = st.sampled_from(["a", "b", "io", "docker", "", "1"])
_KEYS = st.one_of(
    st.lists(_KEY_PARTS, min_size=1, max_size=3).map(".".join),
    st.lists(_KEY_PARTS, min_size=1, max_size=2).map(lambda parts: "[".join(parts)),
    st.integers(0, 3),
    st.none(),
)
_VALUES = st.recursive(
    st.one_of(st.integers(0, 2), st.text("xy", max_size=2)),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_KEYS, inner, max_size=12)),
    max_leaves=40,
)


@settings(max_examples=400, deadline=None)
@given(root=st.dictionaries(_KEYS, _VALUES, max_size=12), paths=st.lists(st.lists(_KEY_PARTS, min_size=1, max_size=5)))
def test_an_index_finds_what_the_scan_finds(root: dict[Any, Any], paths: list[list[str]]) -> None:
    """The ratchet's indexes of wide mappings give the scan's answer: the longest key text a path
    starts with, the first key of that text (keys of another type, and texts holding dots or brackets, too)."""
    indexes: dict[int, dict[str, Any]] = {}
    fields = [field for parts in paths for field in (".".join(parts), "[".join(parts), ".".join(parts) + "[0]")]
    scanned = [value_at(root, field) for field in fields]
    with mock.patch.object(RATCHET, "_SCANNED", 0):  # every mapping through its index, however small
        indexed = [value_at(root, field, indexes) for field in fields]
    assert all(left is right for left, right in zip(indexed, scanned, strict=True))
