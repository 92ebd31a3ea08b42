"""The worker controller: classified pools become machines.

The I/O door over :mod:`workerclass.ops.workers` (what to apply, pure). What it owns (the objects
carrying :data:`~workerclass.ops.workers.POOL_LABEL`) it lists and watches per kind by that label
(:meth:`WorkerController.watch_owned`), so an object deleted or edited by hand wakes it and is
repaired within seconds; a kind whose list or watch fails backs off alone and holds back only the
pools that render it. MachineSets are read only where a prune needs them, per namespace. For every
State the cluster cache holds, every change the watches see, and every full resync (a comparison
of each pool with the watched objects) it:

1. renders each classified pool (:func:`~workerclass.ops.workers.desired_workers`) and server-side
   applies, with one field manager (:data:`FIELD_MANAGER`, ``force``: the handoff takes fields over
   from Helm), every object an apply would change (:func:`~workerclass.ops.convergence.apply_reason`):
   absent, changed since this process last applied it (a digest), or live with another field set
   under our manager than the desired one (a field the render dropped: the apply removes it) or
   another value; so a render that stops setting a field removes it, and a restart sends no write
   for a pool already in its desired state; objects are applied in the pool's apply order and a pool
   whose apply fails is retried whole with backoff and jitter; a template we name (Kairos, Proxmox)
   that a bump of the hash rule would rename keeps its running name
   (:func:`~workerclass.render.hash.keep_running`), so a new workerclass version never rolls a pool
   whose settings did not change;
2. prunes what the pool no longer renders: an old KubevirtMachineTemplate (or Kairos/Proxmox
   template) only once no MachineSet references it, as the chart's own lookup keeps it, anything
   else at once;
3. leaves a pool that is ``refused``, ``not-resolvable`` or ``waiting-for-release`` exactly as it
   is: nothing applied, nothing pruned. Kairos pools take the bootstrap path the cluster serves
   (:func:`workerclass.ops.providers.kairos_path`, from the Kairos provider's CRD, read by name): on
   the data-secret path the pool's bootstrap Secret gets its join inputs here
   (:meth:`WorkerController._joined`: the parent's bootstrap token and CA, read by name from the
   pool's own namespace, never logged), and a pool whose inputs are not there yet is ``failing`` and
   retried with backoff;
4. finds classified pools whose release's chart still renders worker objects (Helm-made objects of
   the release that neither the controller's pin nor its label marks): that chart lacks the chart
   gate, so the pool is reported ``ChartNotGated`` and nothing is applied for it (the chart and the
   controller must never both write a pool's machines);
5. pins the Helm-made worker objects of every classless pool (``helm.sh/resource-policy: keep`` and
   :data:`~workerclass.ops.workers.PINNED_ANNOTATION`), so that when the pool selects a class the
   chart gate's upgrade deletes nothing: the controller then applies over them;
6. deletes what a pool left behind once the pool is gone and its HelmRelease (the one the objects
   name as owner) is confirmed absent by a fresh read: objects with the pool's label (namespaced
   ones also go by their owner reference through the garbage collector) and the Helm-made objects it
   had pinned;
7. reports each pool's state as a Kubernetes Event on its HelmRelease (on a change of state, and
   after every apply that wrote something), and as metrics (:class:`WorkerMetrics`).

Its edge: lightkube calls, the loop and its clock. What to render is :mod:`workerclass.ops.workers`;
what to write (applies, prunes, pins, deletions, reports) is decided by :mod:`workerclass.ops.writes`
on plain data, and this module gathers what those take (lists, watches, reads) and sends the result.
Errors are logged as status code and reason only (:func:`~workerclass.adapters.kube.short_error`).

Why one module over the house ~500 lines (about 1,150): it is one reconcile pass, its seven steps
in the order they run over the same in-memory index of live objects and applied digests, and the
watches that keep that index; split by step, every part would reach into the same private index.
"""

from __future__ import annotations

import asyncio
import base64
import collections
import contextlib
import logging
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..adapters.changes import Changes
from ..adapters.kube import LIST_CHUNK, Backoff, resource_class, short_error, status_code
from ..api.resources import HELM_RELEASE, RELEASE_PREFIX
from ..ops.providers import KAIROS_TEMPLATE_CRD, ProviderSupport, kairos_kubeadm
from ..ops.workers import (
    POOL_LABEL,
    WORKER_KINDS,
    DesiredPool,
    WorkerKind,
    classless_releases,
    desired_pool,
    desired_workers,
    pool_key,
    worker_kind,
)
from ..ops.writes import (
    CHART_NOT_GATED,
    Key,
    PoolReads,
    decide_pool,
    digest,
    gate_pool,
    needs_references,
    object_key,
    pin_annotations,
    plan_cleanup,
    plan_left_over,
    plan_pins,
    plan_report,
    pool_outcome,
    taken_by,
    template_refs,
)
from ..render.hash import keep_running
from ..render.kairos_bootstrap import JoinInputsInvalid, is_bootstrap_secret, join_input_names, with_join_inputs
from ..render.talos_template import TALOS_TEMPLATE_KIND, as_applied, configured_template
from ..render.templates import KAIROS_DATA_SECRET_PATH, KAIROS_PROVIDER_PATH
from ..state import State
from .reporting import WorkerMetrics, involved_object, post_event

__all__ = ["FIELD_MANAGER", "WorkerController", "WorkerMetrics", "WorkerSettings"]

logger = logging.getLogger("workerclass.workers")

#: the one field manager of everything the controller applies
FIELD_MANAGER = "workerclass-controller"
#: how many pool state changes the worker controller remembers for class status to catch up on
STATE_JOURNAL = 4096
#: owned kinds listed (by our label) at the full resync's pace, never watched: the controller's RBAC
#: grants no ``watch`` on Secrets, so that no Secret of any namespace streams to it
LISTED_ONLY = frozenset({"Secret"})
#: unknown objects of one kind in one namespace from which a pass lists them rather than read each
LIST_UNKNOWN_AT = 8
#: kinds the chart never renders, so never Helm-made objects to pin or to find ungated
NOT_CHART_KINDS = frozenset({"Secret"})
MACHINE_SET = WorkerKind("cluster.x-k8s.io/v1beta1", "MachineSet", "machinesets")
#: the template a Talos pool's talos-reconcile Job applies: read (never written) to name it
TALOS_TEMPLATE = WorkerKind("bootstrap.cluster.x-k8s.io/v1alpha3", TALOS_TEMPLATE_KIND, "talosconfigtemplates")
HELM_MANAGED = ("app.kubernetes.io/managed-by", "Helm")


@dataclass(frozen=True)
class WorkerSettings:
    #: seconds between full resyncs (every pool's objects compared with the live ones; without the
    #: owned-object watches, as :meth:`WorkerController.reconcile` alone runs, re-listed first)
    resync_interval: float = 60.0
    #: seconds a watch of an owned kind runs before the API server ends it (it is renewed from the
    #: last resourceVersion seen; a watch silent for this and 10 s more is given up and renewed)
    watch_timeout: int = 30
    #: applies in flight at once
    concurrency: int = 16
    #: backoff of a failing pool: first delay and cap, in seconds (full jitter)
    retry_delay: float = 1.0
    max_retry_delay: float = 60.0


