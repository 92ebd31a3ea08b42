"""The cluster-backed state against kmock, a fake Kubernetes API over HTTP (lightkube's real client)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import kmock
import kmock as kmock_module
import pytest
import pytest_asyncio

pytest.importorskip("lightkube")

from lightkube import AsyncClient, KubeConfig

from tests.webhook.cases import compute_plane, pool, worker_class
from tests.webhook.conftest import fast_settings
from tests.webhook.helpers import EXAMPLES, CertFiles, Client, review
from workerclass.adapters.folder import load_state
from workerclass.adapters.kube import WATCHED, ClusterCache
from workerclass.adapters.tls import ReloadingContext
from workerclass.admission import mutate, validate
from workerclass.api import Resource
from workerclass.webhook.server import WebhookServer

pytestmark = pytest.mark.asyncio

BY_KIND = {watched.kind: watched for watched in WATCHED}


def resource_of(watched: Resource) -> kmock.resource:
    return kmock.resource(watched.group, watched.version, watched.plural)


def seed(emulator: kmock.KubernetesEmulator, objects: list[dict[str, Any]], *, skip: tuple[str, ...] = ()) -> None:
    """Declare every watched resource (but ``skip``) and store ``objects`` in the fake API."""
    for watched in WATCHED:
        if watched.kind not in skip:
            emulator.resources[resource_of(watched)] = kmock.ResourceInfo(
                kind=watched.kind, namespaced=watched.namespaced
            )
    for obj in objects:
        watched = BY_KIND[obj["kind"]]
        metadata = obj["metadata"]
        emulator.objects[resource_of(watched), metadata.get("namespace"), metadata["name"]] = obj


def example_objects() -> list[dict[str, Any]]:
    return [json.loads(json.dumps(dict(record.obj))) for record in load_state(EXAMPLES).objects]


def url_of(emulator: kmock.KubernetesEmulator, watched: Resource, namespace: str | None = None) -> str:
    prefix = f"/apis/{watched.group}/{watched.version}"
    return f"{prefix}/namespaces/{namespace}/{watched.plural}" if namespace else f"{prefix}/{watched.plural}"


def kmock_client(emulator: kmock.KubernetesEmulator) -> AsyncClient:
    """lightkube's real client, pointed at the fake API with a token."""
    config = KubeConfig.from_dict(
        {
            "clusters": [{"name": "kmock", "cluster": {"server": str(emulator.url)}}],
            "users": [{"name": "webhook", "user": {"token": "test-token"}}],
            "contexts": [{"name": "kmock", "context": {"cluster": "kmock", "user": "webhook"}}],
            "current-context": "kmock",
        }
    )
    return AsyncClient(config=config, trust_env=False)


@pytest_asyncio.fixture
async def cache(kmock: kmock.KubernetesEmulator) -> AsyncIterator[ClusterCache]:
    client = kmock_client(kmock)
    cache = ClusterCache(client, retry_delay=0.05, max_retry_delay=0.2)
    yield cache
    await cache.stop()
    await client.close()


async def eventually(check: Any, limit: float = 5.0) -> None:
    async with asyncio.timeout(limit):
        while not check():
            await asyncio.sleep(0.01)


async def test_synced_state_holds_the_cluster(kmock: kmock.KubernetesEmulator, cache: ClusterCache) -> None:
    seed(kmock, example_objects())
    await cache.start()
    state = await cache.wait_synced(5)
    assert cache.reason == ""
    assert {"talos", "kairos", "talos-example-r1", "kairos-example-v1-35-6-r1"} <= set(state.classes)
    assert state.cluster("tenant-example", "example") is not None
    assert state.pool("tenant-example/example-talos") is not None
    assert state.pool("tenant-example/example-legacy") is not None  # the labelled HelmRelease
    decision = mutate(state, "CREATE", pool())
    assert decision.patch == [{"op": "add", "path": "/spec/workerClassName", "value": "talos"}]
    assert validate(state, "CREATE", pool(workerClassName="talos-example-r1")).allowed


