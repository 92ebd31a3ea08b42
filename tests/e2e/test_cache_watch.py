"""The cluster cache (``adapters.kube.ClusterCache``, what the webhook and the controller decide on)
over real watch streams: watches the server closes, a resource version too old (410 Gone), API
groups the server does not serve, a watch RBAC refuses right after every list, and a slow server.

Each test runs the cache in-process with lightkube against the test API server, as the identity
``workerclass-e2e-reader`` bound to the webhook's own ClusterRole (or a narrower one), whose reads
the audit log records, so the tests count the cache's lists and watches from the server's side.

Seen to fail: these e2e tests were not rerun against the old cache (it lacks the client timeout
and the warnings they use); the unit tests of the same fixes (``tests/adapters/test_kube*.py``)
were run against the old code and failed there (optional APIs never synced, ~600 lists in 10
simulated minutes, the 10 s read timeout cut the list). The slow-server test failed during its
own development while the proxy held the TLS handshake instead of the request (a connect
timeout, not the read timeout it is about), which is why it holds the client's second flight.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from workerclass.adapters.kube import ClusterCache

from .conftest import TENANT, Install, install_crds
from .kube import Kube
from .testbed import ApiServer, free_port

READER = "workerclass-e2e-reader"
POOLS = "apps.cozystack.io/v1alpha1"


@pytest.fixture(scope="module")
def reader(cluster: ApiServer, kube: Kube, install: Install) -> Iterator[Any]:
    """The reader identity bound to the webhook's ClusterRole (what the bundle grants the webhook)."""
    role = next(obj for obj in install.objects if obj["kind"] == "ClusterRole" and "webhook" in obj["metadata"]["name"])
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "workerclass-e2e-reader"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role["metadata"]["name"]},
        "subjects": [{"kind": "User", "name": READER, "apiGroup": "rbac.authorization.k8s.io"}],
    }
    kube.apply(binding)
    yield cluster.identity(READER)
    kube.delete("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "workerclass-e2e-reader")


def _client(kubeconfig: Any, server: str | None = None) -> Any:
    """A lightkube client as ``serve`` makes one (:func:`client_timeout`), optionally to another server URL."""
    import tempfile

    import yaml
    from lightkube import AsyncClient, KubeConfig

    from workerclass.adapters.kube import client_timeout

    path = kubeconfig
    if server is not None:
        data = yaml.safe_load(Path(kubeconfig).read_text())
        for entry in data["clusters"]:
            entry["cluster"]["server"] = server
        path = Path(tempfile.mkdtemp()) / "kubeconfig.yaml"
        path.write_text(yaml.safe_dump(data))
    return AsyncClient(config=KubeConfig.from_file(path), field_manager="workerclass-e2e", timeout=client_timeout())


@contextlib.asynccontextmanager
async def running(cache: ClusterCache) -> AsyncIterator[ClusterCache]:
    await cache.start()
    try:
        yield cache
    finally:
        await cache.stop()


async def _eventually(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        await asyncio.sleep(0.05)
    raise TimeoutError(what)


def _pool(name: str) -> dict[str, Any]:
    return {
        "apiVersion": POOLS,
        "kind": "KubernetesNodes",
        "metadata": {"name": name, "namespace": TENANT},
        "spec": {
            "cluster": "example",
            "workerClassName": "talos",
            "version": "v1.35",
            "minReplicas": 1,
            "maxReplicas": 2,
        },
    }


def _has_pool(cache: ClusterCache, name: str) -> bool:
    state = cache.state
    return state is not None and any(record.identity == f"{TENANT}/{name}" for record in state.pools.values())


def test_unserved_optional_groups_read_as_empty(reader: Any, webhook: Any) -> None:
    """ComputePlane and KubeVirt's instance types are not served on this server: the cache syncs
    anyway, says so in its warnings, and is not stale for it."""

    async def scenario() -> None:
        cache = ClusterCache(_client(reader.kubeconfig), stale_after=5, watch_timeout=1, watch_margin=1)
        async with running(cache):
            await cache.wait_synced(timeout=20)
            warnings = " ".join(cache.warnings)
            assert "computeplanes.apps.cozystack.io" in warnings
            assert "virtualmachineclusterinstancetypes.instancetype.kubevirt.io" in warnings
            await asyncio.sleep(6)  # past stale_after: an absent optional API is not a stale one
            assert cache.reason == ""

    asyncio.run(scenario())


def test_an_optional_group_that_comes_and_goes(reader: Any, kube: Kube, webhook: Any) -> None:
    """ComputePlane served after the cache synced (a Cozystack upgrade): its objects arrive; served
    no more (the CRD removed): they are dropped, and the cache stays ready."""
    from .conftest import _crd

    crd = _crd("apps.cozystack.io", "ComputePlane", "computeplanes")
    plane = {
        "apiVersion": POOLS,
        "kind": "ComputePlane",
        "metadata": {"name": "example-plane", "namespace": TENANT},
        "spec": {"nodeGroups": {"workers": {"minReplicas": 1, "maxReplicas": 2}}},
    }

    def planes(cache: ClusterCache) -> int:
        state = cache.state
        return 0 if state is None else sum(1 for record in state.pools.values() if record.kind == "ComputePlane")

    async def scenario() -> None:
        cache = ClusterCache(
            _client(reader.kubeconfig),
            retry_delay=0.2,
            max_retry_delay=1,
            stale_after=5,
            watch_timeout=1,
            watch_margin=1,
        )
        async with running(cache):
            await cache.wait_synced(timeout=20)
            assert planes(cache) == 0
            install_crds(kube, [crd])
            try:
                kube.create(plane)
                await _eventually(lambda: planes(cache) == 1, 30, "the ComputePlane seen once served")
            finally:
                kube.delete("apiextensions.k8s.io/v1", "CustomResourceDefinition", crd["metadata"]["name"])
            await _eventually(lambda: planes(cache) == 0, 30, "the ComputePlane dropped once not served")
            await asyncio.sleep(6)
            assert cache.state is not None and cache.reason == ""
            assert any("computeplanes.apps.cozystack.io" in warning for warning in cache.warnings)

    asyncio.run(scenario())


def test_watches_the_server_closes_are_resumed(reader: Any, kube: Kube, webhook: Any) -> None:
    """``timeoutSeconds=1``: the server ends every watch each second; events still arrive."""

    async def scenario() -> None:
        cache = ClusterCache(_client(reader.kubeconfig), watch_timeout=1, watch_margin=2)
        async with running(cache):
            await cache.wait_synced(timeout=20)
            await asyncio.sleep(3)  # several watches ended by the server
            kube.create(_pool("example-e2e-watch"))
            try:
                await _eventually(lambda: _has_pool(cache, "example-e2e-watch"), 10, "the pool seen after closes")
            finally:
                kube.delete(POOLS, "KubernetesNodes", "example-e2e-watch", TENANT)
            await _eventually(lambda: not _has_pool(cache, "example-e2e-watch"), 10, "the deletion seen")
            assert cache.reason == ""

    asyncio.run(scenario())


def test_a_resource_version_too_old_is_listed_again(reader: Any, kube: Kube, webhook: Any) -> None:
    """A watch from a resource version the server no longer has answers 410 Gone: the cache lists
    again and goes on with the events after it."""

    async def scenario() -> None:
        cache = ClusterCache(_client(reader.kubeconfig), retry_delay=0.1)
        original = cache._list
        calls: list[str] = []

        async def list_once_stale(watched: Any, resource: Any, scope: Any) -> Any:
            items, version = await original(watched, resource, scope)
            calls.append(watched.kind)
            if watched.kind == "KubernetesNodes" and calls.count("KubernetesNodes") == 1:
                return items, "1"  # compacted long ago: the watch cache answers 410
            return items, version

        cache._list = list_once_stale  # type: ignore[method-assign]
        async with running(cache):
            await cache.wait_synced(timeout=20)
            await _eventually(lambda: calls.count("KubernetesNodes") >= 2, 10, "a second list after 410")
            kube.create(_pool("example-e2e-gone"))
            try:
                await _eventually(lambda: _has_pool(cache, "example-e2e-gone"), 10, "events after the 410")
            finally:
                kube.delete(POOLS, "KubernetesNodes", "example-e2e-gone", TENANT)

    asyncio.run(scenario())


def test_a_watch_refused_after_every_list_backs_off(cluster: ApiServer, kube: Kube, reader: Any) -> None:
    """RBAC grants list but not watch on HelmReleases: each list is followed by a 403 watch. The
    cache backs off (with jitter) instead of listing in a tight loop."""
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "workerclass-e2e-list-only"},
        "rules": [{"apiGroups": ["helm.toolkit.fluxcd.io"], "resources": ["helmreleases"], "verbs": ["list"]}],
    }
    user = "workerclass-e2e-lister"
    kube.apply(role)
    kube.apply(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "workerclass-e2e-list-only"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": role["metadata"]["name"],
            },
            "subjects": [{"kind": "User", "name": user, "apiGroup": "rbac.authorization.k8s.io"}],
        }
    )
    from workerclass.api.resources import HELM_RELEASE

    async def scenario() -> None:
        lister = cluster.identity(user)
        cache = ClusterCache(_client(lister.kubeconfig), resources=(HELM_RELEASE,), retry_delay=0.5, max_retry_delay=8)
        mark = cluster.audit_mark()
        async with running(cache):
            await asyncio.sleep(15)
        lists = [
            event
            for event in cluster.requests_by(user, since=mark, verbs=("list",))
            if event["objectRef"].get("resource") == "helmreleases"
        ]
        # a tight loop sent hundreds; doubling from 0.5 s (capped at 8 s, jittered) allows about 6
        assert 2 <= len(lists) <= 10, len(lists)

    try:
        asyncio.run(scenario())
    finally:
        kube.delete("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "workerclass-e2e-list-only")
        kube.delete("rbac.authorization.k8s.io/v1", "ClusterRole", "workerclass-e2e-list-only")


class SlowProxy:
    """A TCP proxy on loopback that holds each connection's first request for ``delay`` seconds
    (TLS passes through untouched: the client still talks to the real API server).

    Under TLS 1.3 the client's handshake is done once it has sent its Finished, so the client's
    second flight (Finished, then the HTTP request) is held: the handshake completes at once and
    the answer to the connection's first request arrives ``delay`` seconds after it was sent,
    as from a server that takes that long to list."""

    def __init__(self, upstream_port: int, delay: float) -> None:
        self.upstream_port = upstream_port
        self.delay = delay
        self.port = free_port()
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", self.port)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        except OSError:
            writer.close()
            return

        async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter, hold: float) -> None:
            chunks = 0
            with contextlib.suppress(Exception):
                while data := await source.read(65536):
                    chunks += 1
                    if chunks == 2 and hold:
                        await asyncio.sleep(hold)
                    sink.write(data)
                    await sink.drain()
            with contextlib.suppress(Exception):
                sink.close()

        await asyncio.gather(pipe(reader, up_writer, self.delay), pipe(up_reader, writer, 0))


def test_a_slow_api_server(cluster: ApiServer, reader: Any, webhook: Any) -> None:
    """Every connection's first request is answered after 11 s (longer than the client's default 10 s read
    timeout, shorter than the cache's 30 s list deadline): the cache still syncs."""

    async def scenario() -> None:
        proxy = SlowProxy(cluster.port, 11.0)
        await proxy.start()
        try:
            client = _client(reader.kubeconfig, server=f"https://127.0.0.1:{proxy.port}")
            async with running(ClusterCache(client, list_timeout=30)) as cache:
                await cache.wait_synced(timeout=60)
        finally:
            await proxy.stop()

    asyncio.run(scenario())
