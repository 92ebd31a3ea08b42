"""What the worker controller writes: its decisions as plain data, apart from the calls that make them.

Pure: the desired objects of a pool (:class:`~workerclass.ops.workers.DesiredPool`), what is live
(the objects carrying our pool label, the Helm-made objects of the pools' releases) and what this
process last applied in; the writes out. The controller (:mod:`workerclass.controller.workers`)
lists, watches and reads what these take, and sends what they return:

* :func:`gate_pool`, :func:`decide_pool` and :func:`pool_outcome`: a pool's whole pass, in the
  three steps its reads divide it into. Before any read, whether the pool is written at all (its
  state is not ready, its chart lacks the gate, the Kairos provider's CRD or one of its kinds was
  not read yet, its backoff runs); then, from what the pass read of it (the live objects of its
  keys, its join inputs, the MachineSets' templates), its refusal or its writes; after the writes,
  the state it reports (applied, or waiting for its MachineDeployment's rollout);
* :func:`plan_pool`: the objects to server-side apply (each with why:
  :func:`~workerclass.ops.convergence.apply_reason`), the digests to record with no write (an
  object already as desired), and what to prune: an object the pool no longer renders goes at
  once, a template (or a bootstrap Secret) only once no MachineSet names it (the chart's own
  lookup keeps it so), and a CA ConfigMap only once no template that stays imports its disk with
  it. Whether the MachineSets must be read at all is :func:`needs_references`;
* :func:`plan_pins`: which Helm-made objects to pin for a handoff (the classless pools'), which
  classified pools' releases Helm still renders (their chart lacks the gate) and which objects we
  pinned are left over by a pool that went;
* :func:`plan_cleanup`: what pools that went left behind under our label, and the HelmReleases
  whose absence must be confirmed first; :func:`plan_left_over` the same for what we pinned;
* :func:`plan_report`: whether a pool's state changed and which Events say it.

Every function takes plain mappings and returns frozen values or plain collections; none reads a
clock or does I/O, so each decision is tested on data alone (``tests/ops/test_writes.py``).

Why one module over the house ~500 lines (about 550): it is every write decision of the pass, read
together; the gates, applies, prunes, pins and cleanups judge the same keys, labels and annotations,
and split apart each part would import the others' helpers.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..api.resources import HELM_RELEASE
from .convergence import apply_reason
from .providers import KAIROS_TEMPLATE_CRD
from .workers import (
    HELM_KEEP,
    HELM_RELEASE_NAME,
    HELM_RELEASE_NAMESPACE,
    PINNED_ANNOTATION,
    POOL_ANNOTATION,
    POOL_LABEL,
    DesiredPool,
    foreign_owner,
)

__all__ = [
    "CHART_NOT_GATED",
    "FLUX_NAME",
    "KAIROS_UNKNOWN",
    "REASONS",
    "TEMPLATE_KINDS",
    "Apply",
    "Event",
    "Gate",
    "Key",
    "LeftOver",
    "Orphans",
    "PinWrites",
    "PoolDecision",
    "PoolReads",
    "PoolWrites",
    "ReportWrites",
    "config_maps_named",
    "decide_pool",
    "digest",
    "gate_pool",
    "needs_references",
    "object_key",
    "pin_annotations",
    "plan_cleanup",
    "plan_left_over",
    "plan_pins",
    "plan_pool",
    "plan_prune",
    "plan_report",
    "pool_outcome",
    "rolling",
    "taken_by",
    "template_refs",
]

Key = tuple[str, str, str]  # kind, namespace, name
Release = tuple[str, str]  # namespace, Helm release name

#: the templates a MachineSet references (kept while one does, as the chart's lookup keeps them)
TEMPLATE_KINDS = frozenset({"KubevirtMachineTemplate", "ProxmoxMachineTemplate", "KairosConfigTemplate", "Secret"})
#: the labels Flux's helm-controller puts on every object of a HelmRelease: its name and namespace
FLUX_NAME = ("helm.toolkit.fluxcd.io/name", "helm.toolkit.fluxcd.io/namespace")


def object_key(obj: Mapping[str, Any]) -> Key:
    meta = obj.get("metadata") or {}
    return str(obj.get("kind")), str(meta.get("namespace") or ""), str(meta.get("name"))


def digest(obj: Mapping[str, Any]) -> str:
    """The digest of a desired object (what :func:`plan_pool` compares with the one last applied)."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _deleting(obj: Mapping[str, Any] | None) -> bool:
    """Whether a live object is being deleted already (a finalizer holds it): deleting it again changes nothing."""
    return bool(_meta(obj or {}).get("deletionTimestamp"))


