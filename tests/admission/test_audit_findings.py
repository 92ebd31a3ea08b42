"""Findings of the audit against the spec, API.md and the chart, each pinned by a test."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.builders import (
    CHART_FACTORY_URL,
    CHART_INSTALLER_REPOSITORY,
    CHART_SCHEMATIC,
    NAMESPACE,
    TALOS_EXAMPLE,
    make_class,
    make_cluster,
    make_pool,
    make_release,
    pairs,
    rename,
)
from workerclass import resolve
from workerclass.admission import admit, validate
from workerclass.state import State

PARTIAL_PLATFORM = {
    "apiVersion": "cozystack.io/v1alpha1",
    "kind": "WorkerPlatform",
    "metadata": {"name": "default"},
    "spec": {"defaultWorkerClass": "kairos"},
}


def _state(*objects: Any) -> State:
    return State.from_objects([make_cluster(), *objects])


# ---------------------------------------------------------------- a partial WorkerPlatform (#1)


def test_a_platform_that_sets_only_the_default_keeps_the_embedded_defaults() -> None:
    embedded = _state().platform
    state = _state(PARTIAL_PLATFORM)
    assert state.platform.default_worker_class == "kairos"
    assert state.platform.kubernetes_versions == embedded.kubernetes_versions != {}
    assert state.platform.talos_version == embedded.talos_version != ""
    assert state.platform.talos_schematic_id == embedded.talos_schematic_id != ""
    assert state.platform.kairos_images == embedded.kairos_images != {}
    assert state.platform.support_matrix == embedded.support_matrix != {}
    assert state.platform.goldens == embedded.goldens


def test_a_partial_platform_changes_only_the_default_for_new_pools() -> None:
    stored = make_pool("tal", workerClassName="talos")
    state = _state(PARTIAL_PLATFORM, stored)
    assert admit(state, "UPDATE", stored, stored).denials == []
    created = admit(state, "CREATE", make_pool("new", workerClassName=None))
    assert created.allowed, created.denials
    assert created.patch == [{"op": "add", "path": "/spec/workerClassName", "value": "kairos"}]
    assert validate(state, "CREATE", PARTIAL_PLATFORM).denials == []


def test_a_platform_key_it_sets_replaces_the_embedded_one_and_the_rest_stay() -> None:
    platform = {
        **PARTIAL_PLATFORM,
        "spec": {"talos": {"version": "v1.13.5"}, "kubernetesVersions": {"v1.35": {"patch": "v1.35.7"}}},
    }
    state = _state(platform)
    embedded = _state().platform
    assert state.platform.talos_version == "v1.13.5"
    assert state.platform.talos_schematic_id == embedded.talos_schematic_id
    assert state.platform.kubernetes_versions == {"v1.35": "v1.35.7"}
    assert state.platform.default_worker_class == "talos"


# ---------------------------------------------------------------- admit without old (#5)


def test_python_update_without_old_takes_the_stored_pool() -> None:
    stored = make_pool("tal", workerClassName="talos-example-r1")
    state = State.from_objects([make_cluster(), TALOS_EXAMPLE, stored])
    omitted = make_pool("tal", workerClassName=None)
    restored = admit(state, "UPDATE", omitted)
    assert restored.allowed, restored.denials
    assert {"op": "add", "path": "/spec/workerClassName", "value": "talos-example-r1"} in restored.patch
    switched = admit(state, "UPDATE", make_pool("tal", workerClassName="kairos"))
    assert ("BootstrapFamilyChange", "spec.workerClassName") in pairs(switched.denials)


# ---------------------------------------------------------------- denials as mappings (#17)


def test_denials_read_as_the_documented_mappings() -> None:
    decision = admit(_state(), "CREATE", make_pool("x", workerClassName="nope"))
    first = decision.denials[0]
    assert first["code"] == "ClassNotFound" and first["field"] == "spec.workerClassName"
    assert dict(first) == first.as_dict() == {"code": first.code, "field": first.field, "message": first.message}
    assert json.loads(json.dumps([dict(v) for v in decision.denials]))[0]["code"] == "ClassNotFound"


# ---------------------------------------------------------------- names (#16, #19)


def test_a_pool_outside_a_tenant_namespace_is_refused_on_update_too() -> None:
    cluster = make_cluster(namespace="apps")
    pool = make_pool("tal", namespace="apps", workerClassName=None)
    state = State.from_objects([cluster, pool])
    for operation in ("CREATE", "UPDATE"):
        decision = admit(state, operation, pool, pool)
        found = [(v.code, v.field) for v in decision.denials]
        assert found.count(("InvalidPoolName", "metadata.namespace")) == 1, (operation, found)


def test_a_badly_named_pool_is_refused_on_create_only() -> None:
    pool = rename(make_pool("tal", workerClassName=None), "tal")
    state = _state(pool)
    assert ("InvalidPoolName", "metadata.name") in pairs(admit(state, "CREATE", pool).denials)
    assert admit(state, "UPDATE", pool, pool).denials == []


def test_a_helm_release_with_a_bad_name_is_told_to_rename_the_helm_release() -> None:
    release = make_release("kubernetes-nodes-other-h1")
    decision = admit(_state(), "CREATE", release)
    messages = [v.message for v in decision.denials if (v.code, v.field) == ("InvalidPoolName", "metadata.name")]
    assert messages and all("name the HelmRelease kubernetes-nodes-<cluster>-<pool>" in m for m in messages)
    assert not any("KubernetesNodes" in m for m in messages)


# ---------------------------------------------------------------- an unsupported minor (#4)


@pytest.mark.parametrize("minor", ["v1.30", "v1.36", "v1.20"])
def test_an_unsupported_minor_is_unsupported_version_alone_and_first(minor: str) -> None:
    pool = make_pool("v", workerClassName=None, version=minor, minReplicas=-1)
    state = _state(pool)
    for operation in ("CREATE", "UPDATE"):
        decision = admit(state, operation, pool, pool)
        codes = [v.code for v in decision.denials]
        assert codes[0] == "UnsupportedVersion", (operation, codes)
        assert codes.count("UnsupportedVersion") == 1
        assert not {"ControlPlaneTooOld", "TalosKubernetesIncompatible"} & set(codes), (operation, codes)
        assert "InvalidReplicas" in codes  # the other rules still run


def test_a_supported_minor_too_old_for_the_control_plane_is_still_refused() -> None:
    pool = make_pool("v", workerClassName=None, version="v1.31")
    assert [v.code for v in admit(_state(), "CREATE", pool).denials] == ["ControlPlaneTooOld"]


# ---------------------------------------------------------------- IncompleteImage (#10)


def _class_codes(**image: Any) -> list[str]:
    cls = make_class("img", "kairos", image=image)
    return [v.code for v in validate(_state(), "CREATE", cls).denials]


def test_both_image_fields_set_one_malformed_is_invalid_not_incomplete() -> None:
    codes = _class_codes(kubernetesVersion="1.35", reference="x")
    assert "Invalid" in codes and "ImageNotPinned" in codes
    assert "IncompleteImage" not in codes


@pytest.mark.parametrize("empty", [None, ""])
def test_one_image_field_absent_or_empty_is_incomplete(empty: Any) -> None:
    image = (
        {"kubernetesVersion": "v1.35.6", "reference": empty} if empty is not None else {"kubernetesVersion": "v1.35.6"}
    )
    assert "IncompleteImage" in _class_codes(**image)


# ---------------------------------------------------------------- PR 3571's schematic check (#7)


@pytest.mark.parametrize("cls", ["talos", "kairos", None])
def test_an_empty_schematic_beside_kernel_modules_means_the_platform_default(cls: str | None) -> None:
    pool = make_pool("k", workerClassName=cls, talos={"schematicID": ""}, kernelModules=[])
    decision = admit(_state(), "CREATE", pool)
    assert decision.allowed, [str(v) for v in decision.denials]


def test_the_schematic_character_check_still_runs_on_a_talos_pool_and_never_on_kairos() -> None:
    talos = make_pool("k", workerClassName=None, talos={"schematicID": "a$b"}, kernelModules=[])
    refused = admit(_state(), "UPDATE", talos, talos).denials
    assert any(v.field == "spec.talos.schematicID" and "must not contain $" in v.message for v in refused)
    kairos = make_pool("k", workerClassName="kairos", talos={"schematicID": "a$b"}, kernelModules=[])
    denials = admit(_state(), "CREATE", kairos).denials
    assert ("TalosSettingOnKairos", "spec.talos.schematicID") in pairs(denials)
    assert not any("must not contain $" in v.message for v in denials)  # PR 3571's check is the Talos job's


# ---------------------------------------------------------------- a Kairos pool as the API stores it (#9)

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
    found = pairs(admit(state, "UPDATE", stored).denials)
    assert found == {("TalosSettingOnKairos", "spec.talos.version")}


# ---------------------------------------------------------------- the parent-cluster move message


def test_the_parent_cluster_move_quotes_a_cluster_only_when_it_is_a_dns_label() -> None:
    secret = "Hunter2-Secret+x"
    old = make_pool("m", workerClassName=None)
    old["spec"]["cluster"] = secret
    new = make_pool("m", workerClassName=None)
    (moved,) = [v for v in admit(_state(), "UPDATE", new, old).denials if v.field == "spec.cluster"]
    assert secret not in moved.message and "(not shown: not a DNS label)" in moved.message
    assert "'example'" in moved.message


# ---------------------------------------------------------------- Talos values the chart renders (#3, #14)


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


def test_a_classless_create_refused_by_the_default_class_says_it_is_a_class_rule() -> None:
    pool = make_pool("t", workerClassName=None, talos={"version": "1.13"})
    state = _state()
    assert admit(state, "UPDATE", pool, pool).allowed  # the chart renders it: classless, no rule
    decision = admit(state, "CREATE", pool)
    (denial,) = decision.denials
    assert (denial.code, denial.field) == ("Invalid", "spec.talos.version")
    assert "a rule of pools with a class: this pool names none, so it gets the platform default class 'talos'" in (
        denial.message
    )
    explicit = admit(state, "CREATE", make_pool("t", workerClassName="talos", talos={"version": "1.13"}))
    assert "a rule of pools with a class" not in explicit.denials[0].message


def test_registry_mirrors_are_carried_through_on_a_classless_pool() -> None:
    classless = make_pool("m", workerClassName=None, talos={"registryMirrors": {"docker.io": "x"}})
    state = _state()
    assert admit(state, "UPDATE", classless, classless).allowed
    classified = make_pool("m", workerClassName="talos", talos={"registryMirrors": {"docker.io": "x"}})
    assert ("Invalid", "spec.talos.registryMirrors.docker.io") in pairs(admit(state, "CREATE", classified).denials)
