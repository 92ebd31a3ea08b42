"""Kubernetes minors and the Talos support matrix: an unsupported minor is ``UnsupportedVersion``
alone and first, a supported one still meets the control-plane skew rule, and only the Talos minors
the support matrix lists are checked against it (as the chart renders them).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import make_cluster, make_pool, pairs
from workerclass.admission import admit
from workerclass.state import State

PARTIAL_PLATFORM = {
    "apiVersion": "cozystack.io/v1alpha1",
    "kind": "WorkerPlatform",
    "metadata": {"name": "default"},
    "spec": {"defaultWorkerClass": "kairos"},
}


def _state(*objects: Any) -> State:
    return State.from_objects([make_cluster(), *objects])


@pytest.mark.parametrize("minor", ["v1.30", "v1.36", "v1.20"])
def test_an_unsupported_minor_is_unsupported_version_alone_and_first(minor: str) -> None:
    pool = make_pool("v", workerClassName=None, version=minor, minReplicas=-1)
    state = _state(pool)
    for operation in ("CREATE", "UPDATE"):
        decision = admit(state, operation, pool, pool, ratcheting=False)  # the stored pool judged as it is
        codes = [v.code for v in decision.denials]
        assert codes[0] == "UnsupportedVersion", (operation, codes)
        assert codes.count("UnsupportedVersion") == 1
        assert not {"ControlPlaneTooOld", "TalosKubernetesIncompatible"} & set(codes), (operation, codes)
        assert "InvalidReplicas" in codes  # the other rules still run


def test_a_supported_minor_too_old_for_the_control_plane_is_still_refused() -> None:
    pool = make_pool("v", workerClassName=None, version="v1.31")
    assert [v.code for v in admit(_state(), "CREATE", pool).denials] == ["ControlPlaneTooOld"]


@pytest.mark.parametrize("talos_version", ["v1.12.0", "v1.11.3", "v1.14.0"])
def test_a_talos_minor_missing_from_the_support_matrix_is_not_checked(talos_version: str) -> None:
    pool = make_pool("t", workerClassName=None, version="v1.35", talos={"version": talos_version})
    state = _state()
    for operation in ("CREATE", "UPDATE"):
        decision = admit(state, operation, pool, pool)
        assert decision.allowed, (operation, [str(v) for v in decision.denials])


def test_a_listed_talos_minor_is_still_checked() -> None:
    pool = make_pool("t", workerClassName="talos", version="v1.30", talos={"version": "v1.13.6"})
    decision = admit(_state(), "CREATE", pool)
    assert "UnsupportedVersion" in [v.code for v in decision.denials]
    platform = {**PARTIAL_PLATFORM, "spec": {"talos": {"supportMatrix": {"v1.13": {"min": "v1.33", "max": "v1.36"}}}}}
    pool = make_pool("t", workerClassName="talos", version="v1.32", talos={"version": "v1.13.6"})
    assert ("TalosKubernetesIncompatible", "spec.talos.version") in pairs(
        admit(_state(platform), "CREATE", pool).denials
    )