def template_refs(machine_set: Mapping[str, Any]) -> set[str]:
    """The templates a MachineSet builds machines from (infrastructure and bootstrap)."""
    spec = ((machine_set.get("spec") or {}).get("template") or {}).get("spec") or {}
    bootstrap = spec.get("bootstrap") or {}
    refs = (spec.get("infrastructureRef") or {}, bootstrap.get("configRef") or {})
    names = {str(ref["name"]) for ref in refs if ref.get("name")}
    if bootstrap.get("dataSecretName"):  # a Kairos pool's bootstrap data Secret
        names.add(str(bootstrap["dataSecretName"]))
    return names


def config_maps_named(obj: Any) -> set[str]:
    """The ConfigMaps a template's disk imports name (``certConfigMap``, PR 3797's CA)."""
    if isinstance(obj, Mapping):
        found = {str(obj["certConfigMap"])} if isinstance(obj.get("certConfigMap"), str) else set()
        for value in obj.values():
            if isinstance(value, Mapping | list):
                found |= config_maps_named(value)
        return found
    if isinstance(obj, list):
        return {name for item in obj for name in config_maps_named(item)}
    return set()


# ------------------------------------------------------------------ a pool's applies and prunes


@dataclass(frozen=True, slots=True)
class Apply:
    """One server-side apply: the object, its key and digest, and why it is due."""

    obj: dict[str, Any]
    key: Key
    digest: str
    reason: str


@dataclass(frozen=True)
class PoolWrites:
    """What one pool's pass writes: applies in order, then prunes; ``settled`` are the digests of
    objects already as desired (recorded, nothing sent)."""

    apply: tuple[Apply, ...] = ()
    settled: tuple[tuple[Key, str], ...] = ()
    prune: tuple[Key, ...] = ()


def _candidates(wanted: Collection[Key], pool_live: Mapping[Key, Mapping[str, Any]]) -> list[Key]:
    """The pool's live objects it no longer renders and that are not being deleted already."""
    return sorted(key for key, obj in pool_live.items() if key not in wanted and not _deleting(obj))


def needs_references(objects: Iterable[Mapping[str, Any]], pool_live: Mapping[Key, Mapping[str, Any]]) -> bool:
    """Whether pruning the pool needs the MachineSets of its namespace (a template may go)."""
    wanted = {object_key(obj) for obj in objects}
    return any(key[0] in TEMPLATE_KINDS for key in _candidates(wanted, pool_live))


def plan_prune(
    wanted: Collection[Key], pool_live: Mapping[Key, Mapping[str, Any]], referenced: Collection[str] = ()
) -> tuple[Key, ...]:
    """What the pool prunes, given the template names its namespace's MachineSets use
    (``referenced``): a template they name stays, and so does a CA ConfigMap a template that
    stays (rendered or kept) names; everything else it no longer renders goes."""
    candidates = _candidates(wanted, pool_live)
    kept = {key for key in candidates if key[0] in TEMPLATE_KINDS and key[2] in referenced}
    named = {name for key in [*wanted, *kept] for name in config_maps_named(pool_live.get(key) or {})}
    return tuple(key for key in candidates if key not in kept and not (key[0] == "ConfigMap" and key[2] in named))


