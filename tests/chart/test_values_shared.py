"""The chart input's values share the tables of the pool's values, the platform's and the chart's
defaults (:func:`workerclass.chart.values.chart_input` copies none of them): nothing that reads a
chart input may change a table of it. These tests render, hash and plan the workers of pools over
the chart's value space and check that every one of those tables is as it was; and that the public
:func:`~workerclass.chart.values.coalesce` still returns a tree of its own.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.render.builders import parent, pool, release, worker_class
from workerclass.chart.values import _defaults, chart_input, coalesce
from workerclass.ops.workers import desired_workers
from workerclass.render import RenderError, render, template_hash
from workerclass.resolve import resolve_pool
from workerclass.state import State

pytestmark = pytest.mark.usefixtures("chart_text")

#: the examples' platform: its clusterValues are the ``_cluster`` the chart input shares
PLATFORM = yaml.safe_load((Path(__file__).resolve().parents[2] / "examples/platform/workerplatform.yaml").read_text())

MODULES = [{"name": "nvme_tcp", "parameters": ["a=1"]}]
MIRRORS = {"docker.io": {"endpoints": ["https://mirror.example.com"], "skipFallback": True}}


def _pools() -> list[dict[str, Any]]:
    return [
        pool("plain"),
        pool("sized", resources={"cpu": "3", "memory": "6Gi"}, podCpu="2", minReplicas=1, maxReplicas=4),
        pool("gpus", instanceType="u1.xlarge", gpus=[{"name": "nvidia.com/GA102GL_A10"}]),
        pool("kubelet", kubelet={"systemReserved": {"cpu": "250m"}}, talos={"registryMirrors": MIRRORS}),
        pool("labels", nodeLabels={"role": "batch"}, taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]),
        release("fromflux", instanceType="u1.large", maxReplicas=3, roles=["ingress-nginx"]),
        pool("classed", workerClassName="talos", kernelModules=MODULES, talos={"registryMirrors": MIRRORS}),
        pool("ownclass", workerClassName="talos-r1"),
        pool("kairos", workerClassName="kairos"),
    ]


def test_rendering_hashing_and_planning_change_no_table_the_chart_input_shares() -> None:
    objects = [parent(), PLATFORM, worker_class("talos-r1", bootstrap="talos", kernelModules=MODULES), *_pools()]
    state = State.from_objects(objects)
    upstream = state.chart.upstream
    defaults_before = copy.deepcopy(_defaults(upstream))
    values_before = {record.identity: copy.deepcopy(dict(record.values)) for record in state.pools.values()}
    platform_before = copy.deepcopy(dict(state.platform.cluster_values))
    rendered = 0
    for _ in range(2):  # a second pass reads what the first one shared
        for record in state.sorted_pools():
            effective, denials, _ = resolve_pool(state, record)
            assert effective is not None, (record.identity, denials)
            for talos_config_template in (False, True):
                try:
                    render(effective, talos_config_template=talos_config_template)
                    rendered += 1
                except RenderError:  # pragma: no cover - every pool here renders
                    raise
            template_hash(effective)
        assert all(pool.state in ("ready", "waiting-for-release") for pool in desired_workers(state))
    assert rendered == 2 * 2 * len(state.pools)
    assert _defaults(upstream) == defaults_before, "a chart default was changed through a chart input"
    assert {r.identity: dict(r.values) for r in state.pools.values()} == values_before
    assert dict(state.platform.cluster_values) == platform_before


def test_the_values_the_templates_read_are_the_coalesce_of_a_copy() -> None:
    """The shared tables give the very tree the copying coalesce gives."""
    values = {"cluster": "example", "version": "v1.35", "kubelet": {"systemReserved": {"cpu": "1"}}, "gpus": []}
    platform = {"_cluster": {"cluster-domain": "cozy.local"}}
    inp = chart_input(values, namespace="tenant-example", release="kubernetes-nodes-example-w", cluster_values=platform)
    expected = coalesce({**copy.deepcopy(platform), **copy.deepcopy(values)}, _defaults(inp.chart.upstream))
    assert inp.values == expected


def test_the_public_coalesce_returns_a_tree_of_its_own() -> None:
    defaults = _defaults()
    before = copy.deepcopy(defaults)
    out = coalesce({"cluster": "example"}, defaults)
    for value in out.values():
        if isinstance(value, dict):
            value["changed"] = True
        elif isinstance(value, list):
            value.append("changed")
    assert defaults == before
