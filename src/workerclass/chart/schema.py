"""Helm's values-schema validation where it meets explicit nulls, and the templates that then fail.

Helm coalesces the user's values over ``values.yaml`` and validates ``values.schema.json`` on the
result, nulls included: a user ``null`` deletes a key the defaults have (the default with it) and
stays where they have none. So ``podCpuLimit: null`` (no default) and
``kubelet: {evictionHardMemory: null}`` (the default ``kubelet`` is ``{}``) meet a typed property
and are refused; ``talos: {version: null}`` removes a property the schema requires; ``talos:``
and ``images:`` left empty, and ``version: null``, remove a table or a value the templates read
unguarded (``talos.version``, ``images.kubectl``, the version map's lookup). Types and patterns of
values that are not null are the model parser's (:mod:`workerclass.model.pool`).

Owns :func:`null_failures`: the values as written (the pool's over the platform's) in, one
``Invalid`` :class:`Violation` per such null out, in document order. Its edge: the chart's own
schema and defaults, from the generated facts (:mod:`.facts`); nothing of workerclass above ``chart``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from ..violations import Violation
from .facts import DEFAULT_UPSTREAM, upstream_facts

__all__ = ["DEREFERENCED", "null_failures", "values_schema"]

#: Top-level keys the templates read unguarded once Helm's coalesce has dropped them with their
#: default: what each null then breaks (talos-reconcile-job.yaml reads ``.Values.talos.version``
#: and ``.Values.images.kubectl``; ``_versions.tpl`` looks ``.Values.version`` up in the map).
DEREFERENCED = {
    "talos": "the chart reads talos.version, talos.schematicID and the rest from it",
    "images": "the chart reads images.kubectl from it",
    "version": "the chart looks the Kubernetes minor up in its version map",
}
_MISSING: Any = object()


def values_schema(upstream: str = DEFAULT_UPSTREAM) -> Mapping[str, Any]:
    """The chart's values schema (types, defaults and constraints), as the generated facts carry it."""
    loaded = upstream_facts(upstream).get("schema")
    return loaded if isinstance(loaded, Mapping) else {}


def _what(schema: Mapping[str, Any]) -> str:
    """What the schema wants at a property, in words."""
    kind = schema.get("type")
    if kind is None and "anyOf" in schema:
        return "a quantity (an integer or a string)"
    return {
        "string": "a string",
        "integer": "an integer",
        "boolean": "true or false",
        "object": "a mapping",
        "array": "a list",
        "number": "a number",
    }.get(str(kind), "a value")


def _child(schema: Mapping[str, Any], key: str) -> Mapping[str, Any] | None:
    properties = schema.get("properties")
    if isinstance(properties, Mapping) and isinstance(properties.get(key), Mapping):
        child: Mapping[str, Any] = properties[key]
        return child
    extra = schema.get("additionalProperties")
    return extra if isinstance(extra, Mapping) else None


def null_failures(
    values: Mapping[str, Any], defaults: Mapping[str, Any], upstream: str = DEFAULT_UPSTREAM
) -> list[Violation]:
    """Each null of ``values`` (the pool's values over the platform's, as written) that Helm's
    schema validation or the templates refuse once ``values`` are coalesced over ``defaults``
    (the ``upstream`` chart's schema)."""
    out: list[Violation] = []
    if not _may_hold_null(values):
        return out  # every failure is a null's: values without one have none
    schema = values_schema(upstream)
    for key, value in values.items():
        if not isinstance(key, str) or key.startswith("_"):
            continue  # the platform's values, which the chart's schema does not describe
        child = _child(schema, key)
        if child is None:
            continue  # a key the schema does not know: nothing validates it, the chart ignores it
        field = f"spec.{key}"
        default = defaults.get(key, _MISSING)
        if value is None:
            if default is _MISSING:
                out.append(_typed_null(field, child))
            elif key in DEREFERENCED:
                out.append(
                    Violation(
                        "Invalid",
                        field,
                        f"is null: Helm's coalesce drops it with the chart's default, and {DEREFERENCED[key]}: "
                        "remove the line (the default applies) or give it a value",
                    )
                )
            continue
        _walk(value, child, default, field, out)
    return out


#: orjson refuses what is not plain JSON data (a subclass, a dataclass, a date): those are walked
_PLAIN = orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME


def plain_json_text(value: Any) -> bytes | None:
    """orjson's text of ``value`` with sorted keys, when it is plain JSON data holding no null (one
    text per value: a key for caches of equal values); None otherwise (not plain JSON data, or a
    ``null`` in the text: a None, or a NaN or an infinity, which orjson writes as ``null``)."""
    try:
        text = orjson.dumps(value, option=_PLAIN | orjson.OPT_SORT_KEYS)
    except TypeError:
        return None
    return None if b"null" in text else text


def _may_hold_null(values: Mapping[str, Any]) -> bool:
    """False only when no None lies anywhere in ``values`` (one C pass instead of the walk):
    plain JSON data whose text has no ``null`` (a string holding the word, or a NaN, which orjson
    writes as ``null``, is walked)."""
    try:
        return b"null" in orjson.dumps(values, option=_PLAIN)
    except TypeError:  # not plain JSON data (a key that is no string, a subclass...): walk it
        return True


def _typed_null(field: str, schema: Mapping[str, Any]) -> Violation:
    return Violation(
        "Invalid",
        field,
        f"is null: Helm validates the chart's schema with the null in place, and it must be {_what(schema)}: "
        "remove the line or give it a value",
    )


def _walk(value: Any, schema: Mapping[str, Any], default: Any, field: str, out: list[Violation]) -> None:
    """A value below the top level (``default``: the defaults at the same place, a table or missing)."""
    if isinstance(value, Mapping):
        defaults = default if isinstance(default, Mapping) else {}
        required = schema.get("required")
        required = required if isinstance(required, list) else []
        for key, item in value.items():
            path = f"{field}.{key}"
            child = _child(schema, str(key))
            if item is None:
                if key in defaults:  # the null deletes the default: only a required key is then missing
                    if key in required:
                        out.append(
                            Violation(
                                "Invalid",
                                path,
                                f"is null: Helm's coalesce drops it with the chart's default, and the chart's schema "
                                f"requires {path.removeprefix('spec.')}: remove the line (the default applies) "
                                "or give it a value",
                            )
                        )
                elif child is not None:
                    out.append(_typed_null(path, child))
                continue
            if child is not None:
                _walk(item, child, defaults.get(key, _MISSING), path, out)
    elif isinstance(value, list):
        items = schema.get("items")
        if not isinstance(items, Mapping):
            return
        for index, item in enumerate(value):
            path = f"{field}[{index}]"
            if item is None:
                out.append(_typed_null(path, items))
            else:
                _walk(item, items, _MISSING, path, out)  # lists are not coalesced: no defaults inside
