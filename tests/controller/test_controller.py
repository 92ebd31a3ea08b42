"""The WorkerClass controller against kmock, a fake Kubernetes API over HTTP, and against fakes.

The real controller loop and the real cluster cache (lightkube) run against the emulator: status
written in the contract's shape, kept current as pools come and go, and a custom class held by its
finalizer while live pools select it, the finalizer patched under a ``test`` of what was read. The
loop waits on the cache's announcements: a change is acted on with every timer set far away, and a
quiet cluster wakes nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import json
import logging
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import aiohttp.web
import jsonpatch
import kmock
import pytest
import pytest_asyncio
from lightkube import AsyncClient, KubeConfig

from tests.builders import PoolStatesLog
from workerclass.adapters.changes import Changes
from workerclass.adapters.folder import load_state
from workerclass.adapters.kube import WATCHED, ClusterCache
from workerclass.api import CONTROLLER_READS, Resource
from workerclass.controller import (
    FINALIZER,
    RETAINED,
    CachePoolLister,
    ClassController,
    ControllerSettings,
    LightkubeFinalizerWriter,
    LightkubeStatusWriter,
)
from workerclass.state import State

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

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
    for obj in objects:
        watched = BY_KIND[obj["kind"]]
        metadata = obj["metadata"]
        emulator.objects[resource_of(watched), metadata.get("namespace"), metadata["name"]] = obj


def example_objects() -> list[dict[str, Any]]:
    objects = [json.loads(json.dumps(dict(record.obj))) for record in load_state(EXAMPLES).objects]
    for obj in objects:
        obj["metadata"].setdefault("generation", 1)
        obj["metadata"].setdefault("resourceVersion", "1")
        obj["metadata"].setdefault("uid", str(uuid.uuid4()))
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


def _merge_patch(old: Any, new: Any) -> Any:
    """The merge patch that turns ``old`` into ``new`` (None removes a key), the form kmock applies."""
    if not isinstance(old, dict) or not isinstance(new, dict):
        return new
    patch = {key: None for key in old.keys() - new.keys()}
    for key, value in new.items():
        if old.get(key) != value:
            patch[key] = _merge_patch(old.get(key), value)
    return patch


class Emulator(kmock.KubernetesEmulator):  # type: ignore[misc]
    """kmock plus JSON patch (RFC 6902) as the API server applies it: kmock merges every patch body.

    A failed ``test`` is answered 422 and changes nothing; a ``test`` for null passes on an absent
    member (the API server's JSON patch does the same: the finalizer's guard relies on it).
    """

    async def _handle(self, request: Any) -> aiohttp.web.StreamResponse:
        if request.action == kmock.action.UPDATE and isinstance(request.data, list) and request.resource is not None:
            key = (request.resource, request.namespace, request.name)
            found = self.objects[key] if key in self.objects else None  # noqa: SIM401 (kmock: no .get)
            if found is not None and not found.deleted:
                current = json.loads(json.dumps(dict(found.raw)))
                operations = []
                for operation in request.data:
                    if operation.get("op") == "test" and operation.get("value") is None:
                        pointer = jsonpatch.JsonPointer(operation["path"])
                        try:
                            pointer.resolve(current)
                        except jsonpatch.JsonPointerException:
                            continue  # absent, tested for null: passes
                    operations.append(operation)
                try:
                    patched = jsonpatch.apply_patch(current, operations)
                except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException):
                    self.refused.append(request.name)
                    # the API server's answer to a patch that does not apply: its generic 422, the
                    # reason (a failed test, a missing path) left out of the message
                    message = "the server rejected our request due to an error in our request"
                    status = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 422}
                    return aiohttp.web.json_response({**status, "reason": "Invalid", "message": message}, status=422)
                self.json_patches.append(request.data)
                # the same request object (kmock tracks requests by identity), carrying kmock's merge form
                object.__setattr__(request, "data", _merge_patch(current, patched))
        return await super()._handle(request)

    @property
    def json_patches(self) -> list[Any]:
        """The JSON patches applied."""
        if not hasattr(self, "_json_patches"):
            self._json_patches: list[Any] = []
        return self._json_patches

    @property
    def refused(self) -> list[str]:
        """The names of the objects whose JSON patch was refused (422)."""
        if not hasattr(self, "_refused"):
            self._refused: list[str] = []
        return self._refused


pytestmark = [pytest.mark.asyncio, pytest.mark.kmock(cls=Emulator)]


class Events:
    """Records the Warning Events the controller would post."""

    def __init__(self) -> None:
        self.posted: list[tuple[str, str, str]] = []
        #: the uid each Event named its class by
        self.uids: list[str] = []

    async def warn(self, name: str, reason: str, message: str, *, uid: str = "") -> None:
        self.posted.append((name, reason, message))
        self.uids.append(uid)


@contextlib.asynccontextmanager
async def running(
    emulator: kmock.KubernetesEmulator,
    source: Callable[[ClusterCache], Any] | None = None,
    settings: ControllerSettings | None = None,
) -> AsyncIterator[ClassController]:
    """The real controller (its loop, the cluster cache, lightkube's writers) against ``emulator``.

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
    controller = ClassController(
        source(cache) if source is not None else cache,
        LightkubeStatusWriter(client),
        CachePoolLister(cache),
        finalizers=LightkubeFinalizerWriter(client),
        events=Events(),
        settings=settings or ControllerSettings(retain_recheck=0.2, retry_delay=0.1),
    )
    stop = asyncio.Event()
    task = asyncio.create_task(controller.run(stop=stop))
    try:
        yield controller
    finally:
        stop.set()
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
    assert set(accepted) == set(in_use) == {
        "type", "status", "reason", "message", "observedGeneration", "lastTransitionTime",
    }  # fmt: skip
    assert datetime.datetime.fromisoformat(accepted["lastTransitionTime"].replace("Z", "+00:00")).tzinfo
    assert (accepted["type"], accepted["status"], accepted["reason"]) == ("Accepted", "True", "Valid")
    assert (in_use["type"], in_use["status"], in_use["reason"]) == ("InUse", "True", "PoolsSelectClass")
    assert in_use["message"].startswith("1 live pool(s) in 1 namespace(s) select this class")
    assert "tenant-example" not in in_use["message"]  # a class is readable by every tenant: no names
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
    assert "2 live pool(s)" in conditions(stored(operator, "talos-example-r1"))["InUse"]["message"]


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


class CacheView:
    """The cache as the controller reads it; the views below change what one part of it shows."""

    def __init__(self, cache: ClusterCache) -> None:
        self.cache = cache

    @property
    def state(self) -> State | None:
        return self.cache.state

    @property
    def reason(self) -> str:
        return self.cache.reason

    @property
    def published(self) -> int:
        return self.cache.published

    async def changed(self, after: int) -> int:
        return await self.cache.changed(after)


class Lagging(CacheView):
    """A cache view that has not seen the pool ``late`` yet (a watch that fell behind or is being
    re-listed), and sees everything else."""

    @property
    def state(self) -> State | None:
        state = self.cache.state
        return state.without("KubernetesNodes", NS, "late") if state is not None else None


async def test_a_lagging_cache_never_releases_a_class_a_new_pool_selects(kmock: kmock.KubernetesEmulator) -> None:
    seed(kmock, [*example_objects(), worker_class("talos-r3", bootstrap="talos")])
    async with running(kmock, source=Lagging):
        await eventually(
            lambda: FINALIZER in ((stored(kmock, "talos-r3") or {}).get("metadata") or {}).get("finalizers", [])
        )
        # the pool the controller's view lacks: only the API server knows it
        reply = await kmock.post(url_of(NODES, NS), json=pool("late", "talos-r3"))
        assert reply.status in (200, 201)
        reply = await kmock.delete(url_of(CLASSES, name="talos-r3"))
        assert reply.status == 200
        await asyncio.sleep(1.0)  # several rechecks (0.2 s)
        held = stored(kmock, "talos-r3")
        assert held is not None and FINALIZER in held["metadata"]["finalizers"]
        reply = await kmock.delete(url_of(NODES, NS, "late"))
        assert reply.status == 200
        await eventually(lambda: stored(kmock, "talos-r3") is None)


class Unsynced:
    def __init__(self, cache: ClusterCache) -> None:
        self.cache = cache

    state = None
    published = 0

    @property
    def reason(self) -> str:
        return "the cluster cache has not synced: waiting for the first list of workerclasses.cozystack.io"

    async def changed(self, after: int) -> int:
        await asyncio.Event().wait()
        return after


async def test_nothing_is_written_or_released_before_the_cache_syncs(kmock: kmock.KubernetesEmulator) -> None:
    held = worker_class("spare", bootstrap="talos")
    held["metadata"]["finalizers"] = [FINALIZER]
    seed(kmock, [*example_objects(), held, worker_class("bare", bootstrap="talos")])
    async with running(kmock, source=Unsynced) as controller:
        reply = await kmock.delete(url_of(CLASSES, name="spare"))
        assert reply.status == 200
        await asyncio.sleep(0.8)
        assert stored(kmock, "spare") is not None  # not released: the controller cannot know
        assert FINALIZER not in (stored(kmock, "bare") or {})["metadata"].get("finalizers", [])
        assert controller.writes == 0 and controller.finalizer_writes == 0
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


# --------------------------------------------------------------------------- driven by events, not polls


class Counting(CacheView):
    """The cache, counting how often the controller reads its State (each read is one wake-up's work)."""

    def __init__(self, cache: ClusterCache) -> None:
        super().__init__(cache)
        self.reads = 0

    @property
    def state(self) -> State | None:
        self.reads += 1
        return self.cache.state


async def test_a_change_is_acted_on_at_once_and_a_quiet_cluster_wakes_nothing(
    kmock: kmock.KubernetesEmulator,
) -> None:
    """Every timer an hour away: what happens can only come from the cache's announcements."""
    seed(kmock, example_objects())
    views: list[Counting] = []

    def counting(cache: ClusterCache) -> Counting:
        views.append(Counting(cache))
        return views[0]

    hour = ControllerSettings(retain_recheck=3600, retry_delay=3600)
    async with running(kmock, source=counting, settings=hour) as controller:
        await eventually(lambda: pools_of(kmock, "talos-example-r1") == 1)
        await eventually(
            lambda: FINALIZER in (stored(kmock, "talos-example-r1") or {})["metadata"].get("finalizers", [])
        )
        await asyncio.sleep(0.3)  # the announcements of the controller's own writes come back through the watch
        reads, writes = views[0].reads, (controller.writes, controller.finalizer_writes)
        await asyncio.sleep(1.0)
        assert views[0].reads == reads  # not one wake-up in a quiet second
        assert (controller.writes, controller.finalizer_writes) == writes

        reply = await kmock.post(url_of(NODES, NS), json=pool("second", "talos-example-r1"))
        assert reply.status in (200, 201)
        await eventually(lambda: pools_of(kmock, "talos-example-r1") == 2, limit=2)
        reply = await kmock.post(url_of(CLASSES), json=worker_class("unused", bootstrap="talos"))
        assert reply.status in (200, 201)
        await eventually(
            lambda: FINALIZER in ((stored(kmock, "unused") or {}).get("metadata") or {}).get("finalizers", [])
        )
        reply = await kmock.delete(url_of(CLASSES, name="unused"))
        assert reply.status == 200
        await eventually(lambda: stored(kmock, "unused") is None, limit=2)  # released without a recheck


class Unseen(CacheView):
    """The cache, but the class ``shared`` shows no finalizers (another controller's was added after the read)."""

    def __init__(self, cache: ClusterCache) -> None:
        super().__init__(cache)
        self.lying = True

    @property
    def state(self) -> State | None:
        state = self.cache.state
        record = state.classes.get("shared") if state is not None else None
        if state is None or record is None or not self.lying:
            return state
        obj = json.loads(json.dumps(dict(record.obj)))
        obj["metadata"].pop("finalizers", None)
        return state.with_object(obj)


async def test_a_finalizer_written_meanwhile_is_never_overwritten(kmock: kmock.KubernetesEmulator) -> None:
    other = "example.com/keep"
    shared = worker_class("shared", bootstrap="talos")
    shared["metadata"]["finalizers"] = [other]
    seed(kmock, [*example_objects(), shared])
    views: list[Unseen] = []

    def unseen(cache: ClusterCache) -> Unseen:
        views.append(Unseen(cache))
        return views[0]

    async with running(kmock, source=unseen):
        await eventually(lambda: "shared" in kmock.refused)  # the add, on a read that missed the other finalizer
        await asyncio.sleep(0.3)  # and its retries (every 0.1 s), each refused the same way
        assert (stored(kmock, "shared") or {})["metadata"]["finalizers"] == [other]
        views[0].lying = False
        reply = await kmock.post(url_of(NODES, NS), json=pool("poke", "talos-example-r1"))  # any new State
        assert reply.status in (200, 201)
        await eventually(lambda: (stored(kmock, "shared") or {})["metadata"]["finalizers"] == [other, FINALIZER])


# --------------------------------------------------------------------------- retention with fakes


class Source:
    """A cluster cache stand-in: ``publish`` a State and the waiters are woken."""

    reason = ""

    def __init__(self, state: State | None = None) -> None:
        self._state = state
        self.reads = 0  # how often a loop read the State: each read is a wake-up's work
        self.changes = Changes()
        if state is not None:
            self.changes.bump()

    @property
    def state(self) -> State | None:
        self.reads += 1
        return self._state

    def publish(self, state: State) -> None:
        self._state = state
        self.changes.bump()

    @property
    def published(self) -> int:
        return self.changes.published

    async def changed(self, after: int) -> int:
        return await self.changes.wait(after)


class Finalizers:
    def __init__(self) -> None:
        self.calls: list[tuple[str, list[str] | None, list[str]]] = []
        self.refusals: list[tuple[int, str]] = []  # (status code, message) to answer the next calls with

    async def set(self, name: str, seen: list[str] | None, finalizers: list[str]) -> None:
        self.calls.append((name, seen, finalizers))
        if self.refusals:
            code, message = self.refusals.pop(0)
            error = RuntimeError(message)
            error.status = type("Status", (), {"code": code, "message": message})()  # type: ignore[attr-defined]
            raise error


def fake_controller(
    source: Any,
    *,
    writer: Any = None,
    pools: Any = None,
    finalizers: Any = None,
    events: Any = None,
    retry_delay: float = 3600.0,
) -> ClassController:
    """A class controller over the fakes above; a held deletion is never rechecked within a test."""
    return ClassController(
        source,
        writer or RecordingWriter(),
        pools or NoPools(),
        finalizers=finalizers,
        events=events,
        settings=ControllerSettings(retain_recheck=3600, retry_delay=retry_delay),
    )


class FailingPools:
    def __init__(self) -> None:
        self.failing = True
        self.calls = 0

    async def selecting(self, name: str) -> list[str]:
        self.calls += 1
        if self.failing:
            raise RuntimeError("503 Service Unavailable")
        return []


def deleted_class(name: str, *finalizers: str) -> dict[str, Any]:
    obj = worker_class(name, bootstrap="talos")
    obj["metadata"]["finalizers"] = list(finalizers)
    obj["metadata"]["deletionTimestamp"] = "2026-12-02T00:00:00Z"
    return obj


async def test_a_deletion_that_cannot_be_decided_is_held_said_once_and_retried(
    caplog: pytest.LogCaptureFixture,
) -> None:
    state = State.from_objects([*example_objects(), deleted_class("going", "example.com/keep", FINALIZER)])
    source, finalizers, pools, events = Source(state), Finalizers(), FailingPools(), Events()
    controller = fake_controller(source, pools=pools, finalizers=finalizers, events=events, retry_delay=0.05)
    stop = asyncio.Event()
    with caplog.at_level(logging.INFO, logger="workerclass.controller"):
        task = asyncio.create_task(controller.run(stop=stop))
        await eventually(lambda: pools.calls >= 4)  # retried every 0.05 s
        assert finalizers.calls == [] or all(call[0] != "going" for call in finalizers.calls)
        assert events.posted == [
            (
                "going",
                "RetainCheckFailed",
                "cannot list the pools that select WorkerClass going (RuntimeError)",
            )
        ]
        warnings = [r for r in caplog.records if r.levelno == logging.WARNING and "going" in r.getMessage()]
        assert len(warnings) == 1  # said once, not at every retry
        pools.failing = False
        await eventually(lambda: ("going", ["example.com/keep", FINALIZER], ["example.com/keep"]) in finalizers.calls)
        stop.set()
        await asyncio.wait_for(task, 5)


async def test_a_held_deletion_is_logged_at_info_and_released_when_its_pool_goes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    on = {**pool("on-held", "held"), "metadata": {"name": "on-held", "namespace": NS}}
    state = State.from_objects([*example_objects(), deleted_class("held", FINALIZER), on])
    source, finalizers = Source(state), Finalizers()
    controller = fake_controller(source, finalizers=finalizers)
    stop = asyncio.Event()
    with caplog.at_level(logging.INFO, logger="workerclass.controller"):
        task = asyncio.create_task(controller.run(stop=stop))
        await eventually(lambda: any(RETAINED in r.getMessage() for r in caplog.records))
        held = [r for r in caplog.records if RETAINED in r.getMessage()]
        assert [r.levelno for r in held] == [logging.INFO] and "tenant-example/on-held" in held[0].getMessage()
        assert [call for call in finalizers.calls if call[0] == "held"] == []
        source.publish(state.without("KubernetesNodes", NS, "on-held"))
        # released on the new State, without a recheck timer
        await eventually(lambda: ("held", [FINALIZER], []) in finalizers.calls, limit=2)
        stop.set()
        await asyncio.wait_for(task, 5)


@pytest.mark.parametrize(
    ("code", "message"),
    [
        (409, "Operation cannot be fulfilled: the object has been modified"),
        (422, "the server rejected our request due to an error in our request"),
    ],
    ids=["conflict", "test-failed"],
)
async def test_a_refused_finalizer_patch_is_tried_again_on_the_next_state(code: int, message: str) -> None:
    state = State.from_objects([*example_objects(), worker_class("fresh", bootstrap="talos")])
    source, finalizers = Source(state), Finalizers()
    finalizers.refusals = [(code, message)]
    controller = fake_controller(source, finalizers=finalizers)
    stop = asyncio.Event()
    task = asyncio.create_task(controller.run(stop=stop))
    await eventually(lambda: any(call[0] == "fresh" for call in finalizers.calls))
    await asyncio.sleep(0.1)
    assert [call for call in finalizers.calls if call[0] == "fresh"] == [("fresh", None, [FINALIZER])]
    assert controller.finalizer_writes == 2  # the two example classes; not the refused one
    source.publish(
        state.with_object(
            {
                **worker_class("fresh", bootstrap="talos"),
                "metadata": {"name": "fresh", "finalizers": ["example.com/keep"]},
            }
        )
    )
    await eventually(lambda: ("fresh", ["example.com/keep"], ["example.com/keep", FINALIZER]) in finalizers.calls)
    stop.set()
    await asyncio.wait_for(task, 5)


async def test_a_failing_status_write_is_retried_after_the_delay_not_at_once() -> None:
    writer = RecordingWriter(failing=("a-first",))
    state = State.from_objects([*example_objects(), worker_class("a-first"), worker_class("z-last")])
    source = Source(state)
    controller = fake_controller(source, writer=writer, retry_delay=0.5)
    stop = asyncio.Event()
    task = asyncio.create_task(controller.run(stop=stop))
    await eventually(lambda: "z-last" in writer.calls)
    await asyncio.sleep(0.2)
    assert writer.calls.count("a-first") == 1  # not tried again before the retry delay
    await eventually(lambda: writer.calls.count("a-first") == 2, limit=2)  # and tried again after it
    stop.set()
    await asyncio.wait_for(task, 5)


async def test_a_finalizer_patch_refused_for_good_is_a_warning_and_an_event(caplog: pytest.LogCaptureFixture) -> None:
    """A 422 is a failed ``test`` (a race: the next State decides) or a refusal that stays (a
    webhook's or the CRD's): the API server words both alike, so the same patch refused twice is
    said, not retried quietly forever."""
    fresh = worker_class("fresh", bootstrap="talos")
    state = State.from_objects([*example_objects(), fresh])
    source, finalizers, events = Source(state), Finalizers(), Events()
    refused = (422, "the server rejected our request due to an error in our request")
    # each pass adds in name order: fresh, then the two example classes; the second pass's first
    # patch (fresh's, the same as before) is refused again, the example classes' go through
    finalizers.refusals = [refused] * 4
    controller = fake_controller(source, finalizers=finalizers, events=events, retry_delay=0.05)
    stop = asyncio.Event()
    with caplog.at_level(logging.INFO, logger="workerclass.controller"):
        task = asyncio.create_task(controller.run(stop=stop))
        await eventually(lambda: events.posted != [])
        stop.set()
        await asyncio.wait_for(task, 5)
    assert [(name, reason) for name, reason, _ in events.posted] == [("fresh", "FinalizerFailed")]
    assert events.uids == [fresh["metadata"]["uid"]]  # kubectl describe finds a class's Events by it
    assert any(r.levelno == logging.WARNING and "fresh" in r.getMessage() for r in caplog.records)


async def test_a_bug_in_the_finalizer_pass_never_ends_the_controller(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = ClassController._release
    calls: list[str] = []

    async def failing_once(self: ClassController, state: State, name: str, seen: list[str], now: float) -> float:
        calls.append(name)
        if len(calls) == 1:
            raise KeyError("a bug")
        return await real(self, state, name, seen, now)

    monkeypatch.setattr(ClassController, "_release", failing_once)
    state = State.from_objects([*example_objects(), deleted_class("going", FINALIZER)])
    source, finalizers = Source(state), Finalizers()
    controller = fake_controller(source, finalizers=finalizers, retry_delay=0.05)
    stop = asyncio.Event()
    with caplog.at_level(logging.INFO, logger="workerclass.controller"):
        task = asyncio.create_task(controller.run(stop=stop))
        # tried again after the delay, and this time released
        await eventually(lambda: ("going", [FINALIZER], []) in finalizers.calls, limit=2)
        assert not task.done()
        stop.set()
        await asyncio.wait_for(task, 5)
    assert any("finalizers failed" in r.getMessage() for r in caplog.records if r.levelno == logging.ERROR)


async def test_nothing_is_decided_before_the_chart_the_pools_run_has_been_read() -> None:
    """Without ``--chart`` the chart is read through Flux after the cache syncs: until that first read
    the controller sees no State (a Talos pool would be refused for the chart's missing text)."""
    from workerclass.controller import ChartRead

    state = State.from_objects(example_objects())
    cache = Source(state)
    cache.charts = SimpleNamespace(settled=False)  # type: ignore[attr-defined]
    settled = ChartRead(cache)
    assert settled.state is None
    cache.charts.settled = True  # type: ignore[attr-defined]
    assert settled.state is state
    assert settled.published == cache.published
    del cache.charts  # type: ignore[attr-defined]  # --chart: no follower, nothing to wait for
    assert settled.state is state


async def test_a_condition_keeps_its_transition_time_until_its_status_changes() -> None:
    """``lastTransitionTime`` moves only when a condition's ``status`` does: a pass over a class whose
    stored status is the one written writes nothing; a changed condition gets the pass's time."""
    written: dict[str, dict[str, Any]] = {}

    class Writer:
        async def write(self, name: str, status: dict[str, Any]) -> None:
            written[name] = status

    klass = worker_class("lonely", bootstrap="talos")
    source = SimpleNamespace(state=State.from_objects([*example_objects(), klass]), reason="")
    controller = ClassController(source, Writer(), NoPools())  # type: ignore[arg-type]
    times = iter(["2026-12-03T10:00:00", "2026-12-03T11:00:00", "2026-12-03T12:00:00"])
    controller._wall = lambda: datetime.datetime.fromisoformat(next(times)).replace(tzinfo=datetime.UTC)
    assert await controller.refresh(source.state)
    first = written.pop("lonely")
    assert {c["lastTransitionTime"] for c in first["conditions"]} == {"2026-12-03T10:00:00Z"}
    stored = State.from_objects([*example_objects(), {**klass, "status": first}])
    assert await controller.refresh(stored)
    assert "lonely" not in written  # as written: nothing sent, no time moved
    used = State.from_objects([*example_objects(), {**klass, "status": first}, pool("example-lonely", "lonely")])
    assert await controller.refresh(used)
    times_by_type = {c["type"]: c["lastTransitionTime"] for c in written["lonely"]["conditions"]}
    assert times_by_type["Accepted"] == "2026-12-03T10:00:00Z"  # unchanged: its time kept
    assert times_by_type["InUse"] == "2026-12-03T12:00:00Z"  # False -> True: the pass's time


class Reported(PoolStatesLog):
    """The worker controller's report as the class controller reads it (states, and which changed)."""

    settled = True
    states_version = 0

    async def states_changed(self, after: int) -> int:
        await asyncio.Event().wait()
        return after


async def test_class_status_follows_a_change_without_counting_every_pool_again() -> None:
    """The status written after one pool's change is the one counting every pool gives, and the
    controller counted only that pool (one whole read, the first)."""
    from workerclass.ops.status import class_status

    written: dict[str, dict[str, Any]] = {}

    class Writer:
        async def write(self, name: str, status: dict[str, Any]) -> None:
            written[name] = status

    klass = worker_class("a-first", bootstrap="talos", talos={"version": "v1.13.6"})
    state = State.from_objects([*example_objects(), klass, *(pool(f"p{index}", "a-first") for index in range(40))])
    workers = Reported()
    for index in range(40):
        workers.set(f"tenant-example/p{index}", "applied")
    source = SimpleNamespace(state=state, reason="")
    controller = ClassController(source, Writer(), NoPools(), workers=workers)  # type: ignore[arg-type]
    assert await controller.refresh(state)
    assert written["a-first"]["pools"] == 40 and controller.usage.reads == 1

    def without_times(status: dict[str, Any]) -> list[dict[str, Any]]:
        return [{k: v for k, v in c.items() if k != "lastTransitionTime"} for c in status["conditions"]]

    state = state.with_object(pool("p40", "a-first")).without("KubernetesNodes", "tenant-example", "p0")
    workers.set("tenant-example/p1", "refused")
    assert await controller.refresh(state)
    assert controller.usage.reads == 1
    expected = class_status(state, "a-first", 1, workers.states)
    assert expected is not None and written["a-first"]["pools"] == expected["pools"] == 40
    assert without_times(written["a-first"]) == expected["conditions"]
    assert written["a-first"]["conditions"][2]["reason"] == "Refused"


async def test_a_class_whose_inputs_did_not_change_is_not_made_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each State makes the status only of the classes whose record, platform, generation or pools
    changed; the others' is the one made before (the same, as every input is)."""
    import workerclass.controller as controller_module

    made: list[str] = []
    real = controller_module.class_status

    def counting(state: State, name: str, *args: Any, **options: Any) -> Any:
        made.append(name)
        return real(state, name, *args, **options)

    monkeypatch.setattr(controller_module, "class_status", counting)
    written: dict[str, dict[str, Any]] = {}

    class Writer:
        async def write(self, name: str, status: dict[str, Any]) -> None:
            written[name] = status

    classes = [worker_class(name, bootstrap="talos", talos={"version": "v1.13.6"}) for name in ("a-first", "z-last")]
    state = State.from_objects([*example_objects(), *classes, pool("p0", "a-first"), pool("p1", "a-first")])
    workers = Reported()
    source = SimpleNamespace(state=state, reason="")
    controller = ClassController(source, Writer(), NoPools(), workers=workers)  # type: ignore[arg-type]
    assert await controller.refresh(state)
    custom = sorted(name for name, record in state.classes.items() if not record.builtin)
    assert sorted(made) == custom
    made.clear()
    workers.set("tenant-example/p0", "applied")
    assert await controller.refresh(state)
    assert made == ["a-first"]
    made.clear()
    state = state.with_object(pool("p2", "z-last"))
    assert await controller.refresh(state)
    assert made == ["z-last"] and written["z-last"]["pools"] == 1
    made.clear()
    assert await controller.refresh(state.with_object(pool("p3", "nobody-selects-this")))
    assert made == []
