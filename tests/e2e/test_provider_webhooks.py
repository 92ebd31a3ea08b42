"""Every object the render gives a pool is accepted by the API server with the providers' own
webhooks registered (Cluster API v1.10.1, the Talos bootstrap provider v0.6.12, the KubeVirt
provider v0.1.10: the versions Cozystack ships, their webhooks served by their managers on the
bed), and what is stored is what was sent, but for the defaults listed here with their reasons.

One pool of each shape, rendered through the project's render (``resolve_pool`` then
``render(effective, talos_config_template=True)``: the TalosConfigTemplate the talos-reconcile Job
applies included) on the mirror's main chart with our gate:

- classless Talos: a HelmRelease written directly, the chart's own defaults;
- classified Talos with the Image Factory (the built-in ``talos`` class, ``osImage.factory``), and
  with a golden image (``osImage.builtin``: the DataVolume cloned from ``cozy-public``);
- Kairos on the data-secret path (its bootstrap data Secret, no bootstrap template);
- GPUs (an instance type with a passed-through NVIDIA GPU), an instance type alone, and explicit
  ``resources`` without an instance type.

Each pool lives in ``tenant-hooks``, where no Cluster ``kubernetes-<cluster>`` exists: Cluster API's
controllers then leave its objects alone, so what differs between the object sent and the object
stored after a server-side apply is the webhooks' defaulting and the API server's. Every object is
applied (templates first, the MachineDeployment last, as the chart's order and Cluster API want);
any refusal fails the test. For every object of a custom resource, the stored object, read back,
is compared with the one sent: metadata the server owns (uid, resourceVersion, generation,
creationTimestamp, managedFields) and ``status`` are left out, and the defaults the CRD's own
structural schema declares are added to what was sent (as the API server applies them). Every
remaining difference must be in :data:`ACCEPTED`, which says why each is expected; a field sent and
not stored (pruned: the CRD does not know it) is never accepted. Built-in kinds (RBAC, the Job,
the Secret) are checked for acceptance only: their defaults are Kubernetes's, not a provider's.

``test_the_providers_webhooks_judge_the_bed`` shows that the webhooks are live, not skipped: a
changed spec under the same name is refused by CAPK ("KubevirtMachineTemplateSpec is immutable")
and by CABPT ("TalosConfigTemplate.Spec is immutable"), and Cluster API's defaulting seeded the
MachineDeployment's replicas from the autoscaler's min-size annotation (the render leaves them out).

Seen to fail while it was written: before Cluster API's labels, finalizer and duration rewriting
were listed, every shape failed naming them (``added metadata.labels.cluster.x-k8s.io/cluster-name``,
``changed spec.unhealthyConditions[0].timeout: sent '5m', stored '5m0s'``, ``added
metadata.finalizers``); ``test_every_accepted_difference_happened`` failed on the entries first
written from Cluster API's code that the chart's objects never need (the strategy, the selector and
machine labels, the references' namespaces: the chart sets them all).
"""

from __future__ import annotations

import copy
import fnmatch
import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.builders import NVIDIA_GPU, make_cluster, make_pool, make_release, make_state
from tests.shared import given_chart
from workerclass.render import render
from workerclass.resolve.pools import resolve_pool

from .conftest import ClusterAPI
from .kube import Kube, KubeError

NAMESPACE = "tenant-hooks"
MANAGER = "workerclass-e2e-hooks"
CAPI = "cluster.x-k8s.io/v1beta1"

#: pool part of the name -> the pool (a KubernetesNodes, or a HelmRelease for the classless shape)
SHAPES: dict[str, dict[str, Any]] = {
    "classless-talos": make_release("classless", namespace=NAMESPACE),
    "talos-factory": make_pool("factory", NAMESPACE, workerClassName="talos", kubevirt={"osImage": {"factory": {}}}),
    "talos-golden": make_pool("golden", NAMESPACE, workerClassName="talos", kubevirt={"osImage": {"builtin": {}}}),
    "kairos-data-secret": make_pool("kairos", NAMESPACE, workerClassName="kairos"),
    "gpus": make_pool("gpus", NAMESPACE, workerClassName="talos", instanceType="u1.2xlarge", gpus=[NVIDIA_GPU]),
    "instance-type": make_pool("itype", NAMESPACE, workerClassName="talos", instanceType="u1.xlarge"),
    "resources": make_pool(
        "res", NAMESPACE, workerClassName="talos", instanceType="", resources={"cpu": "4", "memory": "16Gi"}
    ),
}

