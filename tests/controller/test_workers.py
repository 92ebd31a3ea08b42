"""The worker controller's reconcile against an in-memory API (the e2e tier runs it against a real API
server with Cluster API): what it applies, what it refuses, what a restart sends, what it keeps.

The fake client stores objects by kind, namespace and name; a server-side apply stores the body (the
real server merges) with the field manager's ``managedFields`` entry as a server writes it (maps as
``f:`` keys, every list atomic; tests/e2e/test_workers.py shows removal on a real API server), a
merge patch merges annotations. Every write is counted, so "nothing is sent" is an assertion on the
client's own record.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import json
from collections.abc import AsyncIterator, Iterable, Mapping
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("lightkube")

from tests.builders import (
    CERTIFICATE,
    KAIROS_FIXED,
    NAMESPACE,
    SSH_KEY,
    TALOS_EXAMPLE,
    make_class,
    make_pool,
    make_state,
)
from tests.kairos_join import TOKEN, ca_certificate, join_input_secrets, kubeadm_hash
from workerclass.controller.workers import FIELD_MANAGER, WorkerController
from workerclass.ops.providers import KAIROS_TEMPLATE_CRD
from workerclass.ops.workers import PINNED_ANNOTATION, POOL_ANNOTATION, POOL_LABEL, pool_key
from workerclass.render.hash import HASH_VERSION_ANNOTATION, TEMPLATE_HASH_ANNOTATION

#: Talos pools render the talos-reconcile Job from the chart's own text: the mirror's gated main chart
pytestmark = [pytest.mark.asyncio, pytest.mark.usefixtures("chart_text")]

Key = tuple[str, str, str]


class NotFound(Exception):
    status = SimpleNamespace(code=404, reason="NotFound")


class Forbidden(Exception):
    status = SimpleNamespace(code=403, reason="Forbidden")


def _kind(resource: Any) -> str:
    return str(resource._api_info.resource.kind)


class Stored(dict[str, Any]):
    def to_dict(self) -> dict[str, Any]:
        return copy.deepcopy(dict(self))


class FakeClient:
    """The slice of ``lightkube.AsyncClient`` the worker controller uses, in memory."""

    def __init__(self, objects: Iterable[Mapping[str, Any]] = ()) -> None:
        self.objects: dict[Key, dict[str, Any]] = {}
        self.writes: list[tuple[str, Key]] = []
        #: the kinds listed, in order (with the namespace asked for)
        self.lists: list[tuple[str, str | None]] = []
        #: the kinds listed with the label keys asked for
        self.labels: list[tuple[str, tuple[str, ...]]] = []
        #: the open watches: their kind and the queue their events go to
        self.watchers: list[tuple[str, asyncio.Queue[tuple[str, Any]]]] = []
        #: kinds whose list and watch are refused (403)
        self.forbidden: set[str] = set()
        self.version = 0
        #: the Events posted, as sent
        self.events: list[dict[str, Any]] = []
        for obj in objects:
            self.put(obj)

    def _stored(self, key: Key, obj: Mapping[str, Any]) -> dict[str, Any]:
        """``obj`` stored under ``key`` with a new resourceVersion; its watchers told."""
        self.version += 1
        stored = copy.deepcopy(dict(obj))
        stored.setdefault("metadata", {})["resourceVersion"] = str(self.version)
        event = "MODIFIED" if key in self.objects else "ADDED"
        self.objects[key] = stored
        self._notify(key[0], event, stored)
        return stored

    def _notify(self, kind: str, event: str, obj: Mapping[str, Any]) -> None:
        for watched, queue in self.watchers:
            if watched == kind:
                queue.put_nowait((event, Stored(copy.deepcopy(dict(obj)))))

    async def watch(self, resource: Any, *, labels: Any = None, **_: Any) -> AsyncIterator[tuple[str, Any]]:
        kind = _kind(resource)
        if kind in self.forbidden:
            raise Forbidden(kind)
        queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        entry = (kind, queue)
        self.watchers.append(entry)
        try:
            while True:
                event, obj = await queue.get()
                have = (obj.get("metadata") or {}).get("labels") or {}
                if not labels or all(key in have for key in labels):
                    yield event, obj
        finally:
            self.watchers.remove(entry)

    @staticmethod
    def key(obj: Mapping[str, Any]) -> Key:
        meta = obj.get("metadata") or {}
        return str(obj["kind"]), str(meta.get("namespace") or ""), str(meta["name"])

    def put(self, obj: Mapping[str, Any]) -> None:
        """An object as given (no resourceVersion: what a test compares it with later)."""
        key = self.key(obj)
        event = "MODIFIED" if key in self.objects else "ADDED"
        self.objects[key] = copy.deepcopy(dict(obj))
        self._notify(key[0], event, obj)

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [obj for key, obj in sorted(self.objects.items()) if key[0] == kind]

    async def list(
        self, resource: Any, *, namespace: str | None = None, labels: Any = None, **_: Any
    ) -> AsyncIterator[Any]:
        kind = _kind(resource)
        self.lists.append((kind, namespace))
        self.labels.append((kind, tuple(labels or ())))
        if kind in self.forbidden:
            raise Forbidden(kind)
        for (found, where, _name), obj in sorted(self.objects.items()):
            if found != kind or (namespace not in (None, "*") and where != namespace):
                continue
            have = (obj.get("metadata") or {}).get("labels") or {}
            if labels and not all(
                (key in have) if not isinstance(value, str) else have.get(key) == value for key, value in labels.items()
            ):
                continue
            yield Stored(copy.deepcopy(obj))

    async def get(self, resource: Any, name: str, *, namespace: str | None = None) -> Any:
        kind = _kind(resource)
        if kind == "CustomResourceDefinition":
            found = self.objects.get((kind, "", name))
        else:
            found = self.objects.get((kind, namespace or "", name))
        if found is None:
            raise NotFound(name)
        return Stored(copy.deepcopy(found))

    async def patch(self, resource: Any, name: str, obj: Any, *, namespace: str | None = None, **options: Any) -> Any:
        kind = _kind(resource)
        key = (kind, namespace or "", name)
        if options.get("patch_type") is not None and str(options["patch_type"]).endswith("MERGE"):
            current = copy.deepcopy(self.objects[key])
            current["metadata"].setdefault("annotations", {}).update(obj["metadata"]["annotations"])
            self.writes.append(("patch", key))
            return Stored(self._stored(key, current))
        assert options.get("field_manager") == FIELD_MANAGER and options.get("force") is True
        stored = copy.deepcopy(dict(obj))
        stored["metadata"]["managedFields"] = [applied_fields(obj)]
        self.writes.append(("apply", key))
        return Stored(copy.deepcopy(self._stored(key, stored)))

    async def delete(self, resource: Any, name: str, *, namespace: str | None = None) -> None:
        key = (_kind(resource), namespace or "", name)
        if key not in self.objects:
            raise NotFound(name)
        gone = self.objects.pop(key)
        self.writes.append(("delete", key))
        self._notify(key[0], "DELETED", gone)

    async def create(self, obj: Any) -> Any:
        self.writes.append(("create", ("Event", getattr(obj.metadata, "namespace", ""), str(obj.reason))))
        self.events.append(obj.to_dict())
        return obj


def fields_v1(value: Any) -> dict[str, Any]:
    """The ``fieldsV1`` tree of an applied value (maps as ``f:`` keys; lists atomic)."""
    if isinstance(value, Mapping) and value:
        return {".": {}, **{f"f:{key}": fields_v1(item) for key, item in value.items()}}
    return {}


def applied_fields(obj: Mapping[str, Any], manager: str = FIELD_MANAGER) -> dict[str, Any]:
    """The ``managedFields`` entry a server writes for ``manager``'s apply of ``obj``."""
    body = {key: value for key, value in obj.items() if key not in ("apiVersion", "kind")}
    metadata = {key: value for key, value in body.get("metadata", {}).items() if key not in ("name", "namespace")}
    body["metadata"] = metadata
    tree = {key: value for key, value in fields_v1(body).items() if key != "."}
    return {"manager": manager, "operation": "Apply", "fieldsType": "FieldsV1", "fieldsV1": tree}


