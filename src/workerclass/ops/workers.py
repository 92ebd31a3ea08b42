"""What the worker controller applies: the objects of every classified pool, and what it pins.

Pure: a :class:`~workerclass.state.State` in, plain data out; the controller
(:mod:`workerclass.controller.workers`) does the I/O. For each classified pool (a KubernetesNodes
release or a direct HelmRelease writer of the chart that names a class; ComputePlane node groups
keep their classless path) :func:`desired_workers` resolves and renders it and returns a
:class:`DesiredPool`: the objects exactly as the chart would render them for the pool's effective
settings, plus what makes them ours:

* every object carries the label :data:`POOL_LABEL` (a digest of ``<namespace>/<release>``, since
  a label value is at most 63 characters) and the annotation :data:`POOL_ANNOTATION` (the same in
  words), so the controller lists what it applied per kind with one label selector, and finds what
  a pool left behind;
* a namespaced object the chart leaves unnamespaced lands in the release's namespace (as Helm puts
  it), and one in that namespace gets an owner reference to the pool's HelmRelease, so deleting the
  pool deletes it through the garbage collector even while the controller is down. Cluster-scoped
  objects cannot name a namespaced owner (the garbage collector would take the owner for absent
  and delete them): the controller deletes those by label when the pool is gone;
* ``spec.replicas`` of the MachineDeployment is left out, as the chart leaves it: the autoscaler
  owns it (Cluster API's defaulting webhook seeds it from the min-size annotation).

A pool that does not resolve (its class removed by force, a platform edit) is
``not-resolvable``; one the chart refuses, or that needs the chart's own text while the State has
only the shipped facts (a Talos pool's talos-reconcile Job), is ``refused``; one whose HelmRelease is
not (yet) in the cluster is ``waiting-for-release``: for all of them the controller applies nothing
and deletes nothing. Helm's hook objects (``helm.sh/hook``: PR 3315's pre-delete unpin hook) are
Helm's lifecycle, not the pool's workers: they are left out.

Pinning (the handoff from Helm): Helm deletes what leaves a release unless the live object carries
``helm.sh/resource-policy: keep``. With the chart gate a pool that selects a class leaves its
release whole, so the objects Helm rendered for the classless pool must be pinned *before* that
upgrade runs. :func:`classless_releases` names the releases whose Helm-made worker objects the
controller keeps pinned (marked with :data:`PINNED_ANNOTATION` too, so it unpins and cleans up
only its own pins). Once the pool selects a class, the controller applies the rendered objects over
them under the same names (no machine is replaced when the class reproduces the settings) and
adds its label and owner reference; from then on they are the controller's.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from ..admission.bounds import request_excess
from ..api import WEBHOOK_DOMAIN
from ..api.resources import HELM_RELEASE, RELEASE_PREFIX
from ..chart.source import ChartTextMissing
from ..chart.values import copy_values
from ..render import RenderError, render
from ..render.manifests import release_name
from ..render.talos_template import TALOS_TEMPLATE_KIND
from ..render.templates import KAIROS_BOOTSTRAP_API, KAIROS_DATA_SECRET_PATH
from ..resolve import resolve_pool
from ..state import PoolRecord, State
from ..violations import Violation

__all__ = [
    "HELM_KEEP",
    "HELM_RELEASE_NAME",
    "HELM_RELEASE_NAMESPACE",
    "PINNED_ANNOTATION",
    "POOL_ANNOTATION",
    "POOL_LABEL",
    "WORKER_KINDS",
    "DesiredPool",
    "PoolState",
    "WorkerKind",
    "classless_releases",
    "desired_pool",
    "desired_workers",
    "foreign_owner",
    "pool_key",
    "worker_kind",
]

#: the label on every object the controller applies: :func:`pool_key` of the pool's release
POOL_LABEL = f"{WEBHOOK_DOMAIN}/pool"
#: the same pool in words (``<namespace>/<release>``), for people and for the cleanup's check
POOL_ANNOTATION = f"{WEBHOOK_DOMAIN}/pool"
#: on a Helm-made object the controller pinned for a handoff (only its own pins are undone)
PINNED_ANNOTATION = f"{WEBHOOK_DOMAIN}/pinned"
#: Helm's resource policy: a live object carrying it is never deleted by an upgrade or uninstall
HELM_KEEP = ("helm.sh/resource-policy", "keep")
#: the annotations Helm marks the objects of a release with
HELM_RELEASE_NAME = "meta.helm.sh/release-name"
HELM_RELEASE_NAMESPACE = "meta.helm.sh/release-namespace"

PoolState = Literal["ready", "refused", "not-resolvable", "waiting-for-release", "failing"]


@dataclass(frozen=True, slots=True)
class WorkerKind:
    """A kind the chart renders for a pool (or that the controller reads beside them)."""

    api_version: str
    kind: str
    plural: str
    namespaced: bool = True

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    @property
    def version(self) -> str:
        return self.api_version.rpartition("/")[2]


#: What the chart (and so the controller) renders for a pool, in apply order: templates before the
#: MachineDeployment that names them, RBAC before the Job that uses it, the Image Factory CA's
#: ConfigMap before the KubevirtMachineTemplate whose disk import names it.
WORKER_KINDS: tuple[WorkerKind, ...] = (
    WorkerKind("v1", "ServiceAccount", "serviceaccounts"),
    WorkerKind("rbac.authorization.k8s.io/v1", "ClusterRole", "clusterroles", False),
    WorkerKind("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "clusterrolebindings", False),
    WorkerKind("rbac.authorization.k8s.io/v1", "Role", "roles"),
    WorkerKind("rbac.authorization.k8s.io/v1", "RoleBinding", "rolebindings"),
    WorkerKind("cilium.io/v2", "CiliumNetworkPolicy", "ciliumnetworkpolicies"),
    WorkerKind("v1", "ConfigMap", "configmaps"),  # a private Image Factory's CA, which the disk import names
    WorkerKind("infrastructure.cluster.x-k8s.io/v1alpha1", "KubevirtMachineTemplate", "kubevirtmachinetemplates"),
    WorkerKind("infrastructure.cluster.x-k8s.io/v1alpha1", "ProxmoxMachineTemplate", "proxmoxmachinetemplates"),
    WorkerKind(KAIROS_BOOTSTRAP_API, "KairosConfigTemplate", "kairosconfigtemplates"),
    WorkerKind("v1", "Secret", "secrets"),  # a Kairos pool's bootstrap data (the data-secret path)
    WorkerKind("cluster.x-k8s.io/v1beta1", "MachineDeployment", "machinedeployments"),
    WorkerKind("cluster.x-k8s.io/v1beta1", "MachineHealthCheck", "machinehealthchecks"),
    WorkerKind("cozystack.io/v1alpha1", "WorkloadMonitor", "workloadmonitors"),
    WorkerKind("batch/v1", "Job", "jobs"),
)
_BY_KIND = {kind.kind: kind for kind in WORKER_KINDS}
_RANK = {kind.kind: rank for rank, kind in enumerate(WORKER_KINDS)}


def worker_kind(kind: str) -> WorkerKind | None:
    return _BY_KIND.get(kind)


@functools.lru_cache(maxsize=65536)
def pool_key(namespace: str, release: str) -> str:
    """A label value for the pool's release: 40 hex characters of its sha256 (names can exceed 63)."""
    return hashlib.sha256(f"{namespace}/{release}".encode()).hexdigest()[:40]


