"""State: one immutable snapshot of classes, pools, the platform and parent clusters.

Built from documents (a STATE folder, read by :mod:`workerclass.adapters.folder`) or from plain
objects (the webhook's and controller's cache), and changed only into a new snapshot
(:meth:`State.with_object`, :meth:`State.without`), which shares what it did not touch. Built-in
classes and the embedded platform are included unless the objects replace them. Its edge: it
indexes and parses; it decides nothing.

How far "immutable" goes: every field refuses a write (frozen, and its mappings are PMaps or
read-only proxies, its sequences tuples), but the raw objects under them (each record's ``obj``,
a pool's ``values``, the instance type objects, the platform object's ``spec``) are the dicts
read, shared with the caller's cache and with every later snapshot, and read-only by contract
only: their readers test ``isinstance(..., dict)`` throughout (identify, admission, the chart's
port), and copying or freezing each object would cost per object on every State built and every
watch event.

Why one module: the snapshot's fields, its construction from documents and its incremental changes
are one frozen class and the helpers only it uses; split, each part would reach into the others.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import cache, cached_property
from types import MappingProxyType
from typing import Any

from ..api.resources import RELEASE_PREFIX
from ..builtin import CLASSES_ORIGIN, PLATFORM_ORIGIN, builtin_classes, embedded_platform, embedded_platform_spec
from ..chart.source import ChartSource
from ..chart.values import load_instancetypes
from ..model import Cluster, Platform, parse_class_spec, parse_cluster, parse_platform
from .kinds import AUXILIARY_KINDS, INSTANCETYPE_GROUP, INSTANCETYPE_KIND, KINDS, POOL_KINDS
from .memo import Memo
from .pmap import EMPTY, PMap, as_pmap
from .records import (
    CLUSTER_RELEASE_PREFIX,
    ClassRecord,
    Document,
    ObjectRecord,
    PoolRecord,
    cluster_release,
    identify,
    is_pool_release,
    node_group_pools,
    parent_cluster,
    pool_from_object,
    pool_values,
    stored_nodes,
)
from .skipped import Skipped

__all__ = ["State", "embedded_instancetypes"]


def _empty() -> PMap:
    return EMPTY


@cache
def embedded_instancetypes() -> Mapping[str, Mapping[str, Any]]:
    """The VirtualMachineClusterInstancetype objects Cozystack ships, by name (the chart's data).

    One mapping for the whole process (every State without instance types of its own holds this
    one, and the chart's shared checks compare it by identity), so it is read-only: a proxy over
    a copy no one else holds. ``dict(...)`` of it is a plain dict (to serialise or deep-copy).
    """
    return MappingProxyType(load_instancetypes())


@cache
def _builtin_documents() -> tuple[tuple[Document, ...], Document]:
    """The built-in classes and the embedded platform as documents (origins ``builtin/FILE#N``)."""
    classes = tuple(Document(obj, f"{CLASSES_ORIGIN}#{index + 1}") for index, obj in enumerate(builtin_classes()))
    return classes, Document(embedded_platform(), f"{PLATFORM_ORIGIN}#1")


@cache
def _builtin_platform_object() -> Mapping[str, Any]:
    """The embedded platform's object, read-only (one for the process, as the document it proxies)."""
    return MappingProxyType(_builtin_documents()[1].obj)


def _read_only(mapping: Mapping[str, Any]) -> Mapping[str, Any]:
    """``mapping`` behind a read-only proxy (once: a proxy is returned as it is)."""
    return mapping if isinstance(mapping, MappingProxyType) else MappingProxyType(mapping)


@cache
def _builtin_class_records() -> tuple[ClassRecord, ...]:
    out = []
    for document in _builtin_documents()[0]:
        _, _, name = identify(document.obj)
        spec, violations = parse_class_spec(document.obj.get("spec"))
        out.append(ClassRecord(name, spec, document.obj, True, tuple(violations)))
    return tuple(out)


#: how many pool changes a State's journal reaches back (:meth:`State.pools_changed_since`)
JOURNAL_SPAN = 1024


#: one pool change of a fold: ``(key, the change before or None, depth)``, a link of a journal of
#: at most :data:`JOURNAL_SPAN` links (the link after the last one starts again, so a snapshot keeps
#: at most that many alive). A link whose key is ``None`` starts a journal (a batch read). Plain
#: tuples of strings and ints: the collector stops tracking them, so a journal kept alive does not
#: add to what its full collections walk.
PoolChange = tuple[Any, Any, int]


def _journal_start() -> PoolChange:
    """A new journal's first link, an object of its own (never a shared constant)."""
    return tuple([None, None, 0])  # type: ignore[return-value]


@dataclass(frozen=True)
class State:
    """Classes, pools, the platform and parent clusters, as one snapshot that never changes.

    Frozen: a change is a new State (:meth:`with_object`, :meth:`without`). Its one mutable
    part is :attr:`memo`, the facts derived from this snapshot (see :mod:`workerclass.state.memo`
    for why that is safe). No ``slots``: :attr:`objects` and the memo live in the instance dict.

    Its mappings refuse writes (PMaps; :attr:`platform_object` and :attr:`instancetypes` are
    read-only proxies, since the embedded ones are shared by every State in the process);
    :attr:`objects` and :attr:`warnings` are tuples. The raw objects inside (``record.obj``,
    ``pool.values``, each instance type) are the dicts read, shared with the caller and with
    every snapshot derived from this one, and read-only by contract: never write to one (copy
    it first, as admission's ``dict(...)`` and the tests' ``copy.deepcopy(dict(...))`` do).
    """

    platform: Platform
    #: the WorkerPlatform ``default`` read (else the embedded one), behind a read-only proxy
    platform_object: Mapping[str, Any]
    classes: Mapping[str, ClassRecord]
    clusters: Mapping[tuple[str, str], Cluster]
    pools: Mapping[tuple[str, str, str], PoolRecord]
    #: the objects read, by ``(kind, namespace, name)`` (:attr:`objects` lists them in check order)
    records: Mapping[tuple[str, str, str], ObjectRecord] = field(default_factory=_empty)
    #: what indexing skipped, one line each (the folder reader's lines first, see ``load_state``)
    warnings: tuple[str, ...] = ()
    #: objects of :data:`AUXILIARY_KINDS` (webhook installation), for ``preflight``
    auxiliary: tuple[ObjectRecord, ...] = ()
    #: VirtualMachineClusterInstancetype objects by name: Cozystack's shipped set, then the
    #: folder's or the cluster's (which add or replace by name); a read-only proxy
    instancetypes: Mapping[str, Mapping[str, Any]] = field(default_factory=embedded_instancetypes)
    #: ``(namespace, name)`` of a KubernetesNodes -> the values of its backing HelmRelease
    #: ``kubernetes-nodes-<name>`` (what Cozystack's API really stored)
    backing_values: Mapping[tuple[str, str], Mapping[str, Any]] = field(default_factory=_empty)
    #: ComputePlanes, as the clusters of their own node groups (not in :attr:`clusters`)
    compute_planes: Mapping[tuple[str, str], Cluster] = field(default_factory=_empty)
    #: the instance types read from the objects (not the shipped ones), by name
    cluster_instancetypes: Mapping[str, Mapping[str, Any]] = field(default_factory=_empty)
    #: class name -> the pools whose stored class it is, by pool key (kept incrementally)
    pools_by_class: Mapping[str, Mapping[tuple[str, str, str], PoolRecord]] = field(default_factory=_empty)
    #: ``(namespace, name)`` -> the kinds of the pools with that name, in :data:`POOL_KINDS` order
    pool_names: Mapping[tuple[str, str], tuple[str, ...]] = field(default_factory=_empty)
    #: ``<namespace>-<release>`` (the chart's name for a pool's cluster-scoped objects) -> the
    #: KubernetesNodes and HelmRelease pools it names, as ``(pool key, (created, namespace,
    #: release))`` pairs (kept incrementally: :meth:`pools_scoped_as`)
    pools_by_scoped_name: Mapping[str, tuple[tuple[tuple[str, str, str], tuple[str, str, str]], ...]] = field(
        default_factory=_empty
    )
    #: the chart the cluster runs (admission follows its rules, the renderer its facts and text);
    #: by default the one the shipped facts describe, without its text (see :meth:`with_chart`)
    chart: ChartSource = field(default_factory=ChartSource.shipped)
    #: the last pool changes folded into this snapshot (:meth:`pools_changed_since` reads it)
    pool_journal: PoolChange | None = field(default=None, compare=False, repr=False)
    #: the facts derived from this snapshot (:class:`~workerclass.state.memo.Memo`). Not a
    #: constructor argument: every State, :func:`dataclasses.replace`'s included, makes its own,
    #: seeded with :attr:`pool_names`, so no two snapshots ever share one.
    memo: Memo = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "memo", Memo.seeded(self.pool_names))

    @cached_property
    def objects(self) -> tuple[ObjectRecord, ...]:
        """The objects read, in dependency order (``check`` admits them so); a tuple, since it is
        cached on this snapshot and every reader of it shares it."""
        return tuple(sorted(self.records.values(), key=lambda r: (r.rank, r.namespace, r.name)))

    # ------------------------------------------------------------------ construction

    @classmethod
    def from_objects(cls, objects: Iterable[Mapping[str, Any]], *, origin: str = "cluster") -> State:
        return cls.from_documents(
            [Document(dict(obj), f"{origin}#{index + 1}") for index, obj in enumerate(objects)],
            strict=False,
        )

    @classmethod
    def from_documents(
        cls,
        documents: Iterable[Document],
        *,
        strict: bool = True,
        warnings: Iterable[str] = (),
        errors: list[str] | None = None,
    ) -> State:
        """Index documents. ``strict``: duplicate identities are an error, not a replacement.

        ``warnings``: what the folder reader skipped, kept first, then what indexing skips (:class:`~.skipped.Skipped`);
        ``errors``: a duplicate identity or a nameless object goes there, else it is raised.
        """
        said: list[str] = list(warnings)
        seen: dict[tuple[str, str, str], ObjectRecord] = {}
        auxiliary: list[ObjectRecord] = []
        instancetypes: dict[str, Mapping[str, Any]] = {}
        skipped = Skipped(errors)

        for document in documents:
            obj = document.obj
            kind, namespace, name = identify(obj)
            if kind in AUXILIARY_KINDS:
                auxiliary.append(ObjectRecord(kind, namespace, name, obj, document.origin, document.line))
                continue
            if kind == INSTANCETYPE_KIND:
                api_version = obj.get("apiVersion")
                if isinstance(api_version, str) and api_version.startswith(INSTANCETYPE_GROUP + "/") and name:
                    instancetypes[name] = obj
                else:
                    said.append(f"{document.where}: skipped {kind} {name or '?'}: not {INSTANCETYPE_GROUP}")
                continue
            if kind not in KINDS:
                said.extend(skipped.kind_not_read(document, kind, namespace, name))
                continue
            if kind == "HelmRelease" and not is_pool_release(obj) and cluster_release(obj) is None:
                said.extend(skipped.release_not_a_pool(document, namespace, name))
                continue  # other releases are none of our business (a pool's, a parent cluster's are)
            group = KINDS[kind][0]
            if not isinstance(obj.get("apiVersion"), str) or not obj["apiVersion"].startswith(group + "/"):
                said.append(skipped.api_version_not_in_group(document, kind, namespace, name, group))
                continue
            if not name:
                skipped.refuse(f"{document.where}: {kind} has no metadata.name")
                continue
            key = (kind, namespace, name)
            if key in seen and strict:
                shown = f"{namespace}/{name}" if namespace else name
                skipped.refuse(f"{document.where}: duplicate {kind} {shown}, also defined at {seen[key].where}")
                continue
            seen[key] = ObjectRecord(kind, namespace, name, obj, document.origin, document.line)
        said.extend(skipped.counted())
        return cls.from_records(list(seen.values()), warnings=said, auxiliary=auxiliary, instancetypes=instancetypes)

    @classmethod
    def from_records(
        cls,
        records: list[ObjectRecord],
        *,
        warnings: Iterable[str] | None = None,
        auxiliary: Iterable[ObjectRecord] = (),
        instancetypes: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> State:
        """Index records (``instancetypes``: the ones read, by name, beside Cozystack's shipped set).

        The fold of the incremental step over the records: the State of the built-ins alone, then
        each record as :meth:`with_object` applies it. So there is one indexing, the incremental one
        (pairing a KubernetesNodes with its backing release in either order, the by-class and
        by-name indexes), and a batch build cannot disagree with the snapshot the cache keeps up
        event by event. A later record with the identity of an earlier one replaces it.
        """
        state = _builtin_state()
        for record in records:
            state = state._apply(record.kind, record.namespace, record.name, record)
        return state._next(
            # a batch read: later snapshots are told apart from this one, not from the fold's steps
            pool_journal=_journal_start(),
            # the shipped facts' chart as of now (the built-ins' State is made once and shared)
            chart=ChartSource.shipped(),
            **_instancetype_fields(PMap(instancetypes) if instancetypes else EMPTY),
            warnings=tuple(warnings or ()),
            auxiliary=tuple(auxiliary),
        )

    # ------------------------------------------------------------------ lookups

    def worker_class(self, name: str) -> ClassRecord | None:
        return self.classes.get(name)

    def cluster(self, namespace: str, name: str) -> Cluster | None:
        """The parent Kubernetes app ``name`` (a ComputePlane of that name is none)."""
        return self.clusters.get((namespace, name))

    def parent_node_groups(self) -> list[tuple[str, str, str]]:
        """Every node group of the parent Kubernetes apps, as ``(namespace, cluster, group)`` sorted:
        classless pools the parent ``kubernetes`` chart renders itself (workerclass neither resolves
        nor renders them, but counts them, so a folder of parents is never "no pools")."""
        return sorted(
            (namespace, name, group)
            for (namespace, name), cluster in self.clusters.items()
            for group in cluster.node_groups
        )

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

    def pools_changed_since(self, older: State) -> set[tuple[str, str, str]] | None:
        """The keys of the pools that changed (added, replaced or gone) from ``older`` to this
        State, when this State was folded from it event by event (:meth:`with_object`,
        :meth:`without`) within the last :data:`JOURNAL_SPAN` pool changes; ``None`` when that
        cannot be told (another fold or a batch read, or too long ago): the caller reads every
        pool then. What keeps a count per class up at the cost of what changed."""
        if self.pools is older.pools:
            return set()
        target, node = older.pool_journal, self.pool_journal
        if target is None:
            return None
        keys: set[tuple[str, str, str]] = set()
        while node is not target:
            if node is None or node[0] is None:
                return None  # past the journal's start: ``older`` is not behind it
            keys.add(node[0])
            node = node[1]
        return keys

    def pools_scoped_as(self, name: str) -> list[tuple[str, str, str]]:
        """``(created, namespace, release)`` of each stored KubernetesNodes or HelmRelease pool whose
        release in its namespace makes ``<namespace>-<release>`` = ``name`` (``created`` "" when the
        object has no creation time), from the index kept with the pools: the same cost at any
        number of pools."""
        return [entry for _, entry in self.pools_by_scoped_name.get(name, ())]

    def auxiliary_object(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        """The object of an auxiliary kind read under that identity (a chart lookup's, a Flux source)."""
        return self._auxiliary_index.get((kind, namespace, name))

    @cached_property
    def _auxiliary_index(self) -> Mapping[tuple[str, str, str], Mapping[str, Any]]:
        return {(record.kind, record.namespace, record.name): record.obj for record in self.auxiliary}

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
        if kind == "HelmRelease" and not is_pool_release(obj) and cluster_release(obj) is None:
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
        return self._next(**_instancetype_fields(as_pmap(self.cluster_instancetypes).put(name, obj)))

    def with_chart(self, chart: ChartSource) -> State:
        """This snapshot under ``chart`` (``--chart``; in a cluster, the one its pools' releases point
        to): the same objects and warnings, nothing derived carried."""
        return replace(self, chart=chart)

    def _next(self, **changes: Any) -> State:
        """This snapshot with ``changes`` (field names): a new State, with a fresh memo and no
        warnings unless ``changes`` says some.

        What :func:`dataclasses.replace` does, with the fields set once into the new instance's
        dict instead of through the frozen ``__init__`` (one ``object.__setattr__`` per field
        and a keyword per field: +60 % per change, measured). What this snapshot derived (its
        memo, its cached :attr:`objects`) is not carried.
        """
        new = object.__new__(type(self))
        attributes = new.__dict__
        attributes.update(self.__dict__)
        for name in _DERIVED:
            attributes.pop(name, None)
        attributes["warnings"] = ()
        attributes.update(changes)
        attributes["memo"] = Memo.seeded(attributes["pool_names"])
        return new

    def _apply(self, kind: str, namespace: str, name: str, record: ObjectRecord | None) -> State:
        key = (kind, namespace, name)
        previous = self.records.get(key)
        if previous is None and record is None:
            return self
        records = as_pmap(self.records).put(key, record)
        if kind == "WorkerPlatform":
            if name != "default":
                return self._next(records=records)
            return self._next(records=records, **_platform_fields(record.obj if record is not None else None))
        if kind == "WorkerClass":
            if record is not None:
                spec, violations = parse_class_spec(record.obj.get("spec"))
                entry: ClassRecord | None = ClassRecord(name, spec, record.obj, False, tuple(violations))
            else:
                entry = next((c for c in _builtin_class_records() if c.name == name), None)
            return self._next(records=records, classes=as_pmap(self.classes).put(name, entry))
        if kind == "Kubernetes":
            return self._next(records=records, clusters=_parent(records, as_pmap(self.clusters), namespace, name))
        changes: dict[str, Any] = {"records": records}
        if any(r is not None and cluster_release(r.obj) is not None for r in (record, previous)):
            parent = name.removeprefix(CLUSTER_RELEASE_PREFIX)  # a parent cluster's HelmRelease (was or is)
            changes["clusters"] = _parent(records, as_pmap(self.clusters), namespace, parent)
        pools = _PoolIndex(self)
        if kind == "ComputePlane":
            for pool in node_group_pools(previous.obj) if previous is not None else []:
                pools.put(("ComputePlane", namespace, pool.name), None)
            for pool in node_group_pools(record.obj) if record is not None else []:
                pools.put(("ComputePlane", namespace, pool.name), pool)
            plane = parse_cluster(namespace, name, record.obj.get("spec"))[0] if record is not None else None
            changes["compute_planes"] = as_pmap(self.compute_planes).put((namespace, name), plane)
        elif kind == "KubernetesNodes":
            changes["backing_values"] = pools.group(records, namespace, name, as_pmap(self.backing_values))
        elif name.startswith(RELEASE_PREFIX):
            owner = name.removeprefix(RELEASE_PREFIX)
            changes["backing_values"] = pools.group(records, namespace, owner, as_pmap(self.backing_values))
        else:
            pools.put(key, pool_from_object(record.obj) if record is not None else None)
        return self._next(**changes, **pools.changes())


def _parent(records: PMap, clusters: PMap, namespace: str, name: str) -> PMap:
    """``clusters`` with parent ``name`` as ``records`` now hold it (:func:`parent_cluster`)."""
    kubernetes = records.get(("Kubernetes", namespace, name))
    release = records.get(("HelmRelease", namespace, f"{CLUSTER_RELEASE_PREFIX}{name}"))
    found = parent_cluster(namespace, name, kubernetes and kubernetes.obj, release and release.obj)
    return clusters.put((namespace, name), found)


def _platform_fields(obj: Mapping[str, Any] | None) -> dict[str, Any]:
    """``platform`` and ``platform_object`` for the WorkerPlatform ``default`` read (``None``: the embedded one).

    The platform's own violations are reported when ``check`` admits its object. A WorkerPlatform
    completes the embedded one key by key (keys it leaves out keep Cozystack's defaults).
    """
    platform_object = _builtin_platform_object() if obj is None else _read_only(obj)
    platform, _ = parse_platform(platform_object.get("spec"), base=embedded_platform_spec())
    return {"platform": platform, "platform_object": platform_object}


def _instancetype_fields(ours: PMap) -> dict[str, Any]:
    """``cluster_instancetypes`` (the ones read) and ``instancetypes`` (Cozystack's, then ours by name)."""
    merged = MappingProxyType({**embedded_instancetypes(), **ours}) if ours else embedded_instancetypes()
    return {"cluster_instancetypes": ours, "instancetypes": merged}


@cache
def _builtin_state() -> State:
    """The State of no objects: the built-in classes and the embedded platform (one for the process;
    every fold starts from it and makes new snapshots, each with a memo of its own)."""
    return State(
        classes=PMap({record.name: record for record in _builtin_class_records()}),
        clusters=EMPTY,
        pools=EMPTY,
        **_platform_fields(None),
    )


#: the attributes a State derives from itself (the cached properties): never copied into another
_DERIVED = tuple(name for name, value in vars(State).items() if isinstance(value, cached_property))


class _PoolIndex:
    """The pool maps of one State being changed: ``pools`` and the by-class and by-name indexes."""

    def __init__(self, state: State) -> None:
        self.journal = state.pool_journal
        self.pools = as_pmap(state.pools)
        self.by_class = as_pmap(state.pools_by_class)
        self.names = as_pmap(state.pool_names)
        self.scoped = as_pmap(state.pools_by_scoped_name)

    def put(self, key: tuple[str, str, str], pool: PoolRecord | None) -> None:
        kind, namespace, name = key
        old = self.pools.get(key)
        if old is None and pool is None:
            return
        self.pools = self.pools.put(key, pool)
        journal = self.journal
        if journal is not None and journal[2] < JOURNAL_SPAN:
            self.journal = (key, journal, journal[2] + 1)
        else:
            self.journal = (key, None, 1)  # a journal starts (again)
        # Each map is changed only where its entry changes: a pool that keeps its class is set once
        # in that class's members, and the by-name index changes only when a pool appears or goes
        # (each change copies a path of trie nodes, which the young collector must then scan).
        old_class = old.class_name if old is not None else None
        new_class = pool.class_name if pool is not None else None
        if old_class is not None and old_class != new_class:
            members = as_pmap(self.by_class.get(old_class) or {}).delete(key)
            self.by_class = self.by_class.put(old_class, members if members else None)
        if new_class is not None:
            self.by_class = self.by_class.set(new_class, as_pmap(self.by_class.get(new_class) or {}).set(key, pool))
        old_scoped, new_scoped = _scoped(old), _scoped(pool)
        if old_scoped != new_scoped:
            if old_scoped is not None:
                kept = tuple(pair for pair in self.scoped.get(old_scoped[0], ()) if pair[0] != key)
                self.scoped = self.scoped.put(old_scoped[0], kept or None)
            if new_scoped is not None:
                # in key order, so that a State does not depend on the order its pools came in
                added = tuple(sorted((*self.scoped.get(new_scoped[0], ()), (key, new_scoped[1]))))
                self.scoped = self.scoped.set(new_scoped[0], added)
        if (old is None) == (pool is None):
            return  # replaced: the kinds read under its name are the same
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
        nodes = release = None
        values: Mapping[str, Any] | None = None
        if nodes_record is not None and release_record is not None:
            # Paired: the pool is the release's values under the KubernetesNodes' name. Each side
            # alone is parsed only when it stands alone (a parse is most of the cost of a step).
            values = pool_values(release_record.obj)
            nodes = stored_nodes(namespace, owner, values)
        elif nodes_record is not None:
            nodes = pool_from_object(nodes_record.obj)
        elif release_record is not None:
            release = pool_from_object(release_record.obj)
        self.put(nodes_key, nodes)
        self.put(release_key, release)
        return backing.put((namespace, owner), values)

    def changes(self) -> dict[str, Any]:
        return {
            "pools": self.pools,
            "pools_by_class": self.by_class,
            "pool_names": self.names,
            "pools_by_scoped_name": self.scoped,
            "pool_journal": self.journal,
        }


def _scoped(pool: PoolRecord | None) -> tuple[str, tuple[str, str, str]] | None:
    """The name the chart gives ``pool``'s cluster-scoped objects and the pool's entry under it."""
    if pool is None or pool.kind not in ("KubernetesNodes", "HelmRelease") or not pool.release:
        return None
    return f"{pool.namespace}-{pool.release}", (pool.created, pool.namespace, pool.release)
