"""State: a read-only view of classes, pools, the platform and parent clusters.

Built from a STATE folder (the cluster as GitOps holds it) or from plain objects (the
webhook's and controller's cache). Built-in classes and the embedded platform are included
unless the objects replace them. Its edge: it indexes and parses; it decides nothing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import cache, cached_property
from typing import Any

from .builtin import CLASSES_ORIGIN, PLATFORM_ORIGIN, builtin_classes, embedded_platform
from .builtin import embedded_platform_spec as embedded_platform_spec
from .chart.values import load_instancetypes
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

__all__ = ["ClassRecord", "Document", "LoadError", "ObjectRecord", "PMap", "PoolRecord", "State", "identify"]

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


class LoadError(Exception):
    """A STATE folder or manifest file that cannot be read as Kubernetes objects."""


@dataclass(frozen=True, slots=True)
class Document:
    """One YAML document: the object and where it was read from (``file#index``)."""

    obj: dict[str, Any]
    origin: str


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


_FAN = 64  # a PMap is 64 x 64 small dicts


class PMap(Mapping[Any, Any]):
    """A read-only mapping whose :meth:`set` and :meth:`delete` return a new map in O(1) at any size.

    The keys are spread by hash over a two-level tree of 64 x 64 small dicts; a change copies the
    one dict it touches (about ``len / 4096`` entries) and the two 64-slot tuples above it, and
    shares everything else with the map it came from, so a snapshot handed to a request never
    changes under it (copy-on-write, no lock). Equal to any mapping with the same items.
    """

    __slots__ = ("_len", "_tree")

    def __init__(self, items: Mapping[Any, Any] | Iterable[tuple[Any, Any]] = ()) -> None:
        tree: list[list[dict[Any, Any]]] = [[{} for _ in range(_FAN)] for _ in range(_FAN)]
        pairs = items.items() if isinstance(items, Mapping) else items
        for key, value in pairs:
            code = hash(key)
            tree[code % _FAN][(code // _FAN) % _FAN][key] = value
        self._tree: tuple[tuple[Mapping[Any, Any], ...], ...] = tuple(tuple(row) for row in tree)
        self._len = sum(len(leaf) for row in tree for leaf in row)

    @classmethod
    def _of(cls, tree: tuple[tuple[Mapping[Any, Any], ...], ...], length: int) -> PMap:
        new = cls.__new__(cls)
        new._tree, new._len = tree, length
        return new

    def _leaf(self, key: Any) -> Mapping[Any, Any]:
        code = hash(key)
        return self._tree[code % _FAN][(code // _FAN) % _FAN]

    def __getitem__(self, key: Any) -> Any:
        return self._leaf(key)[key]

    def get(self, key: Any, default: Any = None) -> Any:
        return self._leaf(key).get(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self._leaf(key)

    def __iter__(self) -> Iterator[Any]:
        for row in self._tree:
            for leaf in row:
                yield from leaf

    def __len__(self) -> int:
        return self._len

    def __repr__(self) -> str:
        return f"PMap({dict(self.items())!r})"

    def _with_leaf(self, code: int, leaf: Mapping[Any, Any], length: int) -> PMap:
        i, j = code % _FAN, (code // _FAN) % _FAN
        row = self._tree[i]
        row = (*row[:j], leaf, *row[j + 1 :])
        return PMap._of((*self._tree[:i], row, *self._tree[i + 1 :]), length)

    def set(self, key: Any, value: Any) -> PMap:
        code = hash(key)
        leaf = dict(self._tree[code % _FAN][(code // _FAN) % _FAN])
        grown = key not in leaf
        leaf[key] = value
        return self._with_leaf(code, leaf, self._len + grown)

    def delete(self, key: Any) -> PMap:
        code = hash(key)
        leaf = self._tree[code % _FAN][(code // _FAN) % _FAN]
        if key not in leaf:
            return self
        smaller = dict(leaf)
        del smaller[key]
        return self._with_leaf(code, smaller, self._len - 1)

    def put(self, key: Any, value: Any | None) -> PMap:
        """:meth:`set`, or :meth:`delete` for ``None``."""
        return self.delete(key) if value is None else self.set(key, value)


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


@cache
def _builtin_documents() -> tuple[tuple[Document, ...], Document]:
    """The built-in classes and the embedded platform as documents (origins ``builtin/FILE#N``)."""
    classes = tuple(Document(obj, f"{CLASSES_ORIGIN}#{index + 1}") for index, obj in enumerate(builtin_classes()))
    return classes, Document(embedded_platform(), f"{PLATFORM_ORIGIN}#1")


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
    classes: Mapping[str, ClassRecord]
    clusters: Mapping[tuple[str, str], Cluster]
    pools: Mapping[tuple[str, str, str], PoolRecord]
    #: the objects read, by ``(kind, namespace, name)`` (:attr:`objects` lists them in check order)
    records: Mapping[tuple[str, str, str], ObjectRecord] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    #: objects of :data:`AUXILIARY_KINDS` (webhook installation), for ``preflight``
    auxiliary: list[ObjectRecord] = field(default_factory=list)
    #: derived facts computed once per state (e.g. the class rules a class breaks). Owned by this
    #: snapshot alone: :meth:`apply` gives every new snapshot a memo of its own (seeded with the
    #: ``pool-names`` index it keeps incrementally), never one shared with the state it came from.
    memo: dict[Any, Any] = field(default_factory=dict, repr=False, compare=False)
    #: VirtualMachineClusterInstancetype objects by name: Cozystack's shipped set, then the
    #: folder's or the cluster's (which add or replace by name)
    instancetypes: Mapping[str, Mapping[str, Any]] = field(default_factory=embedded_instancetypes)
    #: ``(namespace, name)`` of a KubernetesNodes -> the values of its backing HelmRelease
    #: ``kubernetes-nodes-<name>`` (what Cozystack's API really stored)
    backing_values: Mapping[tuple[str, str], Mapping[str, Any]] = field(default_factory=dict)
    #: ComputePlanes, as the clusters of their own node groups (not in :attr:`clusters`)
    compute_planes: Mapping[tuple[str, str], Cluster] = field(default_factory=dict)
    #: the instance types read from the objects (not the shipped ones), by name
    cluster_instancetypes: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: class name -> the pools whose stored class it is, by pool key (kept incrementally)
    pools_by_class: Mapping[str, Mapping[tuple[str, str, str], PoolRecord]] = field(default_factory=dict)
    #: ``(namespace, name)`` -> the kinds of the pools with that name, in :data:`POOL_KINDS` order
    pool_names: Mapping[tuple[str, str], tuple[str, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.memo.setdefault("pool-names", self.pool_names)

    @cached_property
    def objects(self) -> list[ObjectRecord]:
        """The objects read, in dependency order (``check`` admits them so)."""
        return sorted(self.records.values(), key=lambda r: (r.rank, r.namespace, r.name))

    # ------------------------------------------------------------------ construction

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
                # API.md section 4: only documents that are not Kubernetes objects are warned about
                # (the folder reader does); objects of other kinds are skipped silently.
                if not kind:
                    warnings.append(f"{document.origin}: a mapping without kind, not a Kubernetes object: skipped")
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
            state.cluster_instancetypes = PMap(instancetypes)
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
        # A WorkerPlatform completes the embedded one key by key (keys it leaves out keep Cozystack's defaults).
        platform, _ = parse_platform(platform_object.get("spec"), base=embedded_platform_spec())
        by_class: dict[str, dict[tuple[str, str, str], PoolRecord]] = {}
        names: dict[tuple[str, str], list[str]] = {}
        for key, pool in pools.items():
            if pool.class_name is not None:
                by_class.setdefault(pool.class_name, {})[key] = pool
            names.setdefault((key[1], key[2]), []).append(key[0])
        return cls(
            platform=platform,
            platform_object=platform_object,
            classes=PMap(classes),
            clusters=PMap(clusters),
            pools=PMap(pools),
            records=PMap({(r.kind, r.namespace, r.name): r for r in records}),
            warnings=list(warnings or []),
            backing_values=PMap(backing),
            compute_planes=PMap(compute_planes),
            pools_by_class=PMap({name: PMap(members) for name, members in by_class.items()}),
            pool_names=PMap({key: tuple(sorted(kinds, key=POOL_KINDS.index)) for key, kinds in names.items()}),
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
        """Live pools whose stored class is ``class_name`` (from the by-class index, in :meth:`sorted_pools` order)."""
        members = self.pools_by_class.get(class_name) or {}
        return sorted(members.values(), key=lambda p: (p.namespace, p.name, POOL_KINDS.index(p.kind)))

    def find(self, kind: str, namespace: str, name: str) -> ObjectRecord | None:
        return self.records.get((kind, namespace, name))

    # ------------------------------------------------------------------ incremental

    def with_object(self, obj: Mapping[str, Any], *, origin: str = "cluster") -> State:
        """A new State with ``obj`` added or replaced, as :meth:`from_objects` would read it.

        Costs the same at any number of pools (only the entries it touches are replaced; the
        rest is shared with this State, which stays as it was). An object ``from_objects`` would
        skip (not a kind read, a HelmRelease without the pool label, a wrong apiVersion) removes
        what was stored under its identity. ``warnings`` and ``auxiliary`` are not kept up.
        """
        kind, namespace, name = identify(obj)
        if not name:
            return self
        api_version = obj.get("apiVersion")
        if kind == INSTANCETYPE_KIND:
            ok = isinstance(api_version, str) and api_version.startswith(INSTANCETYPE_GROUP + "/")
            return self._with_instancetype(name, obj if ok else None)
        if kind not in KINDS:
            return self
        accepted = isinstance(api_version, str) and api_version.startswith(KINDS[kind][0] + "/")
        if kind == "HelmRelease" and not is_pool_release(obj):
            accepted = False
        record = ObjectRecord(kind, namespace, name, obj, f"{origin}:{kind}/{namespace}/{name}") if accepted else None
        return self._apply(kind, namespace, name, record)

    def without(self, kind: str, namespace: str, name: str) -> State:
        """A new State with the object ``(kind, namespace, name)`` gone (``namespace`` "" if cluster-scoped)."""
        if kind == INSTANCETYPE_KIND:
            return self._with_instancetype(name, None)
        if kind not in KINDS:
            return self
        namespace = (namespace or "default") if KINDS[kind][1] else ""
        return self._apply(kind, namespace, name, None)

    def _with_instancetype(self, name: str, obj: Mapping[str, Any] | None) -> State:
        ours = (
            PMap(self.cluster_instancetypes)
            if not isinstance(self.cluster_instancetypes, PMap)
            else self.cluster_instancetypes
        )
        ours = ours.put(name, obj)
        merged = {**embedded_instancetypes(), **ours} if ours else embedded_instancetypes()
        return self._next(cluster_instancetypes=ours, instancetypes=merged)

    def _next(self, **changes: Any) -> State:
        return replace(self, memo={}, warnings=[], **changes)

    def _apply(self, kind: str, namespace: str, name: str, record: ObjectRecord | None) -> State:
        key = (kind, namespace, name)
        previous = self.records.get(key)
        if previous is None and record is None:
            return self
        records = _pmap(self.records).put(key, record)
        if kind == "WorkerPlatform":
            if name != "default":
                return self._next(records=records)
            platform_only = State.from_records([record] if record is not None else [])
            return self._next(
                records=records, platform=platform_only.platform, platform_object=platform_only.platform_object
            )
        if kind == "WorkerClass":
            if record is not None:
                spec, violations = parse_class_spec(record.obj.get("spec"))
                entry: ClassRecord | None = ClassRecord(name, spec, record.obj, False, tuple(violations))
            else:
                entry = next((c for c in _builtin_class_records() if c.name == name), None)
            return self._next(records=records, classes=_pmap(self.classes).put(name, entry))
        if kind == "Kubernetes":
            cluster = parse_cluster(namespace, name, record.obj.get("spec"))[0] if record is not None else None
            return self._next(records=records, clusters=_pmap(self.clusters).put((namespace, name), cluster))
        pools = _PoolIndex(self)
        changes: dict[str, Any] = {"records": records}
        if kind == "ComputePlane":
            for pool in node_group_pools(previous.obj) if previous is not None else []:
                pools.put(("ComputePlane", namespace, pool.name), None)
            for pool in node_group_pools(record.obj) if record is not None else []:
                pools.put(("ComputePlane", namespace, pool.name), pool)
            plane = parse_cluster(namespace, name, record.obj.get("spec"))[0] if record is not None else None
            changes["compute_planes"] = _pmap(self.compute_planes).put((namespace, name), plane)
        elif kind == "KubernetesNodes":
            changes["backing_values"] = pools.group(records, namespace, name, _pmap(self.backing_values))
        elif name.startswith(RELEASE_PREFIX):
            owner = name.removeprefix(RELEASE_PREFIX)
            changes["backing_values"] = pools.group(records, namespace, owner, _pmap(self.backing_values))
        else:
            pools.put(key, pool_from_object(record.obj) if record is not None else None)
        return self._next(**changes, **pools.changes())


def _pmap(mapping: Mapping[Any, Any]) -> PMap:
    return mapping if isinstance(mapping, PMap) else PMap(mapping)


@cache
def _builtin_class_records() -> tuple[ClassRecord, ...]:
    out = []
    for document in _builtin_documents()[0]:
        _, _, name = identify(document.obj)
        spec, violations = parse_class_spec(document.obj.get("spec"))
        out.append(ClassRecord(name, spec, document.obj, True, tuple(violations)))
    return tuple(out)


class _PoolIndex:
    """The pool maps of one State being changed: ``pools`` and the by-class and by-name indexes."""

    def __init__(self, state: State) -> None:
        self.pools = _pmap(state.pools)
        self.by_class = _pmap(state.pools_by_class)
        self.names = _pmap(state.pool_names)

    def put(self, key: tuple[str, str, str], pool: PoolRecord | None) -> None:
        kind, namespace, name = key
        old = self.pools.get(key)
        if old is None and pool is None:
            return
        self.pools = self.pools.put(key, pool)
        for record, present in ((old, False), (pool, True)):
            if record is not None and record.class_name is not None:
                members = _pmap(self.by_class.get(record.class_name) or {})
                members = members.set(key, record) if present else members.delete(key)
                self.by_class = self.by_class.put(record.class_name, members if members else None)
        kinds = set(self.names.get((namespace, name), ()))
        kinds.discard(kind)
        if pool is not None:
            kinds.add(kind)
        ordered = tuple(sorted(kinds, key=POOL_KINDS.index))
        self.names = self.names.put((namespace, name), ordered or None)

    def group(
        self, records: Mapping[tuple[str, str, str], ObjectRecord], namespace: str, owner: str, backing: PMap
    ) -> PMap:
        """KubernetesNodes ``owner`` and HelmRelease ``kubernetes-nodes-<owner>`` again, paired as
        :meth:`State.from_records` pairs them."""
        nodes_key = ("KubernetesNodes", namespace, owner)
        release_key = ("HelmRelease", namespace, RELEASE_PREFIX + owner)
        nodes_record, release_record = records.get(nodes_key), records.get(release_key)
        nodes = pool_from_object(nodes_record.obj) if nodes_record is not None else None
        release = pool_from_object(release_record.obj) if release_record is not None else None
        values: Mapping[str, Any] | None = None
        if nodes is not None and release is not None:
            values = release.values
            nodes = pool_from_object(
                {
                    "apiVersion": f"{APPS}/v1alpha1",
                    "kind": "KubernetesNodes",
                    "metadata": {"name": owner, "namespace": namespace},
                    "spec": values,
                }
            )
            release = None
        self.put(nodes_key, nodes)
        self.put(release_key, release)
        return backing.put((namespace, owner), values)

    def changes(self) -> dict[str, Any]:
        return {"pools": self.pools, "pools_by_class": self.by_class, "pool_names": self.names}