async def test_watch_events_rebuild_the_state(kmock: kmock.KubernetesEmulator, cache: ClusterCache) -> None:
    seed(kmock, example_objects())
    await cache.start()
    await cache.wait_synced(5)
    classes = BY_KIND["WorkerClass"]

    reply = await kmock.post(url_of(kmock, classes), json=worker_class("talos-r2", bootstrap="talos"))
    assert reply.status in (200, 201)
    await eventually(lambda: cache.state is not None and cache.state.worker_class("talos-r2") is not None)
    assert validate(cache.state, "CREATE", pool(workerClassName="talos-r2")).allowed  # type: ignore[arg-type]

    platform = BY_KIND["WorkerPlatform"]
    reply = await kmock.patch(url_of(kmock, platform) + "/default", json={"spec": {"defaultWorkerClass": "kairos"}})
    assert reply.status == 200
    await eventually(lambda: cache.state is not None and cache.state.platform.default_worker_class == "kairos")

    reply = await kmock.delete(url_of(kmock, classes) + "/talos-r2")
    assert reply.status == 200
    await eventually(lambda: cache.state is not None and cache.state.worker_class("talos-r2") is None)

    nodes = BY_KIND["KubernetesNodes"]
    reply = await kmock.post(url_of(kmock, nodes, "tenant-example"), json=pool("fresh", workerClassName="kairos"))
    assert reply.status in (200, 201)
    await eventually(lambda: cache.state is not None and cache.state.pool("tenant-example/example-fresh") is not None)


async def test_not_synced_until_every_list_succeeds(kmock: kmock.KubernetesEmulator, cache: ClusterCache) -> None:
    seed(kmock, [obj for obj in example_objects() if obj["kind"] != "HelmRelease"], skip=("HelmRelease",))
    await cache.start()
    await eventually(lambda: "helmreleases.helm.toolkit.fluxcd.io" in cache.reason and "404" in cache.reason)
    await asyncio.sleep(0.2)
    assert cache.state is None
    assert "waiting for the first list of helmreleases.helm.toolkit.fluxcd.io" in cache.reason
    assert "workerclasses" not in cache.reason.split("(")[0]  # those lists did succeed

    kmock.resources[resource_of(BY_KIND["HelmRelease"])] = kmock.ResourceInfo(kind="HelmRelease")  # the CRD appears
    state = await cache.wait_synced(5)
    assert state.pool("tenant-example/example-talos") is not None


async def test_webhook_over_the_cluster_cache(
    kmock: kmock.KubernetesEmulator, cache: ClusterCache, tmp_certs: CertFiles
) -> None:
    objects = example_objects()
    seed(kmock, [obj for obj in objects if obj["kind"] != "KubernetesNodes"], skip=("KubernetesNodes",))
    server = WebhookServer(cache, tls=ReloadingContext(tmp_certs.cert, tmp_certs.key), settings=fast_settings())
    await server.start()
    try:
        client = Client(server.port, tmp_certs.client_context())

        def call(method: str, path: str, body: Any = None) -> Any:
            if body is None:
                return client.request(method, path)
            return client.post_review(path, body)

        await eventually(lambda: "kubernetesnodes.apps.cozystack.io: 404" in cache.reason)
        reply = await asyncio.to_thread(call, "GET", "/readyz")
        assert reply.status == 503 and b"kubernetesnodes" in reply.body
        response = (await asyncio.to_thread(call, "POST", "/mutate/kubernetesnodes", review(pool()))).response
        assert response["allowed"] is False and response["status"]["code"] == 503
        assert "kubernetesnodes.apps.cozystack.io" in response["status"]["message"]

        seed(kmock, [obj for obj in objects if obj["kind"] == "KubernetesNodes"])  # the required CRD appears
        await cache.wait_synced(5)
        assert (await asyncio.to_thread(call, "GET", "/readyz")).status == 200
        response = (await asyncio.to_thread(call, "POST", "/mutate/kubernetesnodes", review(pool()))).response
        assert response["allowed"] is True and response["patchType"] == "JSONPatch"
        old = (
            await asyncio.to_thread(
                call,
                "POST",
                "/validate/workerclasses",
                review(None, operation="DELETE", old=worker_class("talos-example-r1", bootstrap="talos")),
            )
        ).response
        assert old["allowed"] is False and old["status"]["reason"] == "ClassInUse"
        await asyncio.to_thread(client.close)
    finally:
        await server.stop()