def plan_pool(
    objects: Iterable[dict[str, Any]],
    pool_live: Mapping[Key, Mapping[str, Any]],
    applied: Mapping[Key, str],
    *,
    manager: str,
    fresh: bool,
    referenced: Collection[str] = (),
) -> PoolWrites:
    """The writes of one ready pool: ``objects`` as they are to be applied (in apply order),
    ``pool_live`` its live objects (those with its label), ``applied`` the digests this process
    applied. Without ``fresh`` (the live objects were not listed or seen changed since) an object
    whose digest is the one last applied and that is live is not compared at all."""
    out: list[Apply] = []
    settled: list[tuple[Key, str]] = []
    wanted: list[Key] = []
    for obj in objects:
        key = object_key(obj)
        wanted.append(key)
        desired = digest(obj)
        last = applied.get(key)
        live = pool_live.get(key)
        if not fresh and last == desired and live is not None:
            continue
        reason = apply_reason(obj, live, manager=manager, applied=last, digest=desired)
        if reason is None:
            settled.append((key, desired))
        else:
            out.append(Apply(obj, key, desired, reason))
    return PoolWrites(tuple(out), tuple(settled), plan_prune(wanted, pool_live, referenced))


# ------------------------------------------------------------------ a pool's pass, decided


#: the report of a classified pool whose release's chart renders worker objects (no chart gate)
CHART_NOT_GATED = (
    "ChartNotGated: the release's chart rendered worker objects for this classified pool, so it lacks the "
    "workerclass chart gate (deploy/chart-gate/); nothing is applied until it has it, so that the chart and "
    "the controller never both write the pool's machines"
)
#: the report of a Kairos pool while the provider's CRD was never read (which path is unknown)
KAIROS_UNKNOWN = (
    f"the {KAIROS_TEMPLATE_CRD} CRD could not be read, so which bootstrap path Kairos pools take "
    "is unknown: nothing applied, retrying"
)


@dataclass(frozen=True, slots=True)
class Gate:
    """Why a pool is not written this pass: the state it reports and its message (``None``: its
    last report stands, as while a failing pool's backoff runs)."""

    state: str
    message: str | None


def gate_pool(
    pool: DesiredPool,
    *,
    ungated: Collection[Release] = (),
    kairos_known: bool = True,
    listed: Collection[str] | None = None,
    list_errors: Mapping[str, str] | None = None,
    backing_off: bool = False,
) -> Gate | None:
    """Whether ``pool`` is written at all, decided before anything of it is read: ``None`` when it
    is (its reads and :func:`decide_pool` follow). Not when its state is not ready (it reports that
    state), its release is ``ungated`` (its chart still renders worker objects: refused
    ``ChartNotGated``), it is a Kairos pool while the provider's CRD was never read
    (``kairos_known``: the path it takes is unknown), one of the kinds it renders is not among the
    kinds the watches ``listed`` (``None``: no watch runs; ``list_errors``: why a kind's list
    failed), since applying could take over or duplicate what is live, or its backoff runs
    (``backing_off``: failing, nothing new said)."""
    if pool.state != "ready":
        return Gate(pool.state, pool.message)
    if (pool.namespace, pool.release) in ungated:
        return Gate("refused", CHART_NOT_GATED)
    if pool.bootstrap == "kairos" and not kairos_known:
        return Gate("failing", KAIROS_UNKNOWN)
    unlisted = sorted({str(obj.get("kind")) for obj in pool.objects} - set(listed)) if listed is not None else ()
    if unlisted:
        why = list_errors or {}
        errors = ", ".join(f"{kind} ({why.get(kind, 'not listed yet')})" for kind in unlisted)
        return Gate("failing", f"the pool's live objects cannot be listed: {errors}; retrying")
    if backing_off:
        return Gate("failing", None)
    return None


