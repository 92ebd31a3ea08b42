"""Benchmark: resolve and admit 10,000 generated pools against one State.

Reports pools per second and the ratio to a bare ``json.loads`` of the same pools, measured in
the same run. Target (issue 2): at least 20,000 admission decisions per second on one core.
Run: ``.venv/bin/python bench/core_bench.py [--pools N] [--repeat R]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from workerclass import State, admit  # noqa: E402
from workerclass.resolve import resolve_pool  # noqa: E402
from workerclass.state import pool_from_object  # noqa: E402

SCHEMATIC = "376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba"


def make_pool(index: int, rng: random.Random) -> dict[str, Any]:
    """A realistic mix: legacy Talos, built-in and custom classes, overrides, Kairos with SSH."""
    variant = index % 6
    spec: dict[str, Any] = {
        "cluster": "example",
        "version": rng.choice(["v1.34", "v1.35"]),
        "minReplicas": rng.randint(0, 2),
        "maxReplicas": rng.randint(3, 10),
        "instanceType": rng.choice(["u1.medium", "u1.large"]),
        "roles": ["ingress-nginx"] if index % 3 == 0 else [],
        "labels": {"team": f"t{index % 7}"},
    }
    if variant == 0:
        pass  # classless: CREATE defaults the platform class
    elif variant == 1:
        spec["workerClassName"] = "talos-example-r1"
        spec["talos"] = {"version": "v1.13.6", "registryMirrors": {"docker.io": {"endpoints": ["https://m.example"]}}}
        spec["kernelModules"] = [{"name": "nvme_tcp"}]
    elif variant == 2:
        spec["workerClassName"] = "kairos"
        spec["version"] = "v1.35"
        spec["sshKeys"] = []
    elif variant == 3:
        spec["workerClassName"] = "kairos-example-v1-35-6-r1"
        spec["version"] = "v1.35"
    elif variant == 4:
        spec["workerClassName"] = "talos"
        spec["gpus"] = [{"name": "nvidia.com/AD102GL_L40S"}]
        spec["kubevirt"] = {"osImage": {"builtin": {"version": "v1.13.6", "schematicID": SCHEMATIC}}}
    else:
        spec["workerClassName"] = "talos"
        spec["sshKeys"] = ["ssh-ed25519 AAAA"]  # denied: Talos has no SSH server
    return {
        "apiVersion": "apps.cozystack.io/v1alpha1",
        "kind": "KubernetesNodes",
        "metadata": {"name": f"pool-{index}", "namespace": "tenant-example"},
        "spec": spec,
    }


def timed(function: Any, items: list[Any], repeat: int) -> float:
    """Best wall time of ``repeat`` passes over ``items``."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for item in items:
            function(item)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pools", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core

    state = State.load(ROOT / "examples")
    rng = random.Random(42)
    pools = [make_pool(index, rng) for index in range(args.pools)]
    texts = [json.dumps(pool) for pool in pools]
    records = [pool_from_object(pool) for pool in pools]

    baseline = timed(json.loads, texts, args.repeat)
    admission = timed(lambda pool: admit(state, "CREATE", pool), pools, args.repeat)
    resolution = timed(lambda record: resolve_pool(state, record), records, args.repeat)
    allowed = sum(1 for pool in pools if admit(state, "CREATE", pool).allowed)

    count = len(pools)
    rows = [
        ("json.loads (baseline)", baseline),
        ("admit (CREATE: mutate + validate)", admission),
        ("resolve (parsed pool)", resolution),
    ]
    print(f"# core bench: {count} pools, best of {args.repeat}, one core, Python {platform.python_version()}")
    print(f"# {allowed} allowed, {count - allowed} denied")
    print(f"{'what':38} {'pools/s':>12} {'us/pool':>9} {'x json.loads':>13}")
    for label, seconds in rows:
        print(f"{label:38} {count / seconds:12,.0f} {seconds / count * 1e6:9.1f} {seconds / baseline:13.1f}")
    target = count / admission >= 20_000
    print(f"target >= 20,000 admission decisions/s: {'met' if target else 'NOT met'}")


if __name__ == "__main__":
    main()
