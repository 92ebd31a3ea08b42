"""Sizes on the Proxmox template: every quantity the chart takes is read with the chart's own grammar.

A pool's ``diskSize`` and ``resources`` are admitted by the chart's values schema (Kubernetes'
quantity pattern, with exponents, signs and bare decimal points) and sized by its ``toFloat``; the
Proxmox template must read the same spellings to the same numbers, never refuse at render what
``check`` admitted. The oracle confirms the chart renders each spelling (the classless pool of the
same values on KubeVirt).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.chart.oracle import get_oracle, need_oracle
from workerclass.admission import admit
from workerclass.render import RenderError

from .builders import NAMESPACE, by_kind, pool, render_pool, state_of
from .variants import PROXMOX_CLASS

#: Talos pools render the talos-reconcile Job from the chart's own text: the mirror's gated main chart
pytestmark = pytest.mark.usefixtures("chart_text")

#: (pool values beside the Proxmox class, the template's (numCores, memoryMiB, sizeGb))
CASES: dict[str, tuple[dict[str, Any], tuple[int, int, int]]] = {
    # u1.medium (the chart's default instance type): 1 core, 4 GiB
    "disk-exponent": ({"diskSize": "2e10"}, (1, 4096, 19)),
    "disk-capital-exponent": ({"diskSize": "2E10"}, (1, 4096, 19)),
    "disk-plus-sign": ({"diskSize": "+20Gi"}, (1, 4096, 20)),
    "disk-leading-point": ({"diskSize": ".5Ti"}, (1, 4096, 512)),
    "disk-trailing-point": ({"diskSize": "20.Gi"}, (1, 4096, 20)),
    "disk-decimal-suffix": ({"diskSize": "30G"}, (1, 4096, 28)),
    "disk-integer": ({"diskSize": 21474836480}, (1, 4096, 20)),
    "resources-exponents": ({"instanceType": "", "resources": {"cpu": "1e0", "memory": "4e9"}}, (1, 3816, 20)),
    "resources-millicores": ({"instanceType": "", "resources": {"cpu": "1500m", "memory": "3000Mi"}}, (2, 3000, 20)),
}


def _proxmox_pool(values: dict[str, Any]) -> dict[str, Any]:
    return pool(workerClassName=PROXMOX_CLASS["metadata"]["name"], **copy.deepcopy(values))


@pytest.mark.parametrize("name", sorted(CASES), ids=sorted(CASES))
def test_a_quantity_check_admits_renders_on_proxmox(name: str) -> None:
    values, (cores, memory_mib, disk_gib) = CASES[name]
    pool_object = _proxmox_pool(values)
    decision = admit(state_of(pool_object, PROXMOX_CLASS, infrastructure="proxmox"), "CREATE", pool_object)
    assert decision.allowed, [str(v) for v in decision.denials]
    template = by_kind(render_pool(pool_object, PROXMOX_CLASS, infrastructure="proxmox"))["ProxmoxMachineTemplate"]
    spec = template["spec"]["template"]["spec"]
    assert (spec["numCores"], spec["memoryMiB"], spec["disks"]["bootVolume"]["sizeGb"]) == (
        cores,
        memory_mib,
        disk_gib,
    )


@pytest.mark.parametrize("name", sorted(CASES), ids=sorted(CASES))
def test_the_chart_renders_every_spelling_too(name: str) -> None:
    need_oracle()
    values, _ = CASES[name]
    classless = pool(**copy.deepcopy(values))
    result = get_oracle().render(
        classless["spec"], release=f"kubernetes-nodes-{classless['metadata']['name']}", namespace=NAMESPACE
    )
    assert result.ok, result.error
    assert result.one("KubevirtMachineTemplate")


@pytest.mark.parametrize("disk", ["-20Gi", "-1e10"], ids=["negative-suffix", "negative-exponent"])
def test_a_negative_disk_is_refused_without_echoing_it(disk: str) -> None:
    with pytest.raises(RenderError) as refused:
        render_pool(_proxmox_pool({"diskSize": disk}), PROXMOX_CLASS, infrastructure="proxmox")
    assert "disk size" in str(refused.value)
    assert disk not in str(refused.value)