def taken_by(
    pool: DesiredPool, objects: Iterable[Mapping[str, Any]], live: Mapping[Key, Mapping[str, Any] | None]
) -> str | None:
    """Why the pool must not be applied: one of ``objects`` is live (``live``: what the pass knows or
    read of each key, ``None`` for absent) and not the pool's to take
    (:func:`~workerclass.ops.workers.foreign_owner`); ``None`` when every object is the pool's or absent."""
    for obj in objects:
        key = object_key(obj)
        found = live.get(key)
        owner = foreign_owner(found, pool.namespace, pool.release) if found is not None else None
        if owner is not None:
            where = f"{key[1]}/{key[2]}" if key[1] else key[2]
            return (
                f"{key[0]} {where} exists and belongs to {owner}: workerclass never takes over an object "
                "it does not own; rename the pool, or delete that object if nothing uses it"
            )
    return None


@dataclass(frozen=True)
class PoolReads:
    """What a pass read for one pool that :func:`gate_pool` lets through.

    ``objects``: the pool's objects as they are to be applied (a template a hash-rule bump would
    rename under its running name, the TalosConfigTemplate under the name what runs requires, the
    bootstrap data Secret with its join inputs); ``pool_live``: its live objects (our label);
    ``seen``: what the pass knows or read of each object's key, the pool's or not (``None``:
    absent); ``join_failure``: why its join inputs cannot be used (nothing of the pool is
    applied then); ``referenced``: the templates its namespace's MachineSets name, where
    :func:`needs_references` asked for them."""

    objects: tuple[dict[str, Any], ...]
    pool_live: Mapping[Key, Mapping[str, Any]]
    seen: Mapping[Key, Mapping[str, Any] | None] = field(default_factory=dict)
    join_failure: str | None = None
    referenced: frozenset[str] = frozenset()


@dataclass(frozen=True)
class PoolDecision:
    """A pool's pass: refused or failing with its message (nothing written), or its writes."""

    writes: PoolWrites = PoolWrites()
    state: str | None = None
    message: str = ""


def decide_pool(
    pool: DesiredPool, reads: PoolReads, applied: Mapping[Key, str], *, manager: str, fresh: bool
) -> PoolDecision:
    """The writes of a pool :func:`gate_pool` let through, from what the pass read of it: refused
    while one of its objects belongs to someone else (:func:`taken_by`), failing while its join
    inputs cannot be used, else :func:`plan_pool` (``applied``: the digests this process applied;
    ``fresh``: compare every object with the live one)."""
    taken = taken_by(pool, reads.objects, reads.seen)
    if taken is not None:
        return PoolDecision(state="refused", message=taken)
    if reads.join_failure is not None:
        return PoolDecision(state="failing", message=f"{reads.join_failure}: retrying")
    writes = plan_pool(
        reads.objects, reads.pool_live, applied, manager=manager, fresh=fresh, referenced=reads.referenced
    )
    return PoolDecision(writes)


def rolling(deployment: Mapping[str, Any] | None) -> bool:
    """Whether a live MachineDeployment is rolling its machines: its controller has not observed
    its latest generation, or fewer of its replicas are updated than it has."""
    if not deployment:
        return False
    meta = _meta(deployment)
    status = deployment.get("status") or {}
    if status.get("observedGeneration") is not None and status.get("observedGeneration") != meta.get("generation"):
        return True
    replicas = status.get("replicas")
    updated = status.get("updatedReplicas")
    return isinstance(replicas, int) and isinstance(updated, int) and updated < replicas


def pool_outcome(objects: Iterable[Mapping[str, Any]], live: Mapping[Key, Mapping[str, Any]]) -> tuple[str, str]:
    """The state a pool whose writes all succeeded reports, and its message: ``waiting-for-rollout``
    while its MachineDeployment (as ``live`` holds it after the writes) rolls, else ``applied``."""
    deployment = next((obj for obj in objects if obj.get("kind") == "MachineDeployment"), None)
    if deployment is not None and rolling(live.get(object_key(deployment))):
        return "waiting-for-rollout", "the MachineDeployment is rolling out its machines"
    return "applied", ""


# ------------------------------------------------------------------ pins (the handoff from Helm)


