"""The records a State holds, and how one object becomes one: identities, pools, Helm releases.

Its edge: one object in, one record (or ``None``) out; no index, no state. Which kinds are read,
and how they are namespaced, is :mod:`workerclass.state.kinds` (the API table's).

A record is frozen, but the raw object it carries (``obj``, a pool's ``values``) is the dict read,
not a copy: shared with the caller (the webhook's and controller's cache) and with every State
that keeps the record, so it is read-only by contract. Copying each object would cost on every
State built and every watch event, and freezing it would break its readers, which test
``isinstance(..., dict)`` level by level. Copy before changing one (``copy.deepcopy(dict(obj))``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..api.frozen import fast_init
from ..api.resources import KUBERNETES_NODES, RELEASE_PREFIX
from ..model import Cluster, PoolSpec, WorkerClassSpec, parse_cluster, parse_node_group, parse_pool_spec
from ..model.reader import key_path
from ..violations import Violation
from .kinds import APPLICATION_KIND_LABEL, CLUSTER_RELEASE_PREFIX, KINDS

__all__ = [
    "CLUSTER_RELEASE_PREFIX",
    "ClassRecord",
    "Document",
    "LoadError",
    "ObjectRecord",
    "PoolRecord",
    "cluster_release",
    "helm_release_name",
    "identify",
    "is_pool_release",
    "located",
    "node_group_pools",
    "origin_file",
    "parent_cluster",
    "pool_cluster",
    "pool_from_object",
    "pool_values",
    "release_of",
    "stored_nodes",
]


class LoadError(Exception):
    """A STATE folder or manifest file that cannot be read as Kubernetes objects."""


def origin_file(origin: str) -> str:
    """The file of an origin ``FILE#N`` (``FILE#N.M`` for a member of a ``kind: List``)."""
    head, sep, tail = origin.rpartition("#")
    return head if sep and tail.replace(".", "").isdigit() else origin


def located(origin: str, line: int) -> str:
    """``FILE:LINE`` when the line is known, else the origin (``FILE#N``)."""
    return f"{origin_file(origin)}:{line}" if line > 0 else origin


@fast_init
@dataclass(frozen=True, slots=True)
class Document:
    """One YAML document: the object, where it was read from (``file#index``) and its first line
    (0: not known, such as an object from the cluster)."""

    obj: dict[str, Any]
    origin: str
    line: int = 0

    @property
    def where(self) -> str:
        """``FILE:LINE``, for messages (the origin when the line is not known)."""
        return located(self.origin, self.line)


def identify(obj: Mapping[str, Any]) -> tuple[str, str, str]:
    """``(kind, namespace, name)``; cluster-scoped kinds have namespace ``""``."""
    kind = obj.get("kind")
    metadata = obj.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    namespace = metadata.get("namespace") if isinstance(metadata, dict) else None
    namespaced = KINDS.get(kind, ("", True, 0))[1] if isinstance(kind, str) else True
    return (
        kind if isinstance(kind, str) else "",
        (namespace if isinstance(namespace, str) and namespace else "default") if namespaced else "",
        name if isinstance(name, str) else "",
    )


def is_pool_release(obj: Mapping[str, Any]) -> bool:
    """A HelmRelease that carries KubernetesNodes pool values."""
    metadata = obj.get("metadata")
    labels = metadata.get("labels") if isinstance(metadata, dict) else None
    return isinstance(labels, dict) and labels.get(APPLICATION_KIND_LABEL) == "KubernetesNodes"


