"""YAML as Kubernetes reads it: go-yaml v2's resolution, then JSON. The package's one YAML reader.

kubectl, Helm (its values, its rendered manifests) and the API server read YAML through
sigs.k8s.io/yaml: go-yaml v2 decodes the text, then the value goes through JSON. So a plain
scalar is YAML 1.1's boolean (``y``, ``N``, ``on``...), a Go integer (``0x1f``, ``0o17``, a
leading-zero octal ``017``, underscores), a float without a dot (``1e2``), or a string: never a
sexagesimal number (``1:30``), never a date (``2001-12-14`` stays text), and ``08`` (no octal, a
float) is 8. Then JSON: keys become strings, a whole float an integer. PyYAML's YAML 1.1 rules
differ on each of these, so every reader of manifests, values and rendered text goes through
:class:`KubeLoader` (STATE folders subclass it, :mod:`workerclass.adapters.folder`).

It is PyYAML's C parser (``CSafeLoader``) with the resolution replaced: the C parser finds the
scalars, their style and their tags; :func:`plain_scalar` resolves every plain one as go-yaml v2
does. Explicit tags resolve as go-yaml v2 decodes them into an ``interface{}``: ``!!timestamp``
keeps its text, ``!!binary`` is the decoded bytes as text, ``!!int``/``!!float``/``!!bool``/
``!!null`` must resolve to their type; another tag (``!!set``, ``!duration``) is refused, as the
oracle's reader refuses it, rather than guessed at.
Its edge: text in, JSON-shaped data out (dicts, lists, str, int, float, bool, None).
"""

from __future__ import annotations

import base64
import binascii
import math
import operator
import re
from collections.abc import Iterator
from typing import Any

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from .quantity import go_float_str

try:  # the C parser: about eight times faster than the pure-Python one (bench/README.md)
    from yaml import CSafeLoader as _Base
except ImportError:  # pragma: no cover - depends on how PyYAML was built
    from yaml import SafeLoader as _Base  # type: ignore[assignment]

__all__ = [
    "PLAIN_TAG",
    "STR_TAG",
    "KubeLoader",
    "from_yaml",
    "json_key",
    "k8s_load",
    "k8s_load_all",
    "plain_scalar",
]

#: The tag every plain scalar resolves to here (then :func:`plain_scalar` decides its value).
PLAIN_TAG = "tag:k8s,plain"
_MERGE_TAG = "tag:yaml.org,2002:merge"
#: The tag of a quoted scalar, and of one tagged ``!!str``.
STR_TAG = "tag:yaml.org,2002:str"
_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"
#: what :meth:`KubeLoader._built` holds for a collection it is building
_BUILDING = object()
#: collections :meth:`KubeLoader._built` builds inside one another (twice the bounds' depth,
#: :data:`workerclass.api.bounds.MAX_DEPTH`), far below Python's recursion limit
_BUILT_DEPTH = 128


class _Slow(Exception):
    """A document :meth:`KubeLoader._built` leaves to PyYAML's constructor."""


_NULLS = frozenset({"~", "null", "Null", "NULL", ""})
_TRUE = frozenset({"y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"})
_FALSE = frozenset({"n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"})
_SPECIAL_FLOATS: dict[str, float] = {
    **{
        f"{sign}.{word}": (-math.inf if sign == "-" else math.inf)
        for sign in ("", "+", "-")
        for word in ("inf", "Inf", "INF")
    },
    ".nan": math.nan,
    ".NaN": math.nan,
    ".NAN": math.nan,
}
_GO_INT = re.compile(r"^[-+]?(?:0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)$")
_GO_YAML_FLOAT = re.compile(r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$")


def _json_number(v: float) -> int | float:
    """A float after JSON: a whole one is an integer (as the API server decodes it)."""
    if math.isfinite(v) and v.is_integer() and abs(v) < 1e21:
        return int(v)
    return v


def plain_scalar(s: str) -> Any:
    """A plain (unquoted) YAML scalar as Kubernetes reads it (go-yaml v2, then JSON)."""
    if s in _NULLS:
        return None
    if s in _TRUE:
        return True
    if s in _FALSE:
        return False
    if s[0] not in "-+.0123456789":
        return s
    if s in _SPECIAL_FLOATS:
        return _SPECIAL_FLOATS[s]
    if s[0] == ".":
        try:
            return _json_number(float(s))
        except ValueError:
            return s
    plain = s.replace("_", "")
    if _GO_INT.match(plain):
        sign = -1 if plain[0] == "-" else 1
        body = plain.lstrip("+-")
        if body[:2] in ("0x", "0X"):
            number = int(body[2:], 16)
        elif body[:2] in ("0o", "0O"):
            number = int(body[2:], 8)
        elif body[:2] in ("0b", "0B"):
            number = int(body[2:], 2)
        elif len(body) > 1 and body[0] == "0":
            number = int(body, 8)
        else:
            number = int(body)
        number *= sign
        if -(1 << 63) <= number < (1 << 64):
            return number
    if _GO_YAML_FLOAT.match(plain):
        return _json_number(float(plain))
    return s


def json_key(key: Any) -> str:
    """A mapping key as sigs.k8s.io/yaml writes it into JSON (``ValueError`` for a null or a collection)."""
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int):
        return str(key)
    if isinstance(key, float):
        if math.isnan(key):
            return "NaN"
        if math.isinf(key):
            return "+Inf" if key > 0 else "-Inf"
        return go_float_str(key)
    raise ValueError("a mapping key that is null or a collection has no JSON form")