@dataclass(frozen=True)
class PinWrites:
    """One scan of the Helm-made worker objects: the objects to pin, the classified pools' releases
    Helm still renders (no chart gate), and the objects we pinned whose pool is gone."""

    pin: tuple[dict[str, Any], ...] = ()
    ungated: frozenset[Release] = frozenset()
    left: dict[Release, dict[Key, dict[str, Any]]] = field(default_factory=dict)


def _release_of(obj: Mapping[str, Any]) -> Release:
    annotations = _meta(obj).get("annotations") or {}
    return str(annotations.get(HELM_RELEASE_NAMESPACE)), str(annotations.get(HELM_RELEASE_NAME))


def plan_pins(
    helm_made: Iterable[dict[str, Any]],
    *,
    classless: Collection[Release],
    classified: Collection[Release],
    complete: bool = True,
    previous_ungated: Collection[Release] = (),
    previous_left: Mapping[Release, Mapping[Key, dict[str, Any]]] | None = None,
) -> PinWrites:
    """``helm_made``: the live objects labelled as Helm's, of the kinds the chart renders.

    A classless pool's object not pinned yet is pinned. A classified pool's release with an object
    neither we pinned nor we applied is ungated. An object we pinned (and never applied over) whose
    release is no pool's is left over. ``complete``: every kind was listed; otherwise what was
    found ungated or left over before stays so (a kind not read is not known to have changed)."""
    known = set(classless) | set(classified)
    pin: list[dict[str, Any]] = []
    ungated: set[Release] = set() if complete else set(previous_ungated)
    left: dict[Release, dict[Key, dict[str, Any]]] = {}
    if not complete:
        for release, objects in (previous_left or {}).items():
            left[release] = dict(objects)
    for obj in helm_made:
        meta = _meta(obj)
        annotations = meta.get("annotations") or {}
        labels = meta.get("labels") or {}
        release = _release_of(obj)
        ours = POOL_LABEL in labels
        if release in classified and PINNED_ANNOTATION not in annotations and not ours:
            ungated.add(release)
        if PINNED_ANNOTATION in annotations and not ours and release not in known:
            left.setdefault(release, {})[object_key(obj)] = obj
            continue
        if release in classless and annotations.get(HELM_KEEP[0]) != HELM_KEEP[1]:
            pin.append(obj)
    return PinWrites(tuple(pin), frozenset(ungated), left)


def pin_annotations() -> dict[str, str]:
    """What a pin adds to a Helm-made object."""
    return {HELM_KEEP[0]: HELM_KEEP[1], PINNED_ANNOTATION: "handoff"}


@dataclass(frozen=True, slots=True)
class LeftOver:
    """Objects we pinned whose pool went, to delete once none of ``owners`` (HelmReleases of
    ``namespace``) exists by a fresh read."""

    release: Release
    owners: tuple[str, ...]
    keys: tuple[Key, ...]


def plan_left_over(
    left: Mapping[Release, Mapping[Key, Mapping[str, Any]]],
    *,
    known: Collection[Release],
    helm_releases: Collection[tuple[str, str]],
) -> tuple[tuple[Release, ...], tuple[LeftOver, ...]]:
    """Of what we pinned and its pool left (:attr:`PinWrites.left`): the releases that are a pool's
    again (to forget: their objects stay pinned for the handoff), and the groups to delete once
    their HelmRelease is confirmed absent; a group whose HelmRelease the cache still holds
    (``helm_releases``: namespace and name) waits (Helm is uninstalling it, or the cache lags)."""
    back: list[Release] = []
    due: list[LeftOver] = []
    for release in sorted(left):
        if release in known:
            back.append(release)
            continue
        namespace = release[0]
        owners = {release[1]}  # the Helm release, and the HelmRelease Flux labels the objects with
        for obj in left[release].values():
            labels = _meta(obj).get("labels") or {}
            if labels.get(FLUX_NAME[0]) and labels.get(FLUX_NAME[1], namespace) == namespace:
                owners.add(str(labels[FLUX_NAME[0]]))
        if any((namespace, owner) in helm_releases for owner in owners):
            continue
        keys = tuple(sorted(key for key, obj in left[release].items() if not _deleting(obj)))
        due.append(LeftOver(release, tuple(sorted(owners)), keys))
    return tuple(back), tuple(due)


