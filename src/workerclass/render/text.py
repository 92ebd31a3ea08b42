"""Rendered manifests as text: YAML documents or one JSON list, keys sorted, byte-stable.

Pure string formatting (no files, no terminal); the CLI and the golden tests share it so that
what a test pins is exactly what ``workerclass render`` prints.

Manifests are JSON data (dicts, lists, strings, integers, booleans, null), so YAML is written
by a small block-style emitter rather than PyYAML's representer, which spends about 0.4 ms per
object in Python (17 s for 10,000 pools). The emitter writes a string plain only where PyYAML's
own resolver reads it back as that string and no YAML indicator can misread it; every other
string is written as a JSON string, which is a valid YAML double-quoted scalar; a PEM
certificate becomes a literal block. The tests read every rendered output back with
``yaml.safe_load_all`` and compare, and a property test does so for arbitrary JSON data.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from typing import Any

import yaml

from ..api.caching import short_cache

__all__ = ["iter_list_json", "iter_manifests_yaml", "manifests_json", "manifests_yaml", "yaml_document"]

_INDENT = "  "
#: Plain scalars: a conservative alphabet; ": " and " #" cannot occur, and the first character
#: is no YAML indicator.
_PLAIN = re.compile(r"^[A-Za-z0-9_./][A-Za-z0-9_./:@+=-]*$")
_RESOLVER = yaml.resolver.Resolver()
_STR_TAG = "tag:yaml.org,2002:str"
#: Literal blocks only for text whose lines YAML keeps as they are.
_LITERAL_LINE = re.compile(r"^[^\s#\x00-\x1f\x7f\ufeff][^\x00-\x1f\x7f]*$")


#: Plain scalars other YAML readers take for a boolean or a number although PyYAML reads a string:
#: kubectl's go-yaml v2 reads y/Y/n/N (and the YAML 1.1 words) as booleans, 1e3 and 0o17 as numbers;
#: YAML 1.2 readers read 0o17 and 0x1F as integers. Quoting them keeps labels and taints strings.
_OTHER_READERS = re.compile(
    r"[yYnN]|yes|Yes|YES|no|No|NO|on|On|ON|off|Off|OFF|true|True|TRUE|false|False|FALSE"
    r"|[-+]?(\.[0-9]+|[0-9][0-9_]*(\.[0-9_]*)?)([eE][-+]?[0-9]+)?"
    r"|[-+]?0[oO][0-7_]+|[-+]?0[xX][0-9a-fA-F_]+|[-+]?0[bB][01_]+|[-+]?(\.inf|\.Inf|\.INF)|\.nan|\.NaN|\.NAN"
)


@short_cache(maxsize=65536)
def _scalar(value: str) -> str:
    """The shortest spelling of a string that every YAML reader (PyYAML, go-yaml, YAML 1.2) keeps a string."""
    if (
        _PLAIN.fullmatch(value)
        and not value.endswith(":")
        and not value.startswith("...")  # at a line's start, a document end marker
        and not _OTHER_READERS.fullmatch(value)
        and _RESOLVER.resolve(yaml.ScalarNode, value, (True, False)) == _STR_TAG  # type: ignore[no-untyped-call]
    ):
        return value
    return _quoted(value)


#: Characters YAML cannot carry raw in a double-quoted scalar: outside its printable set, or a
#: line break it would fold (NEL, LINE and PARAGRAPH SEPARATOR).
_UNPRINTABLE = re.compile("[^\t\n\r\x20-\x7e\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]|[\x85\u2028\u2029]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _quoted(value: str) -> str:
    """A JSON string (a valid YAML double-quoted scalar) with YAML's unprintables escaped."""
    return _UNPRINTABLE.sub(_escape, json.dumps(value, ensure_ascii=False))


