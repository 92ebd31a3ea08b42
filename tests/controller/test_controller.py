"""The WorkerClass controller (kopf) against kmock, a fake Kubernetes API over HTTP.

The real kopf operator and the real cluster cache (lightkube) run against the emulator: status
written in API.md's shape, kept current as pools come and go, and a custom class held by its
finalizer while live pools select it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import kmock
import kopf
import pytest
import pytest_asyncio
from lightkube import AsyncClient, KubeConfig

from workerclass.adapters.folder import load_state
from workerclass.adapters.kube import WATCHED, ClusterCache
from workerclass.api import CONTROLLER_READS, Resource
from workerclass.controller import (
    FINALIZER,
    ClassController,
    ControllerSettings,
    LightkubePoolLister,
    LightkubeStatusWriter,
)
from workerclass.state import State

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

pytestmark = pytest.mark.asyncio

BY_KIND = {watched.kind: watched for watched in WATCHED}
CLASSES = BY_KIND["WorkerClass"]
NODES = BY_KIND["KubernetesNodes"]
NS = "tenant-example"


def resource_of(watched: Resource) -> kmock.resource:
    return kmock.resource(watched.group, watched.version, watched.plural)


def url_of(watched: Resource, namespace: str | None = None, name: str | None = None) -> str:
    prefix = f"/apis/{watched.group}/{watched.version}"
    url = f"{prefix}/namespaces/{namespace}/{watched.plural}" if namespace else f"{prefix}/{watched.plural}"
    return f"{url}/{name}" if name else url


def seed(
    emulator: kmock.KubernetesEmulator, objects: list[dict[str, Any]], *, skip: tuple[str, ...] = ("ComputePlane",)
) -> None:
    """Declare the resources (the controller needs no ComputePlane CRD: it is left out) and store ``objects``."""
    for watched in WATCHED:
        if watched.kind in skip:
            continue
        emulator.resources[resource_of(watched)] = kmock.ResourceInfo(
            kind=watched.kind,
            namespaced=watched.namespaced,
            verbs={"get", "list", "watch", "create", "patch", "update", "delete"},
            subresources={"status"} if watched.kind == "WorkerClass" else set(),
        )
    # kopf's own backbone: it discovers CRDs and namespaces before it watches anything
    emulator.resources[kmock.resource("apiextensions.k8s.io", "v1", "customresourcedefinitions")] = kmock.ResourceInfo(
        kind="CustomResourceDefinition", namespaced=False, verbs={"list", "watch"}
    )
    emulator.resources[kmock.resource("", "v1", "namespaces")] = kmock.ResourceInfo(
        kind="Namespace", namespaced=False, verbs={"list", "watch"}
    )
    for obj in objects:
        watched = BY_KIND[obj["kind"]]
        metadata = obj["metadata"]
        emulator.objects[resource_of(watched), metadata.get("namespace"), metadata["name"]] = obj


def example_objects() -> list[dict[str, Any]]:
    objects = [json.loads(json.dumps(dict(record.obj))) for record in load_state(EXAMPLES).objects]
    for obj in objects:
        obj["metadata"].setdefault("generation", 1)
        obj["metadata"].setdefault("resourceVersion", "1")
        obj["metadata"].setdefault("uid", str(uuid.uuid4()))  # kopf keeps per-object memory by uid
    return objects


def stored(emulator: kmock.KubernetesEmulator, name: str) -> dict[str, Any] | None:
    key = (resource_of(CLASSES), None, name)
    if key not in emulator.objects or emulator.objects[key].deleted:
        return None
    return dict(emulator.objects[key].raw)


async def eventually(check: Callable[[], Any], limit: float = 10.0) -> Any:
    async with asyncio.timeout(limit):
        while True:
            value = check()
            if value:
                return value
            await asyncio.sleep(0.02)


@contextlib.asynccontextmanager
async def running(
    emulator: kmock.KubernetesEmulator, source: Callable[[ClusterCache], Any] | None = None
) -> AsyncIterator[ClassController]:
    """The real controller (kopf operator, status loop, cluster cache) against ``emulator``.

    ``source`` may wrap the cache to feed the controller a different view of the cluster.
    """
    config = KubeConfig.from_dict(
        {
            "clusters": [{"name": "kmock", "cluster": {"server": str(emulator.url)}}],
            "users": [{"name": "controller", "user": {"token": "test-token"}}],
            "contexts": [{"name": "kmock", "context": {"cluster": "kmock", "user": "controller"}}],
            "current-context": "kmock",
        }
    )
    client = AsyncClient(config=config, trust_env=False)
    cache = ClusterCache(client, resources=CONTROLLER_READS, retry_delay=0.05, max_retry_delay=0.2)
    await cache.start()

    def login(**_: Any) -> kopf.ConnectionInfo:
        return kopf.ConnectionInfo(server=str(emulator.url).rstrip("/"), token="test-token")

    settings = ControllerSettings(poll_interval=0.05, retain_recheck=0.2, retry_delay=0.1)
    controller = ClassController(
        source(cache) if source is not None else cache,
        LightkubeStatusWriter(client),
        LightkubePoolLister(client),
        settings=settings,
        login=login,
    )
    stop = asyncio.Event()
    ready = asyncio.Event()
    task = asyncio.create_task(controller.run(stop_flag=stop, ready_flag=ready))
    try:
        await asyncio.wait_for(ready.wait(), 10)
        yield controller
    finally:
        stop.set()
        with contextlib.suppress(asyncio.CancelledError):  # kopf ends its own tasks by cancelling them
            await asyncio.wait_for(task, 15)
        await cache.stop()
        await client.close()


@pytest_asyncio.fixture
async def operator(kmock: kmock.KubernetesEmulator) -> AsyncIterator[kmock.KubernetesEmulator]:
    seed(kmock, example_objects())
    async with running(kmock):
        yield kmock


def conditions(obj: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in ((obj or {}).get("status") or {}).get("conditions") or []}


def pools_of(emulator: kmock.KubernetesEmulator, name: str) -> int | None:
    obj = stored(emulator, name)
    return ((obj or {}).get("status") or {}).get("pools")


def worker_class(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "cozystack.io/v1alpha1",
        "kind": "WorkerClass",
        "metadata": {"name": name, "generation": 1, "resourceVersion": "1", "uid": str(uuid.uuid4())},
        "spec": spec,
    }


def pool(name: str, class_name: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps.cozystack.io/v1alpha1",
        "kind": "KubernetesNodes",
        "metadata": {"name": name, "namespace": NS, "resourceVersion": "1", "uid": str(uuid.uuid4())},
        "spec": {"cluster": "example", "version": "v1.35", "workerClassName": class_name},
    }


async def test_status_in_the_api_shape(operator: kmock.KubernetesEmulator) -> None:
    obj = await eventually(
        lambda: len(conditions(stored(operator, "talos-example-r1"))) == 2 and stored(operator, "talos-example-r1")
    )
    status = obj["status"]
    assert set(status) >= {"conditions", "pools"}
    assert status["pools"] == 1
    accepted, in_use = status["conditions"]
    assert set(accepted) == set(in_use) == {"type", "status", "reason", "message", "observedGeneration"}
    assert (accepted["type"], accepted["status"], accepted["reason"]) == ("Accepted", "True", "Valid")
    assert (in_use["type"], in_use["status"], in_use["reason"]) == ("InUse", "True", "PoolsSelectClass")
    assert "tenant-example/example-talos" in in_use["message"]
    assert accepted["observedGeneration"] == 1
    assert obj["spec"] == {"bootstrap": "talos", "talos": {"version": "v1.13.6"}}  # status only: the spec is untouched
    await eventually(lambda: pools_of(operator, "kairos-example-v1-35-6-r1") == 1)


async def test_pool_count_follows_pools(operator: kmock.KubernetesEmulator) -> None:
    await eventually(lambda: pools_of(operator, "talos-example-r1") == 1)
    for name in ("second", "third"):
        reply = await operator.post(url_of(NODES, NS), json=pool(name, "talos-example-r1"))
        assert reply.status in (200, 201)
    await eventually(lambda: pools_of(operator, "talos-example-r1") == 3)
    reply = await operator.delete(url_of(NODES, NS, "second"))
    assert reply.status == 200
    await eventually(lambda: pools_of(operator, "talos-example-r1") == 2)
    assert "tenant-example/third" in conditions(stored(operator, "talos-example-r1"))["InUse"]["message"]


async def test_a_class_that_breaks_the_rules_is_not_accepted(operator: kmock.KubernetesEmulator) -> None:
    broken = worker_class("broken", bootstrap="kairos", image={"kubernetesVersion": "v1.35.6"})
    reply = await operator.post(url_of(CLASSES), json=broken)  # as if the webhook had been down
    assert reply.status in (200, 201)
    accepted = await eventually(lambda: conditions(stored(operator, "broken")).get("Accepted"))
    assert (accepted["status"], accepted["reason"]) == ("False", "IncompleteImage")
    assert "spec.image.reference" in accepted["message"]
    in_use = conditions(stored(operator, "broken"))["InUse"]
    assert (in_use["status"], in_use["reason"]) == ("False", "NoPools")
    assert pools_of(operator, "broken") == 0


async def test_a_custom_class_is_held_while_pools_select_it(operator: kmock.KubernetesEmulator) -> None:
    reply = await operator.post(url_of(CLASSES), json=worker_class("talos-r2", bootstrap="talos"))
    assert reply.status in (200, 201)
    await eventually(
        lambda: FINALIZER in ((stored(operator, "talos-r2") or {}).get("metadata") or {}).get("finalizers", [])
    )
    reply = await operator.post(url_of(NODES, NS), json=pool("on-r2", "talos-r2"))
    assert reply.status in (200, 201)
    await eventually(lambda: pools_of(operator, "talos-r2") == 1)

    reply = await operator.delete(url_of(CLASSES, name="talos-r2"))
    assert reply.status == 200
    await asyncio.sleep(1.0)  # several retry intervals: the finalizer stays while the pool selects the class
    held = stored(operator, "talos-r2")
    assert held is not None and held["metadata"].get("deletionTimestamp")
    assert FINALIZER in held["metadata"]["finalizers"]

    reply = await operator.delete(url_of(NODES, NS, "on-r2"))
    assert reply.status == 200
    await eventually(lambda: stored(operator, "talos-r2") is None)


async def test_an_unused_custom_class_is_released_and_builtins_carry_no_finalizer(
    operator: kmock.KubernetesEmulator,
) -> None:
    for obj in (worker_class("talos", bootstrap="talos"), worker_class("spare", bootstrap="talos")):
        reply = await operator.post(url_of(CLASSES), json=obj)
        assert reply.status in (200, 201)
    await eventually(
        lambda: FINALIZER in ((stored(operator, "spare") or {}).get("metadata") or {}).get("finalizers", [])
    )
    await eventually(lambda: pools_of(operator, "talos") == 0)
    assert FINALIZER not in (stored(operator, "talos") or {})["metadata"].get("finalizers", [])
    reply = await operator.delete(url_of(CLASSES, name="spare"))
    assert reply.status == 200
    await eventually(lambda: stored(operator, "spare") is None)


class Frozen:
    """A cache view stuck at its first synced State: a watch that fell behind or is being re-listed."""

    def __init__(self, cache: ClusterCache) -> None:
        self.cache = cache
        self.frozen: State | None = None

    @property
    def state(self) -> State | None:
        if self.frozen is None and self.cache.state is not None:
            self.frozen = self.cache.state
        return self.frozen

    @property
    def reason(self) -> str:
        return self.cache.reason


async def test_a_stale_cache_never_releases_a_class_a_new_pool_selects(kmock: kmock.KubernetesEmulator) -> None:
    seed(kmock, [*example_objects(), worker_class("talos-r3", bootstrap="talos")])
    async with running(kmock, source=Frozen):
        await eventually(
            lambda: FINALIZER in ((stored(kmock, "talos-r3") or {}).get("metadata") or {}).get("finalizers", [])
        )
        # the pool appears after the controller's view froze: only the API server knows it
        reply = await kmock.post(url_of(NODES, NS), json=pool("late", "talos-r3"))
        assert reply.status in (200, 201)
        reply = await kmock.delete(url_of(CLASSES, name="talos-r3"))
        assert reply.status == 200
        await asyncio.sleep(1.0)
        held = stored(kmock, "talos-r3")
        assert held is not None and FINALIZER in held["metadata"]["finalizers"]
        reply = await kmock.delete(url_of(NODES, NS, "late"))
        assert reply.status == 200
        await eventually(lambda: stored(kmock, "talos-r3") is None)


class Unsynced:
    def __init__(self, cache: ClusterCache) -> None:
        self.cache = cache

    state = None

    @property
    def reason(self) -> str:
        return "the cluster cache has not synced: waiting for the first list of workerclasses.cozystack.io"


async def test_nothing_is_written_or_released_before_the_cache_syncs(kmock: kmock.KubernetesEmulator) -> None:
    seed(kmock, [*example_objects(), worker_class("spare", bootstrap="talos")])
    async with running(kmock, source=Unsynced) as controller:
        await eventually(
            lambda: FINALIZER in ((stored(kmock, "spare") or {}).get("metadata") or {}).get("finalizers", [])
        )
        reply = await kmock.delete(url_of(CLASSES, name="spare"))
        assert reply.status == 200
        await asyncio.sleep(0.8)
        assert stored(kmock, "spare") is not None  # not released: the controller cannot know
        assert controller.writes == 0
        assert not conditions(stored(kmock, "talos-example-r1"))


# --------------------------------------------------------------------------- the status loop on its own


class RecordingWriter:
    def __init__(self, *, failing: tuple[str, ...] = (), missing: tuple[str, ...] = ()) -> None:
        self.calls: list[str] = []
        self.failing, self.missing = failing, missing

    async def write(self, name: str, status: dict[str, Any]) -> None:
        self.calls.append(name)
        if name in self.missing:
            error = RuntimeError("404 Not Found")
            error.status = type("Status", (), {"code": 404})()  # type: ignore[attr-defined]
            raise error
        if name in self.failing:
            raise RuntimeError("403 Forbidden")


class NoPools:
    async def selecting(self, name: str) -> list[str]:
        return []


def offline(writer: RecordingWriter) -> ClassController:
    state = State.from_objects([*example_objects(), worker_class("a-first"), worker_class("z-last")])

    class Source:
        reason = ""

    source = Source()
    source.state = state  # type: ignore[attr-defined]
    return ClassController(source, writer, NoPools())  # type: ignore[arg-type]


async def test_a_status_the_server_changed_is_not_rewritten_forever() -> None:
    """The cached status never matches (as if the server pruned a field): one write per class, not a loop."""
    writer = RecordingWriter()
    controller = offline(writer)
    state = controller.source.state
    assert state is not None
    assert await controller.refresh(state)
    first = list(writer.calls)
    assert "talos-example-r1" in first and "z-last" in first
    assert await controller.refresh(state)
    assert writer.calls == first


async def test_one_failing_class_does_not_starve_the_others() -> None:
    writer = RecordingWriter(failing=("a-first",), missing=("talos-example-r1",))
    controller = offline(writer)
    state = controller.source.state
    assert state is not None
    assert await controller.refresh(state) is False  # a-first is retried later
    assert "z-last" in writer.calls  # written although a-first failed before it
    writer.calls.clear()
    await controller.refresh(state)
    assert writer.calls == ["a-first"]  # only the failed one again; the missing one counts as done