class KubeLoader(_Base):
    """PyYAML's (C) safe loader resolving and constructing as go-yaml v2 and JSON do."""

    # Resolution: only merge keys and plain scalars; every other scalar is a string.
    yaml_implicit_resolvers: dict[Any, list[tuple[str, re.Pattern[str]]]] = {}

    # No path resolver is registered (:meth:`add_path_resolver` refuses one), so the composer's two
    # calls around every node (``descend_resolver(parent, index)``, ``ascend_resolver()``) have
    # nothing to track: C callables that ignore their arguments, never bound to the loader, spare
    # them a Python frame each (about a tenth of reading a STATE of small pools).
    descend_resolver = operator.is_  # type: ignore[assignment]
    ascend_resolver = tuple  # type: ignore[assignment]

    @classmethod
    def add_path_resolver(cls, *args: Any, **kwargs: Any) -> None:
        """Refused: the composer's resolver calls above keep no path."""
        raise NotImplementedError("KubeLoader resolves no paths")

    def construct_plain(self, node: ScalarNode) -> Any:
        return plain_scalar(self.construct_scalar(node))

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[str, Any]:  # type: ignore[override]
        if not isinstance(node, MappingNode):
            raise ConstructorError(None, None, f"expected a mapping, found {node.id}", node.start_mark)
        written = node.value[:]  # the pairs as written, before merge keys bring others in
        self.flatten_mapping(node)  # merge keys (<<), explicit keys winning, as go-yaml v2
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            name = self._pair_name(self.construct_object(key_node, deep=True), key_node, value_node, out, written)
            out[name] = self.construct_object(value_node, deep=deep)
        return out

    def _pair_name(
        self, key: Any, key_node: Node, value_node: Node, out: dict[str, Any], written: list[tuple[Node, Node]]
    ) -> str:
        """The JSON key of a pair about to join ``out``, whose pairs as written are ``written``: a
        key with no JSON form is refused, a repeated one and a ``metadata`` value go to the hooks."""
        try:
            name = json_key(key)
        except ValueError as error:
            raise ConstructorError(None, None, str(error), key_node.start_mark) from None
        if name in out:
            self.repeated_key(written, key_node, name)
        if name == "metadata":
            self.metadata_read(value_node)
        return name

    def resolve(self, kind: type[Node], value: str | None, implicit: tuple[bool, bool]) -> str:
        """A node's tag as the two resolvers registered below give it (a plain ``<<`` is a merge key,
        any other plain scalar :data:`PLAIN_TAG`), without matching their patterns: the C parser
        asks for every node. A subclass that registers resolvers of its own is read by PyYAML's
        resolution (paths are refused: :meth:`add_path_resolver`)."""
        if self.yaml_implicit_resolvers is not _RESOLVERS or self.yaml_path_resolvers:
            return str(super().resolve(kind, value, implicit))  # type: ignore[no-untyped-call]
        if kind is ScalarNode:
            if implicit[0]:
                return _MERGE_TAG if value == "<<" else PLAIN_TAG
            return STR_TAG
        return _SEQ_TAG if kind is SequenceNode else _MAP_TAG

    def construct_document(self, node: Node | None) -> Any:
        """The document's value, built by :meth:`_built` (one call per node); a document with a
        merge key, a tag other than a plain scalar's, a string's, a sequence's or a mapping's, or a
        collection inside itself is built again by PyYAML's constructor, which reads all of them."""
        if node is None:
            return None
        try:
            return self._built(node, {}, 0)
        except _Slow:
            return super().construct_document(node)

    def _built(self, node: Node, made: dict[int, Any], depth: int) -> Any:
        """``node``'s value, as :meth:`construct_object` builds it for the common tags; ``made``
        holds each collection built so far by its node's id (an alias is its anchor's value; a
        collection being built is ``_BUILDING``, met again only inside itself); ``depth`` is how
        many collections hold it (past :data:`_BUILT_DEPTH` the document is PyYAML's to build, whose
        value the readers' bounds then refuse with its file and line)."""
        tag = node.tag
        if isinstance(node, ScalarNode):
            if tag == PLAIN_TAG:
                return plain_scalar(node.value)
            if tag == STR_TAG:
                return node.value
            raise _Slow
        key = id(node)
        if key in made:
            value = made[key]
            if value is _BUILDING:
                raise _Slow
            return value
        if depth > _BUILT_DEPTH:
            raise _Slow
        made[key] = _BUILDING
        depth += 1
        if isinstance(node, MappingNode) and tag == _MAP_TAG:
            out: dict[str, Any] = {}
            for key_node, value_node in node.value:
                if key_node.tag == _MERGE_TAG:
                    raise _Slow
                name = self._pair_name(self._built(key_node, made, depth), key_node, value_node, out, node.value)
                out[name] = self._built(value_node, made, depth)
            made[key] = out
            return out
        if isinstance(node, SequenceNode) and tag == _SEQ_TAG:
            items = [self._built(item, made, depth) for item in node.value]
            made[key] = items
            return items
        raise _Slow

    def repeated_key(self, written: list[tuple[Node, Node]], key_node: Node, name: str) -> None:
        """A key met a second time in one mapping (as JSON holds keys; a merge key's pair overridden
        by a written one too): go-yaml v2 keeps the last. A reader that refuses it overrides this."""

    def metadata_read(self, node: Node) -> None:
        """A ``metadata`` value about to be read (a reader that checks names overrides this)."""

    def construct_yaml_map(self, node: MappingNode) -> Iterator[dict[str, Any]]:  # type: ignore[override]
        data: dict[str, Any] = {}
        yield data
        data.update(self.construct_mapping(node))

    def construct_typed(self, node: ScalarNode) -> Any:
        """``!!int``, ``!!float``, ``!!bool``, ``!!null``: go-yaml resolves the text and refuses
        a value of another type (``!!int 1:30`` is an error, not 90)."""
        text = self.construct_scalar(node)
        value = plain_scalar(text) if text else None
        tag = node.tag.rpartition(":")[2]
        fits = {
            "int": isinstance(value, int) and not isinstance(value, bool),
            "float": isinstance(value, int | float) and not isinstance(value, bool),
            "bool": isinstance(value, bool),
            "null": value is None,
        }[tag]
        if not fits:
            raise ConstructorError(None, None, f"cannot decode {text!r} as a !!{tag}", node.start_mark)
        if tag == "float" and isinstance(value, int | float):
            return _json_number(float(value))
        return value

    def construct_text(self, node: ScalarNode) -> str:
        """``!!timestamp``: go-yaml v2 keeps a timestamp's text when it decodes into ``interface{}``."""
        return str(self.construct_scalar(node))

    def construct_binary_text(self, node: ScalarNode) -> str:
        """``!!binary``: the decoded bytes as a string (JSON replaces what is not UTF-8)."""
        text = "".join(str(self.construct_scalar(node)).split())
        try:
            return base64.b64decode(text, validate=True).decode("utf-8", "replace")
        except (binascii.Error, ValueError):
            raise ConstructorError(None, None, "!!binary value is not base64", node.start_mark) from None

    def construct_refused(self, node: Node) -> Any:
        """A YAML 1.1 collection type go-yaml v2 has not (``!!set``, ``!!omap``, ``!!pairs``)."""
        raise ConstructorError(
            None, None, f"could not determine a constructor for the tag {node.tag!r}", node.start_mark
        )


