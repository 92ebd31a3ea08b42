"""What the tenant supplied in a KubernetesNodes UPDATE, and what Cozystack's API filled in.

Cozystack's API (``api/head/pkg/registry/apps/application/rest.go``) reads a pool through Get,
which applies the schema's defaults (``rest_defaulting.go``: ``applySpecDefaults``), and applies
every UPDATE onto that defaulted read. So each UPDATE the webhooks see, ``object`` and
``oldObject`` alike, carries ``talos.version: v1.13.6``, the default schematic,
``kubelet.evictionHardMemory: 7%`` and the rest as if the tenant had written them; and
Cozystack writes the UPDATE's object to the HelmRelease, so without care the stored values
accumulate them too.

The rule (API.md section 2's "supplied", made precise for UPDATE):

- On **UPDATE of a KubernetesNodes**, a value at a chart-values path is **API-filled** when it
  equals the chart's default at that path (``values.yaml`` as its ``values.schema.json`` carries
  it: the schema ``default`` s, which also hold the documented ``kubelet`` eviction defaults
  ``7%``/``10%``) **and** the stored values do not hold that path. The stored values are
  :meth:`State.stored_values` (the backing HelmRelease ``kubernetes-nodes-<name>``, else the
  stored KubernetesNodes of a STATE folder); when State has no record of the pool, the old
  object's values stand in (the API's read: then nothing counts as API-filled). An API-filled
  value is treated as absent: by resolution (it never overrides a class baseline) and by the
  Kairos/Talos-only rules (it is no ``TalosSettingOnKairos``). A value that
  differs from the default, or that the stored values hold, is supplied. A mapping whose every
  member is API-filled, and that the stored values do not hold, is API-filled as a whole.
- On **CREATE** the spec is as sent (the API fills nothing): everything present is supplied.
  HelmReleases are written directly, without the API: everything present is supplied.
- **Mutation**: the UPDATE of a *classified* pool (the old pool has a class) gets RFC 6902
  ``remove`` ops for the API-filled paths, after the class restore op, so the stored values never
  accumulate API-filled defaults. A classless pool's UPDATE gets no patch at all (API.md: "stays
  classless; no patch"): the chart coalesces the same defaults, so its render is the same with or
  without them, and resolution leaves them out of ``Effective.values``.

- A **stored Kairos KubernetesNodes** with no backing HelmRelease (so no record of what was
  written) holds the Talos-only chart defaults the API's read filled in: a CREATE with them would
  have been refused, so they are API-filled too (:func:`kairos_read_paths`, for admission's UPDATE
  and for resolution of the stored pool alike).

Pure; the defaulting is a port of ``applyDefaults`` over the chart's values schema (generated facts).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from functools import cache
from typing import Any

from ..chart.schema import values_schema
from ..state import State
from .family import family_of

__all__ = [
    "api_defaults",
    "api_filled_paths",
    "apply_schema_defaults",
    "json_pointer",
    "kairos_filled_paths",
    "kairos_read_paths",
    "strip_paths",
]

Path = tuple[str, ...]


def _effective_type(schema: Mapping[str, Any]) -> str:
    kind = schema.get("type")
    if isinstance(kind, str) and kind:
        return kind
    if schema.get("properties") or isinstance(schema.get("additionalProperties"), dict):
        return "object"
    if isinstance(schema.get("items"), dict):
        return "array"
    return ""


def apply_schema_defaults(value: Any, schema: Mapping[str, Any], *, top: bool = True) -> Any:
    """``applyDefaults`` of rest_defaulting.go: the schema's defaults applied as Get applies them.

    Iterative over the schema's depth only (a few levels); a value's own depth is never walked
    beyond what the schema describes, so deeply nested values cannot exhaust the stack.
    """
    kind = _effective_type(schema)
    if kind == "object":
        if isinstance(value, dict):
            out = dict(value)
        else:
            default = schema.get("default")
            out = copy.deepcopy(default) if isinstance(default, dict) and not top else {}
        properties = schema.get("properties")
        if isinstance(properties, dict):
            for name, child in properties.items():
                if not isinstance(child, dict):
                    continue
                if name not in out and "default" in child and child["default"] is not None:
                    out[name] = copy.deepcopy(child["default"])
                if name in out:
                    out[name] = apply_schema_defaults(out[name], child, top=False)
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            known = properties if isinstance(properties, dict) else {}
            for name in list(out):
                if name not in known:
                    out[name] = apply_schema_defaults(out[name], extra, top=False)
        return out
    if kind == "array":
        if isinstance(value, list):
            out_list = list(value)
        else:
            default = schema.get("default")
            out_list = copy.deepcopy(default) if isinstance(default, list) else []
        items = schema.get("items")
        if isinstance(items, dict):
            for index, item in enumerate(out_list):
                out_list[index] = apply_schema_defaults(item, items, top=False)
        return out_list
    if value is None and schema.get("default") is not None:
        return copy.deepcopy(schema["default"])
    return value


@cache
def _defaults() -> Mapping[str, Any]:
    defaults = apply_schema_defaults({}, values_schema())
    return defaults if isinstance(defaults, dict) else {}


def api_defaults() -> dict[str, Any]:
    """What Get fills into an empty pool: every chart default at its path (a fresh copy)."""
    return copy.deepcopy(dict(_defaults()))


def api_filled_paths(values: Mapping[str, Any], stored: Mapping[str, Any] | None) -> list[Path]:
    """The API-filled paths of an UPDATE's ``values`` (see the module docstring), in document order.

    A mapping that is API-filled as a whole is one path (its members are not listed again).
    """
    out: list[Path] = []
    _walk(values, _defaults(), stored if isinstance(stored, Mapping) else None, (), out)
    return out


_MISSING = object()


def _walk(
    values: Mapping[str, Any],
    defaults: Mapping[str, Any],
    stored: Mapping[str, Any] | None,
    prefix: Path,
    out: list[Path],
) -> bool:
    """Collect API-filled paths below ``prefix``; True when every member of ``values`` is API-filled."""
    every = True
    for key, value in values.items():
        path = (*prefix, str(key))
        default = defaults.get(key, _MISSING) if isinstance(key, str) else _MISSING
        held = stored.get(key, _MISSING) if stored is not None else _MISSING
        if default is _MISSING:
            every = False
            continue
        if isinstance(value, dict) and isinstance(default, dict) and default:
            inner: list[Path] = []
            whole = _walk(value, default, held if isinstance(held, Mapping) else None, path, inner)
            if whole and held is _MISSING:
                out.append(path)
            else:
                out.extend(inner)
                every = False
            continue
        if held is _MISSING and _same(value, default):
            out.append(path)
        else:
            every = False
    return every


def kairos_filled_paths(values: Mapping[str, Any]) -> list[Path]:
    """The Talos-only values of a Kairos pool read as stored, with no record of what was written
    (no backing HelmRelease), that equal the chart's defaults: the API's read fills them (it
    applies the schema's ``talos`` defaults to every pool), and a CREATE with them would have been
    refused, so they are API-filled, never ``TalosSettingOnKairos``."""
    talos = values.get("talos")
    defaults = _defaults().get("talos")
    if not isinstance(talos, Mapping) or not isinstance(defaults, Mapping):
        return []
    return [
        ("talos", key)
        for key, value in talos.items()
        if isinstance(key, str) and key in defaults and defaults[key] not in ("", None) and _same(value, defaults[key])
    ]


def kairos_read_paths(
    state: State, namespace: str, name: str, values: Mapping[str, Any], class_name: str | None
) -> list[Path]:
    """The Talos-only values the API's read filled into KubernetesNodes ``namespace/name`` when
    nothing records what was written (no backing HelmRelease) and its class is Kairos
    (:func:`~workerclass.rules.family.family_of`): :func:`kairos_filled_paths`; else none.

    Admission strips them from an UPDATE's object, resolution from a stored pool's values: both
    read them as absent, never as ``TalosSettingOnKairos``.
    """
    if (namespace, name) in state.backing_values or family_of(state, class_name) != "kairos":
        return []
    return kairos_filled_paths(values)


def _same(value: Any, default: Any) -> bool:
    """Equality with a default, shallow first: defaults are scalars or empty containers."""
    if type(value) is not type(default):
        return False
    if isinstance(value, dict | list):
        return len(value) == 0 and len(default) == 0
    return bool(value == default)


def strip_paths(values: Mapping[str, Any], paths: list[Path]) -> dict[str, Any]:
    """``values`` without ``paths`` (copies only the mappings on the way; the rest is shared)."""
    out = dict(values)
    for path in paths:
        parent: dict[str, Any] = out
        for key in path[:-1]:
            child = parent.get(key)
            if not isinstance(child, dict):
                break
            child = dict(child)
            parent[key] = child
            parent = child
        else:
            parent.pop(path[-1], None)
    return out


def json_pointer(prefix: str, path: Path) -> str:
    """An RFC 6901 pointer: ``/spec`` + escaped keys."""
    return prefix + "".join("/" + key.replace("~", "~0").replace("/", "~1") for key in path)
