"""The Kubernetes patch of Talos pools is the chart's (its files/versions.yaml, which it renders);
the platform map's patches apply to platform Kairos images. A difference is a warning on the pool."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import (
    ABSENT,
    CHART_PATCHES,
    KUBERNETES_VERSIONS,
    PLATFORM_KAIROS_134,
    has_denial,
    make_platform,
    make_pool,
    make_state,
)
from workerclass.render import render
from workerclass.resolve import resolve, resolve_pool
from workerclass.violations import Denied

#: The test platform maps v1.34 to v1.34.5; the chart renders v1.34.9.
assert KUBERNETES_VERSIONS["v1.34"] != CHART_PATCHES["v1.34"]
WARNING = "the kubernetes-nodes chart renders v1.34.9; the platform map's v1.34.5 applies to platform Kairos images"


def _machine_version(objects: list[dict[str, Any]]) -> str:
    (deployment,) = [obj for obj in objects if obj["kind"] == "MachineDeployment"]
    version = deployment["spec"]["template"]["spec"]["version"]
    assert isinstance(version, str)
    return version


@pytest.mark.usefixtures("chart_text")
@pytest.mark.parametrize(
    "pool",
    [
        make_pool(version="v1.34"),
        make_pool(workerClassName=ABSENT, version="v1.34"),
        make_pool(version="v1.34", proxmox={"templateTags": ["talos"]}, cluster="pve"),
    ],
    ids=["classified", "classless", "classified-proxmox"],
)
def test_a_talos_pool_takes_the_chart_patch_and_is_warned(pool: dict[str, Any]) -> None:
    state = make_state([pool])
    record = state.pool(f"{pool['metadata']['namespace']}/{pool['metadata']['name']}")
    assert record is not None
    effective, denials, warnings = resolve_pool(state, record)
    assert effective is not None, denials
    assert effective.kubernetes_version == "v1.34.9"
    assert effective.origins["kubernetesVersion"] == "chart version map (v1.34)"
    assert WARNING in warnings
    assert WARNING in effective.warnings
    # resolve shows what the render uses
    assert _machine_version(render(effective)) == effective.kubernetes_version


def test_a_talos_pool_whose_patch_agrees_gets_no_warning() -> None:
    pool = make_pool(version="v1.35")
    effective = resolve(make_state([pool]), pool)
    assert effective.kubernetes_version == "v1.35.6" == CHART_PATCHES["v1.35"]
    assert not any("kubernetes-nodes chart renders" in warning for warning in effective.warnings)


def test_a_kairos_platform_image_pool_keeps_the_platform_patch() -> None:
    pool = make_pool(workerClassName="kairos", version="v1.34")
    effective = resolve(make_state([pool]), pool)
    assert effective.kubernetes_version == "v1.34.5"
    assert effective.image.reference == PLATFORM_KAIROS_134
    assert effective.origins["kubernetesVersion"] == "platform version map (v1.34)"
    assert not any("kubernetes-nodes chart renders" in warning for warning in effective.warnings)
    assert _machine_version(render(effective)) == "v1.34.5"


def test_the_platform_map_still_decides_which_minors_a_classified_pool_selects() -> None:
    versions = {minor: {"patch": patch} for minor, patch in KUBERNETES_VERSIONS.items() if minor != "v1.33"}
    pool = make_pool(version="v1.33")
    state = make_state([pool], platform=make_platform(kubernetesVersions=versions))
    with pytest.raises(Denied) as denied:
        resolve(state, pool)
    assert has_denial(denied.value.violations, "UnsupportedVersion", "spec.version")
    # a classless pool follows the chart alone, with nothing in the platform map to compare
    classless = make_pool("b", workerClassName=ABSENT, version="v1.33")
    effective = resolve(make_state([classless], platform=make_platform(kubernetesVersions=versions)), classless)
    assert effective.kubernetes_version == CHART_PATCHES["v1.33"]
    assert not any("kubernetes-nodes chart renders" in warning for warning in effective.warnings)
