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

import copy
import functools
import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from ..api import WEBHOOK_DOMAIN
from ..api.bounds import excess
from ..api.resources import HELM_RELEASE, RELEASE_PREFIX
from ..chart.source import ChartTextMissing
from ..render import RenderError, render
from ..render.manifests import release_name
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
    "apply_reason",
    "classless_releases",
    "covers",
    "desired_workers",
    "difference",
    "fields_differ",
    "foreign_owner",
    "managed_by",
    "owns_exactly",
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
#: MachineDeployment that names them, RBAC before the Job that uses it.
WORKER_KINDS: tuple[WorkerKind, ...] = (
    WorkerKind("v1", "ServiceAccount", "serviceaccounts"),
    WorkerKind("rbac.authorization.k8s.io/v1", "ClusterRole", "clusterroles", False),
    WorkerKind("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "clusterrolebindings", False),
    WorkerKind("rbac.authorization.k8s.io/v1", "Role", "roles"),
    WorkerKind("rbac.authorization.k8s.io/v1", "RoleBinding", "rolebindings"),
    WorkerKind("cilium.io/v2", "CiliumNetworkPolicy", "ciliumnetworkpolicies"),
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

    @property
    def key(self) -> str:
        return pool_key(self.namespace, self.release)


def _owner(state: State, namespace: str, name: str) -> Mapping[str, Any] | None:
    record = state.records.get((HELM_RELEASE.kind, namespace, name))
    return None if record is None else record.obj


def _marked(obj: dict[str, Any], *, namespace: str, release: str, owner: Mapping[str, Any] | None) -> dict[str, Any]:
    out = copy.deepcopy(obj)
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
        if record.kind == "ComputePlane" or record.class_name is None:
            continue
        beyond = excess(record.values)
        if beyond is not None:  # refused at admission; a HelmRelease no webhook saw is refused here
            out.append(_left(record, "refused", f"the pool's values {beyond.message} (ObjectTooLarge): left as it is"))
            continue
        try:
            out.append(_desired(state, record, record.class_name, kairos_path))
        except Exception as error:  # one pool's failure is that pool's, never the others'
            message = f"resolving or rendering the pool failed ({type(error).__name__}): left as it is"
            out.append(_left(record, "failing", message))
    return out


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


def _release_of(kind: str, name: str) -> str:
    return f"{RELEASE_PREFIX}{name}" if kind == "KubernetesNodes" else name


def _desired(state: State, record: PoolRecord, class_name: str, kairos_path: str) -> DesiredPool:
    """One classified pool's desired objects (or the state that keeps it from having any)."""
    effective, denials, warnings = resolve_pool(state, record)
    release = record.release or _release_of(record.kind, record.name)
    owner_name = release if record.kind == "KubernetesNodes" else record.name
    base = DesiredPool(
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
        objects = [obj for obj in render(effective, kairos_path=kairos_path) if not _is_hook(obj)]
    except ChartTextMissing as missing:
        return replace(base, state="refused", message=f"{missing}: left as it is")
    except RenderError as error:
        return replace(
            base, state="refused", denials=error.failures, message="the chart refuses the pool: left as it is"
        )
    release = release_name(effective)
    base = replace(base, release=release, bootstrap=effective.bootstrap)
    owner = _owner(state, record.namespace, owner_name)
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


#: lists other writers add items to (Cluster API adds its own owner references): every item we set
#: must be there, in any order, beside theirs
SHARED_LISTS = frozenset({"ownerReferences"})


def difference(live: Any, desired: Any, path: str = "") -> str | None:
    """The first path at which ``live`` does not hold what ``desired`` sets (``None``: it covers it)."""
    if isinstance(desired, Mapping):
        if not isinstance(live, Mapping):
            return path or "."
        for key, value in desired.items():
            if key not in live:
                return f"{path}.{key}"
            if key in SHARED_LISTS and isinstance(value, list):
                theirs = live[key] if isinstance(live[key], list) else []
                if not all(any(covers(item, want) for item in theirs) for want in value):
                    return f"{path}.{key}[]"
                continue
            found = difference(live[key], value, f"{path}.{key}")
            if found is not None:
                return found
        return None
    if isinstance(desired, list):
        if not isinstance(live, list) or len(live) != len(desired):
            return f"{path}[]"
        for index, (a, b) in enumerate(zip(live, desired, strict=True)):
            found = difference(a, b, f"{path}[{index}]")
            if found is not None:
                return found
        return None
    return None if covers(live, desired) else (path or ".")


def covers(live: Any, desired: Any) -> bool:
    """Whether the live object already holds every field ``desired`` sets, with the same value.

    The API server adds what it defaults (a Job's selector, a template's default fields, a list
    item's defaults), so the live object may hold more; lists compare item by item (same length).
    Lists in :data:`SHARED_LISTS` are others' too (Cluster API adds owner references): each item
    we set must be among theirs. One part of :func:`apply_reason`: covering alone never makes an
    apply unnecessary (a field no longer set would stay)."""
    if isinstance(desired, Mapping):
        if not isinstance(live, Mapping):
            return False
        for key, value in desired.items():
            if key not in live:
                return False
            if key in SHARED_LISTS and isinstance(value, list):
                theirs = live[key] if isinstance(live[key], list) else []
                if not all(any(covers(item, want) for item in theirs) for want in value):
                    return False
            elif not covers(live[key], value):
                return False
        return True
    if isinstance(desired, list):
        if not isinstance(live, list) or len(live) != len(desired):
            return False
        return all(covers(a, b) for a, b in zip(live, desired, strict=True))
    if isinstance(desired, bool) or isinstance(live, bool):
        return live is desired
    if isinstance(desired, int | float) and isinstance(live, int | float):
        return float(live) == float(desired)
    if isinstance(desired, str) and isinstance(live, str) and live != desired:
        # a metav1.Duration field comes back normalized ("20m" is stored as "20m0s")
        a, b = _duration(live), _duration(desired)
        return a is not None and a == b
    return bool(live == desired)


_DURATION_PART = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ns|us|µs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def _duration(text: str) -> float | None:
    """Seconds of a Go duration string (``1h30m``, ``20m0s``), or ``None`` for any other string."""
    if not text or _DURATION_PART.sub("", text) != "":
        return None
    return sum(float(number) * _UNIT_SECONDS[unit] for number, unit in _DURATION_PART.findall(text))


# ---------------------------------------------------------------------- what server-side apply owns

#: fields of an apply body that name the object rather than set a field (never in managedFields)
_IDENTITY = frozenset({"apiVersion", "kind"})
_IDENTITY_METADATA = frozenset({"name", "namespace"})


def managed_by(live: Mapping[str, Any], manager: str) -> Mapping[str, Any] | None:
    """The ``fieldsV1`` of ``manager``'s server-side apply on ``live`` (the main resource, not a
    subresource); ``None`` when that manager never applied it."""
    entries = (live.get("metadata") or {}).get("managedFields")
    if not isinstance(entries, list):
        return None
    for entry in entries:
        if not isinstance(entry, Mapping):
            continue
        if entry.get("manager") == manager and entry.get("operation") == "Apply" and not entry.get("subresource"):
            fields = entry.get("fieldsV1")
            return fields if isinstance(fields, Mapping) else {}
    return None


def owns_exactly(live: Mapping[str, Any], desired: Mapping[str, Any], manager: str) -> bool:
    """Whether ``manager``'s applied field set on ``live`` is exactly the field set of ``desired``
    (:func:`fields_differ` says where it is not)."""
    return fields_differ(live, desired, manager) is None


def fields_differ(live: Mapping[str, Any], desired: Mapping[str, Any], manager: str) -> str | None:
    """The first path at which ``manager``'s applied field set on ``live`` and the field set of
    ``desired`` differ (``"."`` when that manager never applied ``live``); ``None`` when they are the same.

    Server-side apply removes a field its manager applied before and applies no longer (unless
    another manager owns it too), so an apply is due when the sets differ: a field the render
    dropped is still owned (the apply removes it), a field someone else took over or removed is no
    longer owned (the apply takes it back). The sets are compared on the ``fieldsV1`` tree as the
    API server writes it: a map's keys are ``f:<name>``; a list or struct that the schema makes
    atomic (an owner reference, a roleRef) is a leaf (what it holds is the value's business, which
    :func:`covers` judges); an associative list's
    items are ``k:{<key fields>}``, a set's ``v:<value>``; ``.`` marks a map or item owned as such.
    """
    fields = managed_by(live, manager)
    if fields is None:
        return "."
    body = {key: value for key, value in desired.items() if key not in _IDENTITY}
    metadata = body.get("metadata")
    if isinstance(metadata, Mapping):
        body["metadata"] = {key: value for key, value in metadata.items() if key not in _IDENTITY_METADATA}
        if not body["metadata"]:
            del body["metadata"]
    tree = {key: value for key, value in fields.items() if key not in {f"f:{name}" for name in _IDENTITY}}
    return _fields_differ(body, tree, "")


def _children(node: Any) -> dict[str, Any]:
    return {key: value for key, value in node.items() if key != "."} if isinstance(node, Mapping) else {}


def _fields_differ(desired: Any, node: Any, path: str) -> str | None:
    children = _children(node)
    if isinstance(desired, Mapping):
        if not children:
            return None  # an atomic struct (an owner reference, a roleRef): owned whole
        wanted = {f"f:{key}" for key in desired}
        if wanted != set(children):
            extra = sorted(set(children) - wanted)
            missing = sorted(wanted - set(children))
            return f"{path}.{(extra or missing)[0][2:]}"
        for key, value in desired.items():
            found = _fields_differ(value, children[f"f:{key}"], f"{path}.{key}")
            if found is not None:
                return found
        return None
    if isinstance(desired, list):
        if not children:
            return None  # an atomic list: owned whole
        remaining = dict(children)
        for index, item in enumerate(desired):
            name = _item(item, remaining)
            if name is None:
                return f"{path}[{index}]"
            owned = remaining.pop(name)
            if name.startswith("k:"):
                found = _item_differs(item, owned, name, f"{path}[{index}]")
                if found is not None:
                    return found
        return f"{path}[]" if remaining else None
    return f"{path}" if children else None  # a scalar (or null) is a leaf


def _item_differs(item: Any, node: Any, name: str, path: str) -> str | None:
    """An associative list's item against its ``k:`` node; key fields the server filled in (a port's
    defaulted ``protocol``) may be owned beside the item's own."""
    if not isinstance(item, Mapping):
        return path
    keys = json.loads(name[2:])
    extra = {f"f:{key}" for key in keys if key not in item}
    trimmed = {key: value for key, value in _children(node).items() if key not in extra}
    return _fields_differ(item, trimmed, path)


def _item(item: Any, nodes: Mapping[str, Any]) -> str | None:
    """The ``k:`` or ``v:`` entry of ``nodes`` that names list item ``item``."""
    for name in nodes:
        try:
            value = json.loads(name[2:])
        except ValueError:
            continue
        if name.startswith("v:") and value == item:
            return name
        if name.startswith("k:") and isinstance(value, Mapping) and isinstance(item, Mapping):
            shared = [key for key in value if key in item]
            if shared and all(item[key] == value[key] for key in shared):
                return name
    return None


def apply_reason(
    desired: Mapping[str, Any],
    live: Mapping[str, Any] | None,
    *,
    manager: str,
    applied: str | None,
    digest: str,
) -> str | None:
    """Why ``desired`` must be applied over ``live`` (``None``: an apply would change nothing).

    ``applied`` is the digest of what this process last applied for the object (``None``: nothing
    since it started), ``digest`` that of ``desired``. Server-side apply decides what ``manager``
    owns, so an apply is due when: the object is absent; ``desired`` changed since the last apply
    (a field it drops goes, as only the apply can remove it); ``manager``'s applied field set
    differs from ``desired``'s (after a restart, a render that dropped a field, or a field
    another writer took); or a value differs (:func:`covers`). Covering is never reason enough to
    skip: a live object can hold every value we set and still carry one we no longer set."""
    if live is None:
        return "absent"
    if applied is not None and applied != digest:
        return "changed since the last apply"
    fields = fields_differ(live, desired, manager)
    if fields is not None:
        return f"the fields applied differ from the desired ones at {fields}"
    found = difference(live, desired)
    if found is not None:
        return f"{found} differs"
    return None