# ------------------------------------------------------------------ what gone pools left


@dataclass(frozen=True, slots=True)
class Orphans:
    """Objects with the label of a pool that is gone, to delete once none of ``owners`` exists."""

    namespace: str
    release: str
    owners: tuple[str, ...]
    keys: tuple[Key, ...]


def plan_cleanup(live: Mapping[Key, Mapping[str, Any]], pool_keys: Collection[str]) -> tuple[Orphans, ...]:
    """What pools that are gone left behind: the live objects with our label whose pool key is no
    pool's (``pool_keys``: every classified and classless pool's), grouped by the pool they name
    (:data:`~workerclass.ops.workers.POOL_ANNOTATION`), each with the HelmReleases that must be
    confirmed absent first: those the objects name as owner (a direct HelmRelease's name may
    differ from its Helm release), else the release's name."""
    groups: dict[str, list[Key]] = {}
    for key, obj in live.items():
        meta = _meta(obj)
        label = (meta.get("labels") or {}).get(POOL_LABEL)
        if label and label not in pool_keys and not _deleting(obj):
            groups.setdefault(str((meta.get("annotations") or {}).get(POOL_ANNOTATION, "")), []).append(key)
    out: list[Orphans] = []
    for where, keys in sorted(groups.items()):
        namespace, _, release = where.partition("/")
        if not namespace or not release:
            continue  # not ours to judge: no pool named
        owners = {
            str(ref.get("name"))
            for key in keys
            for ref in _meta(live[key]).get("ownerReferences") or ()
            if isinstance(ref, Mapping) and ref.get("kind") == HELM_RELEASE.kind and ref.get("name")
        } or {release}
        out.append(Orphans(namespace, release, tuple(sorted(owners)), tuple(sorted(keys))))
    return tuple(out)


# ------------------------------------------------------------------ reports


#: each state's Event: reason and whether it is a Warning
REASONS: dict[str, tuple[str, bool]] = {
    "refused": ("WorkersRefused", True),
    "not-resolvable": ("WorkersNotResolvable", True),
    "waiting-for-release": ("WorkersWaitingForRelease", False),
    "waiting-for-rollout": ("WorkersWaitingForRollout", False),
    "failing": ("WorkersApplyFailed", True),
}


@dataclass(frozen=True, slots=True)
class Event:
    reason: str
    message: str
    warning: bool
    #: post only if the involved object does not carry it already (said before a restart)
    unless_said: bool = False


@dataclass(frozen=True)
class ReportWrites:
    """A pool's report: whether its state changed (the class status waits on it) and the Events."""

    changed: bool
    events: tuple[Event, ...] = ()


def plan_report(
    previous: tuple[str, str] | None, state: str, message: str, *, wrote: int = 0, class_name: str = ""
) -> ReportWrites:
    """The report of a pool whose last report was ``previous`` (``None``: none since this process
    started) and whose state now is ``state`` with ``message``, after ``wrote`` applies: an applied
    pool says ``WorkersApplied`` when something was written; any other state says its Event when
    it or its message changed (the first time only where it was not said before a restart)."""
    changed = previous is None or previous[0] != state
    events: list[Event] = []
    applied = Event("WorkersApplied", f"{wrote} object(s) applied for class {class_name}", warning=False)
    if state == "applied":
        return ReportWrites(changed, (applied,) if wrote else ())
    if previous != (state, message):
        reason, warning = REASONS.get(state, ("Workers", False))
        events.append(Event(reason, message, warning, unless_said=previous is None))
    if state == "waiting-for-rollout" and wrote:
        events.append(applied)
    return ReportWrites(changed, tuple(events))