KubeLoader.add_implicit_resolver(_MERGE_TAG, re.compile(r"^<<$"), ["<"])
KubeLoader.add_implicit_resolver(PLAIN_TAG, re.compile(r"(?s).*"), None)
#: the resolvers :meth:`KubeLoader.resolve` stands for
_RESOLVERS = KubeLoader.yaml_implicit_resolvers
KubeLoader.add_constructor(PLAIN_TAG, KubeLoader.construct_plain)
KubeLoader.add_constructor("tag:yaml.org,2002:map", KubeLoader.construct_yaml_map)
for _tag in ("int", "float", "bool", "null"):
    KubeLoader.add_constructor(f"tag:yaml.org,2002:{_tag}", KubeLoader.construct_typed)
KubeLoader.add_constructor("tag:yaml.org,2002:timestamp", KubeLoader.construct_text)
KubeLoader.add_constructor("tag:yaml.org,2002:binary", KubeLoader.construct_binary_text)
for _tag in ("set", "omap", "pairs"):  # YAML 1.1 collection types go-yaml v2 has not: refused as unknown
    KubeLoader.add_constructor(f"tag:yaml.org,2002:{_tag}", KubeLoader.construct_refused)


def k8s_load(text: str) -> Any:
    """One YAML document as kubectl and Helm send it to the API server (go-yaml v2, then JSON)."""
    return yaml.load(text, Loader=KubeLoader)


def k8s_load_all(text: str) -> list[Any]:
    """Every document of a YAML stream, read as :func:`k8s_load` reads one."""
    return list(yaml.load_all(text, Loader=KubeLoader))


def from_yaml(text: str) -> dict[str, Any]:
    """Helm's ``fromYaml`` for a mapping (a non-mapping gives Helm's ``{"Error": ...}`` shape)."""
    try:
        loaded = k8s_load(text)
    except yaml.YAMLError as exc:
        return {"Error": str(exc).splitlines()[0]}
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        return {"Error": "error unmarshaling JSON: cannot unmarshal into a map"}
    return loaded