def foreign_owner(live: Mapping[str, Any], namespace: str, release: str) -> str | None:
    """Who, other than the pool of ``namespace``/``release``, owns the live object ``live``; ``None``
    when the pool may apply over it.

    The pool may: an object it applied (our pool label with its :func:`pool_key`), or one Helm made
    for the same release (the classless pool's objects a handoff takes over). Anything else (another
    pool's object, another release's, the parent app's ``md0``, an object made by hand) is never
    force-applied: a takeover would move it, and an owner reference on it would let the tenant's
    release delete it. The answer names kinds of owners, never values from the object.
    """
    meta = live.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    labels = meta.get("labels")
    labels = labels if isinstance(labels, Mapping) else {}
    annotations = meta.get("annotations")
    annotations = annotations if isinstance(annotations, Mapping) else {}
    ours = labels.get(POOL_LABEL)
    if ours is not None:
        return None if ours == pool_key(namespace, release) else "another workerclass pool"
    helm = (annotations.get(HELM_RELEASE_NAMESPACE), annotations.get(HELM_RELEASE_NAME))
    if helm == (namespace, release):
        return None
    if helm[1] is not None:
        return "another Helm release"
    return "no pool and no Helm release (it was made another way)"


@dataclass(frozen=True)
class DesiredPool:
    """A classified pool and what the controller applies for it (nothing unless ``state`` is ready)."""

    identity: str  # namespace/name of the pool object
    kind: str  # KubernetesNodes or HelmRelease
    namespace: str
    release: str  # the Helm release name (kubernetes-nodes-<name> for a KubernetesNodes)
    owner: str  # the HelmRelease's name
    class_name: str
    state: PoolState
    objects: tuple[dict[str, Any], ...] = ()
    #: the resolved bootstrap family (``talos`` or ``kairos``); empty when the pool does not resolve
    bootstrap: str = ""
    denials: tuple[Violation, ...] = ()
    message: str = ""
    warnings: tuple[str, ...] = field(default_factory=tuple)
    #: a Talos pool's TalosConfigTemplate as its talos-reconcile Job applies it (run-time inputs as
    #: ``${NAME}``): not applied by the controller (the Job fills it in), read to decide the name the
    #: Job applies it under (:func:`workerclass.render.talos_template.as_applied`)
    talos_template: dict[str, Any] | None = None
    #: the HelmRelease's uid (what its Events name, so that ``kubectl describe`` shows them); empty
    #: while the cluster has no such HelmRelease
    owner_uid: str = ""
    #: the pool object's own uid (a KubernetesNodes: where its Events go while it has no HelmRelease)
    pool_uid: str = ""

    @property
    def key(self) -> str:
        return pool_key(self.namespace, self.release)


