"""When the worker controller applies an object: what server-side apply would change.

Pure: a desired object, the live one and what this process last applied in, a reason (or none)
out (:func:`apply_reason`). Server-side apply decides what our field manager owns, so the answer
rests on the live object's ``managedFields`` (:func:`fields_differ`: a field we applied and no
longer set must go, and only an apply removes it) and on its values (:func:`covers`, which knows
what the API server adds or normalizes). That the live object holds every value we set is never
reason enough to skip an apply.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["SHARED_LISTS", "apply_reason", "covers", "difference", "fields_differ", "managed_by", "owns_exactly"]

#: lists other writers add items to (Cluster API adds its own owner references): every item we set
#: must be there, in any order, beside theirs
SHARED_LISTS = frozenset({"ownerReferences"})


def difference(live: Any, desired: Any, path: str = "") -> str | None:
    """The first path at which ``live`` does not hold what ``desired`` sets (``None``: it covers it)."""
    if isinstance(desired, Mapping):
        if not isinstance(live, Mapping):
            return path or "."
        for key, value in desired.items():
            if key not in live:
                return f"{path}.{key}"
            if key in SHARED_LISTS and isinstance(value, list):
                theirs = live[key] if isinstance(live[key], list) else []
                if not all(any(covers(item, want) for item in theirs) for want in value):
                    return f"{path}.{key}[]"
                continue
            found = difference(live[key], value, f"{path}.{key}")
            if found is not None:
                return found
        return None
    if isinstance(desired, list):
        if not isinstance(live, list) or len(live) != len(desired):
            return f"{path}[]"
        for index, (a, b) in enumerate(zip(live, desired, strict=True)):
            found = difference(a, b, f"{path}[{index}]")
            if found is not None:
                return found
        return None
    return None if covers(live, desired) else (path or ".")


def covers(live: Any, desired: Any) -> bool:
    """Whether the live object already holds every field ``desired`` sets, with the same value.

    The API server adds what it defaults (a Job's selector, a template's default fields, a list
    item's defaults), so the live object may hold more; lists compare item by item (same length).
    Lists in :data:`SHARED_LISTS` are others' too (Cluster API adds owner references): each item
    we set must be among theirs. One part of :func:`apply_reason`: covering alone never makes an
    apply unnecessary (a field no longer set would stay)."""
    if isinstance(desired, Mapping):
        if not isinstance(live, Mapping):
            return False
        for key, value in desired.items():
            if key not in live:
                return False
            if key in SHARED_LISTS and isinstance(value, list):
                theirs = live[key] if isinstance(live[key], list) else []
                if not all(any(covers(item, want) for item in theirs) for want in value):
                    return False
            elif not covers(live[key], value):
                return False
        return True
    if isinstance(desired, list):
        if not isinstance(live, list) or len(live) != len(desired):
            return False
        return all(covers(a, b) for a, b in zip(live, desired, strict=True))
    if isinstance(desired, bool) or isinstance(live, bool):
        return live is desired
    if isinstance(desired, int | float) and isinstance(live, int | float):
        return float(live) == float(desired)
    if isinstance(desired, str) and isinstance(live, str) and live != desired:
        # a metav1.Duration field comes back normalized ("20m" is stored as "20m0s")
        a, b = _duration(live), _duration(desired)
        return a is not None and a == b
    return bool(live == desired)


_DURATION_PART = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ns|us|µs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def _duration(text: str) -> float | None:
    """Seconds of a Go duration string (``1h30m``, ``20m0s``), or ``None`` for any other string."""
    if not text or _DURATION_PART.sub("", text) != "":
        return None
    return sum(float(number) * _UNIT_SECONDS[unit] for number, unit in _DURATION_PART.findall(text))


#: fields of an apply body that name the object rather than set a field (never in managedFields)
_IDENTITY = frozenset({"apiVersion", "kind"})
_IDENTITY_METADATA = frozenset({"name", "namespace"})


def managed_by(live: Mapping[str, Any], manager: str) -> Mapping[str, Any] | None:
    """The ``fieldsV1`` of ``manager``'s server-side apply on ``live`` (the main resource, not a
    subresource); ``None`` when that manager never applied it."""
    entries = (live.get("metadata") or {}).get("managedFields")
    if not isinstance(entries, list):
        return None
    for entry in entries:
        if not isinstance(entry, Mapping):
            continue
        if entry.get("manager") == manager and entry.get("operation") == "Apply" and not entry.get("subresource"):
            fields = entry.get("fieldsV1")
            return fields if isinstance(fields, Mapping) else {}
    return None


def owns_exactly(live: Mapping[str, Any], desired: Mapping[str, Any], manager: str) -> bool:
    """Whether ``manager``'s applied field set on ``live`` is exactly the field set of ``desired``
    (:func:`fields_differ` says where it is not)."""
    return fields_differ(live, desired, manager) is None


def fields_differ(live: Mapping[str, Any], desired: Mapping[str, Any], manager: str) -> str | None:
    """The first path at which ``manager``'s applied field set on ``live`` and the field set of
    ``desired`` differ (``"."`` when that manager never applied ``live``); ``None`` when they are the same.

    Server-side apply removes a field its manager applied before and applies no longer (unless
    another manager owns it too), so an apply is due when the sets differ: a field the render
    dropped is still owned (the apply removes it), a field someone else took over or removed is no
    longer owned (the apply takes it back). The sets are compared on the ``fieldsV1`` tree as the
    API server writes it: a map's keys are ``f:<name>``; a list or struct that the schema makes
    atomic (an owner reference, a roleRef) is a leaf (what it holds is the value's business, which
    :func:`covers` judges); an associative list's
    items are ``k:{<key fields>}``, a set's ``v:<value>``; ``.`` marks a map or item owned as such.
    """
    fields = managed_by(live, manager)
    if fields is None:
        return "."
    body = {key: value for key, value in desired.items() if key not in _IDENTITY}
    metadata = body.get("metadata")
    if isinstance(metadata, Mapping):
        body["metadata"] = {key: value for key, value in metadata.items() if key not in _IDENTITY_METADATA}
        if not body["metadata"]:
            del body["metadata"]
    tree = {key: value for key, value in fields.items() if key not in {f"f:{name}" for name in _IDENTITY}}
    return _fields_differ(body, tree, "")


def _children(node: Any) -> dict[str, Any]:
    return {key: value for key, value in node.items() if key != "."} if isinstance(node, Mapping) else {}


def _fields_differ(desired: Any, node: Any, path: str) -> str | None:
    children = _children(node)
    if isinstance(desired, Mapping):
        if not children:
            return None  # an atomic struct (an owner reference, a roleRef): owned whole
        wanted = {f"f:{key}" for key in desired}
        if wanted != set(children):
            extra = sorted(set(children) - wanted)
            missing = sorted(wanted - set(children))
            return f"{path}.{(extra or missing)[0][2:]}"
        for key, value in desired.items():
            found = _fields_differ(value, children[f"f:{key}"], f"{path}.{key}")
            if found is not None:
                return found
        return None
    if isinstance(desired, list):
        if not children:
            return None  # an atomic list: owned whole
        remaining = dict(children)
        for index, item in enumerate(desired):
            name = _item(item, remaining)
            if name is None:
                return f"{path}[{index}]"
            owned = remaining.pop(name)
            if name.startswith("k:"):
                found = _item_differs(item, owned, name, f"{path}[{index}]")
                if found is not None:
                    return found
        return f"{path}[]" if remaining else None
    return f"{path}" if children else None  # a scalar (or null) is a leaf


def _item_differs(item: Any, node: Any, name: str, path: str) -> str | None:
    """An associative list's item against its ``k:`` node; key fields the server filled in (a port's
    defaulted ``protocol``) may be owned beside the item's own."""
    if not isinstance(item, Mapping):
        return path
    keys = json.loads(name[2:])
    extra = {f"f:{key}" for key in keys if key not in item}
    trimmed = {key: value for key, value in _children(node).items() if key not in extra}
    return _fields_differ(item, trimmed, path)


