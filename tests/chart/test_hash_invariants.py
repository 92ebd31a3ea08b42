"""What the KubevirtMachineTemplate hash covers (upstream-cozystack/README.md, "KubevirtMachineTemplate
hash"), as invariants over the chart's value space: replicas, health settings, kubelet, ``version``,
``installerRepository`` and ``registryMirrors`` leave the text (so the name) unchanged; the disk URL
parts, roles, sizing, GPUs, disk size, storage class, serial console and pod CPU change it."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from workerclass.chart import chart_failures, kubevirtmachinetemplate_text, sizing

from .cases import make_input, pools

NOT_COVERED: list[tuple[str, Any]] = [
    ("minReplicas", 7),
    ("maxReplicas", 99),
    ("maxUnhealthy", "1"),
    ("nodeStartupTimeout", "1h"),
    ("readyUnknownTimeout", "7m"),
    ("readyFalseTimeout", "11m"),
    ("maxNodeProvisionTime", "2h"),
    ("version", "v1.31"),
    ("talos.installerRepository", "registry.example/installer"),
    ("talos.registryMirrors", {"docker.io": {"endpoints": ["https://m.example"]}}),
]
COVERED: list[tuple[str, Any]] = [
    ("talos.imageFactoryURL", "https://other.example"),
    ("talos.schematicID", "0123abcd"),
    ("talos.version", "v1.13.1"),
    ("roles", ["extra-role"]),
    ("diskSize", "77Gi"),
    ("storageClass", "other-class"),
    ("logSerialConsole", True),
    ("gpus", [{"name": "nvidia.com/OTHER"}]),
]


def _set(values: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    out = copy.deepcopy(values)
    node = out
    *parents, leaf = path.split(".")
    for p in parents:
        node = node.setdefault(p, {})
    node[leaf] = value
    return out


def _text(case: tuple[dict[str, Any], str, str, Any]) -> str | None:
    inp = make_input(*case)
    if chart_failures(inp):
        return None
    return kubevirtmachinetemplate_text(inp, sizing(inp))


@pytest.mark.parametrize(("path", "value"), NOT_COVERED, ids=[p for p, _ in NOT_COVERED])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
@given(case=pools())
def test_not_covered_fields_leave_the_template_alone(case: Any, path: str, value: Any) -> None:
    values, release, namespace, platform = case
    before = _text(case)
    after = _text((_set(values, path, value), release, namespace, platform))
    if before is not None and after is not None:
        assert before == after


@pytest.mark.parametrize(("path", "value"), COVERED, ids=[p for p, _ in COVERED])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
@given(case=pools())
def test_covered_fields_change_the_template(case: Any, path: str, value: Any) -> None:
    values, release, namespace, platform = case
    changed = _set(values, path, value)
    before, after = _text(case), _text((changed, release, namespace, platform))
    if (
        before is not None
        and after is not None
        and make_input(*case).values != make_input(changed, release, namespace, platform).values
    ):
        assert before != after
