"""What removing the workerclass package would leave behind (``preflight --uninstall``).

Pure: a State (classes, pools) and the objects the worker controller owns, in; checks out, in the
shape of preflight's (:class:`~workerclass.ops.preflight.Check`, :class:`~workerclass.ops.preflight.Preflight`).
It decides nothing about the install and applies nothing. Three checks, each one ok row when
nothing is found:

- ``uninstall-kairos-pools``: a classified pool (``workerClassName`` set) is rendered by an old
  chart, which has no class support, as Talos. A Kairos pool would become Talos machines: it fails
  (migrate its workloads and remove the pool first). A Talos pool warns: restore its legacy values
  first (``workerclass restore``). A pool whose class is not known cannot be told apart: it fails.
- ``uninstall-finalizers``: a custom class (not ``talos`` or ``kairos``) that carries
  :data:`~workerclass.api.FINALIZER` stays Terminating once the controller that removes the
  finalizer is gone, and deleting the WorkerClass CRD waits on it: it fails, saying how to release
  it safely.
- ``uninstall-owned-objects``: the objects the controller applied (labelled
  :data:`~workerclass.ops.workers.POOL_LABEL`, of the kinds of
  :data:`~workerclass.ops.workers.WORKER_KINDS`) would be left unmanaged (nothing updates them,
  cluster-scoped ones are never garbage collected): a failure, counted per pool and kind. Helm-made
  objects it pinned (:data:`~workerclass.ops.workers.PINNED_ANNOTATION`) keep
  ``helm.sh/resource-policy: keep``, so Helm never deletes them: a warning.

A list the reader could not make (:class:`~workerclass.ops.preflight.Unreadable`) fails the check
that needed it: what cannot be seen is not called harmless.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..api import FINALIZER
from ..rules.family import family_of
from ..state import State
from .preflight import FOLDER, Check, Preflight, Source
from .workers import PINNED_ANNOTATION, POOL_ANNOTATION, POOL_LABEL, WORKER_KINDS

__all__ = ["BUILTIN_CLASSES", "UNINSTALL_CHECKS", "uninstall"]

#: the classes the package ships (no finalizer of ours is expected to hold them)
BUILTIN_CLASSES = frozenset({"talos", "kairos"})
#: the checks, in report order
UNINSTALL_CHECKS = ("uninstall-kairos-pools", "uninstall-finalizers", "uninstall-owned-objects")
_WORKER_KINDS = {kind.kind for kind in WORKER_KINDS}


def _metadata(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    metadata = obj.get("metadata")
    return metadata if isinstance(metadata, Mapping) else {}


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _refused(check: str, source: Source, kinds: tuple[str, ...], what: str) -> list[Check]:
    return [
        Check(check, "fail", f"{entry.text}: {what} cannot be verified", entry.resource)
        for entry in source.unreadable
        if entry.kind in kinds
    ]


def _pools(state: State, source: Source) -> list[Check]:
    name = "uninstall-kairos-pools"
    out = _refused(name, source, ("KubernetesNodes", "HelmRelease", "WorkerClass"), "which pools are Kairos")
    for pool in state.sorted_pools():
        if pool.kind == "ComputePlane" or pool.class_name is None:
            continue
        where = f"{pool.kind} {pool.identity}"
        family = family_of(state, pool.class_name)
        if family == "kairos":
            out.append(
                Check(
                    name,
                    "fail",
                    f"{where} (class {pool.class_name}) would become Talos machines: migrate first (move its "
                    "workloads off, obtain approval and remove the pool) before removing workerclass",
                    where,
                    f"{pool.field}.workerClassName",
                )
            )
        elif family is None:
            out.append(
                Check(
                    name,
                    "fail",
                    f"{where} selects class {pool.class_name}, which is not in {source.where}: whether an old chart "
                    "would turn Kairos machines into Talos ones cannot be verified",
                    where,
                    f"{pool.field}.workerClassName",
                )
            )
        else:
            out.append(
                Check(
                    name,
                    "warn",
                    f"{where} (class {pool.class_name}) is a classified Talos pool: restore its legacy values "
                    "first (workerclass restore), so an old chart renders the same machines",
                    where,
                    f"{pool.field}.workerClassName",
                )
            )
    return out or [Check(name, "ok", f"no classified KubernetesNodes or HelmRelease pool in {source.where}")]


def _finalizers(state: State, source: Source) -> list[Check]:
    name = "uninstall-finalizers"
    out = _refused(name, source, ("WorkerClass",), "which classes hold the finalizer")
    for record in sorted(state.classes.values(), key=lambda r: r.name):
        if record.builtin or record.name in BUILTIN_CLASSES:
            continue
        finalizers = _metadata(record.obj).get("finalizers")
        if not isinstance(finalizers, list) or FINALIZER not in finalizers:
            continue
        index = finalizers.index(FINALIZER)
        selecting = [pool.identity for pool in state.pools_selecting(record.name)]
        using = f"; pools select it: {', '.join(selecting)}" if selecting else "; no pool selects it"
        patch = f'[{{"op":"remove","path":"/metadata/finalizers/{index}"}}]'
        out.append(
            Check(
                name,
                "fail",
                f"WorkerClass {record.name} holds {FINALIZER}{using}: without the controller it stays Terminating "
                "once deleted, and deleting the WorkerClass CRD waits on it. While the controller runs, move "
                "its pools to another class (or restore them) and delete the class, so the controller releases "
                "it; once no pool selects it, the finalizer may be removed by hand: "
                f"kubectl patch workerclass {record.name} --type=json -p '{patch}'",
                f"WorkerClass {record.name}",
                "metadata.finalizers",
            )
        )
    return out or [Check(name, "ok", f"no custom class holds {FINALIZER} in {source.where}")]


def _owned(objects: Iterable[Mapping[str, Any]], source: Source) -> list[Check]:
    name = "uninstall-owned-objects"
    out = _refused(name, source, tuple(_WORKER_KINDS), "which objects the controller owns")
    labelled: dict[str, dict[str, list[str]]] = {}
    pinned: dict[str, dict[str, list[str]]] = {}
    for obj in objects:
        kind = obj.get("kind")
        if not isinstance(kind, str) or kind not in _WORKER_KINDS:
            continue
        metadata = _metadata(obj)
        labels, annotations = _mapping(metadata.get("labels")), _mapping(metadata.get("annotations"))
        namespace, object_name = str(metadata.get("namespace") or ""), str(metadata.get("name") or "")
        shown = f"{namespace}/{object_name}" if namespace else object_name
        if POOL_LABEL in labels:
            pool = str(annotations.get(POOL_ANNOTATION) or labels[POOL_LABEL])
            labelled.setdefault(pool, {}).setdefault(kind, []).append(shown)
        elif PINNED_ANNOTATION in annotations:
            release = f"{annotations.get('meta.helm.sh/release-namespace', namespace)}/" + str(
                annotations.get("meta.helm.sh/release-name", "?")
            )
            pinned.setdefault(release, {}).setdefault(kind, []).append(shown)
    for pool, kinds in sorted(labelled.items()):
        counts = ", ".join(f"{len(names)} {kind}" for kind, names in sorted(kinds.items()))
        listed = "; ".join(f"{kind}: {', '.join(sorted(names))}" for kind, names in sorted(kinds.items()))
        out.append(
            Check(
                name,
                "fail",
                f"pool {pool}: {counts} applied by the controller would be left unmanaged (nothing updates or "
                f"deletes them; cluster-scoped ones are never garbage collected) ({listed})",
                f"pool {pool}",
                f"metadata.labels.{POOL_LABEL}",
            )
        )
    for release, kinds in sorted(pinned.items()):
        counts = ", ".join(f"{len(names)} {kind}" for kind, names in sorted(kinds.items()))
        listed = "; ".join(f"{kind}: {', '.join(sorted(names))}" for kind, names in sorted(kinds.items()))
        out.append(
            Check(
                name,
                "warn",
                f"release {release}: {counts} made by Helm and pinned by the controller keep "
                "helm.sh/resource-policy: keep, so Helm never deletes them: remove that annotation and "
                f"{PINNED_ANNOTATION} to hand them back ({listed})",
                f"release {release}",
                f"metadata.annotations.{PINNED_ANNOTATION}",
            )
        )
    return out or [Check(name, "ok", f"no object in {source.where} is owned or pinned by the controller")]


def uninstall(state: State, owned: Iterable[Mapping[str, Any]] = (), source: Source = FOLDER) -> Preflight:
    """What removing the package would leave: the classified pools and custom classes of ``state``,
    and ``owned``, the objects of :data:`WORKER_KINDS` read beside it (others are ignored)."""
    return Preflight((*_pools(state, source), *_finalizers(state, source), *_owned(list(owned), source)))