def release_of(pool: Mapping[str, Any]) -> dict[str, Any]:
    """The HelmRelease Cozystack's API keeps a KubernetesNodes as (values = the spec), with a uid."""
    name = f"kubernetes-nodes-{pool['metadata']['name']}"
    return {
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "uid": f"uid-{name}",
            "labels": {"apps.cozystack.io/application.kind": "KubernetesNodes"},
        },
        "spec": {"values": copy.deepcopy(pool["spec"])},
    }


def kairos_crd(*distributions: str) -> dict[str, Any]:
    distribution = {"type": "string", "enum": list(distributions)}
    template = {
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {"distribution": distribution}}},
    }
    schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": {"template": template}}}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": KAIROS_TEMPLATE_CRD},
        "spec": {"versions": [{"name": "v1beta2", "served": True, "schema": {"openAPIV3Schema": schema}}]},
    }


KAIROS = make_pool("kairos", workerClassName="kairos", sshKeys=[SSH_KEY], version="v1.35")
TALOS = make_pool("talos", workerClassName="talos")


def state_of(*pools: Mapping[str, Any]) -> Any:
    return make_state([obj for pool in pools for obj in (pool, release_of(pool))])


def applied(client: FakeClient) -> list[Key]:
    return [key for verb, key in client.writes if verb == "apply"]


def joined(client: FakeClient, namespace: str = NAMESPACE) -> str:
    """The cloud-config the controller applied for the Kairos pool (its one bootstrap Secret)."""
    (secret,) = [obj for obj in client.of("Secret") if obj.get("type") == "cluster.x-k8s.io/secret"]
    assert "stringData" not in secret
    return base64.b64decode(secret["data"]["value"]).decode()


async def test_kairos_pools_take_the_data_secret_path_until_a_provider_takes_kubeadm() -> None:
    client = FakeClient([kairos_crd("k0s", "k3s"), *join_input_secrets(NAMESPACE, "example")])
    controller = WorkerController(client, events=False)
    report = await controller.reconcile(state_of(KAIROS, TALOS), full=True)
    assert report.states == {"tenant-example/example-kairos": "applied", "tenant-example/example-talos": "applied"}
    kinds = {key[0] for key in applied(client) if "example-kairos" in key[2]}
    assert {"Secret", "KubevirtMachineTemplate", "MachineDeployment"} <= kinds and "KairosConfigTemplate" not in kinds
    machine = client.of("MachineDeployment")[0]["spec"]["template"]["spec"]
    (secret,) = [obj for obj in client.of("Secret") if obj.get("type") == "cluster.x-k8s.io/secret"]
    assert machine["bootstrap"] == {"dataSecretName": secret["metadata"]["name"]}
    assert secret["metadata"]["labels"][POOL_LABEL] == pool_key(NAMESPACE, "kubernetes-nodes-example-kairos")
    assert secret["metadata"]["ownerReferences"][0]["uid"] == "uid-kubernetes-nodes-example-kairos"
    text = joined(client)
    assert TOKEN in text and kubeadm_hash(ca_certificate()) in text

    client.put(kairos_crd("k0s", "k3s", "kubeadm"))  # a provider with the kubeadm path: the next full resync
    report = await controller.reconcile(state_of(KAIROS, TALOS), full=True)
    assert report.states["tenant-example/example-kairos"] == "applied"
    machine = next(obj for obj in client.of("MachineDeployment") if "kairos" in obj["metadata"]["name"])
    assert machine["spec"]["template"]["spec"]["bootstrap"]["configRef"]["kind"] == "KairosConfigTemplate"
    # no MachineSet builds from the bootstrap Secret any more: pruned with the rest of the old path
    assert [obj for obj in client.of("Secret") if obj.get("type") == "cluster.x-k8s.io/secret"] == []


async def test_a_cluster_without_the_provider_applies_kairos_pools_with_their_join_inputs() -> None:
    client = FakeClient(join_input_secrets(NAMESPACE, "example"))
    controller = WorkerController(client, events=False)
    report = await controller.reconcile(state_of(KAIROS), full=True)
    assert report.states == {"tenant-example/example-kairos": "applied"}
    text = joined(client)
    assert f'token: "{TOKEN}"' in text or f"token: {TOKEN}" in text
    assert "${BOOTSTRAP_TOKEN}" not in text and "${CA_CERT_HASH}" not in text
    assert "unsafeSkipCAVerification: false" in text
    before = len(client.writes)
    report = await WorkerController(client, events=False).reconcile(state_of(KAIROS), full=True)
    assert client.writes[before:] == [] and report.applied == 0  # a restart re-reads and sends nothing


