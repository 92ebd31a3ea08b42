"""Violations as values: one line for people, one mapping for JSON, the stable codes of the contract's
section 3 (``docs/contract.md``, read here)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.builders import API_CODES
from workerclass.violations import CODES, Denied, Violation

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
