"""Objects stored trimmed (what the cluster cache keeps) decide as the whole objects do."""

from __future__ import annotations

import copy
from typing import Any

from workerclass.adapters.kube import WATCHED, trimmed
from workerclass.ops.status import class_status
from workerclass.state import State, identify

from .probes import decisions, example_objects, noisy, probe_objects
from .test_incremental import VARIANTS

KINDS = {watched.kind for watched in WATCHED}


def _cluster_objects() -> list[dict[str, Any]]:
    """The examples and every variant of the property test, as the API server sends them."""
    objects = {identify(obj): obj for obj in example_objects()}
    deleting = next(obj for obj in VARIANTS[6] if "deletionTimestamp" in obj["metadata"])
    objects[identify(deleting)] = deleting  # a class being deleted: new pools may not select it
    for choices in VARIANTS:
        for obj in choices:
            objects.setdefault(identify(obj), obj)
    for name, key, value in (("pve-targeted", "targetNamespace", "x" * 40), ("pve-named", "releaseName", "pve-other")):
        release = copy.deepcopy(VARIANTS[4][1])  # a standalone pool HelmRelease
        release["metadata"]["name"] = name
        release["spec"][key] = value  # its Helm release name (chart checks on the name read it)
        objects[identify(release)] = release
    # Instance types stay as written: a resolution carries the instance type objects themselves
    # (so their metadata would differ in its repr), and the chart reads only their name and spec.
    out = [
        obj if obj["kind"] == "VirtualMachineClusterInstancetype" else noisy(obj, serial)
        for serial, obj in enumerate(objects.values())
    ]
    for obj in out:  # what the controller reads of a class: its status as written
        if obj["kind"] == "WorkerClass":
            obj["metadata"]["finalizers"] = ["workerclass.cozystack.io/retain-while-selected"]
            obj["status"] = {"pools": 0, "conditions": [{"type": "Accepted", "status": "True"}]}
    return out


def _controller_view(state: State) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, record in sorted(state.classes.items()):
        metadata = record.obj.get("metadata") or {}
        generation = metadata.get("generation")
        out[name] = (
            class_status(state, name, generation if isinstance(generation, int) else None),
            metadata.get("uid"),
            generation,
            metadata.get("deletionTimestamp"),
            metadata.get("finalizers"),
            record.obj.get("status"),
        )
    return out


def test_every_watched_kind_is_covered() -> None:
    assert {obj["kind"] for obj in _cluster_objects()} == KINDS


def test_trimmed_objects_decide_as_whole_ones() -> None:
    whole = _cluster_objects()
    kept = [trimmed(obj["kind"], copy.deepcopy(obj)) for obj in whole]
    full, trim = State.from_objects(whole), State.from_objects(kept)
    probes = probe_objects(full)
    assert decisions(trim, probes) == decisions(full, probes)
    assert _controller_view(trim) == _controller_view(full)
    assert trim.pools == full.pools
    assert trim.backing_values == full.backing_values
    assert trim.clusters == full.clusters and trim.compute_planes == full.compute_planes
    assert trim.platform == full.platform
    assert {name: it.get("spec") for name, it in trim.instancetypes.items()} == {
        name: it.get("spec") for name, it in full.instancetypes.items()
    }


def test_trimming_drops_what_nobody_reads() -> None:
    for obj in _cluster_objects():
        kept = trimmed(obj["kind"], obj)
        metadata = kept["metadata"]
        assert not {"managedFields", "resourceVersion", "annotations"} & set(metadata), obj["kind"]
        assert ("status" in kept) == (obj["kind"] == "WorkerClass")
        if obj["kind"] == "HelmRelease":
            assert set(kept["spec"]) <= {"values", "releaseName", "targetNamespace", "chartRef"}  # chartRef: its chart


def test_a_status_only_write_trims_to_the_same_object() -> None:
    for serial, obj in enumerate(_cluster_objects()):
        if obj["kind"] == "WorkerClass":
            continue  # its status is read (the controller compares it)
        assert trimmed(obj["kind"], noisy(obj, serial + 500)) == trimmed(obj["kind"], obj)