class FlakyClient:
    """A client whose first watch of each resource breaks (as on 410 Gone); lists count calls."""

    def __init__(self, objects: list[dict[str, Any]]) -> None:
        self.objects = objects
        self.lists: dict[str, int] = {}
        self.watches: dict[str, int] = {}

    def list(self, resource: Any, **scope: Any) -> Any:
        kind = resource._api_info.resource.kind
        self.lists[kind] = self.lists.get(kind, 0) + 1
        items = [obj for obj in self.objects if obj["kind"] == kind]

        class Listing:
            resourceVersion = "7"

            async def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
                for item in items:
                    yield item

        return Listing()

    async def watch(self, resource: Any, **scope: Any) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        kind = resource._api_info.resource.kind
        self.watches[kind] = self.watches.get(kind, 0) + 1
        if self.watches[kind] == 1:
            if kind == "WorkerClass":
                self.objects.append(worker_class("late", bootstrap="talos"))  # missed while the watch was down
            raise RuntimeError("410 Gone")
        await asyncio.Event().wait()  # a quiet, healthy watch
        yield "ADDED", {}  # pragma: no cover


async def test_broken_watch_is_followed_by_a_fresh_list() -> None:
    client = FlakyClient(example_objects())
    cache = ClusterCache(client, retry_delay=0.01)
    await cache.start()
    try:
        await eventually(lambda: cache.state is not None and cache.state.worker_class("late") is not None)
        assert client.lists["WorkerClass"] == 2 and client.watches["WorkerClass"] == 2
    finally:
        await cache.stop()


