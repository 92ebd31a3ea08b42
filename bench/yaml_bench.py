"""Benchmark: the package's YAML reader (go-yaml v2 resolution, then JSON) beside PyYAML's own loaders.

Texts, all read as the package reads them:

- STATE documents: N pools (``render_bench.make_pool``: KubernetesNodes and HelmReleases over the
  chart's value space) written as YAML, the shape ``workerclass check`` reads from a GitOps folder;
- KubevirtMachineTemplate define texts: the text the chart hashes, which the port parses back into
  the object (with and without the platform's topology spread constraints, the case that needs a
  real YAML reader).

Measured in the same run, the least CPU time of R runs, one core:

- baseline: PyYAML's C safe loader (``yaml.load_all(..., CSafeLoader)``), YAML 1.1 resolution;
- PyYAML's pure-Python safe loader (the base the package's reader had before: ``SafeLoader``);
- the package's reader (``workerclass.chart.kubeyaml.k8s_load``: ``CSafeLoader`` with go-yaml v2
  resolution), and the same resolution on the pure-Python base (what it was);
- reading a STATE folder (``adapters.folder.read_paths``) of the same pools;
- ``chart.values.block_load`` (the hand-written reader of the define's text) when the tree still has it;
- the KubevirtMachineTemplate object of the pools with constraints (``kubevirtmachinetemplate``: the
  text and its parse, or the direct build), as a render makes it.

Run: ``.venv/bin/python bench/yaml_bench.py [--pools N] [--repeat R]``.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from render_bench import CLUSTER, NAMESPACE, make_pool  # noqa: E402

from workerclass.adapters.folder import read_paths  # noqa: E402
from workerclass.chart import chart_input, kubevirtmachinetemplate, kubevirtmachinetemplate_text, sizing  # noqa: E402

try:  # the package's one reader (after issue 21 item 11)
    from workerclass.chart.kubeyaml import KubeLoader, k8s_load
except ImportError:  # the tree before it: the pure-Python reader in chart.values
    KubeLoader = None
    from workerclass.chart.values import k8s_load  # type: ignore[no-redef]

try:
    from workerclass.chart.values import block_load  # type: ignore[attr-defined]
except ImportError:
    block_load = None

CONSTRAINTS = (
    "topologySpreadConstraints:\n"
    "- maxSkew: 1\n  topologyKey: topology.kubernetes.io/zone\n  whenUnsatisfiable: ScheduleAnyway\n"
    "- maxSkew: 2\n  topologyKey: kubernetes.io/hostname\n  whenUnsatisfiable: DoNotSchedule\n"
)


def best(function: Callable[[], Any], repeat: int) -> float:
    """The least CPU time of this process over ``repeat`` runs (CPU, not wall clock: the machine is shared)."""
    out = float("inf")
    for _ in range(repeat):
        gc.collect()
        start = time.process_time()
        function()
        out = min(out, time.process_time() - start)
    return out


def pure_python_kube_loader() -> type[Any] | None:
    """The package's resolution and constructors on PyYAML's pure-Python base (the reader as it was)."""
    if KubeLoader is None:
        return None

    class PureKubeLoader(yaml.SafeLoader):
        pass

    PureKubeLoader.yaml_implicit_resolvers = dict(KubeLoader.yaml_implicit_resolvers)
    PureKubeLoader.yaml_constructors = dict(KubeLoader.yaml_constructors)
    for name in (
        "construct_plain",
        "construct_mapping",
        "construct_yaml_map",
        "construct_typed",
        "construct_text",
        "repeated_key",
        "metadata_read",
    ):
        setattr(PureKubeLoader, name, getattr(KubeLoader, name))
    return PureKubeLoader


def kmt_inputs(pools: list[dict[str, Any]]) -> list[Any]:
    """The chart input of each classless pool, every second one with the platform's constraints."""
    inputs = []
    for index, obj in enumerate(pools):
        values = obj["spec"] if obj["kind"] == "KubernetesNodes" else obj["spec"]["values"]
        if "workerClassName" in values:
            continue
        cluster: dict[str, Any] = {"cluster-domain": "cozy.local"}
        if index % 2:
            cluster["scheduling"] = {"globalAppTopologySpreadConstraints": CONSTRAINTS}
        inp = chart_input(
            values,
            namespace=NAMESPACE,
            release=f"kubernetes-nodes-{CLUSTER}-p{index}",
            cluster_values={"_cluster": cluster},
        )
        inputs.append((inp, sizing(inp)))
    return inputs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pools", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    rng = random.Random(7)
    pools = [make_pool(index, rng) for index in range(args.pools)]
    stream = yaml.safe_dump_all(pools, sort_keys=False)
    inputs = kmt_inputs(pools)
    texts = [kubevirtmachinetemplate_text(inp, size) for inp, size in inputs]
    constrained = texts[1::2]
    rows: list[tuple[str, float, int]] = []

    def row(label: str, function: Callable[[], Any], count: int) -> None:
        rows.append((label, best(function, args.repeat), count))

    row("STATE text: yaml.load_all, CSafeLoader (baseline)", lambda: list(yaml.load_all(stream, yaml.CSafeLoader)), 1)
    row("STATE text: yaml.load_all, SafeLoader (pure Python)", lambda: list(yaml.load_all(stream, yaml.SafeLoader)), 1)
    if KubeLoader is not None:
        row("STATE text: package reader (kubeyaml, C base)", lambda: list(yaml.load_all(stream, KubeLoader)), 1)
        pure = pure_python_kube_loader()
        row("STATE text: same resolution, pure-Python base", lambda: list(yaml.load_all(stream, pure)), 1)
    with tempfile.TemporaryDirectory() as folder:
        for chunk in range(0, len(pools), 100):
            Path(folder, f"pools-{chunk:05d}.yaml").write_text(yaml.safe_dump_all(pools[chunk : chunk + 100]))
        row("STATE folder: adapters.folder.read_paths", lambda: read_paths([folder]), 1)
    row("KMT texts: yaml.load, CSafeLoader (baseline)", lambda: [yaml.load(t, yaml.CSafeLoader) for t in texts], 2)
    row("KMT texts: k8s_load (the package's reader)", lambda: [k8s_load(t) for t in texts], 2)
    row("KMT texts with constraints: k8s_load", lambda: [k8s_load(t) for t in constrained], 3)
    if block_load is not None:
        row("KMT texts with constraints: block_load", lambda: [block_load(t) for t in constrained], 3)
    with_constraints = inputs[1::2]
    row(
        "KMT objects with constraints: kubevirtmachinetemplate()",
        lambda: [kubevirtmachinetemplate(inp, size) for inp, size in with_constraints],
        3,
    )
    print(f"# yaml bench: {args.pools} pools ({len(stream) / 1e6:.1f} MB of YAML), {len(texts)} KMT texts")
    print(f"# least CPU time of {args.repeat}, one core, Python {platform.python_version()} on {platform.machine()}")
    baselines: dict[int, float] = {}
    print(f"{'what':58}{'seconds':>9}{'x baseline':>12}")
    for label, seconds, group in rows:
        group = 2 if group == 3 else group
        baselines.setdefault(group, seconds)
        print(f"{label:58}{seconds:9.3f}{seconds / baselines[group]:12.2f}")


if __name__ == "__main__":
    main()