def _owner(state: State, namespace: str, name: str) -> Mapping[str, Any] | None:
    record = state.records.get((HELM_RELEASE.kind, namespace, name))
    return None if record is None else record.obj


def _marked(obj: dict[str, Any], *, namespace: str, release: str, owner: Mapping[str, Any] | None) -> dict[str, Any]:
    out: dict[str, Any] = copy_values(obj)
    kind = worker_kind(str(out.get("kind")))
    namespaced = kind.namespaced if kind is not None else True
    metadata = out.setdefault("metadata", {})
    if namespaced:
        metadata.setdefault("namespace", namespace)
    metadata.setdefault("labels", {})[POOL_LABEL] = pool_key(namespace, release)
    metadata.setdefault("annotations", {})[POOL_ANNOTATION] = f"{namespace}/{release}"
    owner_meta = (owner or {}).get("metadata") or {}
    if namespaced and metadata.get("namespace") == namespace and owner_meta.get("uid"):
        metadata["ownerReferences"] = [
            {
                "apiVersion": HELM_RELEASE.api_version,
                "kind": HELM_RELEASE.kind,
                "name": owner_meta.get("name"),
                "uid": owner_meta["uid"],
                "blockOwnerDeletion": False,
                "controller": False,
            }
        ]
    return out


def _in_apply_order(objects: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    ranked = list(enumerate(objects))
    ranked.sort(key=lambda pair: (_RANK.get(str(pair[1].get("kind")), len(_RANK)), pair[0]))
    return [obj for _, obj in ranked]


#: Helm's hook annotation: an object Helm creates at a point of the release's lifecycle (PR 3315's
#: pre-delete unpin Job and its RBAC), never one the controller applies to a running pool
HELM_HOOK = "helm.sh/hook"


def _is_hook(obj: Mapping[str, Any]) -> bool:
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    return isinstance(annotations, Mapping) and HELM_HOOK in annotations


def desired_workers(state: State, *, kairos_path: str = KAIROS_DATA_SECRET_PATH) -> list[DesiredPool]:
    """Every classified KubernetesNodes or HelmRelease pool, resolved and rendered, in stable order;
    Kairos pools on ``kairos_path`` (:func:`workerclass.ops.providers.kairos_path`). A Kairos pool's
    bootstrap Secret comes as rendered, its join inputs redacted: the controller fills them in
    (:func:`workerclass.render.kairos_bootstrap.with_join_inputs`)."""
    out: list[DesiredPool] = []
    for record in state.sorted_pools():
        pool = desired_pool(state, record, kairos_path=kairos_path)
        if pool is not None:
            out.append(pool)
    return out


def desired_pool(state: State, record: PoolRecord, *, kairos_path: str = KAIROS_DATA_SECRET_PATH) -> DesiredPool | None:
    """One pool of :func:`desired_workers` (``None``: not a classified pool, so none of the controller's)."""
    if record.kind == "ComputePlane" or record.class_name is None:
        return None
    beyond = request_excess(record.values)
    if beyond is not None:  # refused at admission; a HelmRelease no webhook saw is refused here
        return _left(record, "refused", f"the pool's values {beyond.message} (ObjectTooLarge): left as it is")
    try:
        return _desired(state, record, record.class_name, kairos_path)
    except Exception as error:  # one pool's failure is that pool's, never the others'
        message = f"resolving or rendering the pool failed ({type(error).__name__}): left as it is"
        return _left(record, "failing", message)


def _left(record: PoolRecord, state: PoolState, message: str) -> DesiredPool:
    """A classified pool the controller leaves as it is, and why."""
    return DesiredPool(
        identity=record.identity,
        kind=record.kind,
        namespace=record.namespace,
        release=record.release or _release_of(record.kind, record.name),
        owner=_release_of(record.kind, record.name),
        class_name=record.class_name or "",
        state=state,
        message=message,
    )


def _uid(state: State, record: PoolRecord) -> str:
    """The pool object's uid, as stored."""
    stored = state.records.get((record.kind, record.namespace, record.name))
    return str((((stored.obj if stored is not None else {}).get("metadata") or {}).get("uid")) or "")


def _release_of(kind: str, name: str) -> str:
    return f"{RELEASE_PREFIX}{name}" if kind == "KubernetesNodes" else name


def _desired(state: State, record: PoolRecord, class_name: str, kairos_path: str) -> DesiredPool:
    """One classified pool's desired objects (or the state that keeps it from having any)."""
    effective, denials, warnings = resolve_pool(state, record)
    release = record.release or _release_of(record.kind, record.name)
    owner_name = release if record.kind == "KubernetesNodes" else record.name
    owner = _owner(state, record.namespace, owner_name)
    base = DesiredPool(
        owner_uid=str(((owner or {}).get("metadata") or {}).get("uid") or ""),
        pool_uid=_uid(state, record),
        identity=record.identity,
        kind=record.kind,
        namespace=record.namespace,
        release=release,
        owner=owner_name,
        class_name=class_name,
        state="ready",
        warnings=tuple(warnings),
    )
    if effective is None:
        codes = ", ".join(sorted({violation.code for violation in denials})) or "unresolvable"
        return replace(
            base,
            state="not-resolvable",
            denials=tuple(denials),
            message=f"the pool does not resolve ({codes}): left as it is",
        )
    try:
        # the template the Job applies, to name it (:mod:`workerclass.render.talos_template`); a chart
        # Helm's engine renders has no place for it (nor any naming of ours)
        preview = effective.bootstrap == "talos" and effective.chart.known
        rendered = render(effective, talos_config_template=preview, kairos_path=kairos_path)
    except ChartTextMissing as missing:
        return replace(base, state="refused", message=f"{missing}: left as it is")
    except RenderError as error:
        return replace(
            base, state="refused", denials=error.failures, message="the chart refuses the pool: left as it is"
        )
    template = next((obj for obj in rendered if obj.get("kind") == TALOS_TEMPLATE_KIND), None)
    objects = [obj for obj in rendered if obj is not template and not _is_hook(obj)]
    release = release_name(effective)
    base = replace(base, release=release, bootstrap=effective.bootstrap, talos_template=template)
    if owner is None or not ((owner.get("metadata") or {}).get("uid")):
        return replace(
            base, state="waiting-for-release", message=f"waiting for its HelmRelease {record.namespace}/{owner_name}"
        )
    marked = [_marked(obj, namespace=record.namespace, release=release, owner=owner) for obj in objects]
    return replace(base, objects=tuple(_in_apply_order(marked)))


def classless_releases(state: State) -> set[tuple[str, str]]:
    """``(namespace, release)`` of every classless KubernetesNodes or HelmRelease pool: the releases
    whose Helm-made worker objects the controller keeps pinned for a future handoff."""
    out: set[tuple[str, str]] = set()
    for record in state.pools.values():
        if record.kind == "ComputePlane" or record.class_name is not None:
            continue
        out.add((record.namespace, record.release or _release_of(record.kind, record.name)))
    return out
