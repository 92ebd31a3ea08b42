"""Benchmark: render and hash 10,000 pools; plan between two 10,000-pool STATE folders.

Writes two generated STATE folders (the ``examples/`` platform, classes and parent cluster plus
N pools in files of 100 documents) to a temporary directory, then measures on one core:

- the baseline: ``yaml.load_all`` (PyYAML's C loader when built) of the same pool files;
- ``render`` (which computes the template hash) and ``template_hash`` alone, per resolved pool;
- ``plan`` between the two states (resolution of both sides, hashes, reasons), with and
  without loading the folders;
- peak memory: traced allocations (tracemalloc, a separate untimed pass) for the YAML load,
  render of every pool and plan including both loads, and the process's peak RSS.

Targets (issue 3): render at least 5,000 pools/s on one core, plan under 4 s, peak memory
under 500 MB. Every figure is also given as a ratio to the YAML baseline of the same run.
Run: ``.venv/bin/python bench/render_bench.py [--pools N] [--repeat R]``.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from workerclass.ops import plan  # noqa: E402
from workerclass.render import render, template_hash  # noqa: E402
from workerclass.resolve import resolve_pool  # noqa: E402
from workerclass.state import State  # noqa: E402

try:
    from yaml import CSafeLoader as Loader
except ImportError:  # pragma: no cover
    from yaml import SafeLoader as Loader  # type: ignore[assignment]

SCHEMATIC = "376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba"
PER_FILE = 100


def make_pool(index: int, rng: random.Random, *, after: bool) -> dict[str, Any]:
    """Legacy, custom-class Talos, platform and fixed Kairos, builtin golden with a GPU, HelmRelease.

    ``after``: about a tenth of the pools change replicas (in place), a tenth change mirrors or
    instance type (replace); the platform Kairos digest changes in the whole after-state.
    """
    variant = index % 6
    spec: dict[str, Any] = {
        "cluster": "example",
        "version": "v1.35",
        "minReplicas": rng.randint(0, 2),
        "maxReplicas": rng.randint(3, 10),
        "instanceType": rng.choice(["u1.medium", "u1.large"]),
        "roles": ["ingress-nginx"] if index % 3 == 0 else [],
        "labels": {"team": f"t{index % 7}"},
        "taints": [{"key": "dedicated", "value": f"t{index % 5}", "effect": "NoSchedule"}] if index % 4 == 0 else [],
        "maxUnhealthy": "50%" if index % 2 else 1,
    }
    if variant == 1:
        spec["workerClassName"] = "talos-example-r1"
        spec["talos"] = {"version": "v1.13.6", "registryMirrors": {"docker.io": {"endpoints": ["https://m.example"]}}}
        spec["kernelModules"] = [{"name": "nvme_tcp"}]
    elif variant == 2:
        spec["workerClassName"] = "kairos"
        spec["sshKeys"] = []
    elif variant == 3:
        spec["workerClassName"] = "kairos-example-v1-35-6-r1"
    elif variant == 4:
        spec["workerClassName"] = "talos"
        spec["gpus"] = [{"name": "nvidia.com/AD102GL_L40S"}]
        spec["kubevirt"] = {"osImage": {"builtin": {"version": "v1.13.6", "schematicID": SCHEMATIC}}}
    if after and index % 10 == 0:
        spec["maxReplicas"] += 1
    if after and index % 10 == 5:
        if variant == 1:
            spec["talos"]["registryMirrors"] = {"docker.io": {"endpoints": ["https://other.example"]}}
        else:
            spec["instanceType"] = "u1.xlarge"
    metadata = {"name": f"pool-{index}", "namespace": "tenant-example"}
    if variant == 5:  # a direct HelmRelease writer: classless, legacy render
        return {
            "apiVersion": "helm.toolkit.fluxcd.io/v2",
            "kind": "HelmRelease",
            "metadata": {**metadata, "labels": {"apps.cozystack.io/application.kind": "KubernetesNodes"}},
            "spec": {"values": spec},
        }
    return {"apiVersion": "apps.cozystack.io/v1alpha1", "kind": "KubernetesNodes", "metadata": metadata, "spec": spec}


def write_state(directory: Path, count: int, *, after: bool) -> list[Path]:
    """The examples' platform, classes and cluster, plus ``count`` pools; returns the pool files."""
    shutil.copytree(ROOT / "examples" / "platform", directory / "platform")
    shutil.copytree(ROOT / "examples" / "classes", directory / "classes")
    (directory / "tenant").mkdir()
    shutil.copy(ROOT / "examples" / "tenant-example" / "cluster.yaml", directory / "tenant" / "cluster.yaml")
    if after:
        platform_file = directory / "platform" / "workerplatform.yaml"
        platform_file.write_text(platform_file.read_text().replace("ab712e0c41c4a395", "0123456789abcdef"))
    rng = random.Random(42)
    files = []
    for start in range(0, count, PER_FILE):
        pools = [make_pool(index, rng, after=after) for index in range(start, min(start + PER_FILE, count))]
        path = directory / "tenant" / f"pools-{start // PER_FILE:04d}.yaml"
        path.write_text(yaml.safe_dump_all(pools, sort_keys=False))
        files.append(path)
    return files


