"""Benchmark: what a State costs in memory per class, and in time to build, batch against event by event.

Two measurements, each in child processes of their own (so RSS is the State's alone):

* ``memory``: N WorkerClasses, each selected by one pool (a KubernetesNodes and its backing
  HelmRelease), plus the platform and the parent cluster. The child imports workerclass, builds
  the State of the platform and parent only (the baseline, measured in the same child), then the
  whole State, and reports the RSS over the baseline. Two ways of building it: ``batch``
  (``State.from_objects``, the cache's cold sync and ``check``) and ``events`` (the baseline State
  then ``with_object`` per object, as the webhook's cache grows: class specs are immutable, so a
  cluster's classes accumulate). Target (issue 21): 1,000 classes x 1 pool under 60 MiB over the
  empty process.
* ``build``: P pools (KubernetesNodes plus backing HelmRelease, one class per 10 pools): the best
  of R builds of ``State.from_objects``, and of ``with_object`` per object from the empty State;
  then the cost of one change at that size: 3,000 ``with_object`` of a pool's ``maxReplicas``,
  alternating the KubernetesNodes and its HelmRelease (so the pair is re-paired each time), median
  and p99 in microseconds (the cache's applied events, without its trimming and decoding).

``--src DIR`` runs the same children against another tree's ``src`` (a ``git archive`` of the base
commit), so a before/after pair comes from one run on the same machine.

Run: ``.venv/bin/python bench/state_bench.py [--classes 1000] [--pools 10000] [--repeat 3] [--src DIR]``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
NAMESPACE = "tenant-example"
CLUSTER = "example"


def rss_mib() -> float:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def base_objects() -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "apps.cozystack.io/v1alpha1",
            "kind": "Kubernetes",
            "metadata": {"name": CLUSTER, "namespace": NAMESPACE},
            "spec": {"version": "v1.35", "infrastructure": "kubevirt"},
        }
    ]


def worker_class(index: int) -> dict[str, Any]:
    return {
        "apiVersion": "cozystack.io/v1alpha1",
        "kind": "WorkerClass",
        "metadata": {"name": f"talos-c{index}-r1"},
        "spec": {
            "bootstrap": "talos",
            "talos": {"version": "v1.13.6", "registryMirrors": {"docker.io": {"endpoints": ["https://m.example"]}}},
            "kernelModules": [{"name": "nvme_tcp"}],
        },
    }


def pool_pair(index: int, class_name: str) -> list[dict[str, Any]]:
    """A KubernetesNodes ``example-p<i>`` and its backing HelmRelease (what the API stores)."""
    name = f"{CLUSTER}-p{index}"
    values = {
        "cluster": CLUSTER,
        "workerClassName": class_name,
        "version": "v1.35",
        "minReplicas": 1,
        "maxReplicas": 3,
        "instanceType": "u1.medium",
        "roles": ["ingress-nginx"],
    }
    return [
        {
            "apiVersion": "apps.cozystack.io/v1alpha1",
            "kind": "KubernetesNodes",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": dict(values),
        },
        {
            "apiVersion": "helm.toolkit.fluxcd.io/v2",
            "kind": "HelmRelease",
            "metadata": {
                "name": f"kubernetes-nodes-{name}",
                "namespace": NAMESPACE,
                "labels": {"apps.cozystack.io/application.kind": "KubernetesNodes"},
            },
            "spec": {"values": dict(values)},
        },
    ]


# --------------------------------------------------------------------------- children


def child_memory(classes: int, how: str) -> dict[str, Any]:
    from workerclass.state import State

    base = State.from_objects(base_objects())
    objects: list[dict[str, Any]] = []
    for index in range(classes):
        cls = worker_class(index)
        objects.append(cls)
        objects += pool_pair(index, cls["metadata"]["name"])
    gc.collect()
    baseline = rss_mib()
    started = time.perf_counter()
    if how == "batch":
        state = State.from_objects([*base_objects(), *objects])
    else:
        state = base
        for obj in objects:
            state = state.with_object(obj)
    seconds = time.perf_counter() - started
    gc.collect()
    rss = rss_mib()
    assert len(state.pools_by_class) == classes
    return {
        "classes": classes,
        "how": how,
        "baseline_mib": round(baseline, 1),
        "rss_mib": round(rss, 1),
        "over_baseline_mib": round(rss - baseline, 1),
        "build_s": round(seconds, 3),
    }


def child_build(pools: int, repeat: int) -> dict[str, Any]:
    from workerclass.state import State

    objects = base_objects()
    for index in range(pools // 10 + 1):
        objects.append(worker_class(index))
    for index in range(pools):
        objects += pool_pair(index, f"talos-c{index // 10}-r1")
    batch: list[float] = []
    events: list[float] = []
    for _ in range(repeat):
        started = time.perf_counter()
        built = State.from_objects(objects)
        batch.append(time.perf_counter() - started)
        empty = State.from_objects([])
        started = time.perf_counter()
        state = empty
        for obj in objects:
            state = state.with_object(obj)
        events.append(time.perf_counter() - started)
        assert len(state.pools) == len(built.pools) == pools
    costs: list[float] = []
    for serial in range(3000):
        index = (serial * 7919) % pools
        changed = pool_pair(index, f"talos-c{index // 10}-r1")[serial % 2]
        values = changed["spec"] if changed["kind"] == "KubernetesNodes" else changed["spec"]["values"]
        values["maxReplicas"] = 3 + serial % 5
        started = time.perf_counter()
        built = built.with_object(changed)
        costs.append((time.perf_counter() - started) * 1e6)
    costs.sort()
    return {
        "pools": pools,
        "batch_s": round(min(batch), 3),
        "events_s": round(min(events), 3),
        "change_median_us": round(costs[len(costs) // 2], 1),
        "change_p99_us": round(costs[int(len(costs) * 0.99)], 1),
    }


# --------------------------------------------------------------------------- parent


def run_child(src: Path, *args: str) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(src))
    out = subprocess.run(
        [sys.executable, __file__, "--child", *args], env=env, capture_output=True, text=True, check=True
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--classes", type=int, default=1000)
    parser.add_argument("--pools", type=int, default=10000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--src", type=Path, action="append", help="another tree's src (repeatable)")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        what, *rest = args.child
        if what == "memory":
            print(json.dumps(child_memory(int(rest[0]), rest[1])))
        else:
            print(json.dumps(child_build(int(rest[0]), int(rest[1]))))
        return
    trees = [ROOT / "src", *(args.src or [])]
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores; trees: {', '.join(map(str, trees))}")
    for tree in trees:
        for how in ("batch", "events"):
            print(tree, json.dumps(run_child(tree, "memory", str(args.classes), how)))
        print(tree, json.dumps(run_child(tree, "build", str(args.pools), str(args.repeat))))


if __name__ == "__main__":
    main()
