"""Violations as values: one line for people, one mapping for JSON, the stable codes of API.md section 3."""

from __future__ import annotations

import json

import pytest

from workerclass.violations import CODES, Denied, Violation

#: API.md section 3's table, in its order
API_CODES = [
    "ClassNotFound",
    "ClusterNotFound",
    "BootstrapFamilyChange",
    "SSHKeysOnTalos",
    "TooManySSHKeys",
    "InvalidSSHKey",
    "PrivateKeyMaterial",
    "KairosOnProxmox",
    "TalosSettingOnKairos",
    "IncompleteImage",
    "ImageNotPinned",
    "VersionMismatch",
    "UnsupportedVersion",
    "ControlPlaneTooOld",
    "TalosKubernetesIncompatible",
    "OsImageSourceConflict",
    "GoldenNotFound",
    "ArtifactConflict",
    "EmptyTemplateTags",
    "OsImageOnProxmox",
    "ClassImmutable",
    "ClassInUse",
    "TalosVGPU",
    "InvalidReplicas",
    "NotAllowedInComputePlane",
    "InvalidPoolName",
    "InstanceTypeNotFound",
    "IncompleteResources",
    "InvalidPodCPU",
    "InvalidKubeletReservation",
    "InvalidDuration",
    "InvalidMaxUnhealthy",
    "InvalidKernelModule",
    "Invalid",
]


def test_the_codes_are_the_contract_s() -> None:
    assert set(API_CODES) == CODES


def test_a_violation_reads_as_code_field_message() -> None:
    violation = Violation("ClassNotFound", "spec.workerClassName", "no WorkerClass gpu")
    assert str(violation) == "ClassNotFound spec.workerClassName: no WorkerClass gpu"
    assert violation.as_dict() == {
        "code": "ClassNotFound",
        "field": "spec.workerClassName",
        "message": "no WorkerClass gpu",
    }
    assert dict(violation) == violation.as_dict()
    assert violation["code"] == "ClassNotFound"
    assert json.loads(json.dumps(violation.as_dict()))["field"] == "spec.workerClassName"


def test_a_violation_is_a_value() -> None:
    left, right = Violation("Invalid", "spec", "x"), Violation("Invalid", "spec", "x")
    assert left == right and hash(left) == hash(right)
    with pytest.raises(KeyError):
        left["severity"]


def test_denied_carries_its_violations_and_says_them() -> None:
    violations = [Violation("Invalid", "spec.a", "one"), Violation("TalosVGPU", "spec.gpus[0].vgpu", "two")]
    error = Denied(violations)
    assert error.violations == tuple(violations) == error.denials
    assert str(error) == "Invalid spec.a: one; TalosVGPU spec.gpus[0].vgpu: two"