def best(function: Callable[[], Any], repeat: int) -> float:
    out = float("inf")
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        function()
        out = min(out, time.perf_counter() - start)
    return out


def paused(function: Callable[[], Any]) -> Any:
    """Run ``function`` with the cyclic collector paused, as ``workerclass render``/``plan`` do."""
    gc.disable()
    try:
        return function()
    finally:
        gc.enable()


_CLI = """
import resource, sys, time
from workerclass.cli.main import main
sys.argv = ["workerclass", *sys.argv[1:]]
start = time.perf_counter()
try:
    main()
except SystemExit as exit:
    code = exit.code
seconds = time.perf_counter() - start
# VmHWM belongs to this process's own memory map; ru_maxrss would also count the pages of the
# (large) benchmark process this one was forked from.
try:
    with open("/proc/self/status") as status:
        peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) / 1024
except (OSError, StopIteration):
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"{seconds:.3f} {peak:.0f} {code}", file=sys.stderr)
"""


def cli(*args: str) -> tuple[float, float]:
    """Run ``workerclass ARGS`` in a fresh process: (seconds inside the process, peak RSS MB)."""
    command = [sys.executable, "-c", _CLI, *args]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    result = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    seconds, peak, code = result.stderr.strip().splitlines()[-1].split()
    assert code in ("0", "None"), result.stderr[-2000:]
    return float(seconds), float(peak)