async def test_a_kairos_pool_waits_for_its_join_inputs_and_says_which(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    client = FakeClient([join_input_secrets(NAMESPACE, "example")[0]])  # the CA Secret is not there yet
    controller = WorkerController(client, events=False, clock=lambda: now[0])
    report = await controller.reconcile(state_of(KAIROS), full=True)
    assert report.states == {"tenant-example/example-kairos": "failing"}
    assert applied(client) == []  # nothing of the pool half-written
    message = controller._pool_states["tenant-example/example-kairos"][1]
    assert "kubernetes-example-ca" in message and "cannot be read" in message
    for secret in join_input_secrets(NAMESPACE, "example"):
        client.put(secret)
    now[0] = 3600.0  # past the backoff
    report = await controller.reconcile(state_of(KAIROS), full=True)
    assert report.states == {"tenant-example/example-kairos": "applied"}
    assert TOKEN in joined(client)
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert TOKEN not in logged and "not-for-print" not in logged


async def test_join_inputs_that_are_not_usable_are_refused_without_quoting_them() -> None:
    secrets = join_input_secrets(NAMESPACE, "example", token="not a token", ca=b"junk-ca-bytes")
    client = FakeClient(secrets)
    controller = WorkerController(client, events=False)
    report = await controller.reconcile(state_of(KAIROS), full=True)
    assert report.states == {"tenant-example/example-kairos": "failing"}
    message = controller._pool_states["tenant-example/example-kairos"][1]
    assert "not a kubeadm bootstrap token" in message
    assert "not a token" not in message.replace("not a kubeadm", "")
    assert applied(client) == []


async def test_the_join_inputs_are_read_on_a_full_resync_and_when_the_secret_changes() -> None:
    """Not on every pass: a change elsewhere reconciles the pool from what was filled in last; a
    full resync reads them again (a rotated token reaches the Secret there)."""
    reads: list[str] = []

    class Counting(FakeClient):
        async def get(self, resource: Any, name: str, *, namespace: str | None = None) -> Any:
            if _kind(resource) == "Secret" and not name.startswith("kubernetes-example-kairos-"):
                reads.append(name)  # the join inputs (the bootstrap Secret itself is read once for its owner)
            return await super().get(resource, name, namespace=namespace)

    client = Counting(join_input_secrets(NAMESPACE, "example"))
    controller = WorkerController(client, events=False)
    await controller.reconcile(state_of(KAIROS), full=True)
    assert reads == ["kubernetes-example-talos-secrets", "kubernetes-example-ca"]
    await controller.reconcile(state_of(KAIROS))
    assert len(reads) == 2  # nothing read, nothing written
    rotated = "0a1b2c.0123456789abcdef"
    client.put(join_input_secrets(NAMESPACE, "example", token=rotated)[0])
    await controller.reconcile(state_of(KAIROS), full=True)
    assert len(reads) == 4 and rotated in joined(client) and TOKEN not in joined(client)
    keyed = make_pool("kairos", workerClassName="kairos", sshKeys=[], version="v1.35")
    await controller.reconcile(state_of(keyed))  # another bootstrap: read again, a new Secret
    assert len(reads) == 6


async def test_a_crd_that_cannot_be_read_switches_no_path_and_rolls_nothing() -> None:
    """The provider's CRD unreadable (RBAC, an outage): before it was ever read, Kairos pools wait;
    after, the path last read stands, so a transient error never moves running pools to the
    other path (which would replace every Kairos worker)."""
    refuse = [True]

    class Flaky(FakeClient):
        async def get(self, resource: Any, name: str, *, namespace: str | None = None) -> Any:
            if _kind(resource) == "CustomResourceDefinition" and refuse[0]:
                raise Forbidden(name)
            return await super().get(resource, name, namespace=namespace)

    client = Flaky([kairos_crd("kubeadm"), *join_input_secrets(NAMESPACE, "example")])
    controller = WorkerController(client, events=False)
    report = await controller.reconcile(state_of(KAIROS), full=True)
    assert report.states == {"tenant-example/example-kairos": "failing"} and applied(client) == []
    assert "could not be read" in controller._pool_states["tenant-example/example-kairos"][1]
    refuse[0] = False
    report = await controller.reconcile(state_of(KAIROS), full=True)
    assert report.states == {"tenant-example/example-kairos": "applied"}
    assert client.of("KairosConfigTemplate")  # the provider path
    before = len(client.writes)
    refuse[0] = True
    report = await controller.reconcile(state_of(KAIROS), full=True)
    assert report.states == {"tenant-example/example-kairos": "applied"}
    assert client.writes[before:] == []  # still the provider path: nothing renamed, nothing rolled


async def test_a_tenant_pool_reads_the_join_inputs_of_its_own_namespace_only() -> None:
    """Another tenant's cluster of the same name: its Secrets are never read for this pool."""
    other = "tenant-other"
    client = FakeClient(join_input_secrets(other, "example", token="abcdef.0123456789abcdef"))
    controller = WorkerController(client, events=False)
    report = await controller.reconcile(state_of(KAIROS), full=True)
    assert report.states == {"tenant-example/example-kairos": "failing"}
    assert [obj for obj in client.of("Secret") if obj.get("type") == "cluster.x-k8s.io/secret"] == []


async def test_a_restart_sends_nothing_for_pools_already_applied() -> None:
    client = FakeClient([kairos_crd("kubeadm")])
    state = state_of(KAIROS, TALOS)
    await WorkerController(client, events=False).reconcile(state, full=True)
    before = len(client.writes)
    report = await WorkerController(client, events=False).reconcile(state, full=True)
    assert client.writes[before:] == [] and report.applied == 0
    assert set(report.states.values()) == {"applied"}


async def test_a_template_named_under_an_older_hash_rule_keeps_running() -> None:
    """A bump of the hash rule must rename nothing that runs: the running Kairos templates (named and
    stamped under another rule) are kept, name and spec, and re-stamped; nothing new is named."""
    client = FakeClient([kairos_crd("kubeadm")])
    state = state_of(KAIROS)
    await WorkerController(client, events=False).reconcile(state, full=True)
    deployment = client.of("MachineDeployment")[0]
    machine = deployment["spec"]["template"]["spec"]
    # what an older workerclass would have left running: the same pool under other template names
    references = (
        ("KubevirtMachineTemplate", machine["infrastructureRef"]),
        ("KairosConfigTemplate", machine["bootstrap"]["configRef"]),
    )
    for kind, ref in references:
        current = client.objects.pop((kind, NAMESPACE, ref["name"]))
        old_name = ref["name"].rsplit("-", 1)[0] + "-0ld0ld"
        current["metadata"]["name"] = old_name
        current["metadata"]["annotations"][HASH_VERSION_ANNOTATION] = "v1"
        current["metadata"]["annotations"][TEMPLATE_HASH_ANNOTATION] = "0ld0ld"
        client.put(current)
        ref["name"] = old_name
    client.put(deployment)
    before = len(client.writes)
    await WorkerController(client, events=False).reconcile(state, full=True)
    names = {
        obj["metadata"]["name"] for obj in client.of("KubevirtMachineTemplate") + client.of("KairosConfigTemplate")
    }
    assert all(name.endswith("-0ld0ld") for name in names), names  # nothing renamed, nothing new
    running = client.of("MachineDeployment")[0]["spec"]["template"]["spec"]
    assert running["infrastructureRef"]["name"].endswith("-0ld0ld")
    stamped = client.of("KairosConfigTemplate")[0]["metadata"]["annotations"]
    assert stamped[HASH_VERSION_ANNOTATION] != "v1"  # re-stamped with the current rule
    assert ("delete", ("KubevirtMachineTemplate", NAMESPACE, next(iter(names)))) not in client.writes[before:]


async def test_a_pool_prunes_only_its_own_objects() -> None:
    other = make_pool("other", workerClassName="talos")
    client = FakeClient([release_of(TALOS), release_of(other)])
    state = state_of(TALOS)
    controller = WorkerController(client, events=False)
    await controller.reconcile(state, full=True)
    stranger = copy.deepcopy(client.of("ServiceAccount")[0])  # an object of another pool, whose release lives
    stranger["metadata"]["name"] = "someone-else"
    stranger["metadata"]["labels"][POOL_LABEL] = pool_key(NAMESPACE, "kubernetes-nodes-example-other")
    stranger["metadata"]["annotations"][POOL_ANNOTATION] = f"{NAMESPACE}/kubernetes-nodes-example-other"
    client.put(stranger)
    resized = make_pool("talos", workerClassName="talos", instanceType="", resources={"cpu": "4", "memory": "8Gi"})
    await controller.reconcile(state_of(resized), full=True)
    await asyncio.sleep(0)
    assert ("ServiceAccount", NAMESPACE, "someone-else") in client.objects
    templates = client.of("KubevirtMachineTemplate")
    assert len(templates) == 1  # the old one went: no MachineSet referenced it


async def test_the_class_status_waits_for_the_first_reconcile() -> None:
    """Before its first reconcile the worker controller knows no pool's state: the class status
    (WorkersApplied) is not written then, so a restart does not write Pending and then take it back;
    the reconcile's end wakes the class status (no poll)."""
    from tests.controller.test_controller import Source
    from workerclass.controller import ClassController, ControllerSettings

    client = FakeClient([kairos_crd("kubeadm")])
    worker = WorkerController(client, events=False)
    state = state_of(TALOS)
    written: list[str] = []

    class Writer:
        async def write(self, name: str, status: dict[str, Any]) -> None:
            written.append(name)

    class Pools:
        async def selecting(self, name: str) -> list[str]:
            return []

    hour = ControllerSettings(retain_recheck=3600, retry_delay=3600)
    classes = ClassController(Source(state), Writer(), Pools(), settings=hour, workers=worker)  # type: ignore[arg-type]
    stop = asyncio.Event()
    loop = asyncio.create_task(classes.run(stop=stop))
    await asyncio.sleep(0.1)
    assert not worker.settled and written == []  # nothing before the worker controller has reconciled
    await worker.reconcile(state, full=True)
    async with asyncio.timeout(5):
        while not written:
            await asyncio.sleep(0.01)
    stop.set()
    await asyncio.wait_for(loop, 5)
    assert worker.settled


async def test_the_worker_loop_reconciles_on_an_announced_state_and_sleeps_without_one() -> None:
    from tests.controller.test_controller import Source
    from workerclass.controller.workers import WorkerSettings

    client = FakeClient([kairos_crd("kubeadm")])
    worker = WorkerController(client, events=False, settings=WorkerSettings(resync_interval=3600))
    runs: list[bool] = []
    reconcile = worker.reconcile

    async def counted(state: Any, *, full: bool = False) -> Any:
        runs.append(full)
        return await reconcile(state, full=full)

    worker.reconcile = counted  # type: ignore[method-assign]
    source = Source(state_of(TALOS))
    stop = asyncio.Event()
    loop = asyncio.create_task(worker.run(source, stop=stop))
    async with asyncio.timeout(5):
        while not runs:
            await asyncio.sleep(0.01)
    await asyncio.sleep(0.1)
    reads = source.reads
    await asyncio.sleep(0.5)
    assert runs == [True]  # the first, full; then nothing while nothing changes (the resync is an hour away)
    assert source.reads == reads  # not even a look: the loop sleeps until the cache announces a State
    source.publish(state_of(make_pool("talos", workerClassName="talos", maxReplicas=5)))
    async with asyncio.timeout(2):
        while len(runs) < 2:
            await asyncio.sleep(0.01)
    assert runs == [True, False]
    stop.set()
    await asyncio.wait_for(loop, 5)


async def test_the_worker_loop_waits_quietly_for_the_first_state() -> None:
    """Before the cache has synced there is nothing to reconcile, and no resync is due either."""
    from tests.controller.test_controller import Source

    worker = WorkerController(FakeClient([kairos_crd("kubeadm")]), events=False)
    source = Source(None)
    stop = asyncio.Event()
    loop = asyncio.create_task(worker.run(source, stop=stop))
    await asyncio.sleep(0.3)
    assert source.reads <= 2  # one look, then asleep until the first State is announced
    source.publish(state_of(TALOS))
    async with asyncio.timeout(5):
        while not worker.settled:
            await asyncio.sleep(0.01)
    stop.set()
    await asyncio.wait_for(loop, 5)


def _deployment_name(pool: Mapping[str, Any]) -> str:
    return f"kubernetes-{pool['metadata']['name']}"  # kubernetes-<cluster>-<pool>, the chart's name


@pytest.mark.parametrize(
    ("labels", "annotations", "owner"),
    [
        (
            {},
            {"meta.helm.sh/release-name": "kubernetes-example", "meta.helm.sh/release-namespace": NAMESPACE},
            "another Helm release",
        ),
        ({POOL_LABEL: pool_key(NAMESPACE, "kubernetes-nodes-example-other")}, {}, "another workerclass pool"),
        ({}, {}, "no pool and no Helm release"),
    ],
    ids=["parent-release", "another-pool", "by-hand"],
)
async def test_an_object_another_owner_has_is_never_taken_over(
    labels: dict[str, str], annotations: dict[str, str], owner: str
) -> None:
    """The pool's MachineDeployment name is taken (the parent app's node group, another pool's
    object, one made by hand): the pool is refused, nothing of it is applied, and the object is
    left exactly as it was (no field taken, no owner reference a tenant's release could delete)."""
    foreign = {
        "apiVersion": "cluster.x-k8s.io/v1beta1",
        "kind": "MachineDeployment",
        "metadata": {
            "name": _deployment_name(TALOS),
            "namespace": NAMESPACE,
            "labels": labels,
            "annotations": annotations,
        },
        "spec": {"clusterName": "kubernetes-example", "replicas": 3},
    }
    client = FakeClient([foreign])
    controller = WorkerController(client, events=False)
    report = await controller.reconcile(state_of(TALOS), full=True)
    assert report.states == {"tenant-example/example-talos": "refused"}
    message = controller._pool_states["tenant-example/example-talos"][1]
    assert f"MachineDeployment {NAMESPACE}/{_deployment_name(TALOS)} exists and belongs to {owner}" in message
    assert applied(client) == []
    assert client.objects[("MachineDeployment", NAMESPACE, _deployment_name(TALOS))] == foreign
    # the object goes: the pool is applied on the next pass
    del client.objects[("MachineDeployment", NAMESPACE, _deployment_name(TALOS))]
    report = await controller.reconcile(state_of(TALOS), full=True)
    assert report.states == {"tenant-example/example-talos": "applied"}


async def test_the_objects_helm_made_for_the_same_release_are_taken_over() -> None:
    """A handoff: the classless pool's objects, made by Helm for this very release (and pinned while
    the pool was classless), are the pool's."""
    helm = {
        "apiVersion": "cluster.x-k8s.io/v1beta1",
        "kind": "MachineDeployment",
        "metadata": {
            "name": _deployment_name(TALOS),
            "namespace": NAMESPACE,
            "labels": {"app.kubernetes.io/managed-by": "Helm"},
            "annotations": {
                "meta.helm.sh/release-name": "kubernetes-nodes-example-talos",
                "meta.helm.sh/release-namespace": NAMESPACE,
                PINNED_ANNOTATION: "handoff",
            },
        },
        "spec": {"clusterName": "kubernetes-example", "replicas": 3},
    }
    client = FakeClient([helm])
    report = await WorkerController(client, events=False).reconcile(state_of(TALOS), full=True)
    assert report.states == {"tenant-example/example-talos": "applied"}
    assert ("MachineDeployment", NAMESPACE, _deployment_name(TALOS)) in applied(client)


def _job_applies(client: FakeClient) -> str:
    """The TalosConfigTemplate name the applied talos-reconcile Job's heredoc names."""
    import re

    (job,) = client.of("Job")
    script = job["spec"]["template"]["spec"]["containers"][0]["command"][2]
    (name,) = re.findall(r"^\s+name: \$\{RELEASE\}-\$\{GROUP_NAME\}(\S*)$", script, re.M)
    return "kubernetes-example-talos" + name


def _configured(client: FakeClient) -> str:
    (deployment,) = client.of("MachineDeployment")
    return str(deployment["spec"]["template"]["spec"]["bootstrap"]["configRef"]["name"])


def _running_template(state: Any, **spec_changes: Any) -> dict[str, Any]:
    """The template a Job left under the stable name: the render's, run-time inputs filled in."""
    from workerclass.ops.workers import desired_workers

    (pool,) = [pool for pool in desired_workers(state) if pool.identity.endswith("example-talos")]
    assert pool.talos_template is not None
    import json

    filled = json.dumps(pool.talos_template).replace("${TALOS_TOKEN}", "abc.def").replace("${KCP_UID}", "u-1")
    template: dict[str, Any] = json.loads(filled)
    template["spec"] = {**template["spec"], **spec_changes}
    return template


async def test_a_template_of_another_content_under_the_stable_name_is_not_applied_over() -> None:
    """The Talos provider would refuse the change under that name: the Job applies a template named by
    its content and the MachineDeployment follows it (the pool rolls to the new config)."""
    state = state_of(TALOS)
    stale = _running_template(state, template={"spec": {"generateType": "none", "data": "old machine config"}})
    client = FakeClient([stale])
    report = await WorkerController(client, events=False).reconcile(state, full=True)
    assert report.states == {"tenant-example/example-talos": "applied"}
    assert _configured(client) != "kubernetes-example-talos" and _configured(client).startswith(
        "kubernetes-example-talos-"
    )
    assert _job_applies(client) == _configured(client)


async def test_the_same_content_under_the_stable_name_is_kept_and_nothing_rolls() -> None:
    state = state_of(TALOS)
    client = FakeClient([_running_template(state)])
    await WorkerController(client, events=False).reconcile(state, full=True)
    assert _configured(client) == "kubernetes-example-talos" == _job_applies(client)


DROPPED = "example.com/dropped"


def _with_dropped(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` as an older render set it: one annotation more, applied by our field manager."""
    older = copy.deepcopy(obj)
    older["metadata"].pop("managedFields", None)
    older["metadata"].setdefault("annotations", {})[DROPPED] = "yes"
    older["metadata"]["managedFields"] = [applied_fields(older)]
    return older


async def test_a_field_the_render_no_longer_sets_is_removed_after_a_restart() -> None:
    """A workerclass (or chart) upgrade whose render stops setting a field: the live object still holds
    every value the new render sets (it "covers" it), but our field manager owns one field more, so
    the restarted controller applies and server-side apply removes that field."""
    client = FakeClient()
    state = state_of(TALOS)
    await WorkerController(client, events=False).reconcile(state, full=True)
    (key,) = [key for key in client.objects if key[0] == "MachineDeployment"]
    client.objects[key] = _with_dropped(client.objects[key])
    before = len(client.writes)
    await WorkerController(client, events=False).reconcile(state, full=True)
    assert [key for verb, key in client.writes[before:] if verb == "apply"] == [key]
    assert DROPPED not in client.objects[key]["metadata"]["annotations"]
    before = len(client.writes)
    await WorkerController(client, events=False).reconcile(state, full=True)
    assert client.writes[before:] == []  # converged: nothing more to send


async def test_a_field_dropped_between_two_renders_is_removed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The desired object changed since our last apply: applied, though the live object covers it."""
    import workerclass.controller.workers as module

    real = module.desired_workers

    def older(state: Any, **options: Any) -> Any:
        pools = real(state, **options)
        return [
            replace(pool, objects=tuple(_with_dropped(obj) if obj["kind"] == "MachineDeployment" else obj
                                        for obj in pool.objects))
            for pool in pools
        ]  # fmt: skip

    client = FakeClient()
    state = state_of(TALOS)
    controller = WorkerController(client, events=False)
    monkeypatch.setattr(module, "desired_workers", older)
    await controller.reconcile(state, full=True)
    (key,) = [key for key in client.objects if key[0] == "MachineDeployment"]
    assert client.objects[key]["metadata"]["annotations"][DROPPED] == "yes"
    monkeypatch.setattr(module, "desired_workers", real)
    before = len(client.writes)
    await controller.reconcile(state)
    assert [key for verb, key in client.writes[before:] if verb == "apply"] == [key]
    assert DROPPED not in client.objects[key]["metadata"]["annotations"]


async def test_a_field_another_writer_took_over_is_taken_back_on_a_resync() -> None:
    """Someone edits a field we apply (their manager owns it now, ours no longer does): repaired."""
    client = FakeClient()
    state = state_of(TALOS)
    controller = WorkerController(client, events=False)
    await controller.reconcile(state, full=True)
    (key,) = [key for key in client.objects if key[0] == "MachineHealthCheck"]
    live = client.objects[key]
    fields = live["metadata"]["managedFields"][0]["fieldsV1"]
    del fields["f:spec"]["f:maxUnhealthy"]  # what an update by kubectl edit does to our entry
    live["metadata"]["managedFields"].append({"manager": "kubectl-edit", "operation": "Update", "fieldsV1": {}})
    live["spec"]["maxUnhealthy"] = "100%"
    before = len(client.writes)
    await controller.reconcile(state, full=True)
    assert [key for verb, key in client.writes[before:] if verb == "apply"] == [key]
    assert client.objects[key]["spec"]["maxUnhealthy"] != "100%"


async def _running(client: FakeClient, state: Any) -> tuple[WorkerController, asyncio.Event, asyncio.Task[None]]:
    """The worker loop on ``state``, its resync an hour away, once its first pass has run."""
    from tests.controller.test_controller import Source
    from workerclass.controller.workers import WorkerSettings

    worker = WorkerController(client, events=False, settings=WorkerSettings(resync_interval=3600))
    stop = asyncio.Event()
    loop = asyncio.create_task(worker.run(Source(state), stop=stop))
    async with asyncio.timeout(5):
        while not worker.settled:
            await asyncio.sleep(0.01)
    return worker, stop, loop


async def test_a_hand_deleted_machine_deployment_is_repaired_in_seconds() -> None:
    """The owned kinds are watched by our label: a deletion wakes the loop, not the next resync."""
    client = FakeClient()
    _, stop, loop = await _running(client, state_of(TALOS))
    (key,) = [key for key in client.objects if key[0] == "MachineDeployment"]
    before = len(client.writes)
    await client.delete(SimpleNamespace(_api_info=SimpleNamespace(resource=SimpleNamespace(kind=key[0]))), key[2],
                        namespace=key[1])  # fmt: skip
    async with asyncio.timeout(2):
        while key not in client.objects:
            await asyncio.sleep(0.01)
    assert [verb for verb, _ in client.writes[before:]] == ["delete", "apply"]  # the one object, nothing else
    stop.set()
    await asyncio.wait_for(loop, 5)


async def test_the_loop_lists_no_machine_sets_and_each_owned_kind_once() -> None:
    client = FakeClient()
    _, stop, loop = await _running(client, state_of(TALOS))
    await asyncio.sleep(0.2)
    assert not [entry for entry in client.lists if entry[0] == "MachineSet"]
    owned = [
        kind for kind, labels in client.labels if kind in {"MachineDeployment", "Job", "Role"} and POOL_LABEL in labels
    ]
    assert sorted(owned) == ["Job", "MachineDeployment", "Role"]
    watched = {kind for kind, _ in client.watchers}
    assert "MachineDeployment" in watched and "Secret" not in watched  # Secrets are listed, never watched
    stop.set()
    await asyncio.wait_for(loop, 5)


async def test_a_kind_that_cannot_be_listed_holds_back_only_the_pools_that_render_it() -> None:
    """A 403 on one owned kind: pools that render it wait (their objects of it are unknown), pools
    that do not are applied; once the kind is listed the waiting pools are applied too."""
    client = FakeClient([kairos_crd("kubeadm")])
    client.forbidden.add("Job")  # Talos pools render the talos-reconcile Job, Kairos pools do not
    worker, stop, loop = await _running(client, state_of(TALOS, KAIROS))
    assert worker.pool_states == {"tenant-example/example-talos": "failing", "tenant-example/example-kairos": "applied"}
    assert "Job (403 Forbidden)" in worker._pool_states["tenant-example/example-talos"][1]
    assert not [key for key in applied(client) if "talos" in key[2]]
    client.forbidden.clear()
    async with asyncio.timeout(5):  # the kind's backoff (1 s, jittered), then its list wakes the loop
        while worker.pool_states["tenant-example/example-talos"] != "applied":
            await asyncio.sleep(0.02)
    stop.set()
    await asyncio.wait_for(loop, 5)


async def test_a_direct_helmrelease_pool_is_not_cleaned_up_while_its_helmrelease_exists() -> None:
    """The cleanup's fresh read looks up the pool's HelmRelease by its own name (the objects' owner),
    not by the Helm release name, which a direct HelmRelease may set apart (``spec.releaseName``)."""
    from tests.builders import make_release

    release = make_release("direct", workerClassName="talos")
    release["metadata"]["uid"] = "u-direct"
    release["spec"]["releaseName"] = "kubernetes-nodes-example-direct-renamed"
    client = FakeClient([release])
    controller = WorkerController(client, events=False)
    report = await controller.reconcile(make_state([release]), full=True)
    assert set(report.states.values()) == {"applied"}, controller._pool_states
    before = len(client.writes)
    report = await controller.reconcile(make_state([]), full=True)  # the cache lags: the pool not seen
    assert [verb for verb, _ in client.writes[before:]] == [] and report.deleted == 0
    del client.objects[("HelmRelease", NAMESPACE, release["metadata"]["name"])]
    report = await controller.reconcile(make_state([]), full=True)  # gone for real: cleaned up
    assert report.deleted > 0


async def test_events_name_the_helmrelease_by_its_uid() -> None:
    """``kubectl describe helmrelease`` lists the Events whose involved object has its uid."""
    client = FakeClient()
    await WorkerController(client).reconcile(state_of(TALOS), full=True)
    (event,) = [event for event in client.events if event["reason"] == "WorkersApplied"]
    assert event["involvedObject"]["name"] == "kubernetes-nodes-example-talos"
    assert event["involvedObject"]["uid"] == "uid-kubernetes-nodes-example-talos"


async def test_an_object_being_deleted_is_not_deleted_again() -> None:
    """A deletion a finalizer holds (the garbage collector's orphan finalizer on a Job) is not sent
    again on every pass: the object carries its deletionTimestamp until it goes."""
    client = FakeClient()
    controller = WorkerController(client, events=False)
    await controller.reconcile(state_of(TALOS), full=True)
    held = [key for key in client.objects if key[0] == "Job"]
    for key in held:
        client.objects[key]["metadata"]["deletionTimestamp"] = "2026-12-03T00:00:00Z"
    assert held
    await controller.reconcile(make_state([]), full=True)  # the pool and its HelmRelease are gone
    deleted = [key for verb, key in client.writes if verb == "delete"]
    assert deleted and not set(held) & set(deleted)  # the rest went; the held Jobs were not asked again


async def test_a_pool_waiting_for_its_helmrelease_says_so_on_itself() -> None:
    """``WorkersWaitingForRelease`` is posted (once per change), on the KubernetesNodes by its uid:
    there is no HelmRelease yet to carry it."""
    waiting = copy.deepcopy(TALOS)
    waiting["metadata"]["uid"] = "uid-pool-talos"
    client = FakeClient()
    controller = WorkerController(client)
    report = await controller.reconcile(make_state([waiting]), full=True)
    assert report.states == {"tenant-example/example-talos": "waiting-for-release"}
    (event,) = client.events
    assert event["reason"] == "WorkersWaitingForRelease" and event["type"] == "Normal"
    assert event["involvedObject"] == {
        "apiVersion": "apps.cozystack.io/v1alpha1",
        "kind": "KubernetesNodes",
        "name": "example-talos",
        "namespace": NAMESPACE,
        "uid": "uid-pool-talos",
    }
    await controller.reconcile(make_state([waiting]), full=True)
    assert len(client.events) == 1  # said when it changes, not at every pass


class Remembering(FakeClient):
    """A FakeClient that keeps the Events it is sent and lists them by field (as a server's field
    selector on ``involvedObject.*`` and ``reason`` does)."""

    async def list(
        self, resource: Any, *, fields: Mapping[str, str] | None = None, **options: Any
    ) -> AsyncIterator[Any]:
        from lightkube.resources.core_v1 import Event

        async for obj in super().list(resource, **options):
            if _kind(resource) != "Event":
                yield obj
                continue
            involved = obj.get("involvedObject") or {}
            if all(
                (obj.get(name) if "." not in name else involved.get(name.partition(".")[2])) == value
                for name, value in (fields or {}).items()
            ):
                yield Event.from_dict(obj)  # as lightkube gives it: read by attribute

    async def create(self, obj: Any) -> Any:
        await super().create(obj)
        event = obj.to_dict()
        self.objects[("Event", event["metadata"]["namespace"], f"event-{len(self.events)}")] = event
        return obj


UNRESOLVABLE = make_pool("unresolvable", workerClassName="no-such-class")


def unresolvable_release(uid: str) -> dict[str, Any]:
    helm = release_of(UNRESOLVABLE)
    helm["metadata"]["uid"] = uid
    return helm


async def test_a_pool_deleted_and_made_again_under_its_name_is_told_again() -> None:
    """A HelmRelease deleted and created again is a new object: the reason its pool is not
    resolvable is posted on it (its uid), though the object of the same name before carried the
    same Event, whether or not a pass saw the pool gone in between. A restart says nothing twice."""
    client = Remembering()
    controller = WorkerController(client)
    first = [UNRESOLVABLE, unresolvable_release("uid-first")]
    report = await controller.reconcile(make_state(first), full=True)
    assert report.states == {"tenant-example/example-unresolvable": "not-resolvable"}
    (event,) = client.events
    assert event["reason"] == "WorkersNotResolvable" and event["involvedObject"]["uid"] == "uid-first"
    await controller.reconcile(make_state(first), full=True)
    await WorkerController(client).reconcile(make_state(first), full=True)  # a restart: said before
    assert len(client.events) == 1

    # deleted and made again between two passes: the pool never seen gone
    second = [UNRESOLVABLE, unresolvable_release("uid-second")]
    await controller.reconcile(make_state(second), full=True)
    assert [e["involvedObject"]["uid"] for e in client.events] == ["uid-first", "uid-second"]

    # a pass sees it gone, then it comes back with the old objects' Events still listed
    await controller.reconcile(make_state([]), full=True)
    third = [UNRESOLVABLE, unresolvable_release("uid-third")]
    await controller.reconcile(make_state(third), full=True)
    await controller.reconcile(make_state(third), full=True)
    assert [e["involvedObject"]["uid"] for e in client.events] == ["uid-first", "uid-second", "uid-third"]
    assert {e["message"] for e in client.events} == {event["message"]}


async def test_a_first_apply_reads_each_object_once() -> None:
    """Naming the Talos template and the no-takeover check both need what lives: one read serves both."""
    gets: list[tuple[str, str]] = []

    class Counting(FakeClient):
        async def get(self, resource: Any, name: str, *, namespace: str | None = None) -> Any:
            gets.append((_kind(resource), name))
            return await super().get(resource, name, namespace=namespace)

    client = Counting()
    await WorkerController(client, events=False).reconcile(state_of(TALOS), full=True)
    assert ("MachineDeployment", "kubernetes-example-talos") in gets
    assert len(gets) == len(set(gets)), sorted(gets)


async def test_a_cold_start_lists_what_it_does_not_know_instead_of_reading_each_object() -> None:
    """Ten new pools in one namespace: each kind they render there is listed once (whatever exists
    without our label is found by that list), so no object is read one by one, and a foreign object
    the list found still refuses its pool and is left as it was."""
    pools = [make_pool(f"cold-{index}", workerClassName="talos") for index in range(10)]
    foreign = {
        "apiVersion": "cluster.x-k8s.io/v1beta1",
        "kind": "MachineDeployment",
        "metadata": {"name": _deployment_name(pools[3]), "namespace": NAMESPACE, "labels": {"team": "a"}},
        "spec": {"clusterName": "kubernetes-example", "replicas": 3},
    }
    gets: list[tuple[str, str]] = []

    class Counting(FakeClient):
        async def get(self, resource: Any, name: str, *, namespace: str | None = None) -> Any:
            gets.append((_kind(resource), name))
            return await super().get(resource, name, namespace=namespace)

    client = Counting([foreign])
    report = await WorkerController(client, events=False).reconcile(state_of(*pools), full=True)
    refused = {identity for identity, state in report.states.items() if state == "refused"}
    assert refused == {f"{NAMESPACE}/example-cold-3"}
    assert sum(state == "applied" for state in report.states.values()) == 9
    assert client.objects[("MachineDeployment", NAMESPACE, _deployment_name(pools[3]))] == foreign
    # the applied kinds were listed in the namespace (unlabelled), none read object by object
    unlabelled = {kind for kind, namespace in client.lists if namespace == NAMESPACE}
    assert {"MachineDeployment", "Job", "KubevirtMachineTemplate"} <= unlabelled
    applied_kinds = {key[0] for key in applied(client)}
    assert not [get for get in gets if get[0] in applied_kinds and get[0] != "Secret"], sorted(gets)


#: a class whose disk is imported from a private Image Factory with its own CA (PR 3797's ConfigMap)
FACTORY_CA = make_class("factory-ca", talos={"version": "v1.13.6", "imageFactoryCA": CERTIFICATE})
PRIVATE = make_pool("private", workerClassName="factory-ca")


def _ca_state(*pools: Mapping[str, Any], ca: str = CERTIFICATE) -> Any:
    klass = make_class("factory-ca", talos={"version": "v1.13.6", **({"imageFactoryCA": ca} if ca else {})})
    objects = [obj for pool in pools for obj in (pool, release_of(pool))]
    return make_state(objects, classes=[TALOS_EXAMPLE, KAIROS_FIXED, klass])


async def test_a_private_image_factory_ca_config_map_is_applied_watched_and_pruned() -> None:
    """Everything the render gives is applied: the CA's ConfigMap the disk import names lands (with
    the pool's label and owner), before the template that names it; a hand deletion is repaired, the
    CA dropped from the class prunes it, and the pool's deletion takes it with the rest."""
    client = FakeClient()
    controller = WorkerController(client, events=False)
    report = await controller.reconcile(_ca_state(PRIVATE), full=True)
    assert report.states == {"tenant-example/example-private": "applied"}, controller._pool_states
    (config_map,) = client.of("ConfigMap")
    name = config_map["metadata"]["name"]
    assert config_map["data"] == {"ca.pem": CERTIFICATE}
    assert config_map["metadata"]["labels"][POOL_LABEL] == pool_key(NAMESPACE, "kubernetes-nodes-example-private")
    assert config_map["metadata"]["ownerReferences"][0]["uid"] == "uid-kubernetes-nodes-example-private"
    (template,) = client.of("KubevirtMachineTemplate")
    assert name in json.dumps(template["spec"])  # the disk import names it
    order = [key[0] for key in applied(client)]
    assert order.index("ConfigMap") < order.index("KubevirtMachineTemplate")

    del client.objects[("ConfigMap", NAMESPACE, name)]  # by hand: compared and repaired on the resync
    await controller.reconcile(_ca_state(PRIVATE), full=True)
    assert ("ConfigMap", NAMESPACE, name) in client.objects

    # the CA dropped: a new template; while a MachineSet runs the old one, its CA stays with it
    machine_set = {
        "apiVersion": "cluster.x-k8s.io/v1beta1",
        "kind": "MachineSet",
        "metadata": {"name": "running", "namespace": NAMESPACE},
        "spec": {"template": {"spec": {"infrastructureRef": {"name": template["metadata"]["name"]}}}},
    }
    client.put(machine_set)
    report = await controller.reconcile(_ca_state(PRIVATE, ca=""), full=True)
    assert report.states == {"tenant-example/example-private": "applied"}
    assert len(client.of("KubevirtMachineTemplate")) == 2 and client.of("ConfigMap")
    del client.objects[FakeClient.key(machine_set)]  # rolled out: the old template and its CA go
    await controller.reconcile(_ca_state(PRIVATE, ca=""), full=True)
    assert ("delete", ("ConfigMap", NAMESPACE, name)) in client.writes and client.of("ConfigMap") == []
    assert len(client.of("KubevirtMachineTemplate")) == 1

    await controller.reconcile(_ca_state(PRIVATE), full=True)
    assert client.of("ConfigMap")
    await controller.reconcile(_ca_state(), full=True)  # the pool and its release gone
    assert client.of("ConfigMap") == [] and client.of("MachineDeployment") == []


def _helm_made(kind: str, api_version: str, name: str, release: str, *, pinned: bool = True) -> dict[str, Any]:
    """An object Helm made for ``release`` (pinned by the controller for a handoff when ``pinned``)."""
    annotations = {"meta.helm.sh/release-name": release, "meta.helm.sh/release-namespace": NAMESPACE}
    if pinned:
        annotations |= {"helm.sh/resource-policy": "keep", PINNED_ANNOTATION: "handoff"}
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "labels": {"app.kubernetes.io/managed-by": "Helm"},
            "annotations": annotations,
        },
        "spec": {},
    }


async def test_a_deleted_classless_pool_takes_what_it_had_pinned_once_its_release_is_gone() -> None:
    """A classless pool's Helm-made objects carry the handoff pin (``keep``), so Helm's uninstall
    leaves them. Once the pool is gone and its HelmRelease is too (by the cache and a fresh read),
    the controller deletes them; while the release is there they stay;
    what it did not pin (another release's, or Helm's own without our pin) it never touches."""
    legacy = make_pool("legacy")
    del legacy["spec"]["workerClassName"]
    release = "kubernetes-nodes-example-legacy"
    ours = [
        _helm_made("MachineDeployment", "cluster.x-k8s.io/v1beta1", "kubernetes-example-legacy", release),
        _helm_made("ConfigMap", "v1", "kubernetes-example-legacy-talos-factory-ca", release),
        _helm_made("Job", "batch/v1", "kubernetes-example-legacy-talos-reconcile", release),
        _helm_made(
            "MachineHealthCheck", "cluster.x-k8s.io/v1beta1", "kubernetes-example-legacy", release, pinned=False
        ),
    ]
    others = [  # another release's, never pinned: not the controller's to delete
        _helm_made("MachineDeployment", "cluster.x-k8s.io/v1beta1", "kubernetes-example-other", "other", pinned=False),
    ]
    client = FakeClient([*ours, *others, release_of(legacy)])
    controller = WorkerController(client, events=False)
    await controller.reconcile(state_of(legacy), full=True)
    keys = {FakeClient.key(obj) for obj in ours}
    assert client.writes == [("patch", FakeClient.key(ours[-1]))]  # the one not pinned yet

    # the pool is gone but its HelmRelease is still there (Flux is uninstalling it): nothing goes
    await controller.reconcile(make_state([release_of(legacy)]), full=False)
    await controller.reconcile(make_state([]), full=True)  # the cache lags: a fresh read finds it
    assert not [key for verb, key in client.writes if verb == "delete"]

    del client.objects[("HelmRelease", NAMESPACE, release)]  # the release gone: its pinned objects go
    report = await controller.reconcile(make_state([]), full=False)
    deleted = {key for verb, key in client.writes if verb == "delete"}
    assert deleted == keys and report.deleted == len(keys)
    assert all(FakeClient.key(obj) in client.objects for obj in others)


class ChangingSource:
    """A cluster cache stand-in that says which objects each new State changed (``changed_since``)."""

    reason = ""

    def __init__(self, state: Any) -> None:
        from workerclass.adapters.changes import Changes

        self.state = state
        self.changes = Changes()
        self.changes.bump()
        self.log: list[tuple[int, set[tuple[str, str, str]] | None]] = [(1, None)]

    def publish(self, state: Any, changed: set[tuple[str, str, str]] | None) -> None:
        self.state = state
        self.changes.bump()
        self.log.append((self.changes.version, changed))

    @property
    def generation(self) -> int:
        return self.changes.version

    @property
    def published(self) -> int:
        return self.changes.published

    async def changed(self, after: int) -> int:
        return await self.changes.wait(after)

    def changed_since(self, after: int) -> set[tuple[str, str, str]] | None:
        out: set[tuple[str, str, str]] = set()
        for version, keys in self.log:
            if version > after:
                if keys is None:
                    return None
                out |= keys
        return out


async def _settled_loop(
    client: FakeClient, source: Any, monkeypatch: pytest.MonkeyPatch
) -> tuple[WorkerController, list[str], list[bool], asyncio.Event, asyncio.Task[None]]:
    """The loop over ``source``, with the pools it renders and the whole passes it runs recorded."""
    import workerclass.controller.workers as module
    import workerclass.ops.workers as ops
    from workerclass.controller.workers import WorkerSettings

    rendered: list[str] = []
    real = module.desired_pool

    def counted(state: Any, record: Any, **options: Any) -> Any:
        rendered.append(record.identity)
        return real(state, record, **options)

    monkeypatch.setattr(module, "desired_pool", counted)
    monkeypatch.setattr(ops, "desired_pool", counted)  # the whole pass's desired_workers
    worker = WorkerController(client, events=False, settings=WorkerSettings(resync_interval=3600))
    whole: list[bool] = []
    reconcile = worker.reconcile

    async def recorded(state: Any, *, full: bool = False) -> Any:
        whole.append(full)
        return await reconcile(state, full=full)

    worker.reconcile = recorded  # type: ignore[method-assign]
    stop = asyncio.Event()
    loop = asyncio.create_task(worker.run(source, stop=stop))
    async with asyncio.timeout(10):
        while not worker.settled:
            await asyncio.sleep(0.01)
    return worker, rendered, whole, stop, loop


@pytest.mark.parametrize("through", ["cache", "chart-read"])
async def test_a_pools_change_is_reconciled_alone(monkeypatch: pytest.MonkeyPatch, through: str) -> None:
    """With the cache saying what changed, one pool's change renders and applies that pool only (the
    others are not looked at), a deleted classified pool leaves nothing, and a change beyond single
    pools (a class) takes the whole pass. ``chart-read``: through the source ``serve controller``
    gives the worker controller (:class:`~workerclass.controller.settled.ChartRead` over the cache)."""
    from workerclass.controller.settled import ChartRead

    pools = [make_pool(name, workerClassName="talos") for name in ("one", "two", "three")]
    client = FakeClient([kairos_crd("kubeadm")])
    source = ChangingSource(state_of(*pools))
    read = ChartRead(source) if through == "chart-read" else source
    worker, rendered, whole, stop, loop = await _settled_loop(client, read, monkeypatch)
    assert whole == [True] and sorted(set(rendered)) == [f"{NAMESPACE}/example-{n}" for n in ("one", "three", "two")]
    rendered.clear()
    before = len(client.writes)

    changed = make_pool("two", workerClassName="talos", maxReplicas=7)
    source.publish(state_of(pools[0], changed, pools[2]), {("KubernetesNodes", NAMESPACE, "example-two")})
    async with asyncio.timeout(5):
        while len(client.writes) == before:
            await asyncio.sleep(0.01)
    await asyncio.sleep(0.1)
    assert whole == [True]  # no whole pass
    assert rendered == [f"{NAMESPACE}/example-two"]
    written = {key for _, key in client.writes[before:]}
    assert written == {("MachineDeployment", NAMESPACE, "kubernetes-example-two")}, written

    # the pool deleted with its HelmRelease: its objects go, the others' stay
    before = len(client.writes)
    gone = {("KubernetesNodes", NAMESPACE, "example-two"), ("HelmRelease", NAMESPACE, "kubernetes-nodes-example-two")}
    source.publish(state_of(pools[0], pools[2]), gone)
    async with asyncio.timeout(5):
        while f"{NAMESPACE}/example-two" in worker.pool_states:
            await asyncio.sleep(0.01)
    await asyncio.sleep(0.1)
    assert whole == [True]
    deleted = {key for verb, key in client.writes[before:] if verb == "delete"}
    assert deleted and all("example-two" in key[2] for key in deleted), deleted
    assert not [key for key in client.objects if "example-two" in key[2] and key[0] != "CustomResourceDefinition"]
    assert set(worker.pool_states) == {f"{NAMESPACE}/example-one", f"{NAMESPACE}/example-three"}

    # a class changes: every pool that may resolve differently is looked at (the whole pass)
    source.publish(state_of(pools[0], pools[2]), {("WorkerClass", "", "talos-example-r1")})
    async with asyncio.timeout(5):
        while whole == [True]:
            await asyncio.sleep(0.01)
    assert whole == [True, False]
    stop.set()
    await asyncio.wait_for(loop, 5)


async def test_a_pool_that_becomes_classified_takes_the_whole_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """A new classified pool's release must be scanned for Helm-made objects (the chart gate's check)
    before it is applied: the pass per change declines and the whole pass runs."""
    client = FakeClient([kairos_crd("kubeadm")])
    source = ChangingSource(state_of(TALOS))
    worker, _, whole, stop, loop = await _settled_loop(client, source, monkeypatch)
    added = make_pool("added", workerClassName="talos")
    source.publish(state_of(TALOS, added), {("KubernetesNodes", NAMESPACE, "example-added")})
    async with asyncio.timeout(5):
        while worker.pool_states.get(f"{NAMESPACE}/example-added") != "applied":
            await asyncio.sleep(0.01)
    assert whole == [True, False]
    stop.set()
    await asyncio.wait_for(loop, 5)


async def test_a_pool_whose_helmrelease_goes_after_it_is_cleaned_up_by_that_change(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The KubernetesNodes goes first, its HelmRelease a moment later (Flux uninstalling): the
    pass per change for the pool waits while the release is there, and the release's own deletion
    cleans up what the garbage collector cannot (the cluster-scoped RBAC), with no whole pass."""
    pools = [make_pool(name, workerClassName="talos") for name in ("one", "two")]
    client = FakeClient([kairos_crd("kubeadm"), release_of(pools[1])])
    source = ChangingSource(state_of(*pools))
    worker, _, whole, stop, loop = await _settled_loop(client, source, monkeypatch)
    state = make_state([pools[0], release_of(pools[0]), release_of(pools[1])])
    source.publish(state, {("KubernetesNodes", NAMESPACE, "example-two")})
    async with asyncio.timeout(5):
        while f"{NAMESPACE}/example-two" in worker.pool_states:
            await asyncio.sleep(0.01)
    await asyncio.sleep(0.1)
    assert [key for verb, key in client.writes if verb == "delete"] == []  # its HelmRelease is still there
    del client.objects[("HelmRelease", NAMESPACE, "kubernetes-nodes-example-two")]
    source.publish(state_of(pools[0]), {("HelmRelease", NAMESPACE, "kubernetes-nodes-example-two")})
    async with asyncio.timeout(5):
        while [key for key in client.objects if key[0] == "ClusterRole" and "example-two" in key[2]]:
            await asyncio.sleep(0.01)
    assert whole == [True]
    assert all("example-two" in key[2] for verb, key in client.writes if verb == "delete")
    stop.set()
    await asyncio.wait_for(loop, 5)


async def test_the_state_journal_says_which_pools_changed_and_when_it_cannot() -> None:
    """What class status reads to count by change: the pools whose state changed or went since a
    change number, ``None`` once the journal no longer reaches back (it reads every pool then)."""
    from workerclass.controller.workers import STATE_JOURNAL

    controller = WorkerController(FakeClient(), events=False)
    start = controller.state_serial
    assert controller.states_changed_since(start) == set()
    controller._set_state("ns/a", ("applied", ""))
    controller._set_state("ns/b", ("refused", "why"))
    controller._set_state("ns/a", ("applied", "another message"))  # the same state: no change
    assert controller.states_changed_since(start) == {"ns/a", "ns/b"}
    assert controller.state_serial == start + 2
    assert (controller.pool_state("ns/a"), controller.pool_state("ns/c")) == ("applied", None)
    middle = controller.state_serial
    controller._set_state("ns/b", None)
    assert controller.states_changed_since(middle) == {"ns/b"}
    for index in range(STATE_JOURNAL):
        controller._set_state(f"ns/p{index}", ("applied", ""))
    assert controller.states_changed_since(middle) is None
    assert controller.states_changed_since(controller.state_serial - 1) == {f"ns/p{STATE_JOURNAL - 1}"}
