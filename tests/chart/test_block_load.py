"""The purpose-built reader of the KMT text equals the go-yaml-v2-faithful PyYAML loader on every
KMT text the chart's value space produces (incl. scheduling constraints and class-era disks)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workerclass.chart import chart_failures, golden_disk, kubevirtmachinetemplate_text, sizing
from workerclass.chart.nodegroup import Disk
from workerclass.chart.values import block_load, k8s_load

from .cases import free_pools, make_input, pools

DISKS = st.sampled_from(
    [None, golden_disk("abc", "v1.13.6"), Disk.http("https://m.example/image/x/v1/openstack-amd64.raw.xz", "ca-cm")]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
@given(st.one_of(pools(), free_pools()), DISKS)
def test_block_load_equals_the_k8s_loader(case: tuple[dict[str, Any], str, str, Any], disk: Disk | None) -> None:
    inp = make_input(*case)
    if chart_failures(inp):
        return
    text = kubevirtmachinetemplate_text(inp, sizing(inp), disk)
    assert block_load(text) == k8s_load(text)


def test_block_load_shapes() -> None:
    text = "a:\n  b: \"x\\ty\"\n  c:\n  - name: 1\n    v: {}\n  - - z\n  e:\n  f: 'it''s'\n  g:\n  - plain"
    assert block_load(text) == k8s_load(text)