def traced_peak(function: Callable[[], Any]) -> float:
    """Peak traced allocation in MB while ``function`` runs (its result kept alive until the end)."""
    gc.collect()
    tracemalloc.start()
    result = function()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del result
    return peak / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pools", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core
    count = args.pools
    with tempfile.TemporaryDirectory(prefix="render-bench-") as tmp:
        before_dir, after_dir = Path(tmp) / "before", Path(tmp) / "after"
        files = write_state(before_dir, count, after=False)
        write_state(after_dir, count, after=True)
        texts = [path.read_text() for path in files]

        def load_yaml() -> list[Any]:
            return [document for text in texts for document in yaml.load_all(text, Loader=Loader)]

        baseline = best(load_yaml, args.repeat)
        load_state = best(lambda: State.load(before_dir), 1)
        before, after = State.load(before_dir), State.load(after_dir)
        records = before.sorted_pools()
        resolved = [resolve_pool(before, record)[0] for record in records]
        effectives = [effective for effective in resolved if effective is not None]
        assert len(effectives) == count, f"{count - len(effectives)} generated pools were denied"

        resolve_seconds = best(lambda: [resolve_pool(before, record) for record in records], args.repeat)

        def render_streamed() -> None:  # one pool at a time, as a controller would
            for effective in effectives:
                render(effective)

        render_streamed_seconds = best(render_streamed, args.repeat)
        render_kept_seconds = best(lambda: [render(effective) for effective in effectives], args.repeat)
        render_paused_seconds = best(
            lambda: paused(lambda: [render(effective) for effective in effectives]), args.repeat
        )
        hash_seconds = best(lambda: [template_hash(effective) for effective in effectives], args.repeat)
        plan_seconds = best(lambda: plan(before, after), args.repeat)
        plan_with_load = best(lambda: plan(State.load(before_dir), State.load(after_dir)), args.repeat)
        plan_paused = best(lambda: paused(lambda: plan(State.load(before_dir), State.load(after_dir))), args.repeat)
        result = plan(before, after)
        replacing = len(result.replacing)
        rebuilds = sum(1 for row in result.rows if row.rebuild_only)
        objects = sum(len(render(effective)) for effective in effectives)

        cli_render = min((cli("render", str(before_dir)) for _ in range(args.repeat)), key=lambda r: r[0])
        cli_plan = min(
            (cli("plan", str(before_dir), "--to", str(after_dir), "-o", "json") for _ in range(args.repeat)),
            key=lambda r: r[0],
        )
        yaml_peak = traced_peak(load_yaml)
        render_peak = traced_peak(lambda: [render(effective) for effective in effectives])
        plan_peak = traced_peak(lambda: plan(State.load(before_dir), State.load(after_dir)))
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB

    print(f"# render bench: {count} pools ({objects} objects), best of {args.repeat}, one core,")
    print(f"# Python {platform.python_version()}, PyYAML loader {Loader.__name__}")
    print(f"{'what':40} {'seconds':>9} {'pools/s':>10} {'x yaml load':>12}")
    rows = [
        ("yaml.load_all of the pool files (baseline)", baseline),
        ("State.load (folder -> parsed pools)", load_state),
        ("resolve every pool", resolve_seconds),
        ("render, one pool at a time (incl. hash)", render_streamed_seconds),
        ("render, all output kept", render_kept_seconds),
        ("render, all kept, collector paused (CLI)", render_paused_seconds),
        ("template_hash alone", hash_seconds),
        ("plan (two loaded states)", plan_seconds),
        ("plan including both State.load", plan_with_load),
        ("same, collector paused (CLI)", plan_paused),
    ]
    for label, seconds in rows:
        print(f"{label:40} {seconds:9.3f} {count / seconds:10,.0f} {seconds / baseline:12.2f}")
    print(f"plan: {replacing} of {count} pools replace, {rebuilds} of them only from the platform Kairos rebuild")
    print(f"{'peak traced memory':40} {'MB':>9} {'':>10} {'x yaml load':>12}")
    for label, megabytes in (
        ("yaml.load_all (baseline)", yaml_peak),
        ("render every pool (kept)", render_peak),
        ("plan including both State.load", plan_peak),
    ):
        print(f"{label:40} {megabytes:9.1f} {'':>10} {megabytes / yaml_peak:12.2f}")
    print(f"bench process peak RSS (everything above kept alive): {rss:.0f} MB")
    print(f"{'command in a fresh process':40} {'seconds':>9} {'pools/s':>10} {'peak RSS MB':>12}")
    for label, (seconds, peak) in (
        ("workerclass render STATE (YAML out)", cli_render),
        ("workerclass plan STATE --to STATE2 -o json", cli_plan),
    ):
        print(f"{label:40} {seconds:9.3f} {count / seconds:10,.0f} {peak:12.0f}")
    print(
        f"targets: render >= 5,000 pools/s: one at a time {count / render_streamed_seconds:,.0f},"
        f" all kept {count / render_kept_seconds:,.0f}, CLI {count / render_paused_seconds:,.0f};"
        f" plan < 4 s: {plan_seconds:.2f} s (loaded), {plan_paused:.2f} s (CLI, with loads);"
        f" peak memory < 500 MB: render {cli_render[1]:.0f} MB, plan {cli_plan[1]:.0f} MB (CLI RSS)"
    )


if __name__ == "__main__":
    main()
