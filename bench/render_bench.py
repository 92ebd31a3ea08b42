"""Benchmark: the parity renderer beside the oracle's Helm render of the same pools, same run.

Generates N pools (default 10,000) over the chart's value space (classless KubernetesNodes and
HelmReleases, classified Talos pools, Kairos pools; both sizing modes, GPUs, kubelet reservations,
mirrors, health settings), resolves them once (not timed as rendering), then measures on one core:

- ``render(effective)`` for every pool, one at a time with nothing kept (as a controller renders);
- the same with every object kept and the cyclic collector paused (as ``workerclass render`` runs);
- the oracle (``shared/tools/cozystack-render``: Helm's engine through helm-python-sdk) rendering
  a sample of the same pools' values in one long-lived process (``tests/chart/oracle.py``), and
  whether our objects equal its objects for every sampled classless pool;
- peak memory for rendering all N pools one at a time, and with the output kept (tracemalloc,
  separate passes), and the process's peak RSS;
- where the render time goes (cProfile of 200 pools, the top entries by own time).

Targets (issue 9): at least 20,000 pools/s on one core for the render alone; peak memory for
10,000 pools under 500 MB. Run: ``.venv/bin/python bench/render_bench.py [--pools N]
[--oracle-sample M] [--repeat R] [--clock wall|cpu] [--chart DIR|TGZ]`` (the chart whose text renders the
talos-reconcile Jobs: the mirror's main by default).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import os
import platform
import pstats
import random
import resource
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

from workerclass.adapters.chart import read_chart_source  # noqa: E402
from workerclass.render import render  # noqa: E402
from workerclass.resolve import resolve_pool  # noqa: E402
from workerclass.resolve.effective import Effective  # noqa: E402
from workerclass.state import State  # noqa: E402

NAMESPACE = "tenant-bench"
CLUSTER = "bench"
INSTANCE_TYPES = ["u1.medium", "u1.large", "u1.xlarge", "u1.2xlarge", "cx1.large", "m1.large"]


def make_pool(index: int, rng: random.Random) -> dict[str, Any]:
    """Pool ``index``: a sixth each of plain, resources+podCpu, GPU, kubelet/mirrors, classified Talos, Kairos."""
    variant = index % 6
    spec: dict[str, Any] = {
        "cluster": CLUSTER,
        "version": rng.choice(["v1.33", "v1.34", "v1.35"]),
        "minReplicas": rng.randint(0, 2),
        "maxReplicas": rng.randint(3, 10),
        "instanceType": rng.choice(INSTANCE_TYPES),
        "diskSize": rng.choice(["20Gi", "30Gi", "50Gi"]),
        "roles": ["ingress-nginx"] if index % 3 == 0 else [],
        "maxUnhealthy": rng.choice(["50%", "1", "33%"]),
    }
    if variant == 1:
        spec.update(instanceType="", resources={"cpu": rng.choice(["2", "4"]), "memory": "8Gi"}, podCpuLimit="2")
        spec["podCpuRequest"] = "1"
    elif variant == 2:
        spec.update(instanceType="u1.2xlarge", gpus=[{"name": "nvidia.com/AD102GL_L40S"}], logSerialConsole=True)
    elif variant == 3:
        spec["kubelet"] = {"systemReservedMemory": "512Mi", "evictionHardMemory": "5%", "evictionSoftMemory": "12%"}
        spec["talos"] = {"registryMirrors": {"docker.io": {"endpoints": [f"https://m{index % 9}.example"]}}}
        spec["nodeStartupTimeout"] = "15m"
    elif variant == 4:
        spec["workerClassName"] = "talos"
        spec["talos"] = {"version": "v1.13.6"}
    elif variant == 5:
        spec.update(workerClassName="kairos", version="v1.35")
    name = f"p{index}"
    if index % 5 == 0 and variant not in (4, 5):  # a direct HelmRelease writer
        return {
            "apiVersion": "helm.toolkit.fluxcd.io/v2",
            "kind": "HelmRelease",
            "metadata": {
                "name": f"kubernetes-nodes-{CLUSTER}-{name}",
                "namespace": NAMESPACE,
                "labels": {"apps.cozystack.io/application.kind": "KubernetesNodes"},
            },
            "spec": {"values": spec},
        }
    return {
        "apiVersion": "apps.cozystack.io/v1alpha1",
        "kind": "KubernetesNodes",
        "metadata": {"name": f"{CLUSTER}-{name}", "namespace": NAMESPACE},
        "spec": spec,
    }


def best(function: Callable[[], Any], repeat: int, clock: Callable[[], float] = time.perf_counter) -> float:
    out = float("inf")
    for _ in range(repeat):
        gc.collect()
        start = clock()
        function()
        out = min(out, clock() - start)
    return out


def paused(function: Callable[[], Any]) -> Any:
    gc.disable()
    try:
        return function()
    finally:
        gc.enable()


def traced_peak(function: Callable[[], Any]) -> float:
    gc.collect()
    tracemalloc.start()
    result = function()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del result
    return peak / 1e6


def oracle_side(
    sample: list[tuple[dict[str, Any], Effective]],
) -> tuple[float, int, int, str] | None:
    """(seconds per Helm render, classless pools compared, equal, note) or None without the oracle."""
    from tests.chart.oracle import Oracle, available
    from tests.render.test_parity import object_differences

    if not sample or not available():
        return None
    oracle = Oracle()
    try:
        oracle.render({"cluster": CLUSTER}, release=f"kubernetes-nodes-{CLUSTER}-warm", namespace=NAMESPACE)  # warm-up
        start = time.perf_counter()
        results = []
        for obj, _ in sample:
            values = obj["spec"] if obj["kind"] == "KubernetesNodes" else obj["spec"]["values"]
            name = obj["metadata"]["name"]
            release = f"kubernetes-nodes-{name}" if obj["kind"] == "KubernetesNodes" else name
            results.append(oracle.render(values, release=release, namespace=NAMESPACE))
        seconds = (time.perf_counter() - start) / len(sample)
    finally:
        oracle.close()
    compared = equal = 0
    for (_, effective), result in zip(sample, results, strict=True):
        if not effective.legacy or not result.ok:
            continue
        compared += 1
        equal += not object_differences(render(effective), result.objects)
    return seconds, compared, equal, "one driver process, charts loaded once"


def profile(effectives: list[Effective]) -> str:
    profiler = cProfile.Profile()
    profiler.enable()
    for effective in effectives:
        render(effective)
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(8)
    lines = [line for line in out.getvalue().splitlines() if line.strip() and "/" in line]
    return "\n".join(lines[:8])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pools", type=int, default=10_000)
    parser.add_argument("--oracle-sample", type=int, default=60)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="time the renders by the wall clock or by this process's CPU time (steadier on a shared machine)",
    )
    shared = Path(os.environ.get("WORKERCLASS_SHARED") or ROOT.parent / "shared")
    parser.add_argument(
        "--chart",
        default=str(shared / "upstream-cozystack" / "kubernetes-nodes"),
        help="the chart whose text renders the talos-reconcile Job (default: the mirror's main)",
    )
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core
    rng = random.Random(42)
    parent = {
        "apiVersion": "apps.cozystack.io/v1alpha1",
        "kind": "Kubernetes",
        "metadata": {"name": CLUSTER, "namespace": NAMESPACE},
        "spec": {"version": "v1.35"},
    }
    pools = [make_pool(index, rng) for index in range(args.pools)]
    state = State.from_objects([parent, *pools]).with_chart(read_chart_source(args.chart))
    by_identity = {f"{obj['metadata']['namespace']}/{obj['metadata']['name']}": obj for obj in pools}
    pairs: list[tuple[dict[str, Any], Effective]] = []
    for record in state.sorted_pools():
        effective, denials, _ = resolve_pool(state, record)
        assert effective is not None, (record.identity, denials)
        pairs.append((by_identity[record.identity], effective))
    effectives = [effective for _, effective in pairs]
    count = len(effectives)

    def one_at_a_time() -> None:
        for effective in effectives:
            render(effective)

    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    streamed = best(one_at_a_time, args.repeat, clock)
    kept = best(lambda: paused(lambda: [render(effective) for effective in effectives]), args.repeat, clock)
    objects = sum(len(render(effective)) for effective in effectives[:600]) * count / min(count, 600)
    peak = traced_peak(lambda: paused(lambda: [render(effective) for effective in effectives]))
    streamed_peak = traced_peak(one_at_a_time)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    where = profile(effectives[:200])
    sample = [pairs[i] for i in sorted(random.Random(7).sample(range(count), min(args.oracle_sample, count)))]
    helm = oracle_side(sample)

    print(f"# render bench: {count} pools (~{objects:,.0f} objects), best of {args.repeat} ({args.clock} clock),")
    print("# one core,")
    print(f"# Python {platform.python_version()} on {platform.machine()}")
    print(f"{'what':52} {'seconds':>9} {'pools/s':>10} {'ms/pool':>8}")
    for label, seconds in (
        ("render, one pool at a time, nothing kept", streamed),
        ("render, all output kept, collector paused (CLI)", kept),
    ):
        print(f"{label:52} {seconds:9.3f} {count / seconds:10,.0f} {1000 * seconds / count:8.3f}")
    if helm is None:
        print("oracle: absent (../shared/tools/cozystack-render), no Helm figure")
    else:
        per, compared, equal, note = helm
        print(
            f"{'oracle (Helm via helm-python-sdk), ' + str(len(sample)) + ' pools':52} {per * len(sample):9.3f} "
            f"{1 / per:10,.1f} {1000 * per:8.1f}"
        )
        print(f"  ({note}); ours is {per / (streamed / count):,.0f}x faster per pool")
        print(f"  parity on the sample: {equal} of {compared} classless pools render the oracle's objects exactly")
    print(f"peak traced memory, {count} pools rendered one at a time: {streamed_peak:.1f} MB")
    print(f"peak traced memory, {count} pools rendered and kept: {peak:.1f} MB; process peak RSS {rss:.0f} MB")
    print(f"where the render time goes (200 pools, top by own time):\n{where}")
    print(
        f"targets: >= 20,000 pools/s one core: {count / streamed:,.0f} (one at a time), {count / kept:,.0f} (kept);"
        f" peak memory for 10,000 pools < 500 MB: {streamed_peak:.0f} MB streamed, {peak:.0f} MB all kept (traced),"
        f" {rss:.0f} MB RSS"
    )


if __name__ == "__main__":
    main()