#: (kind, path pattern of a difference: ``spec.a[0].b``, ``*`` any characters) -> why the stored
#: object may differ there from what was sent (beyond the CRD's structural defaults)
ACCEPTED: dict[tuple[str, str], str] = {
    ("MachineDeployment", "metadata.finalizers"): (
        "Cluster API's MachineDeployment controller adds its finalizer (cluster.x-k8s.io/machinedeployment) "
        "to every MachineDeployment it sees, before it looks for the Cluster"
    ),
    ("MachineDeployment", "metadata.labels.cluster.x-k8s.io/cluster-name"): (
        "Cluster API's defaulting webhook labels a MachineDeployment with its spec.clusterName "
        "(the chart labels the selector and the machines, not the object)"
    ),
    ("MachineDeployment", "spec.replicas"): (
        "the chart leaves replicas out; Cluster API's webhook seeds them from the autoscaler's "
        "min-size annotation (the design relies on it)"
    ),
    ("MachineDeployment", "spec.minReadySeconds"): "Cluster API's webhook default (0); the chart sets none",
    ("MachineDeployment", "spec.revisionHistoryLimit"): "Cluster API's webhook default (1); the chart sets none",
    ("MachineDeployment", "spec.progressDeadlineSeconds"): "Cluster API's webhook default (600); the chart sets none",
    ("MachineHealthCheck", "metadata.labels.cluster.x-k8s.io/cluster-name"): (
        "Cluster API's defaulting webhook labels a MachineHealthCheck with its spec.clusterName"
    ),
}

#: (kind -> path patterns) where Cluster API's webhook decodes a duration and writes it back in Go's
#: form (``5m`` -> ``5m0s``): accepted only where both are the same duration
DURATIONS: dict[str, tuple[str, ...]] = {
    "MachineHealthCheck": ("spec.unhealthyConditions[[]*[]].timeout", "spec.nodeStartupTimeout"),
}

#: the ACCEPTED entries some shape's difference matched (every one must be, or it is stale)
USED: set[tuple[str, str]] = set()

#: metadata the API server owns
SERVER_METADATA = ("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields")


def rendered(shape: str) -> list[dict[str, Any]]:
    """The pool's objects, namespaced ones defaulted into the pool's namespace as Helm does."""
    pool = SHAPES[shape]
    state = make_state([pool], clusters=[make_cluster(namespace=NAMESPACE)]).with_chart(given_chart("main+gate"))
    (record,) = [record for record in state.sorted_pools() if record.name == pool["metadata"]["name"]]
    effective, _, _ = resolve_pool(state, record)
    assert effective is not None, f"{shape}: the pool does not resolve"
    return [copy.deepcopy(obj) for obj in render(effective, talos_config_template=True)]


def with_structural_defaults(value: Any, schema: dict[str, Any] | None) -> Any:
    """VALUE with the defaults SCHEMA declares added where a field is absent, recursively, as the
    API server applies a CRD's structural defaults."""
    if not schema:
        return value
    if isinstance(value, dict):
        properties = schema.get("properties")
        if properties:
            for key, sub in properties.items():
                if key not in value and "default" in sub:
                    value[key] = copy.deepcopy(sub["default"])
            for key, item in value.items():
                if key in properties:
                    with_structural_defaults(item, properties[key])
        elif isinstance(schema.get("additionalProperties"), dict):
            for item in value.values():
                with_structural_defaults(item, schema["additionalProperties"])
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for item in value:
            with_structural_defaults(item, schema["items"])
    return value


