"""The CRDs the package owns: their schemas accept what the parser accepts, keep the controller's
status whole, and their CEL rules (evaluated with cel-python) refuse what they claim to."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import celpy
import jsonschema
import pytest

from workerclass.adapters.folder import load_state
from workerclass.crds import worker_class_crd, worker_platform_crd
from workerclass.model import _CLASS_KEYS, _TALOS_KEYS
from workerclass.ops.status import class_status

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
PINNED = "registry.example.com/w@sha256:" + "a" * 64


def schema_of(crd: dict[str, Any]) -> dict[str, Any]:
    (version,) = crd["spec"]["versions"]
    return version["schema"]["openAPIV3Schema"]


def _jsonschema(node: Any) -> Any:
    """OpenAPI v3 structural schema -> JSON Schema: ``nullable`` becomes a null type; x-kubernetes-* dropped."""
    if isinstance(node, dict):
        out = {key: _jsonschema(value) for key, value in node.items() if not key.startswith("x-kubernetes-")}
        if out.pop("nullable", False):
            out["type"] = [out["type"], "null"]
        if out.get("type") == "object" or "properties" in out:
            out.setdefault(
                "additionalProperties", out.get("additionalProperties", False) if "properties" in out else True
            )
        return out
    if isinstance(node, list):
        return [_jsonschema(item) for item in node]
    return node


def valid(crd: dict[str, Any], obj: dict[str, Any]) -> list[str]:
    schema = _jsonschema(schema_of(crd))
    schema["properties"]["metadata"] = {"type": "object"}
    validator = jsonschema.Draft7Validator(schema)
    return [f"{list(error.path)}: {error.message}" for error in validator.iter_errors(obj)]


def rules(node: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], str]]:
    found: list[tuple[tuple[str, ...], str]] = []
    if isinstance(node, dict):
        for rule in node.get("x-kubernetes-validations", []):
            found.append((path, rule["rule"]))
        for key, value in node.get("properties", {}).items():
            found += rules(value, (*path, key))
    return found


ENV = celpy.Environment()


def holds(rule: str, value: Any, old: Any = None) -> bool:
    program = ENV.program(ENV.compile(rule))
    variables = {"self": celpy.json_to_cel(value)}
    if old is not None:
        variables["oldSelf"] = celpy.json_to_cel(old)
    return bool(program.evaluate(variables))


def rule_at(crd: dict[str, Any], path: tuple[str, ...], contains: str) -> str:
    (found,) = [rule for where, rule in rules(schema_of(crd)) if where == path and contains in rule]
    return found


def example(kind: str) -> list[dict[str, Any]]:
    return [copy.deepcopy(dict(record.obj)) for record in load_state(EXAMPLES).objects if record.kind == kind]


def test_the_examples_and_builtins_fit_the_schemas() -> None:
    state = load_state(EXAMPLES)
    for record in state.classes.values():
        assert valid(worker_class_crd(), dict(record.obj)) == [], record.name
    for obj in example("WorkerPlatform"):
        assert valid(worker_platform_crd(), obj) == []
    assert valid(worker_platform_crd(), dict(state.platform_object)) == []


def test_every_field_the_parser_reads_is_in_the_schema() -> None:
    """Nothing the webhook accepts may be pruned by the API server before the controller reads it."""
    spec = schema_of(worker_class_crd())["properties"]["spec"]["properties"]
    assert set(spec) == set(_CLASS_KEYS)
    assert set(spec["talos"]["properties"]) == set(_TALOS_KEYS)


def test_the_status_the_controller_writes_fits_the_schema() -> None:
    state = load_state(EXAMPLES)
    for name, record in state.classes.items():
        status = class_status(state, name, 3)
        assert status is not None
        obj = {**dict(record.obj), "status": status}
        assert valid(worker_class_crd(), obj) == [], name
        # every key written is declared, so none is pruned (which would make the controller rewrite it)
        declared = schema_of(worker_class_crd())["properties"]["status"]["properties"]
        assert set(status) <= set(declared)
        assert all(set(c) <= set(declared["conditions"]["items"]["properties"]) for c in status["conditions"])


def test_the_class_spec_is_immutable() -> None:
    rule = rule_at(worker_class_crd(), ("spec",), "oldSelf")
    spec = {"bootstrap": "talos", "talos": {"version": "v1.13.6"}}
    assert holds(rule, spec, copy.deepcopy(spec))
    assert not holds(rule, {"bootstrap": "talos", "talos": {"version": "v1.13.5"}}, spec)


@pytest.mark.parametrize(
    ("spec", "allowed"),
    [
        ({"bootstrap": "kairos", "image": {"kubernetesVersion": "v1.35.6", "reference": PINNED}}, True),
        ({"bootstrap": "talos"}, True),
        ({"bootstrap": "talos", "image": {}}, True),
        ({"bootstrap": "talos", "image": {"kubernetesVersion": "", "reference": ""}}, True),
        ({"bootstrap": "talos", "image": {"kubernetesVersion": "v1.35.6", "reference": PINNED}}, False),
    ],
)
def test_a_fixed_image_only_on_kairos(spec: dict[str, Any], allowed: bool) -> None:
    rule = rule_at(worker_class_crd(), ("spec",), "kairos")
    assert holds(rule, spec) is allowed


@pytest.mark.parametrize(
    ("image", "allowed"),
    [
        ({"kubernetesVersion": "v1.35.6", "reference": PINNED}, True),
        ({}, True),
        ({"kubernetesVersion": "v1.35.6"}, False),
        ({"reference": PINNED}, False),
        ({"kubernetesVersion": "v1.35.6", "reference": ""}, False),
    ],
)
def test_image_fields_together(image: dict[str, Any], allowed: bool) -> None:
    rule = rule_at(worker_class_crd(), ("spec", "image"), "reference")
    assert holds(rule, image) is allowed


@pytest.mark.parametrize(
    ("os_image", "allowed"),
    [({}, True), ({"builtin": {}}, True), ({"factory": {}}, True), ({"builtin": {}, "factory": {}}, False)],
)
def test_one_disk_source(os_image: dict[str, Any], allowed: bool) -> None:
    rule = rule_at(worker_class_crd(), ("spec", "kubevirt", "osImage"), "builtin")
    assert holds(rule, os_image) is allowed


def test_schema_patterns_refuse_what_the_parser_refuses() -> None:
    bad = [
        {"bootstrap": "ubuntu"},
        {"bootstrap": "kairos", "image": {"kubernetesVersion": "v1.35", "reference": PINNED}},
        {
            "bootstrap": "kairos",
            "image": {"kubernetesVersion": "v1.35.6", "reference": "registry.example.com/w:latest"},
        },
        {"bootstrap": "talos", "talos": {"schematicID": "nothex"}},
        {"bootstrap": "talos", "talos": {"imageFactoryURL": "https://user:secret@factory.example"}},
    ]
    for spec in bad:
        obj = {"apiVersion": "cozystack.io/v1alpha1", "kind": "WorkerClass", "metadata": {"name": "x"}, "spec": spec}
        assert valid(worker_class_crd(), obj), spec


def test_the_platform_is_a_singleton_named_default() -> None:
    rule = rule_at(worker_platform_crd(), (), "default")
    assert holds(rule, {"metadata": {"name": "default"}})
    assert not holds(rule, {"metadata": {"name": "other"}})