def _item(item: Any, nodes: Mapping[str, Any]) -> str | None:
    """The ``k:`` or ``v:`` entry of ``nodes`` that names list item ``item``."""
    for name in nodes:
        try:
            value = json.loads(name[2:])
        except ValueError:
            continue
        if name.startswith("v:") and value == item:
            return name
        if name.startswith("k:") and isinstance(value, Mapping) and isinstance(item, Mapping):
            shared = [key for key in value if key in item]
            if shared and all(item[key] == value[key] for key in shared):
                return name
    return None


def apply_reason(
    desired: Mapping[str, Any],
    live: Mapping[str, Any] | None,
    *,
    manager: str,
    applied: str | None,
    digest: str,
) -> str | None:
    """Why ``desired`` must be applied over ``live`` (``None``: an apply would change nothing).

    ``applied`` is the digest of what this process last applied for the object (``None``: nothing
    since it started), ``digest`` that of ``desired``. Server-side apply decides what ``manager``
    owns, so an apply is due when: the object is absent; ``desired`` changed since the last apply
    (a field it drops goes, as only the apply can remove it); ``manager``'s applied field set
    differs from ``desired``'s (after a restart, a render that dropped a field, or a field
    another writer took); or a value differs (:func:`covers`). Covering is never reason enough to
    skip: a live object can hold every value we set and still carry one we no longer set."""
    if live is None:
        return "absent"
    if applied is not None and applied != digest:
        return "changed since the last apply"
    fields = fields_differ(live, desired, manager)
    if fields is not None:
        return f"the fields applied differ from the desired ones at {fields}"
    found = difference(live, desired)
    if found is not None:
        return f"{found} differs"
    return None