async def test_events_that_change_nothing_read_are_dropped() -> None:
    """A status write, a managedFields or resourceVersion bump is dropped before it touches the State;
    a change to what is read makes a new snapshot, and the one a request held stays as it was."""
    from workerclass.adapters.kube import trimmed

    releases = next(watched for watched in WATCHED if watched.kind == "HelmRelease")
    cache = ClusterCache(object())
    objects = example_objects()
    for watched in WATCHED:
        cache._stores[watched.kind] = {}
        cache._listed.add(watched.kind)
    for obj in objects:
        watched = BY_KIND[obj["kind"]]
        key = (obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
        cache._stores[watched.kind][key] = trimmed(watched.kind, obj)
    cache._rebuild()
    first = cache.state
    assert first is not None
    release = next(obj for obj in objects if obj["kind"] == "HelmRelease")
    key = (release["metadata"]["namespace"], release["metadata"]["name"])
    noisy = json.loads(json.dumps(release))
    noisy["metadata"].update(resourceVersion="99", managedFields=[{"manager": "helm-controller"}])
    noisy["status"] = {"conditions": [{"type": "Ready", "status": "True"}]}
    noisy["spec"]["interval"] = "10m"
    items = cache._stores["HelmRelease"]
    cache._event(releases, items, key, trimmed("HelmRelease", noisy))
    assert (cache.state, cache.applied, cache.dropped) == (first, 0, 1)
    noisy["spec"]["values"]["maxReplicas"] = 7
    cache._event(releases, items, key, trimmed("HelmRelease", noisy))
    state = cache.state
    assert state is not None and state is not first and cache.applied == 1
    owner = key[1].removeprefix("kubernetes-nodes-")
    assert state.stored_values(key[0], owner)["maxReplicas"] == 7  # type: ignore[index]
    assert first.stored_values(key[0], owner)["maxReplicas"] == 3  # type: ignore[index]
    cache._event(releases, items, key, None)
    assert cache.state is not None and cache.state.backing_values.get((key[0], owner)) is None


async def test_the_cache_says_which_objects_made_each_new_state() -> None:
    """``changed_since``: the objects whose events made the snapshots after a generation, so the
    worker controller reconciles the pools they touch; ``None`` across a rebuild or a new chart
    (anything may differ), and beyond what the log keeps."""
    from workerclass.adapters.kube import CHANGE_LOG, trimmed
    from workerclass.chart.source import ChartSource

    releases = next(watched for watched in WATCHED if watched.kind == "HelmRelease")
    cache = ClusterCache(object())
    objects = example_objects()
    for watched in WATCHED:
        cache._stores[watched.kind] = {}
        cache._listed.add(watched.kind)
    for obj in objects:
        watched = BY_KIND[obj["kind"]]
        key = (obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
        cache._stores[watched.kind][key] = trimmed(watched.kind, obj)
    cache._rebuild()
    synced = cache.generation
    assert cache.changed_since(synced) == set()
    assert cache.changed_since(synced - 1) is None  # the rebuild: everything
    release = next(obj for obj in objects if obj["kind"] == "HelmRelease")
    key = (release["metadata"]["namespace"], release["metadata"]["name"])
    changed = json.loads(json.dumps(release))
    changed["spec"]["values"]["maxReplicas"] = 7
    items = cache._stores["HelmRelease"]
    cache._event(releases, items, key, trimmed("HelmRelease", changed))
    assert cache.changed_since(synced) == {("HelmRelease", *key)}
    noisy = json.loads(json.dumps(changed))
    noisy["metadata"]["resourceVersion"] = "99"  # dropped: no new State, nothing said
    cache._event(releases, items, key, trimmed("HelmRelease", noisy))
    assert cache.changed_since(synced) == {("HelmRelease", *key)}
    after = cache.generation
    cache.set_chart(ChartSource.shipped())
    assert cache.changed_since(after) is None
    for replicas in range(CHANGE_LOG + 1):  # more than the log keeps
        changed = json.loads(json.dumps(changed))
        changed["spec"]["values"]["maxReplicas"] = 4 + replicas % 2
        cache._event(releases, items, key, trimmed("HelmRelease", changed))
    assert cache.generation > after + CHANGE_LOG
    assert cache.changed_since(after + 1) is None
    assert cache.changed_since(cache.generation - 1) == {("HelmRelease", *key)}


OPTIONAL = ("ComputePlane", "VirtualMachineClusterInstancetype")


@pytest_asyncio.fixture
async def quick(kmock: kmock.KubernetesEmulator) -> AsyncIterator[ClusterCache]:
    """A cache whose watches are given up after 1.5 s of silence (so a removed group is listed soon)."""
    client = kmock_client(kmock)
    cache = ClusterCache(client, retry_delay=0.05, max_retry_delay=0.2, watch_timeout=1, watch_margin=0.5)
    yield cache
    await cache.stop()
    await client.close()


def planes(cache: ClusterCache) -> set[str]:
    return set() if cache.state is None else {name for _, name in cache.state.compute_planes}


async def test_unserved_optional_apis_read_as_empty_until_they_are_served(
    kmock: kmock.KubernetesEmulator, cache: ClusterCache, caplog: pytest.LogCaptureFixture
) -> None:
    """ComputePlane and the instance types not served (an older Cozystack, no KubeVirt): the cache
    syncs, is ready, says why in ``warnings`` and once in the log; served later, their objects arrive."""
    seed(kmock, [obj for obj in example_objects() if obj["kind"] not in OPTIONAL], skip=OPTIONAL)
    await cache.start()
    state = await cache.wait_synced(5)
    assert cache.reason == "" and state.compute_planes == {}
    assert [warning.split(":")[0] for warning in cache.warnings] == [
        "computeplanes.apps.cozystack.io",
        "virtualmachineclusterinstancetypes.instancetype.kubevirt.io",
    ]
    assert all("not served by the API server (404" in line and "read as empty" in line for line in cache.warnings)
    assert cache.staleness() == ()  # a platform fact: said in /readyz notes and a metric, not to every writer
    assert cache.notes == cache.warnings
    assert cache.absent == {name: "not_served" for name in (warning.split(":")[0] for warning in cache.warnings)}
    await asyncio.sleep(0.5)  # several probes, each answered 404: still one warning in the log
    said = [
        record
        for record in caplog.records
        if record.name == "workerclass.kube" and "computeplanes" in record.getMessage()
    ]
    assert len(said) == 1 and said[0].levelname == "WARNING"

    planes_resource = resource_of(BY_KIND["ComputePlane"])
    kmock.resources[planes_resource] = kmock.ResourceInfo(kind="ComputePlane", namespaced=True)
    kmock.objects[planes_resource, "tenant-example", "plane"] = compute_plane("plane", workers={"minReplicas": 1})
    await eventually(lambda: planes(cache) == {"plane"})
    assert [warning.split(":")[0] for warning in cache.warnings] == [
        "virtualmachineclusterinstancetypes.instancetype.kubevirt.io"
    ]
    assert cache.reason == ""


async def test_an_optional_api_that_goes_away_is_dropped_and_not_stale(
    kmock: kmock.KubernetesEmulator, quick: ClusterCache
) -> None:
    """The ComputePlane CRD removed after the sync: its objects leave the State, the cache stays
    ready and says so; a 403 (RBAC hiding the group) reads the same."""
    objects = [*example_objects(), compute_plane("plane", workers={"minReplicas": 1})]
    seed(kmock, [obj for obj in objects if obj["kind"] != "VirtualMachineClusterInstancetype"])
    await quick.start()
    await quick.wait_synced(5)
    await eventually(lambda: planes(quick) == {"plane"})
    assert quick.warnings == ()

    # the CRD removed: its objects go with it (no watch event), the group is not served
    del kmock.objects[resource_of(BY_KIND["ComputePlane"]), "tenant-example", "plane"]
    del kmock.resources[resource_of(BY_KIND["ComputePlane"])]
    await eventually(lambda: planes(quick) == set())
    assert quick.reason == "" and quick.state is not None
    assert any(warning.startswith("computeplanes.apps.cozystack.io: not served") for warning in quick.warnings)

    forbidden = {"apiVersion": "v1", "kind": "Status", "status": "Failure", "code": 403, "reason": "Forbidden"}
    kmock[kmock_module.action.LIST, resource_of(BY_KIND["ComputePlane"])] << 403 << forbidden
    await eventually(lambda: any("hidden by RBAC (403" in warning for warning in quick.warnings))
    assert quick.reason == "" and planes(quick) == set()


async def test_a_required_api_answered_403_is_a_failure(kmock: kmock.KubernetesEmulator, cache: ClusterCache) -> None:
    seed(kmock, example_objects())
    forbidden = {"apiVersion": "v1", "kind": "Status", "status": "Failure", "code": 403, "reason": "Forbidden"}
    kmock[kmock_module.action.LIST, resource_of(BY_KIND["HelmRelease"])] << 403 << forbidden
    await cache.start()
    await eventually(lambda: "helmreleases.helm.toolkit.fluxcd.io: 403" in cache.reason)
    await asyncio.sleep(0.2)
    assert cache.state is None and cache.warnings == ()
    assert "waiting for the first list of helmreleases.helm.toolkit.fluxcd.io" in cache.reason


async def test_a_new_state_is_announced_and_a_burst_once(kmock: kmock.KubernetesEmulator) -> None:
    """``changed`` wakes a waiter for the first State and for a watch event; events within the
    debounce of the first are announced once, while ``state`` itself is never held back."""
    seed(kmock, example_objects())
    client = kmock_client(kmock)
    cache = ClusterCache(client, retry_delay=0.05, max_retry_delay=0.2, debounce=0.5)
    announced: list[int] = []

    async def follow() -> None:
        seen = cache.published
        while True:
            seen = await cache.changed(seen)
            announced.append(seen)

    follower = asyncio.create_task(follow())
    try:
        await cache.start()
        await cache.wait_synced(5)
        await eventually(lambda: announced == [1], limit=5)  # the first State
        classes = BY_KIND["WorkerClass"]
        for name in ("burst-a", "burst-b", "burst-c"):
            reply = await kmock.post(url_of(kmock, classes), json=worker_class(name, bootstrap="talos"))
            assert reply.status in (200, 201)
        await eventually(lambda: cache.state is not None and cache.state.worker_class("burst-c") is not None)
        assert announced == [1]  # the State is current; the wake-up waits for the burst to end
        await eventually(lambda: len(announced) == 2, limit=5)
        assert announced == [1, 4] and cache.generation == 4  # one wake-up for three new States
        await asyncio.sleep(0.7)  # nothing changes: nothing is announced
        assert announced == [1, 4]
    finally:
        follower.cancel()
        await cache.stop()
        await client.close()


class LaggingClient:
    """A client whose watches stay quiet: what is written after the first lists reaches the cache
    only through a list. Lists record their scope; ``failing`` makes every later list fail."""

    def __init__(self, objects: list[dict[str, Any]]) -> None:
        self.objects = objects
        self.lists: list[tuple[str, dict[str, Any]]] = []
        self.failing = False

    def list(self, resource: Any, **scope: Any) -> Any:
        kind = resource._api_info.resource.kind
        self.lists.append((kind, {key: value for key, value in scope.items() if key != "chunk_size"}))
        namespace = scope.get("namespace", "*")
        items = [
            obj for obj in self.objects if obj["kind"] == kind and namespace in ("*", obj["metadata"].get("namespace"))
        ]
        failing = self.failing

        class Listing:
            resourceVersion = "7"

            async def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
                if failing:
                    raise RuntimeError("503 ServiceUnavailable")
                for item in items:
                    yield item

        return Listing()

    async def watch(self, resource: Any, **scope: Any) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        await asyncio.Event().wait()  # a healthy watch that has not delivered the newest writes yet
        yield "ADDED", {}  # pragma: no cover


def live_reads(server: WebhookServer, webhook: str, outcome: str) -> float:
    value = server.metrics.registry.get_sample_value(
        "workerclass_webhook_live_reads_total", {"webhook": webhook, "outcome": outcome}
    )
    return value or 0.0


async def test_a_decision_resting_on_absence_is_confirmed_live(tmp_certs: CertFiles) -> None:
    """A pool created right after its class, a class deleted right after a pool selected it: the
    watches have not delivered those writes yet, and the webhook answers as the API server holds
    them, not as the cache does. A denial that stands is read once, in the pool's namespace only."""
    client = LaggingClient(example_objects())
    cache = ClusterCache(client, retry_delay=0.01)
    server = WebhookServer(cache, tls=ReloadingContext(tmp_certs.cert, tmp_certs.key), settings=fast_settings())
    await server.start()
    try:
        await cache.wait_synced(5)
        https = Client(server.port, tmp_certs.client_context())

        def call(path: str, body: Any) -> Any:
            return https.post_review(path, body).response

        listed = len(client.lists)
        answer = await asyncio.to_thread(call, "/validate/kubernetesnodes", review(pool(workerClassName="nowhere")))
        assert answer["allowed"] is False and answer["status"]["reason"] == "ClassNotFound"
        assert live_reads(server, "validate-kubernetesnodes", "same") == 1
        assert client.lists[listed:] == [("WorkerClass", {})]

        client.objects.append(worker_class("talos-late", bootstrap="talos"))  # written, not yet watched
        assert cache.state is not None and cache.state.worker_class("talos-late") is None
        listed = len(client.lists)
        answer = await asyncio.to_thread(call, "/validate/kubernetesnodes", review(pool(workerClassName="talos-late")))
        assert answer["allowed"] is True, answer
        assert live_reads(server, "validate-kubernetesnodes", "behind") == 1
        assert client.lists[listed:] == [("WorkerClass", {})]
        assert cache.state.worker_class("talos-late") is None  # the stores stay the watches'

        listed = len(client.lists)
        stray = pool("stray", cluster="elsewhere", workerClassName="talos")
        answer = await asyncio.to_thread(call, "/validate/kubernetesnodes", review(stray))
        assert answer["allowed"] is False and answer["status"]["reason"] == "ClusterNotFound"
        namespace = stray["metadata"]["namespace"]
        assert sorted(kind for kind, _ in client.lists[listed:]) == ["ComputePlane", "Kubernetes"]
        assert all(scope["namespace"] == namespace for _, scope in client.lists[listed:])

        # a class nothing selected when the watches last spoke, selected by a pool since
        client.objects.append(worker_class("talos-spare", bootstrap="talos"))
        selecting = pool("late-selects", workerClassName="talos-spare")
        await asyncio.to_thread(call, "/validate/kubernetesnodes", review(selecting))  # the cache learns nothing
        client.objects.append(selecting)
        listed = len(client.lists)
        gone = review(None, operation="DELETE", old=worker_class("talos-spare", bootstrap="talos"))
        answer = await asyncio.to_thread(call, "/validate/workerclasses", gone)
        assert answer["allowed"] is False and answer["status"]["reason"] == "ClassInUse", answer
        assert sorted(kind for kind, _ in client.lists[listed:]) == ["HelmRelease", "KubernetesNodes"]
        assert live_reads(server, "validate-workerclasses", "behind") == 1

        # a class whose pools the cache holds, deleted since (the watches have not said so): it can go
        def selects(obj: dict[str, Any], name: str) -> bool:
            values = obj["spec"].get("values", {}) if obj["kind"] == "HelmRelease" else obj["spec"]
            return obj["kind"] in ("KubernetesNodes", "HelmRelease") and values.get("workerClassName") == name

        used = review(None, operation="DELETE", old=worker_class("talos-example-r1", bootstrap="talos"))
        held = [obj for obj in client.objects if selects(obj, "talos-example-r1")]
        assert held and cache.state.pools_selecting("talos-example-r1")  # the cache still holds them
        for obj in held:
            client.objects.remove(obj)
        answer = await asyncio.to_thread(call, "/validate/workerclasses", used)
        assert answer["allowed"] is True, answer
        assert live_reads(server, "validate-workerclasses", "behind") == 2

        # the API fails the read: the cache's decision is answered, as before (the class is unknown to it)
        client.failing = True
        answer = await asyncio.to_thread(call, "/validate/kubernetesnodes", review(pool(workerClassName="talos-late")))
        assert answer["allowed"] is False and answer["status"]["reason"] == "ClassNotFound"
        assert live_reads(server, "validate-kubernetesnodes", "failed") == 1
        await asyncio.to_thread(https.close)
    finally:
        await server.stop()


async def test_the_controllers_pool_lister_reads_the_api_not_the_cache() -> None:
    """The finalizer is released only on what the API server holds: a pool that selected the class
    after the watches last spoke holds it, and one deleted since does not."""
    from workerclass.controller import CachePoolLister

    client = LaggingClient(example_objects())
    cache = ClusterCache(client, retry_delay=0.01)
    await cache.start()
    try:
        await cache.wait_synced(5)
        lister = CachePoolLister(cache)
        assert await lister.selecting("talos-spare") == []
        client.objects.append(pool("late-selects", workerClassName="talos-spare"))
        assert cache.state is not None and not cache.state.pools_selecting("talos-spare")
        assert await lister.selecting("talos-spare") == ["tenant-example/example-late-selects"]

        held = [obj for obj in client.objects if obj["kind"] == "KubernetesNodes"]
        assert cache.state.pools_selecting("talos-example-r1")
        for obj in held:
            client.objects.remove(obj)
        client.objects[:] = [
            obj
            for obj in client.objects
            if not (obj["kind"] == "HelmRelease" and obj["spec"]["values"].get("workerClassName") == "talos-example-r1")
        ]
        assert await lister.selecting("talos-example-r1") == []

        client.failing = True
        with pytest.raises(RuntimeError):
            await lister.selecting("talos-spare")
    finally:
        await cache.stop()


async def test_forged_class_deletes_cannot_make_the_webhook_list_the_cluster_per_request(tmp_certs: CertFiles) -> None:
    """Anyone who reaches the webhook's port can send WorkerClass DELETE reviews; each would list
    every pool in the cluster. Past the bucket the cache's decision is answered, counted."""
    client = LaggingClient(example_objects())
    cache = ClusterCache(client, retry_delay=0.01)
    settings = fast_settings(live_read_rate=0.001, live_read_burst=3)
    server = WebhookServer(cache, tls=ReloadingContext(tmp_certs.cert, tmp_certs.key), settings=settings)
    await server.start()
    try:
        await cache.wait_synced(5)
        https = Client(server.port, tmp_certs.client_context())
        used = review(None, operation="DELETE", old=worker_class("talos-example-r1", bootstrap="talos"))
        listed = len(client.lists)
        answers = [
            (await asyncio.to_thread(https.post_review, "/validate/workerclasses", used)).response for _ in range(20)
        ]
        assert all(answer["allowed"] is False and answer["status"]["reason"] == "ClassInUse" for answer in answers)
        pool_lists = [kind for kind, _ in client.lists[listed:]]
        assert len(pool_lists) == 3 * 2  # three reads (KubernetesNodes and HelmRelease each), then none
        assert live_reads(server, "validate-workerclasses", "limited") == 17
        await asyncio.to_thread(https.close)
    finally:
        await server.stop()
