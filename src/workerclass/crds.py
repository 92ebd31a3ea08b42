"""The CustomResourceDefinitions the package owns: ``WorkerClass`` and ``WorkerPlatform``.

The schemas carry every rule one object can (DESIGN.md: "the CRD schema carries every rule it
can"): field layout of API.md section 1, with unknown fields pruned, the bootstrap family enum,
pinned-reference and version patterns, ``builtin``/``factory`` exclusivity, a fixed image only on
Kairos classes, and the class spec's immutability as ``self == oldSelf``. Rules that span
objects (a class's baseline against the platform, pools against classes) stay in Python.

The ``spec`` schemas are generated (:func:`openapi`) from the declarations the parser reads too
(:mod:`workerclass.api.schema`): fields, patterns, enums and CEL rules cannot drift apart
(tests/test_crds_agreement.py holds them to the same answers over generated values).

``status`` is a subresource laid out as API.md section 1 (``conditions`` with ``type``,
``status``, ``reason``, ``message``, ``observedGeneration``, ``lastTransitionTime``; ``pools``), so what the controller
writes is kept whole, never pruned.

Its edge: plain dicts out; nothing is applied. KubernetesNodes, Kubernetes and ComputePlane are
Cozystack's application API, HelmRelease is Flux's: their CRDs are not ours to ship.
"""

from __future__ import annotations

from typing import Any

from .api.resources import CLASS_CONDITIONS, WORKER_CLASS, WORKER_PLATFORM, Resource
from .api.schema import CLASS_SPEC, PLATFORM_SINGLETON, PLATFORM_SPEC, Array, Boolean, Map, Node, String

__all__ = ["GROUP", "crd_manifests", "openapi", "worker_class_crd", "worker_platform_crd"]

#: the group of the CRDs we own (both rows of the API table share it)
GROUP = WORKER_CLASS.group


def _pattern(node: String) -> str | None:
    if node.pattern is None:
        return None
    text = node.pattern.pattern
    # an empty value is "supplied empty" (API.md section 2), not a format error
    return f"^$|{text}" if node.empty and text.startswith("^") else text


def openapi(node: Node) -> dict[str, Any]:
    """The OpenAPI v3 (structural) schema of one declaration; keys in a fixed order (the committed
    deploy/workerclass.yaml is compared as text)."""
    out: dict[str, Any]
    if isinstance(node, String):
        out = {"type": "string"}
        if node.enum:
            out["enum"] = list(node.enum)
        elif node.nullable:
            # YAML's ``key:`` with nothing after it is null; the parser reads it as supplied and empty
            out["nullable"] = True
        if (pattern := _pattern(node)) is not None:
            out["pattern"] = pattern
        if node.description is not None:
            out["description"] = node.description
        return out
    if isinstance(node, Boolean):
        out = {"type": "boolean"}
        if node.description is not None:
            out["description"] = node.description
        return out
    if isinstance(node, Array):
        out = {"type": "array"}
        if node.description is not None:
            out["description"] = node.description
        out["items"] = openapi(node.items)
        return out
    if isinstance(node, Map):
        out = {"type": "object"}
        if node.description is not None:
            out["description"] = node.description
        if node.values is not None:
            out["additionalProperties"] = openapi(node.values)
        if node.preserve_unknown:
            out["x-kubernetes-preserve-unknown-fields"] = True
        return out
    out = {"type": "object", "properties": {key: openapi(value) for key, value in node.properties.items()}}
    if node.description is not None:
        out["description"] = node.description
    if node.nullable:
        out["nullable"] = True
    if node.required:
        out["required"] = list(node.required)
    if node.rules:
        out["x-kubernetes-validations"] = [{"rule": rule.rule, "message": rule.message} for rule in node.rules]
    if node.preserve_unknown:
        out["x-kubernetes-preserve-unknown-fields"] = True
    return out


def _object(properties: dict[str, Any], description: str | None = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "properties": properties}
    if description is not None:
        out["description"] = description
    out.update(extra)
    return out


def _status() -> dict[str, Any]:
    condition = _object(
        {
            "type": {"type": "string", "enum": list(CLASS_CONDITIONS)},
            "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
            "reason": {"type": "string"},
            "message": {"type": "string"},
            "observedGeneration": {"type": "integer", "format": "int64", "minimum": 0},
            "lastTransitionTime": {"type": "string", "format": "date-time"},
        },
        required=["type", "status"],
    )
    return _object(
        {
            "conditions": {
                "type": "array",
                "items": condition,
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["type"],
            },
            "pools": {"type": "integer", "minimum": 0, "description": "live pools that select this class"},
        },
        "written by the workerclass controller",
    )


def _crd(resource: Resource, schema: dict[str, Any], columns: list[dict[str, Any]], *, status: bool) -> dict[str, Any]:
    kind = resource.kind
    version: dict[str, Any] = {
        "name": resource.version,
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": schema},
        "additionalPrinterColumns": columns,
    }
    if status:
        version["subresources"] = {"status": {}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": resource.name,
            "labels": {"app.kubernetes.io/part-of": "workerclass"},
        },
        "spec": {
            "group": resource.group,
            "names": {"kind": kind, "listKind": f"{kind}List", "plural": resource.plural, "singular": kind.lower()},
            "scope": resource.scope,
            "versions": [version],
        },
    }


def worker_class_crd() -> dict[str, Any]:
    schema = _object(
        {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": openapi(CLASS_SPEC),
            "status": _status(),
        },
        "A hoster's immutable worker offer; tenants' KubernetesNodes pools select it by name.",
        required=["spec"],
    )
    columns = [
        {"name": "Bootstrap", "type": "string", "jsonPath": ".spec.bootstrap"},
        {"name": "Accepted", "type": "string", "jsonPath": '.status.conditions[?(@.type=="Accepted")].status'},
        {"name": "Pools", "type": "integer", "jsonPath": ".status.pools"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ]
    return _crd(WORKER_CLASS, schema, columns, status=True)


def worker_platform_crd() -> dict[str, Any]:
    schema = _object(
        {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": openapi(PLATFORM_SPEC),
        },
        "The hoster's platform defaults; only the one named default is read.",
        required=["spec"],
        **{"x-kubernetes-validations": [{"rule": PLATFORM_SINGLETON.rule, "message": PLATFORM_SINGLETON.message}]},
    )
    columns = [
        {"name": "Default class", "type": "string", "jsonPath": ".spec.defaultWorkerClass"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ]
    return _crd(WORKER_PLATFORM, schema, columns, status=False)


def crd_manifests() -> list[dict[str, Any]]:
    return [worker_class_crd(), worker_platform_crd()]
