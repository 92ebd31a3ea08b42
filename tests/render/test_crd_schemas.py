"""Every rendered object validates against the served version of its real upstream CRD."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from workerclass.render import render
from workerclass.resolve import resolve_pool
from workerclass.state import State

from .schemas import CRD_FILES, ENUM_EXCEPTIONS, REPO, crd_directory, schema_for, upstream_enum, validation_errors
from .variants import variants


def test_upstream_crds_are_found() -> None:
    # Never skipped: the vendored copy in tests/upstream-crds is there in every clone.
    assert crd_directory() is not None


def test_vendored_crds_match_shared() -> None:
    shared = REPO.parent / "shared" / "upstream-crds"
    if not (shared / "SOURCES.tsv").is_file():
        pytest.skip("no shared/ beside this clone: only the vendored copy exists")
    vendored = REPO / "tests" / "upstream-crds"
    names = sorted(path.name for path in shared.iterdir() if path.is_file())
    assert names == sorted(path.name for path in vendored.iterdir() if path.is_file())
    for name in names:
        assert (vendored / name).read_bytes() == (shared / name).read_bytes(), f"tests/upstream-crds/{name} is stale"


VARIANTS = variants()


def _rendered(name: str) -> list[dict[str, Any]]:
    return render(VARIANTS[name])


@pytest.mark.parametrize("name", sorted(VARIANTS), ids=sorted(VARIANTS))
def test_every_rendered_object_validates(name: str) -> None:
    manifests = _rendered(name)
    problems = {f"{obj['kind']} {obj['metadata']['name']}": validation_errors(obj) for obj in manifests}
    assert {key: errors for key, errors in problems.items() if errors} == {}


def test_examples_render_valid_objects() -> None:
    state = State.load(REPO / "examples")
    seen = 0
    for record in state.sorted_pools():
        effective, denials, _ = resolve_pool(state, record)
        assert effective is not None, (record.identity, denials)
        for obj in render(effective):
            assert validation_errors(obj) == [], (record.identity, obj["kind"])
            seen += 1
    assert seen >= 16


def test_every_target_crd_version_is_served_and_the_storage_version() -> None:
    directory = crd_directory()
    assert directory is not None
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
    obj = _first("TalosConfigTemplate")
    obj["spec"]["template"]["spec"]["generateType"] = "node"
    assert any("generateType" in error for error in validation_errors(obj))


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
