"""Benchmark: the class controller's status pass after one pool's change, at two cluster sizes.

The class controller writes every custom class's status on each State the cache announces, so its
pass runs once per change. Its counts (the pools that select a class, their namespaces, their
worker states) are kept up by change (``ClassUsage``); the baseline, measured in the same run, is
the same status counted from every pool (``class_status`` from the State and the states alone,
what the pass did before).

For each size: P pools (KubernetesNodes) over T tenant namespaces, all selecting one custom class
(the shape where counting is dearest), each with a worker state. Then C changes, one at a time:
a pool's ``maxReplicas`` (a new State folded from the last) and its worker state (applied, then
waiting-for-rollout, then applied). Per change, CPU clock: ``fold`` plus ``class_status`` of the
class (this tree), against ``class_status`` counting every pool (baseline), each over the whole
history in a run of its own. The statuses are compared change by change, so both say the same.

Run: ``.venv/bin/python bench/status_bench.py [--pools 2000 20000] [--tenants-per 100] [--changes 200]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the tests' record of worker states
sys.path.insert(0, str(ROOT / "src"))

from tests.builders import PoolStatesLog  # noqa: E402

from workerclass.ops.status import ClassUsage, class_status  # noqa: E402
from workerclass.state import State  # noqa: E402

CLASS = "talos-bench-r1"


def pool(namespace: str, name: str, replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps.cozystack.io/v1alpha1",
        "kind": "KubernetesNodes",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"cluster": "example", "version": "v1.35", "workerClassName": CLASS, "maxReplicas": replicas},
    }


def objects(pools: int, tenants: int) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = [
        {
            "apiVersion": "cozystack.io/v1alpha1",
            "kind": "WorkerClass",
            "metadata": {"name": CLASS, "generation": 1},
            "spec": {"bootstrap": "talos", "talos": {"version": "v1.13.6"}},
        }
    ]
    for index in range(tenants):
        found.append(
            {
                "apiVersion": "apps.cozystack.io/v1alpha1",
                "kind": "Kubernetes",
                "metadata": {"name": "example", "namespace": f"tenant-{index}"},
                "spec": {"version": "v1.35", "infrastructure": "kubevirt"},
            }
        )
    found += [pool(f"tenant-{index % tenants}", f"example-p{index}", 2) for index in range(pools)]
    return found


def history(pools: int, tenants: int, changes: int) -> Iterator[tuple[State, PoolStatesLog]]:
    """The settled State and worker states, then the same after each change (a pool's
    ``maxReplicas`` and its worker state), one at a time."""
    state = State.from_objects(objects(pools, tenants))
    workers = PoolStatesLog()
    for index in range(pools):
        workers.set(f"tenant-{index % tenants}/example-p{index}", "applied")
    yield state, workers
    step = max(1, pools // changes)
    for index in range(changes):
        number = (index * step) % pools
        namespace, name = f"tenant-{number % tenants}", f"example-p{number}"
        state = state.with_object(pool(namespace, name, 3 + index % 3))
        workers.set(f"{namespace}/{name}", ("waiting-for-rollout", "applied")[index % 2])
        yield state, workers


def measure(pools: int, tenants: int, changes: int) -> tuple[float, float]:
    """The median CPU per change of this tree's pass and of the baseline's, each in a run of its
    own over the same history (so neither runs on the caches the other left), and their statuses
    compared change by change."""
    usage = ClassUsage()
    ours: list[float] = []
    kept: list[Any] = []
    for index, (state, workers) in enumerate(history(pools, tenants, changes)):
        started = time.process_time()
        usage.fold(state, workers)
        status = class_status(state, CLASS, 1, usage=usage.of(CLASS))
        if index:
            ours.append(time.process_time() - started)
        kept.append(status)
    assert usage.reads == 1, usage.reads
    baseline: list[float] = []
    for index, (state, workers) in enumerate(history(pools, tenants, changes)):
        started = time.process_time()
        status = class_status(state, CLASS, 1, workers.states)
        if index:
            baseline.append(time.process_time() - started)
        assert status == kept[index], (status, kept[index])
    return statistics.median(ours), statistics.median(baseline)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pools", type=int, nargs="+", default=[2000, 20000])
    parser.add_argument("--tenants-per", type=int, default=100, help="pools per tenant namespace")
    parser.add_argument("--changes", type=int, default=200)
    args = parser.parse_args()
    print("| pools | tenants | kept by change, median | counted from every pool (baseline), median | ratio |")
    print("|---:|---:|---:|---:|---:|")
    results = []
    for pools in args.pools:
        tenants = max(1, pools // args.tenants_per)
        ours, baseline = measure(pools, tenants, args.changes)
        results.append(ours)
        print(f"| {pools:,} | {tenants} | {ours * 1e6:.1f} µs | {baseline * 1e6:.1f} µs | {ours / baseline:.3f} |")
    if len(results) > 1:
        print(f"\nkept by change, largest size over smallest: {results[-1] / results[0]:.2f}x")


if __name__ == "__main__":
    main()
