"""The Image Factory disk URL: one rule, the chart's (``imageFactoryURL | trimSuffix "/"``).

A class's ``talos.imageFactoryURL`` ending in slashes is admitted (an http(s) URL); the pool must
then render the disk the chart renders for the same Talos settings (the same URL, so the same
KubevirtMachineTemplate hash), and ``restore`` must find no class-era setting in it: the class
changed nothing the chart cannot express. Checked against the chart port (oracle-proven) always,
and against the oracle itself when ``../shared`` is there.
"""

from __future__ import annotations

import pytest

from tests.chart.oracle import get_oracle, need_oracle
from tests.render.builders import (
    CHART_SCHEMATIC,
    NAMESPACE,
    by_kind,
    effective_of,
    pool,
    state_of,
    worker_class,
)
from workerclass.admission import admit
from workerclass.ops.restore import restore
from workerclass.render import release_name, render
from workerclass.render.manifests import chart_values

#: Talos pools render the talos-reconcile Job from the chart's own text: the mirror's gated main chart
pytestmark = pytest.mark.usefixtures("chart_text")

ENDPOINTS = {
    "one-slash": "https://factory.example/",
    "two-slashes": "https://factory.example//",
    "path-two-slashes": "https://factory.example/talos//",
}


def _classified(endpoint: str) -> tuple[dict[str, object], dict[str, object]]:
    cls = worker_class("factory-slashes", bootstrap="talos", talos={"imageFactoryURL": endpoint})
    return pool(workerClassName="factory-slashes"), cls


def _disk_url(kmt: dict[str, object]) -> str:
    spec = kmt["spec"]
    assert isinstance(spec, dict)
    for template in spec["template"]["spec"]["virtualMachineTemplate"]["spec"]["dataVolumeTemplates"]:
        source = template["spec"].get("source", {})
        if "http" in source:
            return str(source["http"]["url"])
    raise AssertionError("no HTTP disk in the KubevirtMachineTemplate")


@pytest.mark.parametrize("name", sorted(ENDPOINTS), ids=sorted(ENDPOINTS))
def test_a_factory_url_with_trailing_slashes_renders_the_charts_disk(name: str) -> None:
    endpoint = ENDPOINTS[name]
    pool_object, cls = _classified(endpoint)
    decision = admit(state_of(pool_object, cls), "CREATE", pool_object)
    assert decision.allowed, [str(v) for v in decision.denials]
    effective = effective_of(pool_object, cls)
    # the chart's own rule, spelled out: one trailing "/" off, then the path
    chart_url = f"{endpoint.removesuffix('/')}/image/{CHART_SCHEMATIC}/{effective.talos.version}/openstack-amd64.raw.xz"
    assert effective.image.reference == chart_url
    classified = by_kind(render(effective))["KubevirtMachineTemplate"]
    assert _disk_url(classified) == chart_url
    # the same Talos settings on a classless pool, rendered by the chart port
    classless = pool(**chart_values(effective))
    assert by_kind(render(effective_of(classless)))["KubevirtMachineTemplate"] == classified


@pytest.mark.parametrize("name", sorted(ENDPOINTS), ids=sorted(ENDPOINTS))
def test_restore_finds_no_setting_a_trailing_slash_did_not_make(name: str) -> None:
    pool_object, cls = _classified(ENDPOINTS[name])
    (row,) = restore(state_of(pool_object, cls)).rows
    assert (row.status, row.restorable) == ("restorable", True), row.reasons


@pytest.mark.parametrize("name", sorted(ENDPOINTS), ids=sorted(ENDPOINTS))
def test_the_oracle_renders_the_same_disk_and_name(name: str) -> None:
    need_oracle()
    pool_object, cls = _classified(ENDPOINTS[name])
    effective = effective_of(pool_object, cls)
    ours = by_kind(render(effective))["KubevirtMachineTemplate"]
    result = get_oracle().render(chart_values(effective), release=release_name(effective), namespace=NAMESPACE)
    assert result.ok, result.error
    theirs = result.one("KubevirtMachineTemplate")
    assert (ours["metadata"]["name"], _disk_url(ours)) == (theirs["metadata"]["name"], _disk_url(theirs))
