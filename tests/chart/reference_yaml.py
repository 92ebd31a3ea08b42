"""A reference for how Kubernetes reads YAML, kept apart from the package's reader.

kubectl, Helm's kube client and the API server turn YAML into JSON with sigs.k8s.io/yaml: go-yaml
v2 decodes each document into ``interface{}``, then the value goes through JSON. This module
writes those rules down once more, on PyYAML's pure-Python parser (the package reads with the C
parser, ``workerclass.chart.kubeyaml``), so the tests have a second reading to compare with:

- a plain scalar resolves by go-yaml v2's table: its fixed words first (``y``/``yes``/``on``...
  booleans, ``~``/``null`` and the empty scalar, ``.inf``/``.nan``, the merge key ``<<``), then,
  by its first character, a Go integer (``strconv.ParseInt``/``ParseUint`` with base 0 after the
  underscores are dropped: ``0x``, ``0o``, ``0b``, a leading ``0`` octal) or a YAML-style float;
  anything else is text (no sexagesimal numbers; a timestamp decodes into ``interface{}`` as its text);
- through JSON, a mapping key becomes a string (``true``, ``1``, ``1.5``, ``.inf``; a null key has
  none) and a float with no fractional part below 1e21 is an integer.
"""

from __future__ import annotations

import math
import re
from typing import Any

import yaml

__all__ = ["read_documents", "read_one", "to_json_value"]

_TRUE = {"y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"}
_FALSE = {"n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"}
_NULL = {"", "~", "null", "Null", "NULL"}
_SPECIAL_FLOATS = {
    **{word: math.nan for word in (".nan", ".NaN", ".NAN")},
    **{sign + word: math.inf for sign in ("", "+") for word in (".inf", ".Inf", ".INF")},
    **{"-" + word: -math.inf for word in (".inf", ".Inf", ".INF")},
}
#: go-yaml v2's yamlStyleFloat
_YAML_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
_DOT_FLOAT = re.compile(r"\.[0-9]+([eE][-+]?[0-9]+)?")
_PLAIN = "tag:workerclass-tests,plain"
_MERGE = "tag:yaml.org,2002:merge"


def _go_parse_int(text: str, *, unsigned: bool) -> int | None:
    """``strconv.ParseInt(text, 0, 64)`` (``ParseUint`` when ``unsigned``), or None where Go refuses."""
    sign = 1
    body = text
    if not unsigned and body[:1] in ("+", "-"):
        sign = -1 if body[0] == "-" else 1
        body = body[1:]
    base, digits = 10, body
    lowered = body[:2].lower()
    if lowered in ("0x", "0o", "0b"):
        base, digits = {"0x": 16, "0o": 8, "0b": 2}[lowered], body[2:]
    elif len(body) > 1 and body[0] == "0":
        base, digits = 8, body[1:]
    allowed = "0123456789abcdefABCDEF"[: base if base <= 10 else 10 + 2 * (base - 10)]
    if not digits or any(char not in allowed for char in digits):
        return None
    value = sign * int(digits, base)
    if unsigned:
        return value if value < 1 << 64 else None
    return value if -(1 << 63) <= value < 1 << 63 else None


def _plain_scalar(text: str) -> Any:
    """A plain scalar's value as go-yaml v2 resolves it."""
    if text in _NULL:
        return None
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    if text in _SPECIAL_FLOATS:
        return _SPECIAL_FLOATS[text]
    first = text[0]
    if first == ".":
        return float(text) if _DOT_FLOAT.fullmatch(text) else text
    if first in "0123456789+-":
        plain = text.replace("_", "")
        for unsigned in (False, True):
            number = _go_parse_int(plain, unsigned=unsigned)
            if number is not None:
                return number
        if _YAML_FLOAT.fullmatch(plain):
            return float(plain)
    return text


class _Reader(yaml.SafeLoader):
    """PyYAML's pure-Python loader with go-yaml v2's resolution of plain scalars."""

    def resolve(self, kind: Any, value: Any, implicit: Any) -> str:
        if kind is yaml.ScalarNode and implicit[0]:
            return _MERGE if value == "<<" else _PLAIN
        return str(super().resolve(kind, value, implicit))

    def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
        if not isinstance(node, yaml.MappingNode):
            raise yaml.constructor.ConstructorError(None, None, f"expected a mapping, found {node.id}", node.start_mark)
        self.flatten_mapping(node)
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = _json_key(self.construct_object(key_node, deep=True))
            out[key] = self.construct_object(value_node, deep=deep)
        return out


_Reader.add_constructor(_PLAIN, lambda loader, node: _plain_scalar(loader.construct_scalar(node)))
# decoded into interface{}, go-yaml v2 keeps a timestamp as its text
_Reader.add_constructor("tag:yaml.org,2002:timestamp", lambda loader, node: loader.construct_scalar(node))


def _json_key(key: Any) -> str:
    """A mapping key as sigs.k8s.io/yaml writes it into JSON."""
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int):
        return str(key)
    if isinstance(key, float):
        if math.isnan(key):
            return ".nan"
        if math.isinf(key):
            return ".inf" if key > 0 else "-.inf"
        return format(key, "g")
    raise yaml.constructor.ConstructorError(None, None, f"a mapping key {key!r} has no JSON form", None)


def to_json_value(value: Any) -> Any:
    """``value`` once it has been through JSON: integral floats below 1e21 are integers."""
    if isinstance(value, dict):
        return {_json_key(key): to_json_value(item) for key, item in value.items()}
    if isinstance(value, list):
        return [to_json_value(item) for item in value]
    if isinstance(value, float) and math.isfinite(value) and value.is_integer() and abs(value) < 1e21:
        return int(value)
    return value


def read_documents(text: str) -> list[Any]:
    """Every document of ``text`` as Kubernetes reads it; empty documents left out, and the items of
    a ``kind: List`` in its place, as kubectl applies them."""
    out: list[Any] = []
    for document in yaml.load_all(text, Loader=_Reader):
        if document is None:
            continue
        document = to_json_value(document)
        if isinstance(document, dict) and document.get("kind") == "List" and isinstance(document.get("items"), list):
            out += [item for item in document["items"] if item is not None]
        else:
            out.append(document)
    return out


def read_one(text: str) -> Any:
    """The one document of ``text`` (None when it is empty), as Kubernetes reads it."""
    document = yaml.load(text, Loader=_Reader)
    return None if document is None else to_json_value(document)