def differences(sent: Any, stored: Any, path: str = "") -> list[tuple[str, str, Any, Any]]:
    """``(how, path, sent, stored)`` of every leaf where the two differ (``spec.a[0].b``); ``how`` is
    ``added`` (stored only), ``pruned`` (sent only) or ``changed``. A map on one side only is
    compared leaf by leaf with an empty one, so each field a webhook adds is its own difference."""
    if isinstance(sent, dict) or isinstance(stored, dict):
        sent = {} if sent is None else sent
        stored = {} if stored is None else stored
    if isinstance(sent, dict) and isinstance(stored, dict):
        out = []
        for key in sorted(set(sent) | set(stored)):
            here = f"{path}.{key}" if path else str(key)
            if key not in stored and not isinstance(sent[key], dict):
                out.append(("pruned", here, sent[key], None))
            elif key not in sent and not isinstance(stored[key], dict):
                out.append(("added", here, None, stored[key]))
            else:
                out += differences(sent.get(key), stored.get(key), here)
        return out
    if isinstance(sent, list) and isinstance(stored, list) and len(sent) == len(stored):
        out = []
        for index, (a, b) in enumerate(zip(sent, stored, strict=True)):
            out += differences(a, b, f"{path}[{index}]")
        return out
    return [] if sent == stored else [("changed", path, sent, stored)]


def seconds(duration: Any) -> float | None:
    """A Go duration string (``5m``, ``1h30m0s``) in seconds, or ``None``."""
    parts = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+(?:\.\d+)?)s)?", str(duration))
    if not parts or not any(parts.groups()):
        return None
    hours, minutes, secs = (float(group or 0) for group in parts.groups())
    return hours * 3600 + minutes * 60 + secs


def accepted(kind: str, how: str, path: str, sent: Any, stored: Any) -> str | None:
    """Why the difference is expected, or ``None``: never a pruned field; a changed duration only
    where both sides are the same duration."""
    if how == "pruned":
        return None
    if how == "changed" and any(fnmatch.fnmatchcase(path, pattern) for pattern in DURATIONS.get(kind, ())):
        same = seconds(sent) is not None and seconds(sent) == seconds(stored)
        return "the same duration, written as Go writes it (metav1.Duration)" if same else None
    for (accepted_kind, pattern), reason in ACCEPTED.items():
        if accepted_kind == kind and fnmatch.fnmatchcase(path, pattern):
            USED.add((accepted_kind, pattern))
            return reason
    return None


def crd_schema(kube: Kube, obj: dict[str, Any]) -> dict[str, Any] | None:
    """The structural schema of OBJ's version, or ``None`` for a built-in kind."""
    resource = kube.resource_of(obj)
    group, _, version = str(obj["apiVersion"]).rpartition("/")
    if not group:
        return None
    crd = kube.find("apiextensions.k8s.io/v1", "CustomResourceDefinition", f"{resource.plural}.{group}")
    if crd is None:
        return None
    (served,) = [v for v in crd["spec"]["versions"] if v["name"] == version]
    schema: dict[str, Any] = served["schema"]["openAPIV3Schema"]
    return schema


