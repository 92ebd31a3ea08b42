"""Benchmark: the command line on 10,000 pools, tables for people beside JSON for scripts (issue 11).

Writes a STATE folder of N Cozystack-named pools (namespace ``tenant-x``, KubernetesNodes
``example-p<i>`` of the parent ``Kubernetes`` ``example``; a mix of classless, ``talos`` and
``kairos`` pools), then times the real entry point (``python -m workerclass``, a subprocess,
stdout to a pipe as in CI; wall and CPU seconds) for ``resolve`` as a table and as JSON, and ``check`` as a table and
as JSON. Wall time per run, best and median of R runs, start-up included. Target (issue 11):
``resolve`` as a table under 3 s at 10,000 pools.

The pools come in few shapes (their replica counts and class vary, nothing else), as a tenant's
pools of one kind do: pools whose values are the same but for their names share one run of the
chart's checks and one chart input. ``--distinct`` gives every pool values of its own (a role
with its index), so that nothing is shared.

Run: ``.venv/bin/python bench/cli_bench.py [--pools N] [--repeat R] [--distinct]``.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def write_state(folder: Path, pools: int, *, distinct: bool = False) -> None:
    documents: list[dict[str, object]] = [
        {
            "apiVersion": "apps.cozystack.io/v1alpha1",
            "kind": "Kubernetes",
            "metadata": {"name": "example", "namespace": "tenant-x"},
            "spec": {"version": "v1.35"},
        }
    ]
    for index in range(pools):
        spec: dict[str, object] = {"cluster": "example", "minReplicas": index % 3, "maxReplicas": 3 + index % 5}
        if distinct:
            spec["roles"] = [f"bench{index}"]
        if index % 3 == 1:
            spec["workerClassName"] = "talos"
        elif index % 3 == 2:
            spec["workerClassName"] = "kairos"
        documents.append(
            {
                "apiVersion": "apps.cozystack.io/v1alpha1",
                "kind": "KubernetesNodes",
                "metadata": {"name": f"example-p{index}", "namespace": "tenant-x"},
                "spec": spec,
            }
        )
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "state.yaml").write_text(yaml.safe_dump_all(documents, sort_keys=False))


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(args: list[str], env: dict[str, str]) -> tuple[float, float, int, int]:
    """Wall seconds, CPU seconds (user + system: steadier on a shared machine), exit code, stdout bytes."""
    start, cpu = time.perf_counter(), _children_cpu()
    result = subprocess.run(
        [sys.executable, "-m", "workerclass", *args], capture_output=True, env=env, check=False, timeout=1800
    )
    elapsed = time.perf_counter() - start
    if result.returncode not in (0, 1):
        raise SystemExit(f"{args}: exit {result.returncode}: {result.stderr.decode()[:500]}")
    return elapsed, _children_cpu() - cpu, result.returncode, len(result.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pools", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--distinct", action="store_true", help="values of its own for every pool")
    options = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp) / "state"
        write_state(state, options.pools, distinct=options.distinct)
        print(
            f"python {platform.python_version()}, {os.cpu_count()} cpus, {options.pools} pools"
            f"{' (distinct values)' if options.distinct else ''}, best/median of "
            f"{options.repeat} runs (wall time, start-up included, stdout to a pipe)"
        )
        print(f"{'command':<20} {'best s':>7} {'median s':>9} {'CPU s':>7} {'pools/s':>8} {'stdout MB':>10} exit")
        wall, cpu, _, _ = run(["--version"], env)
        print(f"{'--version (start-up)':<20} {wall:>7.2f} {'':>9} {cpu:>7.2f}")
        for label, args in (
            ("resolve (table)", ["resolve", str(state)]),
            ("resolve -o json", ["resolve", str(state), "-o", "json"]),
            ("check (table)", ["check", str(state)]),
            ("check -o json", ["check", str(state), "-o", "json"]),
        ):
            runs = [run(args, env) for _ in range(options.repeat)]
            times = [elapsed for elapsed, _, _, _ in runs]
            best, median = min(times), statistics.median(times)
            cpu = min(used for _, used, _, _ in runs)
            print(
                f"{label:<20} {best:>7.2f} {median:>9.2f} {cpu:>7.2f} {options.pools / best:>8.0f} "
                f"{runs[0][3] / 1e6:>10.1f} {runs[0][2]}"
            )


if __name__ == "__main__":
    main()
