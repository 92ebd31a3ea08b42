"""The bounds of :mod:`workerclass.api.bounds` judged for a request's object, in one C pass when
the object is plain JSON data well inside them.

:func:`~workerclass.api.bounds.excess` walks every value in Python (about twice a JSON parse of
the same pool). A request's object is almost always plain JSON data of a few KiB nesting under
ten levels: :func:`request_excess` serializes it with orjson, and when that text is short and
shallow enough that the walk could not find it beyond a bound, answers "within" without walking;
anything else (not plain JSON data, a long or deep text, an escaped quote that makes the text's
nesting harder to read) is the walk's to judge, so the answer is always the walk's.

Why the text's length bounds the walk's size: the walk counts a scalar that is not a string as 8
bytes and a string as its characters plus 2, where the text has at least 1 byte (plus a
separator) and at least its characters plus 2: the walk's count is under 8 times the text's
length. Its depth is at most the number of brackets the text opens, and is exactly the text's
bracket nesting outside strings.

Its edge: one object in, an :class:`~workerclass.api.bounds.Excess` or ``None`` out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import orjson

from ..api.bounds import MAX_BYTES, MAX_DEPTH, Excess, excess
from ..rules.keys import text_cannot_hold_private

__all__ = [
    "Glance",
    "glance",
    "patch_may_cross",
    "request_bounds",
    "request_excess",
    "request_reading",
    "within_at_a_glance",
]

#: what orjson would write as something other than a plain JSON value is refused (the walk's then)
_PLAIN = orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
#: every byte but the brackets, deleted from a text to leave its nesting
_NOT_BRACKETS = bytes(range(256)).translate(None, b"[]{}")
#: an empty container in a text of brackets only: one level of nesting peeled per substitution
_EMPTY = re.compile(rb"\[\]|\{\}")
#: the walk's size counts under this many times the text's length (module docstring)
_SIZE_FACTOR = 8


class Glance(NamedTuple):
    """What :func:`glance` reads off an object's orjson text (``text``)."""

    size: int
    depth: int
    text: bytes


def glance(obj: object) -> Glance | None:
    """``size`` and ``depth`` read off ``obj``'s orjson ``text``, each at least the walk's count: ``size`` is
    8 times the text's length; ``depth`` the number of brackets that open (nothing nests deeper
    than that) when there are at most :data:`MAX_DEPTH` of them, else the text's nesting (counted
    up to just past :data:`MAX_DEPTH`). ``None`` when the text cannot tell (not plain JSON data, an
    escaped character among many brackets, or plainly too large)."""
    try:
        text = orjson.dumps(obj, option=_PLAIN)
    except TypeError:  # not plain JSON data (or a number over 64 bits, a non-str key)
        return None
    size = len(text) * _SIZE_FACTOR
    if size > MAX_BYTES:
        return None
    opens = text.count(b"{") + text.count(b"[")  # those in strings too: an upper bound
    if opens <= MAX_DEPTH:
        return Glance(size, opens, text)
    if b"\\" in text:
        return None
    # No backslash: every quote opens or closes a string, so the even parts are what lies outside.
    brackets = b"".join(text.split(b'"')[::2]).translate(None, _NOT_BRACKETS)
    depth = 0
    while brackets and depth <= MAX_DEPTH:
        brackets = _EMPTY.sub(b"", brackets)
        depth += 1
    return Glance(size, depth, text)


def within_at_a_glance(obj: object) -> bool:
    """``True`` when ``obj`` is certainly within both bounds, judged on its orjson text; ``False``
    means "not known here" (the walk decides), never "beyond"."""
    found = glance(obj)
    return found is not None and found[0] <= MAX_BYTES and found[1] <= MAX_DEPTH


def request_excess(obj: object) -> Excess | None:
    """:func:`~workerclass.api.bounds.excess` of ``obj``, the walk spared when the text shows it within."""
    if within_at_a_glance(obj):
        return None
    return excess(obj)


def request_bounds(obj: object) -> tuple[Excess | None, int]:
    """:func:`request_excess` of ``obj`` and an upper bound of the walk's size count when the text
    showed it within (:data:`MAX_BYTES` otherwise: no room known)."""
    found, size, _ = request_reading(obj)
    return found, size


def request_reading(obj: object) -> tuple[Excess | None, int, bool]:
    """:func:`request_bounds` of ``obj``, and whether its text shows that no string in it can hold
    private key material (:func:`~workerclass.rules.keys.text_cannot_hold_private`; ``False``:
    not known here). One serialization answers both: the values are not written out again."""
    found = glance(obj)
    if found is not None and found.size <= MAX_BYTES and found.depth <= MAX_DEPTH:
        return None, found.size, text_cannot_hold_private(found.text)
    return excess(obj), MAX_BYTES, False


def patch_may_cross(size: int, patch: Sequence[Mapping[str, Any]]) -> bool:
    """Whether the object ``patch`` makes of one within the bounds (its walk's size count at most
    ``size``) could be beyond them: ``False`` when every op removes a member or adds a string (or
    a mapping of strings) at most two members deep and the strings fit the room left."""
    added = 0
    for op in patch:
        if op.get("op") == "remove":
            continue
        path = op.get("path")
        value = op.get("value")
        if op.get("op") != "add" or not isinstance(path, str) or path.count("/") > 2:
            return True
        if isinstance(value, str):
            added += len(path) + len(value) + 8
        elif isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
            added += len(path) + 8 + sum(len(k) + len(v) + 8 for k, v in value.items())
        else:
            return True
    return size + added * _SIZE_FACTOR > MAX_BYTES
