"""The cluster cache at 1,000, 10,000 and 50,000 pools, against a fake list/watch server on loopback.

    .venv/bin/python bench/cache_bench.py [--sizes 1000,10000,50000] [--churn-size 20000] [--events 3000]
        [--src DIR ...] [--rounds 1]

Each size runs in a child process of its own (so RSS is the cache's alone); the fake API server
runs in another child process on 127.0.0.1 (aiohttp): it serves every resource of
:data:`~workerclass.adapters.kube.WATCHED` with ``limit``/``continue`` pages and a streaming
watch. The cluster holds N pools, each a KubernetesNodes with its backing HelmRelease
``kubernetes-nodes-<name>`` (Cozystack's shape: 2N pool objects, as much managedFields and Flux
status as a real one carries), one parent Kubernetes per 20 pools, 10 WorkerClasses, the
platform and instance types. For each size:

* cold sync: ``ClusterCache.start()`` to its first State, lists of 500 objects a page;
* cost per event: the cache's own work for one watch event (trim, drop check, State update), over
  ``--events`` events: half Flux status writes on HelmReleases (dropped), half real changes (a
  pool's maxReplicas or class, alternating KubernetesNodes and HelmRelease), median and p99, as
  wall-clock time and as this thread's CPU time (``time.thread_time_ns``: what the event costs the
  process, without the time another process held the core on a shared machine); decoding the
  event's JSON (lightkube's) is not in it. Events during which the cyclic garbage collector ran a
  generation-1 or -2 collection are counted apart (the collector's pause lands on whichever event
  allocated last). The first synced snapshot is let go before the events, as a server lets a
  request's snapshot go (kept, it holds every record the events replace alive);
* the baseline, per event in the same loop: ``json.loads`` of the event's watch line (what the
  watch decodes anyway before the cache sees it); the CPU figures are also given as ratios to it
  (median to median, p99 to p99);
* the old rebuild: ``State.from_objects`` of the same stored objects, once (3 runs below 10,000);
* RSS of the child after the sync (``/proc/self/statm``), and per pool (RSS minus the RSS
  before the cache started, divided by N).

At ``--churn-size`` pools, the server first sends 200 events a second through the watch (the same
mix) for 5 s while the child only listens: the process's CPU time over those seconds, less that of
5 idle seconds just before, per event received (the whole watch path: the aiohttp transport the
``serve`` commands use, lightkube's decoding, the cache). Then the same churn while the child
decides admission requests (``mutate`` then ``validate`` of a pool UPDATE, as the API server calls
the webhook) in the same event loop as the cache, back to back for 5 s: decisions per second and
per-decision latency p50/p99 (in-process: no HTTPS, no AdmissionReview decoding).

``--src DIR`` (repeatable) runs every size against another tree's ``src`` too (a ``git archive`` of
the base commit), in the same run, the trees interleaved ``--rounds`` times: a before/after pair
from one machine state. Never run as a timed test.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import multiprocessing
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from workerclass.adapters.folder import load_state

ROOT = Path(__file__).resolve().parents[1]

NS_COUNT = 50
CLASSES = 10
LABEL = "apps.cozystack.io/application.kind"


def _managed(serial: int) -> list[dict[str, Any]]:
    return [
        {
            "manager": manager,
            "operation": "Update",
            "apiVersion": "v1",
            "time": f"2026-01-01T00:00:{serial % 60:02d}Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:labels": {".": {}}}, "f:spec": {"f:values": {".": {}}}},
        }
        for manager in ("cozystack-api", "helm-controller")
    ]


def cluster_objects(pools: int) -> dict[str, list[dict[str, Any]]]:
    """kind -> objects of a cluster with ``pools`` KubernetesNodes pools."""

    examples = load_state(ROOT / "examples")
    platform = next(dict(r.obj) for r in examples.objects if r.kind == "WorkerPlatform")
    out: dict[str, list[dict[str, Any]]] = {
        "WorkerPlatform": [platform],
        "WorkerClass": [],
        "Kubernetes": [],
        "KubernetesNodes": [],
        "HelmRelease": [],
        "ComputePlane": [],
        "VirtualMachineClusterInstancetype": [
            {
                "apiVersion": "instancetype.kubevirt.io/v1beta1",
                "kind": "VirtualMachineClusterInstancetype",
                "metadata": {"name": "u1.bench", "resourceVersion": "1"},
                "spec": {"cpu": {"guest": 2}, "memory": {"guest": "4Gi"}},
            }
        ],
    }
    for index in range(CLASSES):
        out["WorkerClass"].append(
            {
                "apiVersion": "cozystack.io/v1alpha1",
                "kind": "WorkerClass",
                "metadata": {"name": f"bench-{index}", "uid": f"uid-{index}", "generation": 1, "resourceVersion": "1"},
                "spec": {"bootstrap": "talos"},
            }
        )
    for index in range((pools + 19) // 20):
        out["Kubernetes"].append(
            {
                "apiVersion": "apps.cozystack.io/v1alpha1",
                "kind": "Kubernetes",
                "metadata": {"name": f"c{index}", "namespace": f"tenant-{index % NS_COUNT}", "resourceVersion": "1"},
                "spec": {"version": "v1.35", "infrastructure": "kubevirt"},
                "status": {"conditions": [{"type": "Ready", "status": "True"}]},
            }
        )
    for index in range(pools):
        out["KubernetesNodes"].append(pool_object(index, 1))
        out["HelmRelease"].append(release_object(index, 1))
    return out


def _values(index: int, replicas: int) -> dict[str, Any]:
    cluster = index // 20
    return {
        "cluster": f"c{cluster}",
        "version": "v1.35",
        "minReplicas": 1,
        "maxReplicas": replicas + 1,
        "instanceType": "u1.medium",
        "storageClass": "replicated",
        "workerClassName": "talos" if index % 3 else f"bench-{index % CLASSES}",
    }


def _pool_name(index: int) -> str:
    return f"c{index // 20}-p{index}"


def pool_object(index: int, serial: int, replicas: int = 2) -> dict[str, Any]:
    return {
        "apiVersion": "apps.cozystack.io/v1alpha1",
        "kind": "KubernetesNodes",
        "metadata": {
            "name": _pool_name(index),
            "namespace": f"tenant-{(index // 20) % NS_COUNT}",
            "resourceVersion": str(serial),
            "uid": f"kn-{index}",
            "managedFields": _managed(serial),
        },
        "spec": _values(index, replicas),
    }


def release_object(index: int, serial: int, replicas: int = 2) -> dict[str, Any]:
    return {
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {
            "name": f"kubernetes-nodes-{_pool_name(index)}",
            "namespace": f"tenant-{(index // 20) % NS_COUNT}",
            "resourceVersion": str(serial),
            "uid": f"hr-{index}",
            "labels": {LABEL: "KubernetesNodes", "apps.cozystack.io/application.name": _pool_name(index)},
            "annotations": {"reconcile.fluxcd.io/requestedAt": str(serial)},
            "managedFields": _managed(serial),
        },
        "spec": {
            "interval": "5m",
            "chartRef": {"kind": "ExternalArtifact", "name": "kubernetes-nodes", "namespace": "cozy-system"},
            "values": _values(index, replicas),
        },
        "status": {
            "observedGeneration": 1,
            "lastAttemptedRevision": f"0.{serial}",
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": f"t{serial}"}],
        },
    }


def churn_event(pools: int, serial: int, current: dict[int, int], half: int) -> tuple[str, dict[str, Any]]:
    """The event mix: even serials a Flux status write (the stored values again, a new status and
    resourceVersion), odd ones a real change of a pool's maxReplicas (alternating KubernetesNodes
    and its HelmRelease). ``half`` 0 or 1 picks the pools (even or odd indexes) so that the fake
    server's churn and the child's direct events never write the same pool; ``current`` tracks the
    replicas each pool was last given."""
    index = ((serial * 7919) % (pools // 2)) * 2 + half
    if serial % 2 == 0:
        return "HelmRelease", release_object(index, serial, current.get(index, 2))
    replicas = current[index] = 2 + (current.get(index, 2) - 1) % 40
    if serial % 4 == 1:
        return "KubernetesNodes", pool_object(index, serial, replicas)
    return "HelmRelease", release_object(index, serial, replicas)


# --------------------------------------------------------------------------- fake API server


def serve(pools: int, port: int, rate: Any) -> None:
    """The fake API server (a child process): lists with limit/continue, watches that stream events."""
    from aiohttp import web

    from workerclass.adapters.kube import WATCHED

    objects = cluster_objects(pools)
    by_path = {}
    for watched in WATCHED:
        by_path[f"/apis/{watched.group}/{watched.version}/{watched.plural}"] = watched
    watchers: dict[str, list[asyncio.Queue[bytes]]] = {watched.kind: [] for watched in WATCHED}

    async def handle(request: web.Request) -> web.StreamResponse:
        watched = by_path.get(request.path)
        if watched is None:
            return web.Response(status=404)
        if request.query.get("watch") in ("true", "1"):
            response = web.StreamResponse()
            response.content_type = "application/json"
            await response.prepare(request)
            queue: asyncio.Queue[bytes] = asyncio.Queue()
            watchers[watched.kind].append(queue)
            timeout = float(request.query.get("timeoutSeconds", "30"))
            try:
                async with asyncio.timeout(timeout):
                    while True:
                        await response.write(await queue.get())
            except TimeoutError:
                pass
            finally:
                watchers[watched.kind].remove(queue)
            return response
        items = objects[watched.kind]
        start = int(request.query.get("continue") or 0)
        limit = int(request.query.get("limit") or len(items) or 1)
        page = items[start : start + limit]
        following = start + limit if start + limit < len(items) else None
        body = {
            "apiVersion": watched.api_version,
            "kind": f"{watched.kind}List",
            "metadata": {"resourceVersion": "1", **({"continue": str(following)} if following else {})},
            "items": page,
        }
        return web.Response(body=json.dumps(body).encode(), content_type="application/json")

    async def churn() -> None:
        serial = 1_000_000
        current: dict[int, int] = {}
        while True:
            per_second = rate.value
            if per_second <= 0:
                await asyncio.sleep(0.05)
                continue
            started = time.perf_counter()
            for _ in range(max(1, per_second // 20)):
                kind, obj = churn_event(pools, serial, current, 1)
                serial += 1
                line = json.dumps({"type": "MODIFIED", "object": obj}).encode() + b"\n"
                for queue in watchers[kind]:
                    queue.put_nowait(line)
            await asyncio.sleep(max(0.0, 0.05 - (time.perf_counter() - started)))

    async def main() -> None:
        app = web.Application()
        app.router.add_get("/{tail:.*}", handle)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        asyncio.get_running_loop().create_task(churn())
        await asyncio.Event().wait()

    asyncio.run(main())


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def rss_mib() -> float:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# --------------------------------------------------------------------------- one size (child)


async def measure(pools: int, port: int, events: int, churn: bool, rate: Any) -> dict[str, Any]:
    from lightkube import AsyncClient, KubeConfig

    from workerclass.adapters.kube import WATCHED, ClusterCache, client_timeout
    from workerclass.adapters.transport import aiohttp_transport
    from workerclass.admission import mutate, validate
    from workerclass.state import State

    config = KubeConfig.from_dict(
        {
            "clusters": [{"name": "fake", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
            "users": [{"name": "bench", "user": {"token": "bench"}}],
            "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "bench"}}],
            "current-context": "fake",
        }
    )
    before = rss_mib()
    # the client the serve commands make: their aiohttp transport, the cache's read timeout
    client = AsyncClient(config=config, timeout=client_timeout(), transport=aiohttp_transport(config.get()))
    cache = ClusterCache(client, stale_after=3600)
    started = time.perf_counter()
    await cache.start()
    state = await cache.wait_synced(timeout=600)
    cold = time.perf_counter() - started
    rss = rss_mib()
    result: dict[str, Any] = {
        "pools": pools,
        "cold_sync_s": round(cold, 2),
        "rss_mib": round(rss, 1),
        "per_pool_kib": round((rss - before) * 1024 / pools, 2),
        "state_pools": len(state.pools),
    }
    # A server holds a snapshot for one decision, not for the run: kept here, every record an event
    # replaces would stay alive (held by this first State), and the young collector would run on
    # ~1 % of the events below, each pause landing in the p99 (measured: 35 in 3,000 events at
    # 20,000 pools, ~450 µs each, against 2 once it is let go).
    del state
    by_kind = {watched.kind: watched for watched in WATCHED}
    collections = [0, 0, 0]

    def collected(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            collections[info["generation"]] += 1

    gc.callbacks.append(collected)
    costs: list[float] = []
    cpu: list[float] = []
    applied: list[float] = []
    dropped: list[float] = []
    applied_cpu: list[float] = []
    dropped_cpu: list[float] = []
    baseline: list[float] = []
    paused: list[float] = []  # CPU of the events during which a generation-1 or -2 collection ran
    current: dict[int, int] = {}
    for serial in range(events):
        kind, obj = churn_event(pools, 2_000_000 + serial, current, 0)
        line = json.dumps({"type": "MODIFIED", "object": obj}).encode() + b"\n"
        c0 = time.thread_time_ns()
        obj = json.loads(line)["object"]
        baseline.append((time.thread_time_ns() - c0) / 1000)
        watched = by_kind[kind]
        items = cache._stores[kind]
        count = cache.applied
        deep = collections[1] + collections[2]
        t0 = time.perf_counter_ns()
        c0 = time.thread_time_ns()
        entry = cache._normalized(watched, obj)
        assert entry is not None
        cache._event(watched, items, entry[0], entry[1])
        spent = (time.thread_time_ns() - c0) / 1000
        cost = (time.perf_counter_ns() - t0) / 1000
        costs.append(cost)
        cpu.append(spent)
        if collections[1] + collections[2] > deep:
            paused.append(spent)
        if cache.applied > count:
            applied.append(cost)
            applied_cpu.append(spent)
        else:
            dropped.append(cost)
            dropped_cpu.append(spent)
    gc.callbacks.remove(collected)
    result["direct_applied"], result["direct_dropped"] = len(applied), len(dropped)
    json_median, json_p99 = statistics.median(baseline), percentile(baseline, 0.99)
    cpu_median, cpu_p99 = statistics.median(cpu), percentile(cpu, 0.99)
    result.update(
        event_median_us=round(statistics.median(costs), 1),
        event_p99_us=round(percentile(costs, 0.99), 1),
        applied_median_us=round(statistics.median(applied), 1),
        applied_p99_us=round(percentile(applied, 0.99), 1),
        dropped_median_us=round(statistics.median(dropped), 1),
        cpu_median_us=round(cpu_median, 1),
        cpu_p99_us=round(cpu_p99, 1),
        cpu_mean_us=round(statistics.mean(cpu), 1),
        cpu_applied_median_us=round(statistics.median(applied_cpu), 1),
        cpu_applied_p99_us=round(percentile(applied_cpu, 0.99), 1),
        cpu_dropped_median_us=round(statistics.median(dropped_cpu), 1),
        json_loads_median_us=round(json_median, 1),
        json_loads_p99_us=round(json_p99, 1),
        cpu_median_x_json=round(cpu_median / json_median, 2),
        cpu_p99_x_json=round(cpu_p99 / json_p99, 2),
        deep_collections=len(paused),
        deep_collection_cpu_median_us=round(statistics.median(paused), 1) if paused else None,
    )
    objects = [obj for store in cache._stores.values() for obj in store.values()]
    runs = 3 if pools < 10_000 else 1
    rebuilds = []
    for _ in range(runs):
        began = time.perf_counter()
        State.from_objects(objects)
        rebuilds.append(time.perf_counter() - began)
    result["rebuild_ms"] = round(min(rebuilds) * 1000, 1)
    if churn:
        # the whole watch path per event: the process's CPU while it only listens, less idle
        idle_start = time.process_time()
        await asyncio.sleep(5.0)
        idle = time.process_time() - idle_start
        received = cache.applied + cache.dropped
        rate.value = 200
        listen_start = time.process_time()
        await asyncio.sleep(5.0)
        listening = time.process_time() - listen_start
        rate.value = 0
        await asyncio.sleep(0.5)
        received = cache.applied + cache.dropped - received
        result.update(
            watch_events=received,
            watch_cpu_per_event_us=round((listening - idle) * 1e6 / max(1, received), 1),
            idle_cpu_ms_per_s=round(idle * 1000 / 5.0, 2),
        )
        target = pool_object(5, 1)
        old = pool_object(5, 1)
        applied_before, dropped_before = cache.applied, cache.dropped
        rate.value = 200
        await asyncio.sleep(0.5)
        latencies: list[float] = []
        t_end = time.perf_counter() + 5.0
        t_start = time.perf_counter()
        while time.perf_counter() < t_end:
            began = time.perf_counter()
            snapshot = cache.state
            assert snapshot is not None
            decision = mutate(snapshot, "UPDATE", target, old)
            validate(snapshot, "UPDATE", decision.object or target, old)
            latencies.append((time.perf_counter() - began) * 1000)
            await asyncio.sleep(0)  # the watch events run between requests, as in the webhook's loop
        elapsed = time.perf_counter() - t_start
        rate.value = 0
        result.update(
            churn_events_applied=cache.applied - applied_before,
            churn_events_dropped=cache.dropped - dropped_before,
            decisions_per_s=round(len(latencies) / elapsed),
            decision_p50_ms=round(percentile(latencies, 0.5), 3),
            decision_p99_ms=round(percentile(latencies, 0.99), 3),
            decision_max_ms=round(max(latencies), 2),
        )
    await cache.stop()
    return result


def child(pools: int, events: int, churn: bool) -> dict[str, Any]:
    port = free_port()
    rate = multiprocessing.Value("i", 0)
    server = multiprocessing.get_context("fork").Process(target=serve, args=(pools, port, rate), daemon=True)
    server.start()
    try:
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                break
            except OSError:
                time.sleep(0.05)
        return asyncio.run(measure(pools, port, events, churn, rate))
    finally:
        server.terminate()
        server.join()


def run_child(src: Path, size: int, events: int, churn: bool) -> dict[str, Any]:
    command = [sys.executable, __file__, "--child", str(size), "--events", str(events)]
    if churn:
        command.append("--churn")
    env = dict(os.environ, PYTHONPATH=str(src))
    out = subprocess.run(command, check=True, capture_output=True, text=True, env=env).stdout
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000,10000,50000")
    parser.add_argument("--churn-size", type=int, default=20000)
    parser.add_argument("--events", type=int, default=3000)
    parser.add_argument("--src", type=Path, action="append", help="another tree's src (repeatable)")
    parser.add_argument("--rounds", type=int, default=1, help="runs of every tree, interleaved")
    parser.add_argument("--child", type=int, default=0)
    parser.add_argument("--churn", action="store_true")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.events, args.churn)))
        return
    trees = [ROOT / "src", *(args.src or [])]
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores; trees: {', '.join(map(str, trees))}", flush=True)
    sizes = sorted({int(size) for size in args.sizes.split(",")} | {args.churn_size})
    for round_ in range(args.rounds):
        for size in sizes:
            for tree in trees:
                result = run_child(tree, size, args.events, size == args.churn_size)
                print(json.dumps({"round": round_, "tree": str(tree), **result}), flush=True)


if __name__ == "__main__":
    main()
