"""Talos settings on a pool: an empty schematic ID beside kernel modules means the platform default,
the schematic's character check runs on Talos pools only, and a Kairos pool's Talos values are
refused unless they are the defaults Cozystack's API stored for it.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import (
    CHART_FACTORY_URL,
    CHART_INSTALLER_REPOSITORY,
    CHART_SCHEMATIC,
    NAMESPACE,
    make_cluster,
    make_pool,
    pairs,
)
from workerclass import resolve
from workerclass.admission import admit
from workerclass.state import State


def _state(*objects: Any) -> State:
    return State.from_objects([make_cluster(), *objects])


@pytest.mark.parametrize("cls", ["talos", "kairos", None])
def test_an_empty_schematic_beside_kernel_modules_means_the_platform_default(cls: str | None) -> None:
    pool = make_pool("k", workerClassName=cls, talos={"schematicID": ""}, kernelModules=[])
    decision = admit(_state(), "CREATE", pool)
    assert decision.allowed, [str(v) for v in decision.denials]


def test_the_schematic_character_check_still_runs_on_a_talos_pool_and_never_on_kairos() -> None:
    talos = make_pool("k", workerClassName=None, talos={"schematicID": "a$b"}, kernelModules=[])
    refused = admit(_state(), "UPDATE", talos, talos, ratcheting=False).denials  # judged as stored
    assert any(v.field == "spec.talos.schematicID" and "must not contain $" in v.message for v in refused)
    kairos = make_pool("k", workerClassName="kairos", talos={"schematicID": "a$b"}, kernelModules=[])
    denials = admit(_state(), "CREATE", kairos).denials
    assert ("TalosSettingOnKairos", "spec.talos.schematicID") in pairs(denials)
    assert not any("must not contain $" in v.message for v in denials)  # PR 3571's check is the Talos job's


API_TALOS = {
    "version": "v1.13.6",
    "schematicID": CHART_SCHEMATIC,
    "imageFactoryURL": CHART_FACTORY_URL,
    "installerRepository": CHART_INSTALLER_REPOSITORY,
    "registryMirrors": {},
}


def test_a_stored_kairos_pool_with_the_apis_talos_defaults_is_not_talos_setting_on_kairos() -> None:
    stored = make_pool("k", workerClassName="kairos", talos=dict(API_TALOS))
    state = _state(stored)
    assert resolve(state, state.pool(f"{NAMESPACE}/{stored['metadata']['name']}")).bootstrap == "kairos"
    update = admit(state, "UPDATE", stored)
    assert update.allowed, [str(v) for v in update.denials]
    create = admit(_state(), "CREATE", stored)
    assert ("TalosSettingOnKairos", "spec.talos.version") in pairs(create.denials)


def test_a_stored_kairos_pool_with_its_own_talos_value_is_still_refused() -> None:
    stored = make_pool("k", workerClassName="kairos", talos={**API_TALOS, "version": "v1.13.5"})
    state = _state(stored)
    found = pairs(admit(state, "UPDATE", stored, ratcheting=False).denials)  # judged as stored
    assert found == {("TalosSettingOnKairos", "spec.talos.version")}
