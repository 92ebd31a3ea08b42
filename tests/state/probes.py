"""Objects and probe requests shared by the State tests: what a cluster cache sees, and the
decisions that must come out the same however the State was built."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from workerclass.adapters.folder import load_state
from workerclass.admission import admit
from workerclass.resolve import resolve
from workerclass.state import State, identify
from workerclass.violations import Denied

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NS = "tenant-example"
HR_LABEL = "apps.cozystack.io/application.kind"


def example_objects() -> list[dict[str, Any]]:
    return [copy.deepcopy(dict(record.obj)) for record in load_state(EXAMPLES).objects]


def noisy(obj: Mapping[str, Any], serial: int) -> dict[str, Any]:
    """``obj`` as the API server would send it after a write nobody reads: a new resourceVersion,
    managedFields, an annotation, a status (Flux's on a HelmRelease)."""
    out = copy.deepcopy(dict(obj))
    metadata = dict(out.get("metadata") or {})
    metadata["resourceVersion"] = str(1000 + serial)
    metadata["managedFields"] = [{"manager": "helm-controller", "operation": "Update", "time": f"t{serial}"}]
    metadata["annotations"] = {"reconcile.fluxcd.io/requestedAt": f"r{serial}"}
    metadata["uid"] = metadata.get("uid", f"uid-{metadata.get('name')}")
    out["metadata"] = metadata
    if out.get("kind") != "WorkerClass":
        out["status"] = {"observedGeneration": serial, "conditions": [{"type": "Ready", "status": "True"}]}
    if out.get("kind") == "HelmRelease":
        spec = dict(out.get("spec") or {})
        spec["interval"] = f"{serial % 7 + 1}m"
        out["spec"] = spec
    return out


def probe_objects(state: State) -> list[dict[str, Any]]:
    """Requests to admit: every stored pool, class and the platform, plus a few new ones."""
    out = [copy.deepcopy(dict(record.obj)) for record in state.objects]
    out.append(
        {
            "apiVersion": "apps.cozystack.io/v1alpha1",
            "kind": "KubernetesNodes",
            "metadata": {"name": "example-probe", "namespace": NS},
            "spec": {"cluster": "example", "version": "v1.35", "workerClassName": "gpu"},
        }
    )
    out.append(
        {
            "apiVersion": "apps.cozystack.io/v1alpha1",
            "kind": "KubernetesNodes",
            "metadata": {"name": "pve-probe", "namespace": NS},
            "spec": {"cluster": "pve", "version": "v1.35"},
        }
    )
    out.append(
        {
            "apiVersion": "apps.cozystack.io/v1alpha1",
            "kind": "KubernetesNodes",
            "metadata": {"name": "solo-probe", "namespace": NS},
            "spec": {"cluster": "solo", "version": "v1.35"},
        }
    )
    out.append({"apiVersion": "cozystack.io/v1alpha1", "kind": "WorkerClass", "metadata": {"name": "gpu"}, "spec": {}})
    return out


def _plain(value: Any) -> Any:
    return json.loads(json.dumps(value, default=repr, sort_keys=True))


def decisions(state: State, probes: list[dict[str, Any]]) -> dict[str, Any]:
    """Every probe admitted as CREATE, UPDATE (over itself) and DELETE, and every pool resolved."""
    out: dict[str, Any] = {}
    for obj in probes:
        kind, namespace, name = identify(obj)
        for operation, old in (("CREATE", None), ("UPDATE", obj), ("DELETE", obj)):
            decision = admit(state, operation, None if operation == "DELETE" else obj, old)
            out[f"admit {operation} {kind} {namespace}/{name}"] = _plain(decision.as_dict())
    for record in state.sorted_pools():
        try:
            effective = repr(resolve(state, record))
        except Denied as denied:  # a refusal to resolve is a decision too
            effective = f"denied: {denied}"
        out[f"resolve {record.kind} {record.identity}"] = effective
    return out


def indexes(state: State) -> dict[str, Any]:
    """What State holds, as plain values (the records' origins left out: they name list positions)."""
    return {
        "platform": repr(state.platform),
        "platform_object": _plain(dict(state.platform_object)),  # a read-only proxy: its items
        "classes": {name: repr(record) for name, record in sorted(state.classes.items())},
        "clusters": {repr(key): repr(value) for key, value in sorted(state.clusters.items())},
        "compute_planes": {repr(key): repr(value) for key, value in sorted(state.compute_planes.items())},
        "pools": {repr(key): repr(value) for key, value in sorted(state.pools.items())},
        "backing": {repr(key): _plain(value) for key, value in sorted(state.backing_values.items())},
        "records": {repr(key): _plain(record.obj) for key, record in sorted(state.records.items())},
        "by_class": {name: sorted(map(repr, members)) for name, members in sorted(state.pools_by_class.items())},
        "pool_names": {repr(key): list(kinds) for key, kinds in sorted(state.pool_names.items())},
        "scoped_names": {name: list(pairs) for name, pairs in sorted(state.pools_by_scoped_name.items())},
        "instancetypes": sorted(state.instancetypes),
        "objects": [(r.kind, r.namespace, r.name) for r in state.objects],
    }