def cluster_release(obj: Mapping[str, Any]) -> tuple[str, Any] | None:
    """``(cluster name, values)`` of a HelmRelease that stores a parent Kubernetes app (labelled
    ``application.kind: Kubernetes``, named ``kubernetes-<cluster>``: what Cozystack's API writes
    for a Kubernetes app, and what a GitOps repository holds of it); None for any other object."""
    if obj.get("kind") != "HelmRelease":
        return None
    metadata = obj.get("metadata")
    labels = metadata.get("labels") if isinstance(metadata, dict) else None
    name = metadata.get("name") if isinstance(metadata, dict) else None
    if not isinstance(labels, dict) or labels.get(APPLICATION_KIND_LABEL) != "Kubernetes":
        return None
    if not isinstance(name, str) or not name.startswith(CLUSTER_RELEASE_PREFIX) or name == CLUSTER_RELEASE_PREFIX:
        return None
    spec = obj.get("spec")
    return name.removeprefix(CLUSTER_RELEASE_PREFIX), spec.get("values") if isinstance(spec, dict) else None


def parent_cluster(
    namespace: str, name: str, kubernetes: Mapping[str, Any] | None, release: Mapping[str, Any] | None
) -> Cluster | None:
    """The parent Kubernetes app ``name``: its ``Kubernetes`` object, else the HelmRelease
    ``kubernetes-<name>`` Cozystack stores it as (:func:`cluster_release`), else None."""
    if kubernetes is not None:
        return parse_cluster(namespace, name, kubernetes.get("spec"))[0]
    found = cluster_release(release) if release is not None else None
    return parse_cluster(namespace, name, found[1])[0] if found is not None and found[0] == name else None


@fast_init
@dataclass(frozen=True, slots=True)
class ObjectRecord:
    """One object read into the state, with where it came from (``obj``: shared, read-only by contract)."""

    kind: str
    namespace: str
    name: str
    obj: Mapping[str, Any]
    origin: str
    #: the object's first line in its file (0: not known)
    line: int = 0

    @property
    def rank(self) -> int:
        return KINDS[self.kind][2]

    @property
    def file(self) -> str:
        """The file it was read from (the origin without its ``#N``)."""
        return origin_file(self.origin)

    @property
    def where(self) -> str:
        """``FILE:LINE``, for messages (the origin when the line is not known)."""
        return located(self.origin, self.line)


@fast_init
@dataclass(frozen=True, slots=True)
class ClassRecord:
    """A WorkerClass as parsed (``obj``: the object read, shared, read-only by contract)."""

    name: str
    spec: WorkerClassSpec
    obj: Mapping[str, Any]
    builtin: bool
    violations: tuple[Violation, ...] = ()


