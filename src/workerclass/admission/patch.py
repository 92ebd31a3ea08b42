"""The object a mutation's RFC 6902 patch makes: derived from the ops, never built beside them.

``mutate`` writes its decision as ops (``add`` and ``remove`` of object members, the only ops it
makes) and the patched object it shows (``admit -o json``'s ``object``, what ``admit`` validates)
is :func:`apply_ops` of those ops, so the two cannot disagree. Why not ``jsonpatch.apply_patch``:
it deep-copies the whole object on every request (the webhook's hot path); this copies only the
mappings on each op's path and shares the rest with the object the request carried (read-only by
contract, as everywhere in admission). The tests apply the same patches with ``jsonpatch``, the
reference implementation, and compare.

Its edge: a mapping and ops in, a new mapping out; an op it does not make is refused.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["PatchError", "apply_ops"]


class PatchError(ValueError):
    """An op this applier does not take, or a path that does not lead where the op needs."""


def _keys(pointer: str) -> list[str]:
    """An RFC 6901 pointer's keys, unescaped (the inverse of :func:`workerclass.rules.supplied.json_pointer`)."""
    if not pointer.startswith("/"):
        raise PatchError(f"{pointer!r} is not a JSON pointer below the document")
    return [part.replace("~1", "/").replace("~0", "~") for part in pointer[1:].split("/")]


def apply_ops(obj: Mapping[str, Any], ops: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """``obj`` with ``ops`` applied in order (RFC 6902 ``add``/``remove`` of object members).

    ``add`` sets the member whether it is there or not; ``remove`` needs it there. The result is a
    new dict; every mapping on an op's path is a new dict too, everything else is ``obj``'s.
    """
    out = dict(obj)
    copied: set[int] = {id(out)}  # the mappings already this result's own (copied once each)
    for op in ops:
        keys = _keys(str(op.get("path", "")))
        parent = out
        for key in keys[:-1]:
            child = parent.get(key)
            if not isinstance(child, Mapping):
                raise PatchError(f"{op.get('path')!r}: {key!r} is not an object member on the way")
            owned: dict[str, Any]
            if isinstance(child, dict) and id(child) in copied:
                owned = child
            else:
                owned = dict(child)
                copied.add(id(owned))
                parent[key] = owned
            parent = owned
        last = keys[-1]
        if op.get("op") == "add":
            parent[last] = op.get("value")
        elif op.get("op") == "remove":
            if last not in parent:
                raise PatchError(f"{op.get('path')!r}: nothing to remove")
            del parent[last]
        else:
            raise PatchError(f"{op.get('op')!r}: only add and remove are applied here")
    return out