def without_nulls(value: Any) -> Any:
    """VALUE without its null-valued keys: an apply treats a null field as absent (the chart writes
    ``labels: null`` where a pool has none), so the API server stores nothing there."""
    if isinstance(value, dict):
        return {key: without_nulls(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [without_nulls(item) for item in value]
    return value


def stored_form(obj: dict[str, Any]) -> dict[str, Any]:
    out = without_nulls(copy.deepcopy(obj))
    out.pop("status", None)
    metadata = out.get("metadata", {})
    for key in SERVER_METADATA:
        metadata.pop(key, None)
    return out


def apply_order(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The chart's order, the MachineDeployment last: Cluster API wants its templates first."""
    return sorted(objects, key=lambda obj: obj["kind"] == "MachineDeployment")


@pytest.fixture(scope="module")
def providers(kube: Kube, capi: ClusterAPI, cabpt: ClusterAPI, capk: ClusterAPI) -> Iterator[list[dict[str, Any]]]:
    """The three providers' managers running with their webhooks; the module's namespace; every
    object the module applied deleted afterwards."""
    if kube.find("v1", "Namespace", NAMESPACE) is None:
        kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    applied: list[dict[str, Any]] = []
    yield applied
    for obj in reversed(applied):
        metadata = obj["metadata"]
        kube.delete(obj["apiVersion"], obj["kind"], metadata["name"], metadata.get("namespace"))


@pytest.mark.parametrize("shape", list(SHAPES))
def test_every_rendered_object_is_accepted_as_sent(kube: Kube, providers: list[dict[str, Any]], shape: str) -> None:
    objects = rendered(shape)
    assert {"KubevirtMachineTemplate", "MachineDeployment", "MachineHealthCheck"} <= {obj["kind"] for obj in objects}
    for obj in objects:  # Helm puts a namespaced object the chart leaves unnamespaced in the release's namespace
        if kube.resource_of(obj).namespaced:
            obj["metadata"].setdefault("namespace", NAMESPACE)
    refused: list[str] = []
    unexpected: list[str] = []
    for obj in apply_order(objects):
        metadata = obj["metadata"]
        where = f"{obj['kind']} {metadata.get('namespace', '')}/{metadata['name']}"
        try:
            kube.apply(obj, manager=MANAGER)
        except KubeError as error:
            refused.append(f"{where}: {error.code} {error.message}")
            continue
        providers.append(obj)
        schema = crd_schema(kube, obj)
        if schema is None:
            continue  # a built-in kind: accepted is all this test asks of it
        stored = stored_form(kube.get(obj["apiVersion"], obj["kind"], metadata["name"], metadata.get("namespace")))
        sent = stored_form(obj)
        body = {key: value for key, value in sent.items() if key != "metadata"}
        sent = {**with_structural_defaults(body, schema), "metadata": sent["metadata"]}
        for how, path, before, after in differences(sent, stored):
            if accepted(obj["kind"], how, path, before, after) is None:
                unexpected.append(f"{where}: {how} {path}: sent {before!r}, stored {after!r}")
    assert not refused, "refused by the API server or a provider's webhook:\n" + "\n".join(refused)
    assert not unexpected, "stored otherwise than sent, not in ACCEPTED:\n" + "\n".join(unexpected)


def test_the_providers_webhooks_judge_the_bed(kube: Kube, providers: list[dict[str, Any]]) -> None:
    objects = rendered("talos-factory")
    for obj in objects:
        if kube.resource_of(obj).namespaced:
            obj["metadata"].setdefault("namespace", NAMESPACE)
    for obj in apply_order(objects):
        kube.apply(obj, manager=MANAGER)
        providers.append(obj)
    by_kind = {obj["kind"]: obj for obj in objects}
    deployment = kube.get(CAPI, "MachineDeployment", by_kind["MachineDeployment"]["metadata"]["name"], NAMESPACE)
    minimum = deployment["metadata"]["annotations"]["cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size"]
    assert deployment["spec"]["replicas"] == int(minimum)  # Cluster API's defaulting webhook
    changes = {
        "KubevirtMachineTemplate": (
            lambda obj: obj["spec"]["template"]["spec"]["virtualMachineTemplate"]["metadata"].update(
                labels={"changed": "yes"}
            ),
            "KubevirtMachineTemplateSpec is immutable",
        ),
        "TalosConfigTemplate": (
            lambda obj: obj["spec"]["template"]["spec"].update(talosVersion="v1.13.7"),
            "TalosConfigTemplate.Spec is immutable",
        ),
    }
    for kind, (change, message) in changes.items():
        changed = copy.deepcopy(by_kind[kind])
        change(changed)
        with pytest.raises(KubeError) as refused:
            kube.apply(changed, manager=MANAGER)
        assert message in refused.value.message, f"{kind}: {refused.value}"


def test_every_accepted_difference_happened() -> None:
    """No entry of ACCEPTED is there for nothing: each matched a difference of some shape above."""
    if len(USED) == 0:
        pytest.skip("no shape ran (run the module whole)")
    assert set(ACCEPTED) - USED == set(), "ACCEPTED entries no shape needed"
