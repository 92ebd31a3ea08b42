"""Every rendered object validates against the served version of its real upstream CRD."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from workerclass.adapters.folder import load_state
from workerclass.render import RenderError, render
from workerclass.render.templates import KAIROS_PROVIDER_PATH
from workerclass.resolve import resolve_pool

from .schemas import (
    CORE_KINDS,
    CRD_FILES,
    ENUM_EXCEPTIONS,
    REPO,
    SHIPPED,
    require_crds,
    schema_for,
    upstream_enum,
    validation_errors,
)
from .variants import rendered, variants

#: these tests render the talos-reconcile Job, the chart's own text: the mirror's chart is given
pytestmark = pytest.mark.usefixtures("chart_text")


def test_cozystack_shipped_crds_win_where_they_exist() -> None:
    directory = require_crds()
    shipped = {path.name for path in (directory / SHIPPED).glob("*.yaml")}
    for file_name in CRD_FILES.values():
        if Path(file_name).name in shipped:
            assert file_name.startswith(f"{SHIPPED}/"), file_name


VARIANTS = variants()
_CACHE: dict[str, list[dict[str, Any]]] = {}


def _rendered(name: str) -> list[dict[str, Any]]:
    """The variant's objects; a Kairos variant's on both bootstrap paths (the data-secret path's
    Secret, then the provider path's KairosConfigTemplate and the MachineDeployment naming it)."""
    if name not in _CACHE:
        objects = rendered(name)
        if name.startswith("kairos"):
            provider = rendered(name, kairos_path=KAIROS_PROVIDER_PATH)
            objects += [obj for obj in provider if obj["kind"] in ("KairosConfigTemplate", "MachineDeployment")]
        _CACHE[name] = objects
    return _CACHE[name]


@pytest.mark.parametrize("name", sorted(VARIANTS), ids=sorted(VARIANTS))
def test_every_rendered_object_validates(name: str) -> None:
    manifests = _rendered(name)
    problems = [(obj["kind"], obj["metadata"]["name"], validation_errors(obj)) for obj in manifests]
    assert [problem for problem in problems if problem[2]] == []


def test_every_rendered_kind_has_a_crd_or_is_a_core_type() -> None:
    kinds = {(obj["apiVersion"], obj["kind"]) for name in VARIANTS for obj in _rendered(name)}
    assert kinds - CORE_KINDS <= set(CRD_FILES), kinds - CORE_KINDS - set(CRD_FILES)
    for key in (
        ("cluster.x-k8s.io/v1beta1", "MachineDeployment"),
        ("infrastructure.cluster.x-k8s.io/v1alpha1", "KubevirtMachineTemplate"),
        ("cozystack.io/v1alpha1", "WorkloadMonitor"),
        ("bootstrap.cluster.x-k8s.io/v1alpha3", "TalosConfigTemplate"),
        ("bootstrap.cluster.x-k8s.io/v1beta2", "KairosConfigTemplate"),
        ("infrastructure.cluster.x-k8s.io/v1alpha2", "ProxmoxMachineTemplate"),
    ):
        assert key in kinds, key


def test_examples_render_valid_objects() -> None:
    state = load_state(REPO / "examples")
    seen = 0
    for record in state.sorted_pools():
        effective, _, _ = resolve_pool(state, record)
        if effective is None:
            continue  # a denied example renders nothing (admission's tests cover why)
        try:
            objects = render(effective, talos_config_template=True)
        except RenderError:
            continue  # the chart refuses it (e.g. a release name): admission must deny it; not a schema matter
        for obj in objects:
            assert validation_errors(obj) == [], (record.identity, obj["kind"], validation_errors(obj))
            seen += 1
    assert seen >= 20


def test_every_target_crd_version_is_served_and_the_storage_version() -> None:
    directory = require_crds()
    for (api_version, kind), file_name in CRD_FILES.items():
        assert (directory / file_name).is_file()
        schema_for(api_version, kind)  # loads and checks "served"
        import yaml

        crd = yaml.safe_load(Path(directory / file_name).read_text(encoding="utf-8"))
        storage = [v["name"] for v in crd["spec"]["versions"] if v.get("storage")]
        assert storage == [api_version.rsplit("/", 1)[1]], (kind, storage)


def test_kubeadm_is_the_only_enum_exception_and_upstream_still_lacks_it() -> None:
    # When upstream lists kubeadm, drop the exception in tests/render/schemas.py.
    assert len(ENUM_EXCEPTIONS) == 1
    kind, path, value = ENUM_EXCEPTIONS[0]
    assert (kind, value) == ("KairosConfigTemplate", "kubeadm")
    assert value not in upstream_enum("bootstrap.cluster.x-k8s.io/v1beta2", kind, path)


# --------------------------------------------------------------------------- the validator bites


def _first(kind: str) -> dict[str, Any]:
    for name in sorted(VARIANTS):
        for obj in _rendered(name):
            if obj["kind"] == kind:
                return copy.deepcopy(obj)
    raise AssertionError(kind)


def test_validator_refuses_an_unknown_field() -> None:
    obj = _first("MachineDeployment")
    obj["spec"]["template"]["spec"]["replicaz"] = 3
    assert any("replicaz" in error for error in validation_errors(obj))


def test_validator_refuses_a_missing_required_field() -> None:
    obj = _first("MachineDeployment")
    del obj["spec"]["clusterName"]
    assert any("clusterName" in error for error in validation_errors(obj))


def test_validator_refuses_a_value_outside_an_enum() -> None:
    obj = _first("MachineDeployment")
    obj["spec"]["strategy"]["type"] = "Recreate"
    assert any("strategy.type" in error for error in validation_errors(obj))


def test_validator_accepts_kubeadm_only_as_the_kairos_distribution() -> None:
    obj = _first("KairosConfigTemplate")
    assert obj["spec"]["template"]["spec"]["distribution"] == "kubeadm"
    assert validation_errors(obj) == []
    obj["spec"]["template"]["spec"]["distribution"] = "rke2"
    assert any("distribution" in error for error in validation_errors(obj))
    obj["spec"]["template"]["spec"]["role"] = "kubeadm"
    assert any("role" in error for error in validation_errors(obj))


def test_validator_checks_translated_cel_rules() -> None:
    obj = _first("ProxmoxMachineTemplate")
    del obj["spec"]["template"]["spec"]["templateSelector"]
    assert any("CEL" in error for error in validation_errors(obj))


def test_validator_checks_pattern_with_go_case_flag() -> None:
    obj = _first("ProxmoxMachineTemplate")
    obj["spec"]["template"]["spec"]["templateSelector"]["matchTags"] = ["Talos-OK", "bad tag"]
    errors = validation_errors(obj)
    assert any("bad tag" in error for error in errors)
    assert not any("Talos-OK" in error for error in errors)


def test_validator_checks_label_values() -> None:
    obj = _first("MachineDeployment")
    obj["spec"]["template"]["metadata"]["labels"]["bad"] = "has space"
    assert any("label value" in error for error in validation_errors(obj))