@fast_init
@dataclass(frozen=True, slots=True)
class PoolRecord:
    """A pool as stored: a KubernetesNodes, a labelled HelmRelease or a ComputePlane node group.

    ``values`` are the stored object's, not a copy: shared, read-only by contract.
    """

    kind: str
    namespace: str
    name: str
    values: Mapping[str, Any]
    spec: PoolSpec
    violations: tuple[Violation, ...]
    field: str  # where the values live in the object, for field paths
    cluster: str  # the parent cluster name (ComputePlane groups: the ComputePlane itself)
    release: str = ""  # the Helm release that renders it (API.md section 1)
    #: ``metadata.creationTimestamp`` as stored (RFC 3339, UTC: sorts as text); ``""`` for an object
    #: not stored yet (a CREATE's) or written without one (a STATE folder's)
    created: str = ""

    @property
    def identity(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def class_name(self) -> str | None:
        """The selected class, or ``None`` for a classless (legacy Talos) pool."""
        return self.spec.worker_class_name or None


def helm_release_name(obj: Mapping[str, Any]) -> str:
    """The Helm release of a HelmRelease, as helm-controller names it.

    ``spec.releaseName``, else ``[<spec.targetNamespace>-]<metadata.name>``; a name longer than
    53 characters is shortened as helm-controller's ``release.ShortenName`` does.
    """
    _, _, name = identify(obj)
    spec = obj.get("spec")
    spec = spec if isinstance(spec, dict) else {}
    release = spec.get("releaseName")
    if not isinstance(release, str) or not release:
        target = spec.get("targetNamespace")
        release = f"{target}-{name}" if isinstance(target, str) and target else name
    if len(release) > 53:
        digest = hashlib.sha256(release.encode()).hexdigest()[:12]
        release = f"{release[: 53 - len(digest) - 1]}-{digest}"
    return release


def release_of(kind: str, name: str, obj: Mapping[str, Any] | None = None) -> str:
    """The Helm release of a pool: ``kubernetes-nodes-<name>`` for a KubernetesNodes."""
    if kind == "KubernetesNodes":
        return f"{RELEASE_PREFIX}{name}"
    if kind == "HelmRelease" and obj is not None:
        return helm_release_name(obj)
    return name


def pool_values(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """The values a pool object carries, as stored: a KubernetesNodes' ``spec``, a HelmRelease's
    ``spec.values`` (``{}`` where they are not a mapping); the raw values, not parsed."""
    values = obj.get("spec")
    if obj.get("kind") == "HelmRelease":
        values = values.get("values") if isinstance(values, dict) else None
    return values if isinstance(values, dict) else {}


def pool_from_object(obj: Mapping[str, Any]) -> PoolRecord | None:
    """A pool record for a KubernetesNodes or a pool HelmRelease; ``None`` for other objects."""
    kind, namespace, name = identify(obj)
    if kind == "KubernetesNodes":
        values, path = obj.get("spec"), "spec"
    elif kind == "HelmRelease" and is_pool_release(obj):
        spec = obj.get("spec")
        values, path = (spec.get("values") if isinstance(spec, dict) else None), "spec.values"
    else:
        return None
    parsed, violations = parse_pool_spec(values, path)
    return PoolRecord(
        kind,
        namespace,
        name,
        values if isinstance(values, dict) else {},
        parsed,
        tuple(violations),
        path,
        parsed.cluster or "",
        release_of(kind, name, obj),
        _created(obj),
    )


def _created(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    stamp = meta.get("creationTimestamp") if type(meta) is dict or isinstance(meta, Mapping) else None
    return stamp if isinstance(stamp, str) else ""


def pool_cluster(obj: Mapping[str, Any]) -> str | None:
    """The parent cluster a pool object names, as :func:`pool_from_object`'s record reads it
    (``""`` when it names none as a string), without parsing the rest of the values; ``None`` for an
    object that is not a pool (the record would be ``None``)."""
    kind = obj.get("kind")
    if kind == "KubernetesNodes":
        values = obj.get("spec")
    elif kind == "HelmRelease" and is_pool_release(obj):
        spec = obj.get("spec")
        values = spec.get("values") if isinstance(spec, dict) else None
    else:
        return None
    cluster = values.get("cluster") if isinstance(values, dict) else None
    return cluster if isinstance(cluster, str) else ""


def stored_nodes(namespace: str, owner: str, values: Mapping[str, Any]) -> PoolRecord | None:
    """KubernetesNodes ``owner`` as its backing release ``kubernetes-nodes-<owner>`` stored it.

    The KubernetesNodes the API lists is a view with the chart's defaults applied; the release
    holds what was written: the pool is resolved from that.
    """
    return pool_from_object(
        {
            "apiVersion": KUBERNETES_NODES.api_version,
            "kind": KUBERNETES_NODES.kind,
            "metadata": {"name": owner, "namespace": namespace},
            "spec": values,
        }
    )


def node_group_pools(obj: Mapping[str, Any]) -> list[PoolRecord]:
    """ComputePlane node groups as classless pools named ``<computeplane>-<group>``."""
    _, namespace, name = identify(obj)
    spec = obj.get("spec")
    groups = spec.get("nodeGroups") if isinstance(spec, dict) else None
    if not isinstance(groups, dict):
        return []
    out: list[PoolRecord] = []
    for group, values in sorted(groups.items(), key=lambda item: str(item[0])):
        path = key_path("spec.nodeGroups", group)
        parsed, violations = parse_node_group(values, path)
        out.append(
            PoolRecord(
                "ComputePlane",
                namespace,
                f"{name}-{group}",
                values if isinstance(values, dict) else {},
                parsed,
                tuple(violations),
                path,
                name,
            )
        )
    return out
