"""The CRD schemas and the parser accept and refuse the same values, over generated inputs.

For every string field of the WorkerClass and WorkerPlatform declarations (:mod:`workerclass.api.schema`)
that carries a pattern or an enum, values are drawn from the pattern itself (hypothesis
``from_regex``) and from near misses (a non-numeric or 6-digit port, ``user:pw@`` credentials,
upper-case hex, trailing whitespace or newline, other scripts' digits, empty, null). Each goes into
a minimal valid object, and:

- the CRD decides as the API server would: the ``openAPIV3Schema`` through jsonschema with
  ``pattern`` matched by RE2 (google-re2: the API server's engine, not Python's ``re``) and
  ``nullable`` honoured, plus every ``x-kubernetes-validations`` CEL rule (cel-python) on the
  nodes present (transition rules, ``oldSelf``, are UPDATE-only and not run on a create);
- the parser decides by reporting a violation at that field (``parse_class_spec``,
  ``parse_platform``).

They must agree, except for the cases :data:`EXCEPTIONS` names, each with its reason and each
checked to still be what it says (no silent skips). Set ``CRD_AGREEMENT_EXAMPLES`` for a longer run.
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

import jsonschema
import pytest
import re2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.test_crds import _jsonschema, holds, rules, schema_of
from workerclass.api import patterns, schema
from workerclass.crds import worker_class_crd, worker_platform_crd
from workerclass.model import parse_class_spec, parse_platform, version_tuple

EXAMPLES = int(os.environ.get("CRD_AGREEMENT_EXAMPLES", "40"))
PINNED_SAMPLE = "registry.example.com/w@sha256:" + "a" * 64
MINOR_KEY = "v1.35"
REGISTRY_KEY = "docker.io"

#: a valid value per pattern, for the required siblings of the field under test
SAMPLES: dict[re.Pattern[str], str] = {
    patterns.TALOS_VERSION: "v1.11.5",
    patterns.SCHEMATIC_ID: "a" * 64,
    patterns.HTTP_URL: "https://factory.example",
    patterns.KUBERNETES_MINOR: "v1.33",
    patterns.KUBERNETES_PATCH: "v1.35.1",
    patterns.PINNED: PINNED_SAMPLE,
    patterns.MODULE_NAME: "virtio_net",
    patterns.NAME: "talos",
    patterns.REPOSITORY: "ghcr.io/siderolabs/installer",
}


@dataclass(frozen=True)
class Field:
    kind: str  # WorkerClass | WorkerPlatform
    path: tuple[str | int, ...]  # under spec; an int is a list index, a map key is MINOR_KEY/REGISTRY_KEY
    node: schema.String

    @property
    def text(self) -> str:
        out = "spec"
        for segment in self.path:
            out += f"[{segment}]" if isinstance(segment, int) else f".{segment}"
        return out

    def __str__(self) -> str:
        return f"{self.kind}:{self.text}"


def walk(
    node: schema.Node, path: tuple[str | int, ...], key: str
) -> Iterator[tuple[tuple[str | int, ...], schema.String]]:
    if isinstance(node, schema.String):
        if node.pattern is not None or node.enum:
            yield path, node
    elif isinstance(node, schema.Object):
        for name, child in node.properties.items():
            yield from walk(child, (*path, name), key)
    elif isinstance(node, schema.Array):
        yield from walk(node.items, (*path, 0), key)
    elif isinstance(node, schema.Map) and node.values is not None:
        yield from walk(node.values, (*path, REGISTRY_KEY if path[-1] == "registryMirrors" else MINOR_KEY), key)


FIELDS = [Field("WorkerClass", path, node) for path, node in walk(schema.CLASS_SPEC, (), "")] + [
    Field("WorkerPlatform", path, node) for path, node in walk(schema.PLATFORM_SPEC, (), "")
]

# --------------------------------------------------------------------------- the exceptions


#: the whitespace Python's ``\\S`` refuses and RE2's accepts (RE2: ``\\s`` is ``[\\t\\n\\f\\r ]``)
def _pinned_reference(field: Field, value: object) -> bool:
    return field.path[-1] == "reference" and isinstance(value, str) and value != ""


def _patch_of_key(field: Field, value: object) -> bool:
    return (
        field.path[:1] == ("kubernetesVersions",)
        and isinstance(value, str)
        and patterns.KUBERNETES_PATCH.fullmatch(value) is not None
        and "v{}.{}".format(*version_tuple(value)[:2]) != MINOR_KEY
    )


def _default_class_null(field: Field, value: object) -> bool:
    return field.path == ("defaultWorkerClass",) and value is None


@dataclass(frozen=True)
class Exception_:
    applies: Callable[[Field, object], bool]
    crd: bool | None  # what the CRD does there (True accepts; None: either)
    parser: bool | None  # what the parser does there
    reason: str


#: Every case where the CRD and the parser may differ, and why; the first row that applies decides.
#: Each is checked as written: the CRD and the parser must do what the row says there (``None``: that
#: side is not pinned).
EXCEPTIONS: dict[str, Exception_] = {
    "image references": Exception_(
        _pinned_reference,
        crd=None,
        parser=True,
        reason="image.reference (class) and kairos.images.<minor>.reference (platform): the parser reads "
        "any string; the reference rule (resolve.classes.reference_problem, ImageNotPinned or Invalid) "
        "runs in admission, stricter than the CRD's PINNED and with its own codes",
    ),
    "patch of its minor": Exception_(
        _patch_of_key,
        crd=True,
        parser=False,
        reason="kubernetesVersions.<minor>.patch must be a patch of its key: a rule between a map key and "
        "its value, which the CRD does not carry (a CEL rule on the map could; the CRD is kept as it was)",
    ),
    "defaultWorkerClass null": Exception_(
        _default_class_null,
        crd=False,
        parser=True,
        reason="defaultWorkerClass: null is required-and-missing to the API server (not nullable: pruned), "
        "while the parser completes a left-out key from the embedded platform (API.md section 1)",
    ),
}

#: Declared fields whose rule the parser alone checks; the CRD carries no pattern there (listed, not generated).
PARSER_ONLY = {
    "WorkerClass:spec.talos.imageFactoryCA": "PEM certificate blocks and nothing else: a multi-line pattern "
    "whose whitespace classes differ between RE2 and Python; a private key there is PrivateKeyMaterial",
    "WorkerPlatform map keys (kubernetesVersions, talos.supportMatrix, kairos.images)": "a minor (vX.Y): "
    "a structural schema cannot constrain map keys",
    "values holding private key material": "the parser leaves them to the PrivateKeyMaterial rule (its own "
    "code, never Invalid); not generated here",
}


# --------------------------------------------------------------------------- the CRD side


def _re2_pattern(validator: Any, pattern: str, instance: Any, schema_: Any) -> Iterator[jsonschema.ValidationError]:
    if isinstance(instance, str) and re2.search(pattern, instance) is None:
        yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r} (RE2)")


RE2Validator = jsonschema.validators.extend(jsonschema.Draft7Validator, {"pattern": _re2_pattern})


@cache
def _crd(kind: str) -> tuple[Any, list[tuple[tuple[str, ...], str]]]:
    crd = worker_class_crd() if kind == "WorkerClass" else worker_platform_crd()
    openapi = schema_of(crd)
    converted = _jsonschema(openapi)
    converted["properties"]["metadata"] = {"type": "object"}
    return RE2Validator(converted), [(where, rule) for where, rule in rules(openapi) if "oldSelf" not in rule]


def _at(obj: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(obj, dict) or key not in obj:
            return None
        obj = obj[key]
    return obj


def crd_accepts(kind: str, obj: dict[str, Any]) -> bool:
    validator, cel = _crd(kind)
    if any(True for _ in validator.iter_errors(obj)):
        return False
    for where, rule in cel:
        node = _at(obj, where)
        if node is not None and not holds(rule, node):
            return False
    return True


# --------------------------------------------------------------------------- the objects


def _sample(node: schema.Node) -> Any:
    if isinstance(node, schema.String):
        return node.enum[0] if node.enum else SAMPLES[node.pattern] if node.pattern is not None else "x"
    if isinstance(node, schema.Boolean):
        return False
    if isinstance(node, schema.Array):
        return [_sample(node.items)]
    if isinstance(node, schema.Map):
        return {}
    return {key: _sample(node.properties[key]) for key in node.required}


def _place(node: schema.Node, path: tuple[str | int, ...], value: object) -> Any:
    """The smallest value of ``node`` holding ``value`` at ``path``, required siblings filled."""
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(node, schema.Array):
        return [_place(node.items, rest, value)]
    if isinstance(node, schema.Map):
        assert node.values is not None and isinstance(head, str)
        return {head: _place(node.values, rest, value)}
    assert isinstance(node, schema.Object) and isinstance(head, str)
    out = _sample(node)
    out[head] = _place(node.properties[head], rest, value)
    return out


def build(field: Field, value: object) -> dict[str, Any]:
    """A minimal valid object with ``value`` at ``field`` (a fixed image gets its other field alike: both
    null, both empty or both set, so the pair rule of its own does not decide)."""
    if field.kind == "WorkerClass":
        spec = _place(schema.CLASS_SPEC, field.path, value)
        if field.path[0] == "image":
            other = "reference" if field.path[1] == "kubernetesVersion" else "kubernetesVersion"
            pattern = schema.CLASS_IMAGE.string(other).pattern
            assert pattern is not None
            spec["image"][other] = value if value in (None, "") else SAMPLES[pattern]
            spec["bootstrap"] = "kairos"  # a fixed image is for Kairos classes
        return {"apiVersion": "cozystack.io/v1alpha1", "kind": "WorkerClass", "metadata": {"name": "x"}, "spec": spec}
    spec = _place(schema.PLATFORM_SPEC, field.path, value)
    return {
        "apiVersion": "cozystack.io/v1alpha1",
        "kind": "WorkerPlatform",
        "metadata": {"name": "default"},
        "spec": spec,
    }


def parser_accepts(field: Field, obj: dict[str, Any]) -> bool:
    spec = copy.deepcopy(obj["spec"])
    _, violations = parse_class_spec(spec) if field.kind == "WorkerClass" else parse_platform(spec)
    path = field.text
    return not any(v.field == path or v.field.startswith((f"{path}.", f"{path}[")) for v in violations)


# --------------------------------------------------------------------------- the values

#: what Python's ``\d`` also matches (other scripts' decimal digits); RE2's ``\d`` and ``[0-9]`` do not
UNICODE_DIGITS = "".join(c for c in map(chr, range(0x10000)) if c.isdecimal() and not c.isascii())
OTHER_WHITESPACE = "\v\x85\xa0\u2003\u3000"


def near_misses(valid: str) -> st.SearchStrategy[object]:
    digits = [i for i, c in enumerate(valid) if c in "0123456789"]
    misses: list[st.SearchStrategy[object]] = [
        st.sampled_from([valid + " ", valid + "\n", valid + "\t", " " + valid, "\n" + valid, valid.upper(), "", None]),
        st.sampled_from(OTHER_WHITESPACE).map(lambda c: valid + c),
        st.text(max_size=12),
    ]
    if digits:
        misses.append(
            st.tuples(st.sampled_from(digits), st.sampled_from(UNICODE_DIGITS)).map(
                lambda pair: valid[: pair[0]] + pair[1] + valid[pair[0] + 1 :]
            )
        )
    if valid.startswith("http"):
        scheme, _, rest = valid.partition("://")
        host, slash, tail = rest.partition("/")
        host = host.rsplit(":", 1)[0] if not host.endswith("]") else host
        misses.append(
            st.sampled_from(
                [
                    f"{scheme}://{host}:abc/{tail}",
                    f"{scheme}://{host}:123456/{tail}",
                    f"{scheme}://{host}:/{tail}",
                    f"{scheme}://user:pw@{host}{slash}{tail}",
                    f"{scheme}://user@{host}:80{slash}{tail}",
                    f"{scheme}://{host}:8O80",
                ]
            )
        )
    return st.one_of(misses)


UTF8 = st.characters(codec="utf-8")


def values(node: schema.String) -> st.SearchStrategy[object]:
    if node.enum:
        return st.one_of(st.sampled_from(node.enum), st.sampled_from(node.enum).flatmap(near_misses))
    assert node.pattern is not None
    valid = st.from_regex(node.pattern, fullmatch=True, alphabet=UTF8)
    return st.one_of(valid, valid.flatmap(near_misses))


# --------------------------------------------------------------------------- the property


def judge(field: Field, value: object) -> None:
    obj = build(field, value)
    crd, parser = crd_accepts(field.kind, obj), parser_accepts(field, obj)
    for name, row in EXCEPTIONS.items():
        if row.applies(field, value):
            assert row.crd is None or crd is row.crd, (name, str(field), value, "CRD", crd)
            assert row.parser is None or parser is row.parser, (name, str(field), value, "parser", parser)
            return
    says = {True: "accepts", False: "refuses"}
    assert crd is parser, f"{field}: {value!r}: the CRD {says[crd]}, the parser {says[parser]}"


@pytest.mark.parametrize("field", FIELDS, ids=str)
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_the_crd_and_the_parser_agree(field: Field, data: st.DataObject) -> None:
    judge(field, data.draw(values(field.node), label="value"))


def test_every_declared_pattern_field_is_generated() -> None:
    """The walk finds the fields the CRDs carry patterns or enums on (a new field is covered as declared)."""
    names = {str(field) for field in FIELDS}
    assert "WorkerClass:spec.talos.imageFactoryURL" in names
    assert "WorkerClass:spec.talos.registryMirrors.docker.io.endpoints[0]" in names
    assert "WorkerClass:spec.bootstrap" in names
    assert "WorkerPlatform:spec.talos.goldens[0].schematicID" in names
    assert "WorkerPlatform:spec.kairos.images.v1.35.kubernetesVersion" in names
    assert len(FIELDS) == len(names)


@pytest.mark.parametrize(
    ("field", "value", "agreed"),
    [
        ("WorkerClass:spec.talos.imageFactoryURL", "http://factory.example:abc/", False),  # issue 13's case
        ("WorkerClass:spec.talos.imageFactoryURL", "http://factory.example:8080/x", True),
        ("WorkerClass:spec.talos.imageFactoryURL", "http://factory.example:123456/", False),
        ("WorkerClass:spec.talos.imageFactoryURL", "https://user:pw@factory.example/", False),
        ("WorkerClass:spec.talos.version", "v1.\u0661\u0661.5", False),
        ("WorkerClass:spec.talos.version", "v1.11.5\n", False),
        ("WorkerClass:spec.talos.schematicID", "A" * 64, False),
        ("WorkerClass:spec.talos.installerRepository", "Ghcr.io/x", False),
        ("WorkerClass:spec.kernelModules[0].name", "Virtio", False),
        ("WorkerClass:spec.kernelModules[0].name", "", False),
        ("WorkerPlatform:spec.talos.goldens[0].version", None, False),
        ("WorkerPlatform:spec.defaultWorkerClass", "", True),
        ("WorkerPlatform:spec.defaultWorkerClass", "Talos", False),
    ],
)
def test_known_values(field: str, value: object, agreed: bool) -> None:
    (found,) = [f for f in FIELDS if str(f) == field]
    obj = build(found, value)
    assert crd_accepts(found.kind, obj) is agreed
    assert parser_accepts(found, obj) is agreed


def test_the_exceptions_hold() -> None:
    """Each row of the table is a real case today (a row that no longer applies is removed, not kept)."""
    reference = next(f for f in FIELDS if str(f) == "WorkerClass:spec.image.reference")
    obj = build(reference, "registry.example.com/w@sha256:" + "A" * 64)
    assert not crd_accepts("WorkerClass", obj) and parser_accepts(reference, obj)
    patch = next(f for f in FIELDS if str(f) == "WorkerPlatform:spec.kubernetesVersions.v1.35.patch")
    obj = build(patch, "v1.34.2")
    assert crd_accepts("WorkerPlatform", obj) and not parser_accepts(patch, obj)
    default = next(f for f in FIELDS if str(f) == "WorkerPlatform:spec.defaultWorkerClass")
    obj = build(default, None)
    assert not crd_accepts("WorkerPlatform", obj) and parser_accepts(default, obj)
