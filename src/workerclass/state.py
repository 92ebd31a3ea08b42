"""State: a read-only view of classes, pools, the platform and parent clusters.

Built from a STATE folder (the cluster as GitOps holds it) or from plain objects (the
webhook's and controller's cache). Built-in classes and the embedded platform are included
unless the objects replace them. Its edge: it indexes and parses; it decides nothing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from .adapters.folder import Document, LoadError, parse_documents, read_paths
from .chart.values import chart_defaults, load_instancetypes, version_map
from .model import (
    Cluster,
    Platform,
    PoolSpec,
    WorkerClassSpec,
    parse_class_spec,
    parse_cluster,
    parse_node_group,
    parse_platform,
    parse_pool_spec,
)
from .model.reader import key_path
from .violations import Violation

__all__ = ["ClassRecord", "LoadError", "ObjectRecord", "PoolRecord", "State", "identify"]

COZYSTACK = "cozystack.io"
APPS = "apps.cozystack.io"
FLUX = "helm.toolkit.fluxcd.io"
APPLICATION_KIND_LABEL = "apps.cozystack.io/application.kind"
#: The ApplicationDefinition's ``release.prefix``: KubernetesNodes ``N`` is HelmRelease ``kubernetes-nodes-N``.
RELEASE_PREFIX = "kubernetes-nodes-"
INSTANCETYPE_GROUP = "instancetype.kubevirt.io"
INSTANCETYPE_KIND = "VirtualMachineClusterInstancetype"

#: kind -> (API group, namespaced, dependency rank for ``check`` ordering)
KINDS: dict[str, tuple[str, bool, int]] = {
    "WorkerPlatform": (COZYSTACK, False, 0),
    "WorkerClass": (COZYSTACK, False, 1),
    "Kubernetes": (APPS, True, 2),
    "KubernetesNodes": (APPS, True, 3),
    "HelmRelease": (FLUX, True, 4),
    "ComputePlane": (APPS, True, 5),
}
POOL_KINDS = ("KubernetesNodes", "HelmRelease", "ComputePlane")
#: Kinds that are not admitted or resolved but that ``preflight`` reads: how the webhook is
#: installed (its configurations, Deployment, Service, PodDisruptionBudget). Kept, not warned about.
AUXILIARY_KINDS = frozenset(
    {
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
        "Deployment",
        "Service",
        "PodDisruptionBudget",
    }
)


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


@dataclass(frozen=True, slots=True)
class ObjectRecord:
    """One object read into the state, with where it came from."""

    kind: str
    namespace: str
    name: str
    obj: Mapping[str, Any]
    origin: str

    @property
    def rank(self) -> int:
        return KINDS[self.kind][2]


@dataclass(frozen=True, slots=True)
class ClassRecord:
    name: str
    spec: WorkerClassSpec
    obj: Mapping[str, Any]
    builtin: bool
    violations: tuple[Violation, ...] = ()


@dataclass(frozen=True, slots=True)
class PoolRecord:
    """A pool as stored: a KubernetesNodes, a labelled HelmRelease or a ComputePlane node group."""

    kind: str
    namespace: str
    name: str
    values: Mapping[str, Any]
    spec: PoolSpec
    violations: tuple[Violation, ...]
    field: str  # where the values live in the object, for field paths
    cluster: str  # the parent cluster name (ComputePlane groups: the ComputePlane itself)
    release: str = ""  # the Helm release that renders it (API.md section 1)

    @property
    def identity(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def class_name(self) -> str | None:
        """The selected class, or ``None`` for a classless (legacy Talos) pool."""
        return self.spec.worker_class_name or None


@cache
def embedded_instancetypes() -> Mapping[str, Mapping[str, Any]]:
    """The VirtualMachineClusterInstancetype objects Cozystack ships, by name (the chart's data)."""
    return load_instancetypes()


def _embedded_platform(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The embedded platform: ``builtin/platform.yaml`` completed with Cozystack's own defaults.

    The version map is the chart's ``files/versions.yaml`` and the Talos defaults its
    ``values.yaml`` (read from the package's verbatim copies, never hand-copied): the file holds
    only what the chart has no data file for (goldens, support matrix, Kairos images, ``_cluster``).
    """
    spec = dict(obj.get("spec") or {})
    if "kubernetesVersions" not in spec:
        spec["kubernetesVersions"] = {minor: {"patch": patch} for minor, patch in version_map().items()}
    chart_talos = chart_defaults().get("talos")
    talos = dict(spec.get("talos") or {})
    if isinstance(chart_talos, dict):
        for key in ("version", "schematicID", "imageFactoryURL", "installerRepository"):
            if key not in talos and isinstance(chart_talos.get(key), str):
                talos[key] = chart_talos[key]
    spec["talos"] = talos
    return {**obj, "spec": spec}


@cache
def _builtin_documents() -> tuple[tuple[Document, ...], Document]:
    package = resources.files("workerclass.builtin")
    classes = parse_documents(package.joinpath("classes.yaml").read_text("utf-8"), "builtin/classes.yaml")
    platform = parse_documents(package.joinpath("platform.yaml").read_text("utf-8"), "builtin/platform.yaml")
    embedded = Document(_embedded_platform(platform[0].obj), platform[0].origin)
    return tuple(classes), embedded


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


@dataclass
class State:
    """Classes, pools, the platform and parent clusters; read-only once built."""

    platform: Platform
    platform_object: Mapping[str, Any]
    classes: dict[str, ClassRecord]
    clusters: dict[tuple[str, str], Cluster]
    pools: dict[tuple[str, str, str], PoolRecord]
    objects: list[ObjectRecord] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    #: objects of :data:`AUXILIARY_KINDS` (webhook installation), for ``preflight``
    auxiliary: list[ObjectRecord] = field(default_factory=list)
    #: derived facts computed once per state (e.g. the class rules a class breaks)
    memo: dict[Any, Any] = field(default_factory=dict, repr=False, compare=False)
    #: VirtualMachineClusterInstancetype objects by name: Cozystack's shipped set, then the
    #: folder's or the cluster's (which add or replace by name)
    instancetypes: Mapping[str, Mapping[str, Any]] = field(default_factory=embedded_instancetypes)
    #: ``(namespace, name)`` of a KubernetesNodes -> the values of its backing HelmRelease
    #: ``kubernetes-nodes-<name>`` (what Cozystack's API really stored)
    backing_values: dict[tuple[str, str], Mapping[str, Any]] = field(default_factory=dict)
    #: ComputePlanes, as the clusters of their own node groups (not in :attr:`clusters`)
    compute_planes: dict[tuple[str, str], Cluster] = field(default_factory=dict)

    # ------------------------------------------------------------------ construction

    @classmethod
    def load(cls, path_or_paths: str | Path | Sequence[str | Path]) -> State:
        """Build a state from STATE: a folder or file, or several of them (``-`` reads stdin).

        The paths are read as :func:`workerclass.adapters.folder.read_paths` reads them (in the
        order given, a file reached twice read once); what the loader skipped (documents that are
        not Kubernetes objects, symlink loops) comes first in :attr:`warnings`, then what indexing
        skipped. Raises :class:`LoadError`.
        """
        paths = [path_or_paths] if isinstance(path_or_paths, str | Path) else list(path_or_paths)
        read_warnings: list[str] = []
        state = cls.from_documents(read_paths(paths, warnings=read_warnings))
        state.warnings[:0] = read_warnings
        return state

    @classmethod
    def from_objects(cls, objects: Iterable[Mapping[str, Any]], *, origin: str = "cluster") -> State:
        return cls.from_documents(
            [Document(dict(obj), f"{origin}#{index + 1}") for index, obj in enumerate(objects)],
            strict=False,
        )

    @classmethod
    def from_documents(cls, documents: Iterable[Document], *, strict: bool = True) -> State:
        """Index documents. ``strict``: duplicate identities are an error, not a replacement."""
        warnings: list[str] = []
        seen: dict[tuple[str, str, str], ObjectRecord] = {}
        auxiliary: list[ObjectRecord] = []
        instancetypes: dict[str, Mapping[str, Any]] = {}
        for document in documents:
            obj = document.obj
            kind, namespace, name = identify(obj)
            if kind in AUXILIARY_KINDS:
                auxiliary.append(ObjectRecord(kind, namespace, name, obj, document.origin))
                continue
            if kind == INSTANCETYPE_KIND:
                api_version = obj.get("apiVersion")
                if isinstance(api_version, str) and api_version.startswith(INSTANCETYPE_GROUP + "/") and name:
                    instancetypes[name] = obj
                else:
                    warnings.append(f"{document.origin}: skipped {kind} {name or '?'}: not {INSTANCETYPE_GROUP}")
                continue
            if kind not in KINDS:
                label = kind or "an object without kind"
                warnings.append(f"{document.origin}: skipped {label}: not a kind workerclass reads")
                continue
            if kind == "HelmRelease" and not is_pool_release(obj):
                continue  # other releases are none of our business
            group = KINDS[kind][0]
            api_version = obj.get("apiVersion")
            if not isinstance(api_version, str) or not api_version.startswith(group + "/"):
                warnings.append(
                    f"{document.origin}: skipped {kind} {name or '?'}: apiVersion {api_version!r} is not in {group}"
                )
                continue
            if not name:
                raise LoadError(f"{document.origin}: {kind} has no metadata.name")
            key = (kind, namespace, name)
            if key in seen and strict:
                where = f"{namespace}/{name}" if namespace else name
                raise LoadError(f"{document.origin}: duplicate {kind} {where}, also defined at {seen[key].origin}")
            seen[key] = ObjectRecord(kind, namespace, name, obj, document.origin)
        state = cls.from_records(list(seen.values()), warnings=warnings)
        state.auxiliary = auxiliary
        if instancetypes:
            state.instancetypes = {**embedded_instancetypes(), **instancetypes}
        return state

    @classmethod
    def from_records(cls, records: list[ObjectRecord], *, warnings: list[str] | None = None) -> State:
        builtin_classes, builtin_platform = _builtin_documents()
        platform_object: Mapping[str, Any] = builtin_platform.obj
        classes: dict[str, ClassRecord] = {}
        for document in builtin_classes:
            _, _, name = identify(document.obj)
            spec, violations = parse_class_spec(document.obj.get("spec"))
            classes[name] = ClassRecord(name, spec, document.obj, True, tuple(violations))
        clusters: dict[tuple[str, str], Cluster] = {}
        compute_planes: dict[tuple[str, str], Cluster] = {}
        pools: dict[tuple[str, str, str], PoolRecord] = {}
        for record in records:
            obj = record.obj
            if record.kind == "WorkerPlatform":
                if record.name == "default":
                    platform_object = obj
            elif record.kind == "WorkerClass":
                spec, violations = parse_class_spec(obj.get("spec"))
                classes[record.name] = ClassRecord(record.name, spec, obj, False, tuple(violations))
            elif record.kind == "Kubernetes":
                cluster, _ = parse_cluster(record.namespace, record.name, obj.get("spec"))
                clusters[(record.namespace, record.name)] = cluster
            elif record.kind == "ComputePlane":
                # A ComputePlane is its node groups' cluster, never a KubernetesNodes pool's parent.
                cluster, _ = parse_cluster(record.namespace, record.name, obj.get("spec"))
                compute_planes[(record.namespace, record.name)] = cluster
                for pool in node_group_pools(obj):
                    pools[(pool.kind, pool.namespace, pool.name)] = pool
            else:
                stored = pool_from_object(obj)
                if stored is not None:
                    pools[(stored.kind, stored.namespace, stored.name)] = stored
        # A HelmRelease kubernetes-nodes-<N> beside KubernetesNodes N is N's backing release (what
        # Cozystack's API stored for it): its values are N's stored values, not another pool.
        backing: dict[tuple[str, str], Mapping[str, Any]] = {}
        for kind, namespace, name in list(pools):
            if kind != "HelmRelease" or not name.startswith(RELEASE_PREFIX):
                continue
            owner = name.removeprefix(RELEASE_PREFIX)
            nodes = pools.get(("KubernetesNodes", namespace, owner))
            if nodes is not None:
                values = pools.pop((kind, namespace, name)).values
                backing[(namespace, owner)] = values
                # The KubernetesNodes the API lists is a view with the chart's defaults applied;
                # the release holds what was written: the pool is resolved from that.
                stored = pool_from_object(
                    {
                        "apiVersion": f"{APPS}/v1alpha1",
                        "kind": "KubernetesNodes",
                        "metadata": {"name": owner, "namespace": namespace},
                        "spec": values,
                    }
                )
                if stored is not None:
                    pools[("KubernetesNodes", namespace, owner)] = stored
        # The platform's own violations are reported when ``check`` admits its object.
        platform, _ = parse_platform(platform_object.get("spec"))
        ordered = sorted(records, key=lambda r: (r.rank, r.namespace, r.name))
        return cls(
            platform=platform,
            platform_object=platform_object,
            classes=classes,
            clusters=clusters,
            pools=pools,
            objects=ordered,
            warnings=list(warnings or []),
            backing_values=backing,
            compute_planes=compute_planes,
        )

    # ------------------------------------------------------------------ lookups

    def worker_class(self, name: str) -> ClassRecord | None:
        return self.classes.get(name)

    def cluster(self, namespace: str, name: str) -> Cluster | None:
        """The parent Kubernetes app ``name`` (a ComputePlane of that name is none)."""
        return self.clusters.get((namespace, name))

    def pool(self, identity: str) -> PoolRecord | None:
        """A pool by ``NS/NAME`` (KubernetesNodes first, then HelmRelease, then ComputePlane)."""
        namespace, _, name = identity.partition("/")
        for kind in POOL_KINDS:
            found = self.pools.get((kind, namespace, name))
            if found is not None:
                return found
        return None

    def stored_values(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        """What was really written for KubernetesNodes ``name``: its backing HelmRelease's values,
        else the stored KubernetesNodes' spec (a STATE folder), else ``None`` (nothing stored)."""
        backing = self.backing_values.get((namespace, name))
        if backing is not None:
            return backing
        stored = self.pools.get(("KubernetesNodes", namespace, name))
        return stored.values if stored is not None else None

    def sorted_pools(self) -> list[PoolRecord]:
        return sorted(self.pools.values(), key=lambda p: (p.namespace, p.name, POOL_KINDS.index(p.kind)))

    def pools_selecting(self, class_name: str) -> list[PoolRecord]:
        """Live pools whose stored class is ``class_name``."""
        return [pool for pool in self.sorted_pools() if pool.class_name == class_name]

    def find(self, kind: str, namespace: str, name: str) -> ObjectRecord | None:
        for record in self.objects:
            if (record.kind, record.namespace, record.name) == (kind, namespace, name):
                return record
        return None