def _float(value: float) -> str:
    """PyYAML's spelling: YAML 1.1 reads ``1e+16`` without a dot as a string."""
    if value != value:
        return ".nan"
    if value in (float("inf"), float("-inf")):
        return ".inf" if value > 0 else "-.inf"
    text = repr(value).lower()
    if "." not in text and "e" in text:
        text = text.replace("e", ".0e", 1)
    return text


def _literal(value: str, indent: str) -> str | None:
    """``|`` / ``|-`` block for multi-line text, or ``None`` when a quoted string is safer."""
    body = value[:-1] if value.endswith("\n") else value
    if not body or body.endswith("\n"):
        return None
    lines = body.split("\n")
    if not all(_LITERAL_LINE.match(line) and line == line.rstrip() and not _UNPRINTABLE.search(line) for line in lines):
        return None
    header = "|" if value.endswith("\n") else "|-"
    return header + "".join(f"\n{indent}{line}" for line in lines)


def _atom(value: Any, indent: str) -> str | None:
    """A scalar or an empty collection on one line; ``None`` for a nonempty collection."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, str):
        if "\n" in value:
            return _literal(value, indent) or _quoted(value)
        return _scalar(value)
    if isinstance(value, dict) and not value:
        return "{}"
    if isinstance(value, list) and not value:
        return "[]"
    if isinstance(value, dict | list):
        return None
    raise TypeError(f"cannot write {type(value).__name__} as YAML: manifests are JSON data")


def _block(value: Any, indent: str, out: list[str]) -> None:
    """A nonempty mapping or sequence, each entry on its own line at ``indent``."""
    deeper = indent + _INDENT
    if isinstance(value, dict):
        for key in sorted(value):
            if not isinstance(key, str):
                raise TypeError(f"mapping key {key!r} is not a string")
            item = value[key]
            atom = _atom(item, deeper)
            if atom is not None:
                out.append(f"{indent}{_scalar(key)}: {atom}\n")
            elif isinstance(item, list):  # PyYAML's style: the dashes at the key's indentation
                out.append(f"{indent}{_scalar(key)}:\n")
                _block(item, indent, out)
            else:
                out.append(f"{indent}{_scalar(key)}:\n")
                _block(item, deeper, out)
        return
    for item in value:
        atom = _atom(item, deeper)
        if atom is not None:
            out.append(f"{indent}- {atom}\n")
            continue
        # The first entry of a nested collection shares the dash's line.
        nested: list[str] = []
        _block(item, deeper, nested)
        nested[0] = f"{indent}- {nested[0][len(deeper) :]}"
        out.extend(nested)


def yaml_document(value: Any) -> str:
    """One YAML document (without ``---``) for JSON data, keys sorted."""
    atom = _atom(value, _INDENT)
    if atom is not None:
        return atom + "\n"
    out: list[str] = []
    _block(value, "", out)
    return "".join(out)


def iter_manifests_yaml(manifests: Iterable[dict[str, Any]]) -> Iterator[str]:
    """One ``---``-led YAML document per manifest, so a caller can write them as they come."""
    for obj in manifests:
        yield f"---\n{yaml_document(obj)}"


def manifests_yaml(manifests: Iterable[dict[str, Any]]) -> str:
    """``---``-separated YAML documents with sorted keys."""
    return "".join(iter_manifests_yaml(manifests))


def iter_list_json(items: Iterable[dict[str, Any]]) -> Iterator[str]:
    """A ``v1`` ``List`` as :func:`manifests_json` would print it, one item at a time."""
    yield '{\n  "apiVersion": "v1",\n  "items": ['
    first = True
    for item in items:
        text = json.dumps(item, indent=2, sort_keys=True, ensure_ascii=False).replace("\n", "\n    ")
        yield ("\n    " if first else ",\n    ") + text
        first = False
    yield "]" if first else "\n  ]"
    yield ',\n  "kind": "List"\n}\n'


def manifests_json(document: Any) -> str:
    """Indented JSON with sorted keys and a final newline."""
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
