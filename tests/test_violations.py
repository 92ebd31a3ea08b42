"""Violations as values: one line for people, one mapping for JSON, the stable codes of the contract's
section 3 (``docs/contract.md``, read here)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.builders import API_CODES
from tests.chart.cases import MESSAGE_CODES, code_of_message
from workerclass.violations import CODES, Denied, Violation, under_values

ROOT = Path(__file__).resolve().parents[1]
#: the contract users script against, in the project's own docs
CONTRACT = ROOT / "docs" / "contract.md"


def _contract_codes() -> list[str]:
    """The codes of the contract's section 3 table, in its order, read from the contract itself."""
    text = CONTRACT.read_text("utf-8")
    section = text.split("\n## 3", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `([A-Za-z]+)` \|", section, flags=re.MULTILINE)


def test_the_codes_are_the_contract_s() -> None:
    codes = _contract_codes()
    assert len(codes) == len(set(codes)) == len(CODES)
    assert set(codes) == CODES
    assert tuple(codes) == tuple(API_CODES)  # the tests' copy, in the contract's order


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


@pytest.mark.parametrize(
    ("values", "field", "preface", "expected"),
    [
        ("spec", "spec.maxUnhealthy", "", ("spec.maxUnhealthy", "m")),
        ("spec.values", "spec.maxUnhealthy", "", ("spec.values.maxUnhealthy", "m")),
        ("spec.values", "spec", "", ("spec.values", "m")),
        ("spec.values", "metadata.name", "", ("metadata.name", "m")),
        ("spec.values", "specific", "", ("specific", "m")),
        (
            "spec.values",
            "spec.talos.version",
            "the chart refuses: ",
            ("spec.values.talos.version", "the chart refuses: m"),
        ),
    ],
    ids=["nodes-pool", "release-values", "release-whole-values", "metadata-kept", "key-boundary", "preface"],
)
def test_chart_failures_become_the_pool_s_denials_under_its_values(
    values: str, field: str, preface: str, expected: tuple[str, str]
) -> None:
    (denial,) = under_values([Violation("InvalidMaxUnhealthy", field, "m")], values, preface=preface)
    assert (denial.code, denial.field, denial.message) == ("InvalidMaxUnhealthy", *expected)


@pytest.mark.parametrize(
    ("message", "code"),
    [
        ("values schema:\n- at '/version': value must be one of 'v1.35', 'v1.34'", "UnsupportedVersion"),
        ("values schema:\n- at '/podCpuLimit': got null, want integer or string", "Invalid"),
        ("template: kubernetes-nodes/templates/nodegroup.yaml:12: nil pointer evaluating interface {}.cpu", "Invalid"),
        ("nodeGroup md0: podCpuLimit (-1) must not be negative", "InvalidPodCPU"),
        (
            "nodeGroup md0: evictionHardMemory (7%) must be strictly less than evictionSoftMemory (5%)",
            "InvalidKubeletReservation",
        ),
    ],
    ids=["schema-version", "schema-other", "template-nil", "pod-cpu", "eviction"],
)
def test_the_tests_map_an_oracle_message_to_the_readme_s_code(message: str, code: str) -> None:
    """The tests' one map of the chart's messages (tests/chart/cases.py): a values-schema violation
    is Invalid, or UnsupportedVersion for the version enum, never a code outside the contract."""
    assert code_of_message(message) == code


def test_the_tests_map_chart_messages_only_to_contract_codes() -> None:
    assert {code for _, code in MESSAGE_CODES} <= CODES