def _plain(obj: Any, kind: WorkerKind) -> dict[str, Any]:
    raw: dict[str, Any] = obj.to_dict() if hasattr(obj, "to_dict") else dict(obj)
    raw.setdefault("apiVersion", kind.api_version)
    raw.setdefault("kind", kind.kind)
    return raw


def _label(obj: Mapping[str, Any]) -> str | None:
    label = ((obj.get("metadata") or {}).get("labels") or {}).get(POOL_LABEL)
    return str(label) if label else None


def _newer(obj: Mapping[str, Any], held: Mapping[str, Any]) -> bool:
    """Whether a watch's ``obj`` is newer than the ``held`` one. resourceVersions are opaque, but the
    API server's are etcd revisions: an event older than the answer of our own apply (on its way
    before it) is never stored over it; versions that are not numbers differ or are the same."""
    seen = str((obj.get("metadata") or {}).get("resourceVersion") or "")
    have = str((held.get("metadata") or {}).get("resourceVersion") or "")
    if seen.isdigit() and have.isdigit():
        return int(seen) > int(have)
    return seen != have


def _annotations(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return ((obj.get("metadata") or {}).get("annotations")) or {}


class JoinInputsMissing(RuntimeError):
    """A Kairos pool's join inputs cannot be read or used (the message names Secrets, never values)."""


@dataclass
class _Backoff:
    failures: int = 0
    until: float = 0.0


@dataclass
class ReconcileReport:
    """One reconcile: what was written, and each pool's state."""

    applied: int = 0
    deleted: int = 0
    pinned: int = 0
    errors: int = 0
    states: dict[str, str] = field(default_factory=dict)


class WorkerController:
    """Applies classified pools; see the module docstring. ``client`` is a ``lightkube.AsyncClient``."""

    def __init__(
        self,
        client: Any,
        *,
        settings: WorkerSettings | None = None,
        metrics: WorkerMetrics | None = None,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
        events: bool = True,
    ) -> None:
        self._client = client
        self.settings = settings or WorkerSettings()
        self.metrics = metrics
        self._clock = clock
        self._rng = rng or random.Random()
        self._events = events
        #: what this process applied, by object: the digest of the desired object
        self._applied: dict[Key, str] = {}
        #: the live objects with our label, by key (from the last full resync, kept up to date by our writes)
        self._live: dict[Key, dict[str, Any]] = {}
        #: the keys of :attr:`_live` by the pool label they carry (what a pool's prune looks through)
        self._by_pool: dict[str, set[Key]] = {}
        #: whether the owned-object watches (:meth:`watch_owned`) keep :attr:`_live` current
        self._watching = False
        #: the owned kinds the watches have listed at least once, and the error of each kind whose
        #: lists fail (a pass waits until every kind was listed or failed once; a pool with objects of
        #: a kind never listed is not applied)
        self._listed_kinds: set[str] = set()
        self._owned_errors: dict[str, str] = {}
        #: the pool labels whose live objects a watch saw change since the last pass (compared then)
        self._dirty: set[str] = set()
        #: the objects being applied now: their watch events are our own writes' echo (stored, not compared)
        self._applying: set[Key] = set()
        #: bumped on every change a watch of the owned kinds sees (the loop wakes for it)
        self.live_changes = Changes()
        self._served: dict[str, bool] = {}
        self._resources: dict[str, Any] = {}
        self._pool_states: dict[str, tuple[str, str]] = {}
        #: the uid of the object each pool's last report was about (its HelmRelease's, or while it has
        #: none its own): an object deleted and made again under its name has been told nothing
        self._reported_to: dict[str, str] = {}
        #: the pools whose state changed or went, newest last, each with its change's number
        #: (:meth:`states_changed_since`: class status counts per change, not per pool)
        self._state_changes: collections.deque[tuple[int, str]] = collections.deque(maxlen=STATE_JOURNAL)
        self._state_serial = 0
        self._counts: dict[str, int] = {}  # pools per state (the metrics' gauge)
        self._backoff: dict[str, _Backoff] = {}
        self._synced_live = False
        #: classified pools' releases whose chart still renders worker objects (no gate), from the last scan
        self._ungated: set[tuple[str, str]] = set()
        self._scanned: tuple[set[tuple[str, str]], set[tuple[str, str]]] | None = None
        #: Helm-made objects this controller pinned whose pool is gone, by ``(namespace, release)``
        #: (from the last scan): deleted once that release's HelmRelease is (:meth:`_left_over`)
        self._pinned_left: dict[tuple[str, str], dict[Key, dict[str, Any]]] = {}
        #: whether the cluster's Kairos bootstrap provider takes the render (read on every full resync
        #: while Kairos pools exist); ``None``: not read yet
        self._kairos: ProviderSupport | None = None
        #: a bootstrap Secret's rendered digest and the Secret as filled in from it (see :meth:`_joined`)
        self._joined_inputs: dict[Key, tuple[str, dict[str, Any]]] = {}
        #: what the running pass's lists of unknown objects found (:meth:`_list_unknown`; None: absent)
        self._pass_found: dict[Key, dict[str, Any] | None] = {}
        self.writes = 0  # every write request sent (applies, patches, deletes, events)
        #: bumped whenever a pool's state changes or a pool goes (the class status waits on it)
        self.states = Changes()
        #: each classified pool's last render, by identity, and the identity of each pool label (what
        #: a pass per change (:meth:`reconcile_pools`) starts from; the whole pass rebuilds them)
        self._desired: dict[str, DesiredPool] = {}
        self._identity_of: dict[str, str] = {}
        #: classified pools that went while their HelmRelease was still there: cleaned up by the
        #: pass per change its deletion sets off (the whole pass's cleanup covers them too)
        self._leaving: dict[str, DesiredPool] = {}
        #: the classless pools' identities at the last whole pass (a change to one needs its pins)
        self._classless: set[str] = set()
        #: the cluster cache's generation the last pass read its State at (None: none yet)
        self._read_version: int | None = None
        #: whether one reconcile has run to its end (before it, no pool's state is known: the class
        #: status waits rather than write a Pending that a restart would then take back)
        self.settled = False

    # ------------------------------------------------------------------ lightkube plumbing

    def _resource(self, kind: WorkerKind) -> Any:
        if kind.kind not in self._resources:
            self._resources[kind.kind] = resource_class(
                kind.api_version, kind.kind, kind.plural, namespaced=kind.namespaced
            )
        return self._resources[kind.kind]

    async def _list(self, kind: WorkerKind, labels: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """Every object of ``kind`` (all namespaces) with ``labels``; ``[]`` when the kind is not served."""
        resource = self._resource(kind)
        scope: dict[str, Any] = {"namespace": "*"} if kind.namespaced else {}
        if labels:
            scope["labels"] = dict(labels)
        out: list[dict[str, Any]] = []
        try:
            async for obj in self._client.list(resource, chunk_size=LIST_CHUNK, **scope):
                raw = obj.to_dict() if hasattr(obj, "to_dict") else dict(obj)
                raw.setdefault("apiVersion", kind.api_version)
                raw.setdefault("kind", kind.kind)
                out.append(raw)
        except Exception as error:
            if status_code(error) == 404:
                if self._served.get(kind.kind, True):
                    logger.info("%s is not served by the API server: read as none", kind.kind)
                self._served[kind.kind] = False
                return []
            raise
        self._served[kind.kind] = True
        return out

    async def _apply(self, obj: dict[str, Any]) -> dict[str, Any]:
        from lightkube.types import PatchType

        kind = worker_kind(str(obj.get("kind")))
        if kind is None:
            raise ValueError(f"not a worker kind: {obj.get('kind')}")
        meta = obj["metadata"]
        result = await self._client.patch(
            self._resource(kind),
            meta["name"],
            obj,
            namespace=meta.get("namespace") if kind.namespaced else None,
            patch_type=PatchType.APPLY,
            field_manager=FIELD_MANAGER,
            force=True,
        )
        self._wrote("apply")
        raw = result.to_dict() if hasattr(result, "to_dict") else dict(result)
        raw.setdefault("apiVersion", obj["apiVersion"])
        raw.setdefault("kind", obj["kind"])
        return raw

    async def _delete(self, key: Key) -> None:
        kind = worker_kind(key[0]) or (MACHINE_SET if key[0] == MACHINE_SET.kind else None)
        if kind is None:
            return
        try:
            if kind.namespaced:
                await self._client.delete(self._resource(kind), key[2], namespace=key[1])
            else:
                await self._client.delete(self._resource(kind), key[2])
        except Exception as error:
            if status_code(error) != 404:
                raise
        self._wrote("delete")

    async def _annotate(self, obj: Mapping[str, Any], annotations: Mapping[str, Any]) -> None:
        from lightkube.types import PatchType

        kind = worker_kind(str(obj.get("kind")))
        if kind is None:
            return
        meta = obj.get("metadata") or {}
        await self._client.patch(
            self._resource(kind),
            meta["name"],
            {"metadata": {"annotations": dict(annotations)}},
            namespace=meta.get("namespace") if kind.namespaced else None,
            patch_type=PatchType.MERGE,
        )
        self._wrote("patch")

    async def _kairos_support(self) -> ProviderSupport | None:
        """Read the Kairos bootstrap provider's template CRD: does it take the kubeadm path?
        ``None``: it cannot be told (RBAC, an outage)."""
        from lightkube.resources.apiextensions_v1 import CustomResourceDefinition

        try:
            crd = await self._client.get(CustomResourceDefinition, KAIROS_TEMPLATE_CRD)
        except Exception as error:
            if status_code(error) == 404:
                return kairos_kubeadm(None)
            logger.warning("reading the %s CRD failed (%s)", KAIROS_TEMPLATE_CRD, short_error(error))
            return None
        raw = crd.to_dict() if hasattr(crd, "to_dict") else dict(crd)
        return kairos_kubeadm(raw)

    def _kairos_path(self, support: ProviderSupport | None = None) -> str:
        """The Kairos pools' bootstrap path (:func:`workerclass.ops.providers.kairos_path`); before
        the CRD is read, the data-secret path (the CRD is read before any Kairos pool is applied)."""
        support = support if support is not None else self._kairos
        return KAIROS_PROVIDER_PATH if support is not None and support.supported else KAIROS_DATA_SECRET_PATH

    async def _joined(self, pool: DesiredPool, secret: dict[str, Any], *, fresh: bool) -> dict[str, Any]:
        """The pool's bootstrap data Secret with its join inputs, read from the pool's own namespace
        (the parent cluster's bootstrap token and CA, the Secrets Cozystack's talos-reconcile Job
        reads): on a full resync (``fresh``: a rotation is picked up there) or when the rendered
        Secret changed; otherwise what this process filled in last. Nothing read is logged or put
        in an error."""
        from lightkube.resources.core_v1 import Secret

        key, rendered = object_key(secret), digest(secret)
        cached = self._joined_inputs.get(key)
        if not fresh and cached is not None and cached[0] == rendered:
            return cached[1]

        labels = (secret.get("metadata") or {}).get("labels") or {}
        cluster = str(labels.get("cluster.x-k8s.io/cluster-name") or "")
        values: list[bytes] = []
        for name, entry in join_input_names(cluster):
            try:
                found = await self._client.get(Secret, name, namespace=pool.namespace)
            except Exception as error:
                raise JoinInputsMissing(
                    f"the join input Secret {pool.namespace}/{name} cannot be read ({short_error(error)})"
                ) from None
            raw = found.to_dict() if hasattr(found, "to_dict") else dict(found)
            data = raw.get("data") or {}
            if not data.get(entry):
                raise JoinInputsMissing(f"the join input Secret {pool.namespace}/{name} has no key {entry}")
            try:
                values.append(base64.b64decode(data[entry], validate=True))
            except ValueError:
                raise JoinInputsMissing(f"the key {entry} of {pool.namespace}/{name} is not base64") from None
        token = values[0].decode("ascii", "replace").strip()
        try:
            joined = with_join_inputs(secret, token=token, ca_pem=values[1])
            self._joined_inputs[key] = (rendered, joined)
            return joined
        except JoinInputsInvalid as invalid:
            raise JoinInputsMissing(
                f"the join inputs of {pool.namespace}/{cluster} are not usable: {invalid}"
            ) from None

    async def _read(self, obj: Mapping[str, Any], kind: WorkerKind | None = None) -> dict[str, Any] | None:
        """The live object of ``obj``'s kind (or ``kind``), namespace and name; ``None`` when there is none."""
        kind = kind or worker_kind(str(obj.get("kind")))
        if kind is None:
            raise ValueError(f"not a worker kind: {obj.get('kind')}")
        _, namespace, name = object_key(obj)
        try:
            live = await self._client.get(self._resource(kind), name, namespace=namespace if kind.namespaced else None)
        except Exception as error:
            if status_code(error) == 404:
                return None
            raise
        return live.to_dict() if hasattr(live, "to_dict") else dict(live)

    async def _known(self, obj: Mapping[str, Any], reads: dict[Key, dict[str, Any] | None]) -> dict[str, Any] | None:
        """The live object of ``obj``: the one this process knows, else what this pass's lists found
        (:meth:`_list_unknown`), else read once per pass (``reads`` keeps what this pass read, absent
        ones included, so no object is read twice)."""
        key = object_key(obj)
        known = self._live.get(key)
        if known is not None:
            return known
        if key in self._pass_found:
            return self._pass_found[key]
        if key not in reads:
            reads[key] = await self._read(obj)
        return reads[key]

    async def _list_unknown(self, pools: list[DesiredPool]) -> None:
        """Before a pass over ``pools``: where :data:`LIST_UNKNOWN_AT` or more of their objects of one
        kind in one namespace are unknown to this process (none carries our label: a cold start, a
        namespace of new pools), one list of that kind there says which exist (the foreign-owner check
        reads them) instead of a read each: a cold start of N pools sends N x objects fewer requests.
        Secrets are never listed (the controller's RBAC lists them by our label only); a list that
        fails leaves those objects to be read one by one."""
        unknown: dict[tuple[str, str], set[str]] = {}
        for pool in pools:
            if pool.state != "ready":
                continue
            for obj in pool.objects:
                key = object_key(obj)
                if key not in self._live and key[0] not in LISTED_ONLY:
                    unknown.setdefault((key[0], key[1]), set()).add(key[2])
        found: dict[Key, dict[str, Any] | None] = {}
        for (kind_name, namespace), names in sorted(unknown.items()):
            kind = worker_kind(kind_name)
            if kind is None or len(names) < LIST_UNKNOWN_AT:
                continue
            try:
                scope: dict[str, Any] = {"namespace": namespace} if kind.namespaced else {}
                listed = {}
                async for item in self._client.list(self._resource(kind), chunk_size=LIST_CHUNK, **scope):
                    raw = item.to_dict() if hasattr(item, "to_dict") else dict(item)
                    listed[str((raw.get("metadata") or {}).get("name"))] = raw
            except asyncio.CancelledError:
                raise
            except Exception as error:
                logger.info(
                    "listing %s in %s failed (%s): reading them one by one",
                    kind.plural,
                    namespace or "the cluster",
                    short_error(error),
                )
                continue
            for name in names:
                found[(kind_name, namespace, name)] = listed.get(name)
        self._pass_found = found

    async def _talos_applied(
        self, pool: DesiredPool, objects: list[dict[str, Any]], reads: dict[Key, dict[str, Any] | None]
    ) -> list[dict[str, Any]]:
        """A Talos pool's objects with the TalosConfigTemplate named as what runs requires
        (:func:`~workerclass.render.talos_template.as_applied`). The running templates are read only
        when the decision can change: the Job is to be applied (its content is new) or the running
        MachineDeployment names another template than the render does."""
        template = pool.talos_template
        if template is None:
            return objects
        job = next((obj for obj in objects if obj.get("kind") == "Job"), None)
        deployment = next((obj for obj in objects if obj.get("kind") == "MachineDeployment"), None)
        if job is None or deployment is None:
            return objects
        live_deployment = await self._known(deployment, reads)
        running_name = configured_template([live_deployment]) if live_deployment else None
        if object_key(job) in self._live and running_name == configured_template(objects):
            return objects
        namespace = str(deployment["metadata"]["namespace"])
        stable_name = str(deployment["metadata"]["name"])
        running = await self._read_template(namespace, running_name) if running_name else None
        stable = running if running_name == stable_name else await self._read_template(namespace, stable_name)
        return as_applied(objects, template, running, stable)

    async def _read_template(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The live TalosConfigTemplate ``name`` (``None``: none, or the kind is not served)."""
        return await self._read(
            {"kind": TALOS_TEMPLATE.kind, "metadata": {"namespace": namespace, "name": name}}, TALOS_TEMPLATE
        )

    async def _release_exists(self, namespace: str, name: str) -> bool:
        from lightkube.generic_resource import create_namespaced_resource

        resource = create_namespaced_resource(
            HELM_RELEASE.group, HELM_RELEASE.version, HELM_RELEASE.kind, HELM_RELEASE.plural
        )
        try:
            await self._client.get(resource, name, namespace=namespace)
        except Exception as error:
            if status_code(error) == 404:
                return False
            raise
        return True

    def _wrote(self, verb: str) -> None:
        self.writes += 1
        if self.metrics is not None:
            self.metrics.writes.labels(verb).inc()

    # ------------------------------------------------------------------ events

    async def _event(self, pool: DesiredPool, reason: str, message: str, *, warning: bool) -> None:
        if not self._events:
            return
        if await post_event(self._client, pool, reason, message, warning=warning, component=FIELD_MANAGER):
            self._wrote("event")

    @property
    def states_version(self) -> int:
        """Bumped whenever a pool's state changes or a pool goes (:meth:`states_changed` waits for it)."""
        return self.states.published

    async def states_changed(self, after: int) -> int:
        """Wait until :attr:`states_version` passes ``after``; return it."""
        return await self.states.wait(after)

    @property
    def state_serial(self) -> int:
        """The number of pool state changes so far (:meth:`states_changed_since` takes it)."""
        return self._state_serial

    def states_changed_since(self, serial: int) -> set[str] | None:
        """The pools whose state changed or went after change number ``serial``; ``None`` when the
        journal no longer reaches back that far (the last :data:`STATE_JOURNAL` changes)."""
        if serial == self._state_serial:
            return set()
        if serial > self._state_serial or not self._state_changes or self._state_changes[0][0] > serial + 1:
            return None
        changed: set[str] = set()
        for number, identity in reversed(self._state_changes):
            if number <= serial:
                break
            changed.add(identity)
        return changed

    def pool_state(self, identity: str) -> str | None:
        """A classified pool's last state (``applied``, ``refused``...), ``None`` before its first."""
        found = self._pool_states.get(identity)
        return found[0] if found is not None else None

    @property
    def pool_states(self) -> dict[str, str]:
        """Each classified pool's last state (identity -> ``applied``, ``refused``...): a copy of every
        pool's, for tests and tools (class status reads :meth:`pool_state` by change)."""
        return {identity: state for identity, (state, _) in self._pool_states.items()}

    async def _report(self, pool: DesiredPool, state: str, message: str, *, wrote: int = 0) -> None:
        """Record the pool's state and post what :func:`~workerclass.ops.writes.plan_report` says."""
        about = involved_object(pool).get("uid", "")
        previous = self._pool_states.get(pool.identity)
        if previous is not None and self._reported_to.get(pool.identity, "") != about:
            previous = None  # another object under the pool's names (deleted and made again): told nothing yet
        self._set_state(pool.identity, (state, message), about=about)
        writes = plan_report(previous, state, message, wrote=wrote, class_name=pool.class_name)
        if writes.changed:
            self.states.bump()
        if state == "waiting-for-release" and previous != (state, message):
            logger.info("%s: %s", pool.identity, message)  # posted on the pool itself (no HelmRelease yet)
        for event in writes.events:
            if event.unless_said and await self._said(pool, event.reason, event.message):
                continue  # said before this process started (a restart writes nothing new)
            await self._event(pool, event.reason, event.message, warning=event.warning)

    async def _said(self, pool: DesiredPool, reason: str, message: str) -> bool:
        """Whether the object the pool's Events are about (:func:`involved_object`) already carries
        this Event (a read, never a write): matched on its uid where known, so an Event of an object
        deleted before under the same name does not count."""
        from lightkube.resources.core_v1 import Event

        involved = involved_object(pool)
        fields = {"involvedObject.name": involved["name"], "reason": reason}
        if involved.get("uid"):
            fields["involvedObject.uid"] = involved["uid"]
        try:
            async for event in self._client.list(Event, namespace=pool.namespace, fields=fields):
                if getattr(event, "message", None) == message[:1000]:
                    return True
        except Exception as error:  # cannot tell: say it again rather than never
            logger.debug("reading the Events of %s failed (%s)", pool.identity, short_error(error))
        return False

    # ------------------------------------------------------------------ reconcile

    async def resync_live(self) -> None:
        """Re-list every object with our label (a pass without the watches: tests and tools). The
        MachineSets are read only where a prune needs them (:meth:`_referenced`, per namespace)."""
        live: dict[Key, dict[str, Any]] = {}
        from lightkube.operators import exists

        for kind in WORKER_KINDS:
            for obj in await self._list(kind, {POOL_LABEL: exists()}):
                live[object_key(obj)] = obj
        self._live = {}
        self._by_pool = {}
        for key, obj in live.items():
            self._remember(key, obj)
        self._synced_live = True

    # ------------------------------------------------------------------ the owned-object watches

    @property
    def owned_synced(self) -> bool:
        """Whether every owned kind has been listed by its watch (always, without the watches)."""
        return not self._watching or all(
            kind.kind in self._listed_kinds or kind.kind in self._owned_errors for kind in WORKER_KINDS
        )

    async def watch_owned(self) -> None:
        """List and watch every owned kind by :data:`POOL_LABEL` until cancelled, keeping :attr:`_live`
        current: a hand-deleted or edited object wakes the loop (:attr:`live_changes`) and its pool is
        compared and repaired at once. One task per kind: a kind that fails (403, an outage) backs
        off on its own and keeps its last known objects; the others go on."""
        self._watching = True
        tasks = [
            asyncio.create_task(self._follow(kind), name=f"workerclass-owned-{kind.plural}") for kind in WORKER_KINDS
        ]
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task

    async def _follow(self, kind: WorkerKind) -> None:
        from lightkube.operators import exists

        resource = self._resource(kind)
        scope: dict[str, Any] = {"namespace": "*"} if kind.namespaced else {}
        labels = {POOL_LABEL: exists()}
        backoff = Backoff(self.settings.retry_delay, self.settings.max_retry_delay, self._rng.random)
        silent = self.settings.watch_timeout + 10.0
        while True:
            try:
                listing = self._client.list(resource, chunk_size=LIST_CHUNK, labels=labels, **scope)
                items: dict[Key, dict[str, Any]] = {}
                async for obj in listing:
                    raw = _plain(obj, kind)
                    items[object_key(raw)] = raw
                try:
                    version: str | None = listing.resourceVersion
                except Exception:
                    version = None
                self._relisted(kind, items)
                if kind.kind in LISTED_ONLY:  # no watch: listed again at every full resync's pace
                    backoff.reset()
                    await asyncio.sleep(self.settings.resync_interval)
                    continue
                while True:  # watch from the last version seen; a silent or ended watch is renewed from it
                    watch = self._client.watch(
                        resource,
                        labels=labels,
                        resource_version=version,
                        server_timeout=self.settings.watch_timeout,
                        **scope,
                    )
                    events = aiter(watch)
                    try:
                        while True:
                            try:
                                async with asyncio.timeout(silent):
                                    event, obj = await anext(events)
                            except (TimeoutError, StopAsyncIteration):
                                break
                            backoff.reset()
                            raw = _plain(obj, kind)
                            version = str((raw.get("metadata") or {}).get("resourceVersion") or version or "")
                            if event in ("ADDED", "MODIFIED", "DELETED"):
                                self._seen(object_key(raw), None if event == "DELETED" else raw)
                    finally:
                        close = getattr(events, "aclose", None)
                        if close is not None:
                            with contextlib.suppress(Exception):
                                await close()
            except asyncio.CancelledError:
                raise
            except Exception as error:
                if status_code(error) == 404:  # not served: read as none, looked at again later
                    if self._served.get(kind.kind, True):
                        logger.info("%s is not served by the API server: read as none", kind.kind)
                    self._served[kind.kind] = False
                    self._relisted(kind, {})
                else:  # 410 Gone, 403, an outage: this kind alone, listed again after a backoff
                    delay = backoff.next()
                    logger.warning(
                        "listing or watching %s failed (%s); again in %.1fs", kind.plural, short_error(error), delay
                    )
                    first = kind.kind not in self._listed_kinds and kind.kind not in self._owned_errors
                    self._owned_errors[kind.kind] = short_error(error)
                    if first:
                        self.live_changes.bump()  # the loop need not wait for this kind
                    await asyncio.sleep(delay)
                    continue
                await asyncio.sleep(backoff.next())

    def _relisted(self, kind: WorkerKind, items: Mapping[Key, dict[str, Any]]) -> None:
        """A list of one owned kind: what differs from :attr:`_live` is applied and its pools marked."""
        held = {key for key in self._live if key[0] == kind.kind}
        first = kind.kind not in self._listed_kinds
        self._owned_errors.pop(kind.kind, None)
        for key in held - items.keys():
            self._seen(key, None, quiet=first)
        for key, obj in items.items():
            self._seen(key, obj, quiet=first)
        if first:
            self._listed_kinds.add(kind.kind)
            self.live_changes.bump()  # the last kind's first list lets the loop start

    def _seen(self, key: Key, obj: dict[str, Any] | None, *, quiet: bool = False) -> None:
        """A watch saw ``key`` as ``obj`` (``None``: deleted): stored, and its pool marked to be compared."""
        held = self._live.get(key)
        if obj is None:
            if held is None:
                return
            label = _label(held)
            self._forget(key)
        else:
            if held is not None and not _newer(obj, held):
                return  # what we hold already (the answer of our own apply), or older
            label = _label(obj) or (_label(held) if held is not None else None)
            self._remember(key, obj)
        if label and not quiet and key not in self._applying:
            self._dirty.add(label)
            self.live_changes.bump()

    def _remember(self, key: Key, obj: dict[str, Any]) -> None:
        """``obj`` is the live object of ``key`` now (indexed by its pool label)."""
        self._forget(key)
        self._live[key] = obj
        label = ((obj.get("metadata") or {}).get("labels") or {}).get(POOL_LABEL)
        if label:
            self._by_pool.setdefault(str(label), set()).add(key)

    def _forget(self, key: Key) -> None:
        obj = self._live.pop(key, None)
        if obj is None:
            return
        label = ((obj.get("metadata") or {}).get("labels") or {}).get(POOL_LABEL)
        keys = self._by_pool.get(str(label)) if label else None
        if keys is not None:
            keys.discard(key)
            if not keys:
                del self._by_pool[str(label)]

    async def reconcile(self, state: State, *, full: bool = False) -> ReconcileReport:
        """One pass over every classified pool (``full``: re-list the live objects first)."""
        started = self._clock()
        if not self._watching and (full or not self._synced_live):
            await self.resync_live()
        dirty, self._dirty = self._dirty, set()
        report = ReconcileReport()
        desired = desired_workers(state, kairos_path=self._kairos_path())
        keys = {pool.key for pool in desired} | {pool_key(ns, release) for ns, release in classless_releases(state)}
        semaphore = asyncio.Semaphore(self.settings.concurrency)

        fresh = full or not self._applied

        async def one(pool: DesiredPool) -> None:
            async with semaphore:
                await self._pool(pool, report, fresh=fresh or pool.key in dirty)

        classified = {(pool.namespace, pool.release) for pool in desired}
        kairos = any(pool.bootstrap == "kairos" and pool.state == "ready" for pool in desired)
        if kairos and (full or fresh or self._kairos is None):
            before = self._kairos_path()
            support = await self._kairos_support()
            # cannot tell: the path last read stands (a guess would switch paths and roll every
            # Kairos pool); never read yet: Kairos pools wait (:meth:`_pool`)
            if support is not None and support != self._kairos:
                logger.info("Kairos pools take the %s path: %s", self._kairos_path(support), support.message or "")
            self._kairos = support if support is not None else self._kairos
            if self._kairos_path() != before:
                desired = desired_workers(state, kairos_path=self._kairos_path())
        classless = classless_releases(state)
        if full or fresh or (classified, classless) != self._scanned:
            await self._pin(state, classified, report)
            self._scanned = (classified, classless)
        await self._list_unknown(desired)
        try:
            await asyncio.gather(*(one(pool) for pool in desired))
        finally:
            self._pass_found = {}
        await self._cleanup(keys, report)
        if self._pinned_left:
            await self._left_over(classified | classless, state, report)
        self._measured(started)
        # a backoff ends with its pool's failure: gone, refused or applied pools are not retried on a timer
        for identity in [identity for identity in self._backoff if report.states.get(identity) != "failing"]:
            del self._backoff[identity]
        first = not self.settled
        gone = set(self._pool_states) - {pool.identity for pool in desired}
        for identity in gone:
            self._set_state(identity, None)
        self._desired = {pool.identity: pool for pool in desired}
        self._identity_of = {pool.key: pool.identity for pool in desired}
        self._leaving = {}
        self._classless = {
            record.identity
            for record in state.pools.values()
            if record.kind != "ComputePlane" and record.class_name is None
        }
        self.settled = True  # before the bump: a waiter woken by it reads settled
        if gone or first:
            self.states.bump()
        return report

    async def reconcile_pools(
        self, state: State, identities: set[str], *, dirty: set[str] | frozenset[str] = frozenset()
    ) -> ReconcileReport | None:
        """A pass over the pools a change touched (``identities``; ``dirty``: the pool labels whose
        live objects a watch saw change, compared afresh): each is rendered, applied and reported as
        in :meth:`reconcile`, and a classified pool that went leaves nothing behind; the others are
        not looked at, so a change costs the same whatever the number of pools. ``None``, with
        nothing done, when the change needs the whole pass: a pool that becomes or stops being
        classified, one new to this process, a release renamed (the pins' scan and the chart gate's
        check look at every release), or a Kairos pool before the provider's CRD was read."""
        if not self.settled:
            return None
        kairos_path = self._kairos_path()
        pools: list[DesiredPool] = []
        gone: list[DesiredPool] = []
        if identities & self._classless:
            return None  # a classless pool changed or went: its pins (and what it leaves) are the scan's
        for identity in sorted(identities):
            record = state.pool(identity)
            known = self._desired.get(identity)
            if record is None:
                if known is not None or identity in self._leaving:
                    gone.append(known or self._leaving[identity])
                continue
            pool = desired_pool(state, record, kairos_path=kairos_path)
            if pool is None and known is None and record.kind == "ComputePlane":
                continue  # a ComputePlane's node groups: the parent chart's, never the controller's
            if pool is None or known is None:
                return None  # classless now (its pins), or classified and new: the whole pass scans
            if (pool.namespace, pool.release) != (known.namespace, known.release):
                return None
            if pool.bootstrap == "kairos" and pool.state == "ready" and self._kairos is None:
                return None
            pools.append(pool)
        started = self._clock()
        report = ReconcileReport()
        semaphore = asyncio.Semaphore(self.settings.concurrency)

        async def one(pool: DesiredPool) -> None:
            async with semaphore:
                await self._pool(pool, report, fresh=pool.key in dirty)

        await self._list_unknown(pools)
        try:
            await asyncio.gather(*(one(pool) for pool in pools))
        finally:
            self._pass_found = {}
        for pool in pools:
            self._desired[pool.identity] = pool
            self._identity_of[pool.key] = pool.identity
            if report.states.get(pool.identity) != "failing":
                self._backoff.pop(pool.identity, None)
        bump = False
        for pool in gone:
            if self._desired.pop(pool.identity, None) is not None:
                self._identity_of.pop(pool.key, None)
                self._backoff.pop(pool.identity, None)
                self._set_state(pool.identity, None)
                bump = True
            await self._cleanup(set(), report, live={key: self._live[key] for key in self._by_pool.get(pool.key, ())})
            if self._by_pool.get(pool.key):
                self._leaving[pool.identity] = pool  # its HelmRelease is still there: its deletion comes back
            else:
                self._leaving.pop(pool.identity, None)
        if bump:
            self.states.bump()
        if self._pinned_left and self._scanned is not None:  # a release whose pool went before may be gone now
            # no pool changed classification since the whole pass's scan (else this pass declines)
            back = {release for release in self._pinned_left if any(release in seen for seen in self._scanned)}
            await self._left_over(back, state, report)
        self._measured(started)
        return report

    def _set_state(self, identity: str, value: tuple[str, str] | None, *, about: str = "") -> None:
        """A pool's reported state (``None``: the pool went) and the uid of the object it was
        reported on (``about``), with the count per state kept."""
        previous = self._pool_states.pop(identity, None)
        self._reported_to.pop(identity, None)
        if (previous[0] if previous is not None else None) != (value[0] if value is not None else None):
            self._state_serial += 1
            self._state_changes.append((self._state_serial, identity))
        if previous is not None:
            self._counts[previous[0]] -= 1
        if value is not None:
            self._pool_states[identity] = value
            self._reported_to[identity] = about
            self._counts[value[0]] = self._counts.get(value[0], 0) + 1

    def _measured(self, started: float) -> None:
        if self.metrics is None:
            return
        for state_name in (
            "applied",
            "waiting-for-rollout",
            "refused",
            "not-resolvable",
            "waiting-for-release",
            "failing",
        ):
            self.metrics.pools.labels(state_name).set(self._counts.get(state_name, 0))
        self.metrics.reconcile_seconds.observe(self._clock() - started)

    async def _pool(self, pool: DesiredPool, report: ReconcileReport, *, fresh: bool) -> None:
        """One pool's pass: :func:`~workerclass.ops.writes.gate_pool` (written at all?), its reads
        (:meth:`_reads`), :func:`~workerclass.ops.writes.decide_pool` (refused, failing, or its
        writes), the writes sent, :func:`~workerclass.ops.writes.pool_outcome` and its report.
        ``fresh``: the live objects were just listed or seen changed, so they are compared (a drift
        is repaired); otherwise what this process applied last is (no request at all)."""
        backoff = self._backoff.get(pool.identity)
        gate = gate_pool(
            pool,
            ungated=self._ungated,
            kairos_known=self._kairos is not None,
            listed=self._listed_kinds if self._watching else None,
            list_errors=self._owned_errors,
            backing_off=backoff is not None and self._clock() < backoff.until,
        )
        if gate is not None:
            report.states[pool.identity] = gate.state
            if gate.message is not None:
                await self._report(pool, gate.state, gate.message)
            return
        wrote = 0
        try:
            reads = await self._reads(pool, fresh=fresh)
            decision = decide_pool(pool, reads, self._applied, manager=FIELD_MANAGER, fresh=fresh)
            if decision.state == "refused":
                report.states[pool.identity] = "refused"
                if self.metrics is not None:
                    self.metrics.apply_errors.labels("foreign").inc()
                await self._report(pool, "refused", decision.message)
                return
            if decision.state is not None:  # failing: its join inputs cannot be used
                await self._failed(pool, report, backoff, decision.message)
                return
            writes = decision.writes
            self._applied.update(writes.settled)
            for item in writes.apply:
                if item.key in reads.pool_live:
                    logger.info("%s %s/%s: %s; applying", *item.key, item.reason)
                self._applying.add(item.key)
                try:
                    answer = await self._apply(item.obj)
                finally:
                    self._applying.discard(item.key)
                held = self._live.get(item.key)
                if held is None or _newer(answer, held):  # a watch may have brought it first
                    self._remember(item.key, answer)
                self._applied[item.key] = item.digest
                wrote += 1
            for key in writes.prune:
                await self._delete(key)
                self._forget(key)
                self._applied.pop(key, None)
                self._joined_inputs.pop(key, None)
                report.deleted += 1
        except asyncio.CancelledError:
            raise
        except Exception as error:
            await self._failed(
                pool, report, backoff, f"applying the pool's objects failed ({short_error(error)}): retrying"
            )
            return
        self._backoff.pop(pool.identity, None)
        report.applied += wrote
        state, message = pool_outcome(reads.objects, self._live)
        report.states[pool.identity] = state
        await self._report(pool, state, message, wrote=wrote)

    async def _reads(self, pool: DesiredPool, *, fresh: bool) -> PoolReads:
        """What :func:`~workerclass.ops.writes.decide_pool` decides a pool's pass from: its objects
        as they are to be applied (a template a hash-rule bump would rename keeps its running name,
        :func:`~workerclass.render.hash.keep_running`; the TalosConfigTemplate named as what runs
        requires; the bootstrap data Secret with its join inputs, read only when no object of the
        pool belongs to someone else), the live object of each key (known, or read once), and the
        MachineSets' templates where a prune needs them (read now: one made a moment ago counts)."""
        running = [self._live[key] for key in sorted(self._by_pool.get(pool.key, ()))]
        objects = keep_running(list(pool.objects), running) if running else list(pool.objects)
        reads: dict[Key, dict[str, Any] | None] = {}  # what this pass read of the pool's objects
        objects = await self._talos_applied(pool, objects, reads)
        seen = {object_key(obj): await self._known(obj, reads) for obj in objects}
        pool_live = {key: self._live[key] for key in self._by_pool.get(pool.key, ())}
        if taken_by(pool, objects, seen) is not None:
            return PoolReads(tuple(objects), pool_live, seen)
        try:
            objects = [
                await self._joined(pool, obj, fresh=fresh) if is_bootstrap_secret(obj) else obj for obj in objects
            ]
        except JoinInputsMissing as missing:  # names Secrets and keys only, never what they hold
            return PoolReads(tuple(objects), pool_live, seen, join_failure=str(missing))
        referenced = await self._referenced(pool.namespace) if needs_references(objects, pool_live) else set()
        return PoolReads(tuple(objects), pool_live, seen, referenced=frozenset(referenced))

    async def _failed(self, pool: DesiredPool, report: ReconcileReport, backoff: _Backoff | None, message: str) -> None:
        """A pool whose pass failed: failing with ``message``, retried after a growing, jittered delay."""
        report.errors += 1
        failures = (backoff.failures if backoff else 0) + 1
        delay = min(self.settings.max_retry_delay, self.settings.retry_delay * 2 ** (failures - 1))
        self._backoff[pool.identity] = _Backoff(failures, self._clock() + self._rng.uniform(0, delay))
        if self.metrics is not None:
            self.metrics.apply_errors.labels("pool").inc()
        logger.warning("%s: %s", pool.identity, message)
        report.states[pool.identity] = "failing"
        await self._report(pool, "failing", message)

    async def _referenced(self, namespace: str) -> set[str]:
        """The template names the MachineSets of ``namespace`` reference, read now."""
        resource = self._resource(MACHINE_SET)
        names: set[str] = set()
        async for machine_set in self._client.list(resource, namespace=namespace, chunk_size=LIST_CHUNK):
            raw = machine_set.to_dict() if hasattr(machine_set, "to_dict") else dict(machine_set)
            names |= template_refs(raw)
        return names

    async def _pin(self, state: State, classified: set[tuple[str, str]], report: ReconcileReport) -> None:
        """One look at every Helm-made worker object (:func:`~workerclass.ops.writes.plan_pins`): pin
        those of classless pools (not pinned yet), find classified pools whose release Helm still
        renders worker objects for (their chart lacks the gate), and what we pinned for a pool that
        went (:meth:`_left_over` deletes it once its release is gone)."""
        helm_made: list[dict[str, Any]] = []
        complete = True
        for kind in WORKER_KINDS:
            if kind.kind in NOT_CHART_KINDS:
                continue
            try:
                helm_made += await self._list(kind, {HELM_MANAGED[0]: HELM_MANAGED[1]})
            except asyncio.CancelledError:
                raise
            except Exception as error:  # this kind alone: what was found before stays so
                report.errors += 1
                logger.warning("listing Helm-made %s failed (%s)", kind.plural, short_error(error))
                complete = False
        pins = plan_pins(
            helm_made,
            classless=classless_releases(state),
            classified=classified,
            complete=complete,
            previous_ungated=self._ungated,
            previous_left=self._pinned_left,
        )
        for obj in pins.pin:
            try:
                await self._annotate(obj, pin_annotations())
                report.pinned += 1
            except Exception as error:
                report.errors += 1
                logger.warning("pinning %s %s failed (%s)", obj.get("kind"), object_key(obj)[1:], short_error(error))
        for where in sorted(pins.ungated - self._ungated):
            logger.warning("%s/%s: %s", where[0], where[1], CHART_NOT_GATED)
        self._ungated = set(pins.ungated)
        self._pinned_left = pins.left

    async def _left_over(self, known: set[tuple[str, str]], state: State, report: ReconcileReport) -> None:
        """Delete the Helm-made objects this controller pinned for a classless pool that went (the
        release no pool's any more), once the HelmRelease that made them is absent from the cache
        and confirmed absent by a fresh read (:func:`~workerclass.ops.writes.plan_left_over`): a
        release that went without Helm's uninstall deleting them leaves them pinned, with their
        machines. A pool that comes back under the release keeps them pinned for its handoff."""
        releases = {(key[1], key[2]) for key in state.records if key[0] == HELM_RELEASE.kind}
        back, due = plan_left_over(self._pinned_left, known=known, helm_releases=releases)
        for release in back:
            del self._pinned_left[release]
        for group in due:
            try:
                if any([await self._release_exists(group.release[0], owner) for owner in group.owners]):
                    continue  # the cache lags
                for key in group.keys:
                    await self._delete(key)
                    report.deleted += 1
                del self._pinned_left[group.release]
            except asyncio.CancelledError:
                raise
            except Exception as error:
                report.errors += 1
                logger.warning("deleting what %s/%s left pinned failed (%s)", *group.release, short_error(error))

    async def _cleanup(
        self, keys: set[str], report: ReconcileReport, *, live: Mapping[Key, dict[str, Any]] | None = None
    ) -> None:
        """Delete what pools that are gone left behind (:func:`~workerclass.ops.writes.plan_cleanup`
        over ``live``, by default every object we hold), once their HelmRelease is confirmed absent
        by a fresh read."""
        for group in plan_cleanup(self._live if live is None else live, keys):
            try:
                if any([await self._release_exists(group.namespace, owner) for owner in group.owners]):
                    continue  # the cache lags: the pool's release is still there
                for key in group.keys:
                    await self._delete(key)
                    self._forget(key)
                    self._applied.pop(key, None)
                    self._joined_inputs.pop(key, None)
                    report.deleted += 1
            except asyncio.CancelledError:
                raise
            except Exception as error:
                report.errors += 1
                logger.warning(
                    "cleaning up after %s/%s failed (%s)", group.namespace, group.release, short_error(error)
                )

    # ------------------------------------------------------------------ the loop

    async def run(self, source: Any, *, stop: asyncio.Event | None = None) -> None:
        """Reconcile on every new State of ``source`` (a cluster cache: ``state``, ``published`` and
        ``changed``), on every change the owned-object watches see (:meth:`watch_owned`, run
        beside), fully every ``resync_interval``, and when a failing pool's backoff ends.

        Between those it waits on the cache's and the watches' change notifications: a quiet
        cluster wakes it only for the full resync, and a change is acted on as soon as it is
        announced (within the cache's debounce, which gathers a burst of events into one
        reconcile). Nothing runs before the first State and every owned kind's first list."""
        stop = stop or asyncio.Event()
        self._watching = True  # from now on the watches keep the live objects: no pass before their lists
        watches = asyncio.create_task(self.watch_owned(), name="workerclass-owned")
        try:
            await self._loop(source, stop)
        finally:
            watches.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watches

    async def _reconcile_changed(self, source: Any, state: State, now: float) -> bool:
        """The pass per change (:meth:`reconcile_pools`) over the pools the cache's changes since the
        last pass touched (a pool's own object or its HelmRelease), whose owned objects a watch saw
        change, or whose backoff ended; ``False`` (nothing done) where the whole pass is needed:
        the cache cannot say what changed, or a change reaches beyond single pools (a class, the
        platform, a parent cluster, the chart), or :meth:`reconcile_pools` declines."""
        since = getattr(source, "changed_since", None)
        if since is None or self._read_version is None or not self.settled:
            return False
        changed = since(self._read_version)
        if changed is None:
            logger.debug("the whole pass: the cache cannot tell what changed since %s", self._read_version)
            return False
        identities: set[str] = set()
        for kind, namespace, name in changed:
            if kind == "KubernetesNodes":
                identities.add(f"{namespace}/{name}")
            elif kind == HELM_RELEASE.kind:  # a direct pool itself, or a KubernetesNodes' backing release
                identities.add(f"{namespace}/{name}")
                if name.startswith(RELEASE_PREFIX):
                    identities.add(f"{namespace}/{name.removeprefix(RELEASE_PREFIX)}")
            else:
                logger.debug("the whole pass: %s %s/%s changed", kind, namespace, name)
                return False
        # a label no pool has and no object carries any more: its last objects went (a cleanup's echo)
        self._dirty = {label for label in self._dirty if label in self._identity_of or label in self._by_pool}
        if any(label not in self._identity_of for label in self._dirty):
            logger.debug("the whole pass: objects of a pool this process does not know changed")
            return False  # objects of a pool this process does not know: what a gone pool left
        dirty = set(self._dirty)
        identities |= {self._identity_of[label] for label in dirty}
        identities |= {identity for identity, backoff in self._backoff.items() if backoff.until <= now}
        self._dirty -= dirty
        report = await self.reconcile_pools(state, identities, dirty=dirty)
        if report is None:
            logger.debug("the whole pass: a change of %s reaches beyond its pools", sorted(identities))
            self._dirty |= dirty  # the whole pass compares them
            return False
        return True

    async def _loop(self, source: Any, stop: asyncio.Event) -> None:
        seen = -1  # the cache's announced generation the last reconcile ran on
        live_seen = -1  # the owned objects' change the last reconcile ran on
        last_full = -float("inf")
        while not stop.is_set():
            generation = source.published
            live = self.live_changes.published
            version = getattr(source, "generation", None)  # read with the State: no await between
            state = source.state
            now = self._clock()
            full = now - last_full >= self.settings.resync_interval
            retry = any(backoff.until <= now for backoff in self._backoff.values())
            ready = state is not None and self.owned_synced
            if ready and state is not None and (generation != seen or full or retry or live != live_seen):
                try:
                    if full or not await self._reconcile_changed(source, state, now):
                        await self.reconcile(state, full=full)
                    if full:
                        last_full = now
                    seen, live_seen = generation, live
                    self._read_version = version if isinstance(version, int) else None
                except asyncio.CancelledError:
                    raise
                except Exception as error:  # the lists failed: retry after a pause
                    logger.warning("reconciling the worker pools failed (%s)", short_error(error), exc_info=True)
                    await _sleep(stop, self._rng.uniform(0.5, 1.5) * self.settings.retry_delay * 5)
                    continue
            timeout: float | None = None  # before the first State (and the owned kinds' lists) nothing is due
            if ready:
                due = [last_full + self.settings.resync_interval, *(b.until for b in self._backoff.values())]
                timeout = max(0.0, min(due) - self._clock())
            await wait_first(stop, source.changed(generation), self.live_changes.wait(live), timeout=timeout)


async def wait_first(stop: asyncio.Event, *waits: Awaitable[Any], timeout: float | None = None) -> None:
    """Wait for the first of ``waits`` to finish, ``stop`` to be set, or ``timeout`` seconds; cancel the rest."""
    tasks = [asyncio.ensure_future(wait) for wait in (stop.wait(), *waits)]
    try:
        await asyncio.wait(tasks, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def _sleep(stop: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), timeout=seconds)
