"""Helm's ``toYaml`` as the chart uses it: a port of go-yaml v2's emitter for JSON data.

``toYaml`` is sigs.k8s.io/yaml: the value is written as JSON, re-read and written by go-yaml v2.
:func:`to_yaml` ports that emitter for JSON data: its key order, its plain / single / double-quoted
/ literal styles, folding at column 80, complex keys past 128 bytes, Go's JSON number formatting,
and the empty result when go-yaml cannot re-read the JSON. One thing cannot be matched: go-yaml's
key comparison is not transitive for keys mixing digit runs and letters (``a1b < a9 < a10 < a1b``),
so Go's own order for such a key set depends on its random map iteration; for every other key set
the order is Go's.

Where it is used: every ``toYaml`` of the chart, the package's one writer. The talos-reconcile
Job's ``registryMirrors`` and ``kernelModules`` blocks (:mod:`.talos_job`) and the
KubevirtMachineTemplate's pod resources and platform topology spread constraints
(:mod:`.nodegroup`); both templates' names hash that text and the values are free-form strings,
so every style and fold matters (``tests/chart/test_yaml_writers.py`` checks the constraint
shapes a simpler writer got wrong against the oracle: digit-run and ``_``-before-letters key
order, folds, literal blocks, non-ASCII, tabs, complex keys, a quoted ``%x``).

The emitter alone, in its own order (resolve, analyze, fold, write scalars, write nodes), so it
reads beside go-yaml's ``resolve.go`` and ``emitterc.go``.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from ..api.caching import short_cache
from ..api.frozen import fast_init
from .quantity import go_float_str, parse_float, parse_int

__all__ = ["to_yaml"]

#: Plain scalars go-yaml v2 resolves to a bool, null or float rather than a string (``<<`` has no
#: resolve hint in v2, so it stays a plain string).
# fmt: off
_V2_SPECIAL_WORDS = frozenset((
    "y", "Y", "yes", "Yes", "YES", "on", "On", "ON", "n", "N", "no", "No", "NO", "off", "Off", "OFF",
    "true", "True", "TRUE", "false", "False", "FALSE", "", "~", "null", "Null", "NULL",
    ".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF",
))
# fmt: on
_V2_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
_V2_BASE60 = re.compile(r"[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?")
_V2_TIMESTAMP = re.compile(
    r"[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}"
    r"(?:(?:[Tt]|[ \t]+)[0-9]{1,2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9]{1,2}(?::[0-9]{2})?))?)?"
)
_UINT64_MAX = (1 << 64) - 1


_GO_UINT = re.compile(r"0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*")


def _parse_uint(text: str) -> bool:
    """``strconv.ParseUint(text, 0, 64)`` succeeds (underscores already removed)."""
    if not _GO_UINT.fullmatch(text):
        return False
    if text[:2] in ("0x", "0X", "0o", "0O", "0b", "0B"):
        number = int(text, 0)
    elif len(text) > 1:
        number = int(text, 8) if text[0] == "0" else int(text)
    else:
        number = int(text)
    return number <= _UINT64_MAX


def _resolves_to_string(text: str) -> bool:
    """go-yaml v2 ``resolve("", text)`` yields ``!!str`` and the encoder's base-60 check passes."""
    if text in _V2_SPECIAL_WORDS:
        return False
    if _V2_BASE60.fullmatch(text):
        return False
    first = text[0]
    if first == ".":
        return parse_float(text) is None
    if first in "+-0123456789":
        if _V2_TIMESTAMP.fullmatch(text):
            return False
        plain = text.replace("_", "")
        if parse_int(plain) is not None or _parse_uint(plain) or _V2_FLOAT.fullmatch(plain):
            return False
    return True


def _is_printable(ch: str) -> bool:
    """go-yaml v2's emitter ``is_printable`` (its UTF-8 test has no 4-byte case, and no U+0085)."""
    code = ord(ch)
    return (
        code == 0x0A or 0x20 <= code <= 0x7E or 0xA0 <= code <= 0xD7FF or (0xE000 <= code <= 0xFFFD and code != 0xFEFF)
    )


def _is_readable(ch: str) -> bool:
    """go-yaml v2's reader check: the characters a YAML stream may carry."""
    code = ord(ch)
    return (
        code in (0x09, 0x0A, 0x0D, 0x85)
        or 0x20 <= code <= 0x7E
        or 0xA0 <= code <= 0xD7FF
        or 0xE000 <= code <= 0xFFFD
        or 0x10000 <= code <= 0x10FFFF
    )


_BREAKS = "\r\n\x85\u2028\u2029"


@fast_init
@dataclass(frozen=True, slots=True)
class _Analysis:
    block_plain: bool
    single_quoted: bool
    block: bool


def _analyze(value: str) -> _Analysis:
    """go-yaml v2 ``yaml_emitter_analyze_scalar`` for block context (flow-only flags dropped)."""
    if not value:
        return _Analysis(block_plain=True, single_quoted=True, block=False)
    block_indicators = value.startswith(("---", "..."))
    special = leading_space = leading_break = trailing_space = trailing_break = False
    break_space = space_break = line_breaks = previous_space = previous_break = False
    preceded_by_whitespace = True
    for i, ch in enumerate(value):
        followed_by_whitespace = i + 1 >= len(value) or value[i + 1] in " \t" + _BREAKS
        if i == 0:
            if ch in "#,[]{}&*!|>'\"%@`" or (ch in "?:-" and followed_by_whitespace):
                block_indicators = True
        elif (ch == ":" and followed_by_whitespace) or (ch == "#" and preceded_by_whitespace):
            block_indicators = True
        if not _is_printable(ch):
            special = True
        if ch == " ":
            leading_space = leading_space or i == 0
            trailing_space = trailing_space or i == len(value) - 1
            break_space = break_space or previous_break
            previous_space, previous_break = True, False
        elif ch in _BREAKS:
            line_breaks = True
            leading_break = leading_break or i == 0
            trailing_break = trailing_break or i == len(value) - 1
            space_break = space_break or previous_space
            previous_space, previous_break = False, True
        else:
            previous_space = previous_break = False
        preceded_by_whitespace = ch in " \t" + _BREAKS
    block_plain = single_quoted = block = True
    if leading_space or leading_break or trailing_space or trailing_break or line_breaks or block_indicators:
        block_plain = False
    if trailing_space:
        block = False
    if break_space:
        block_plain = single_quoted = False
    if space_break or special:
        block_plain = single_quoted = block = False
    return _Analysis(block_plain=block_plain, single_quoted=single_quoted, block=block)


_DOUBLE_ESCAPES = {
    "\0": "\\0",
    "\a": "\\a",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\v": "\\v",
    "\f": "\\f",
    "\r": "\\r",
    "\x1b": "\\e",
    '"': '\\"',
    "\\": "\\\\",
    "\x85": "\\N",
    "\xa0": "\\_",
    "\u2028": "\\L",
    "\u2029": "\\P",
}


#: go-yaml's ``best_width``: plain and quoted scalars fold at a space once the line is past it.
_BEST_WIDTH = 80
#: go-yaml writes a mapping key longer than this (in bytes) as a complex key (``? key``).
_SIMPLE_KEY_LIMIT = 128


def _fold(pieces: list[str], spaces: list[bool], column: int, indent: int, style: str) -> list[str]:
    """go-yaml's folding of a one-line scalar: at a space not after a space, once the column is past
    :data:`_BEST_WIDTH`, the space becomes a line break and an indent. ``pieces`` are the written
    forms of the characters (escapes, doubled quotes), ``spaces`` marks the spaces. Plain and
    single-quoted scalars never fold before a second space; quoted ones never at their first or
    last character; a double-quoted one escapes a space that follows the break."""
    lines: list[str] = []
    current: list[str] = []
    after_space = False
    last = len(pieces) - 1
    for i, piece in enumerate(pieces):
        if spaces[i]:
            next_space = i < last and spaces[i + 1]
            foldable = not after_space and column > _BEST_WIDTH
            if style != "plain":
                foldable = foldable and 0 < i < last
            if style != "double":
                foldable = foldable and not next_space
            if foldable:
                lines.append("".join(current))
                current = [" " * indent]
                column = indent
                if style == "double" and next_space:
                    current.append("\\")
                    column += 1
            else:
                current.append(piece)
                column += len(piece)
            after_space = True
        else:
            current.append(piece)
            column += len(piece)
            after_space = False
    lines.append("".join(current))
    return lines


def _double_pieces(value: str) -> list[str]:
    out = []
    for ch in value:
        code = ord(ch)
        if ch in _DOUBLE_ESCAPES:
            out.append(_DOUBLE_ESCAPES[ch])
        elif not _is_printable(ch) or code == 0xFEFF:
            out.append(f"\\x{code:02X}" if code <= 0xFF else f"\\u{code:04X}" if code <= 0xFFFF else f"\\U{code:08X}")
        else:
            out.append(ch)
    return out


def _string_lines(value: str, indent: int, column: int, *, key: bool) -> list[str]:
    """A string scalar as go-yaml v2 writes it, starting at ``column``; continuation lines and a
    literal block's lines at ``indent``. Keys never fold."""
    analysis = _analyze(value)
    if "\n" in value:
        style = "literal" if analysis.block and not key else "double"
    elif _resolves_to_string(value):
        style = "plain" if analysis.block_plain else "single" if analysis.single_quoted else "double"
    else:
        style = "double"
    if style == "plain":
        if key:
            return [value]
        return _fold(list(value), [ch == " " for ch in value], column, indent, "plain")
    if style == "single":
        pieces = ["''" if ch == "'" else ch for ch in value]
        if key:
            return ["'" + "".join(pieces) + "'"]
        lines = _fold(pieces, [ch == " " for ch in value], column + 1, indent, "single")
        lines[0] = "'" + lines[0]
        lines[-1] += "'"
        return lines
    if style == "double":
        pieces = _double_pieces(value)
        if key:
            return ['"' + "".join(pieces) + '"']
        lines = _fold(pieces, [ch == " " for ch in value], column + 1, indent, "double")
        lines[0] = '"' + lines[0]
        lines[-1] += '"'
        return lines
    header = "|"
    if value[0] == " " or value[0] in _BREAKS:
        header += "2"
    if value[-1] not in _BREAKS:
        header += "-"
    elif len(value) == 1 or value[-2] in _BREAKS:
        header += "+"
    body = re.split("\r\n|[\r\n\x85\u2028\u2029]", value)
    if value[-1] in _BREAKS:
        body = body[:-1]
    pad = " " * indent
    return [header, *(pad + line if line else "" for line in body)]


#: Pools repeat their mirrors' strings; each one's lines are worked out once.
_cached_string_lines = short_cache(maxsize=4096)(_string_lines)


def _number(value: int | float) -> str:
    """A JSON number after ``json.Marshal`` of Helm's float64 and go-yaml's re-read: integers (the
    shortest digits, as Go's JSON writes a float64) while int64 or uint64 holds them, else Go's %g."""
    number = float(value)
    if math.isnan(number) or math.isinf(number):
        return ".nan" if math.isnan(number) else (".inf" if number > 0 else "-.inf")
    if number.is_integer() and abs(number) < 1e21:
        whole = int(Decimal(repr(number)))
        if -(1 << 63) <= whole <= _UINT64_MAX:
            return str(whole)
    return go_float_str(number)


def _scalar_lines(value: Any, indent: int, column: int, *, key: bool = False) -> list[str]:
    if value is None:
        return ["null"]
    if isinstance(value, bool):
        return ["true" if value else "false"]
    if isinstance(value, (int, float)):
        return [_number(value)]
    if isinstance(value, Mapping) or (isinstance(value, Sequence) and not isinstance(value, str)):
        return ["{}" if isinstance(value, Mapping) else "[]"]
    return list(_cached_string_lines(str(value), indent, column, key=key))


def _key_less(a: str, b: str) -> bool:
    """go-yaml v2 ``keyList.Less`` for two string keys: letters after other runes, digit runs by value."""
    ar, br = a, b
    for i in range(min(len(ar), len(br))):
        if ar[i] == br[i]:
            continue
        al, bl = ar[i].isalpha(), br[i].isalpha()
        if al and bl:
            return ar[i] < br[i]
        if al or bl:
            return bl
        an = bn = 0
        if ar[i] == "0" or br[i] == "0":
            j = i - 1
            while j >= 0 and ar[j].isdigit():
                if ar[j] != "0":
                    an = bn = 1
                    break
                j -= 1
        ai = i
        while ai < len(ar) and ar[ai].isdigit():
            an = an * 10 + int(ar[ai])
            ai += 1
        bi = i
        while bi < len(br) and br[bi].isdigit():
            bn = bn * 10 + int(br[bi])
            bi += 1
        if an != bn:
            return an < bn
        if ai != bi:
            return ai < bi
        return ar[i] < br[i]
    return len(ar) < len(br)


def _compare_keys(a: str, b: str) -> int:
    return -1 if _key_less(a, b) else 1 if _key_less(b, a) else 0


def _sorted_keys(keys: list[str]) -> list[str]:
    return sorted(keys, key=functools.cmp_to_key(_compare_keys))


def _is_collection(value: Any) -> bool:
    return isinstance(value, Mapping) or (isinstance(value, Sequence) and not isinstance(value, str))


def _node_lines(value: Any, indent: int) -> list[str]:
    """A non-empty mapping or sequence in go-yaml v2's block style, its entries at ``indent``."""
    pad = " " * indent
    lines: list[str] = []
    if isinstance(value, Mapping):
        for raw_key in _sorted_keys([str(k) for k in value]):
            item = value[raw_key]
            simple = len(raw_key.encode()) <= _SIMPLE_KEY_LIMIT and "\n" not in raw_key
            key_lines = _scalar_lines(raw_key, indent + 2, indent + 2, key=simple)
            if not simple:  # "? key", then ": value" (a sequence value starts on the next line)
                lines.append(f"{pad}? {key_lines[0]}")
                lines.extend(key_lines[1:])
                if _is_collection(item) and item and not isinstance(item, Mapping):
                    lines.append(f"{pad}:")
                    lines.extend(_node_lines(item, indent))
                else:
                    lines.extend(_marked_lines(":", item, indent))
                continue
            key = key_lines[0]
            if _is_collection(item) and item:
                lines.append(f"{pad}{key}:")
                # go-yaml writes a sequence inside a mapping without indenting it.
                lines.extend(_node_lines(item, indent if not isinstance(item, Mapping) else indent + 2))
            else:
                first, *rest = _scalar_lines(item, indent + 2, indent + len(key) + 2)
                lines.append(f"{pad}{key}: {first}")
                lines.extend(rest)
        return lines
    for item in value:
        lines.extend(_marked_lines("-", item, indent))
    return lines


def _marked_lines(marker: str, item: Any, indent: int) -> list[str]:
    """``<marker> item`` at ``indent``: a sequence entry (``-``) or a complex key's value (``:``),
    the item's first line beside the marker and the rest indented under it."""
    pad = " " * indent
    if _is_collection(item) and item:
        nested = _node_lines(item, indent + 2)
        return [f"{pad}{marker} {nested[0][indent + 2 :]}", *nested[1:]]
    first, *rest = _scalar_lines(item, indent + 2, indent + 2)
    return [f"{pad}{marker} {first}", *rest]


def _json_leaves_unreadable(value: Any) -> bool:
    """A string ``json.Marshal`` writes raw although go-yaml's reader refuses it (DEL, C1 controls...).

    sigs.k8s.io/yaml re-reads the JSON text with go-yaml, which fails on such a character, and
    Helm's ``toYaml`` then returns the empty string."""
    if isinstance(value, Mapping):
        return any(_json_leaves_unreadable(k) or _json_leaves_unreadable(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(_json_leaves_unreadable(v) for v in value)
    if isinstance(value, str):
        return any(ord(ch) >= 0x20 and not _is_readable(ch) for ch in value)
    return False


def to_yaml(value: Any) -> str:
    """Helm's ``toYaml`` of JSON data (go-yaml v2 through sigs.k8s.io/yaml), trailing newline trimmed."""
    if _json_leaves_unreadable(value):
        return ""
    if _is_collection(value) and value:
        return "\n".join(_node_lines(value, 0))
    return "\n".join(_scalar_lines(value, 2, 0))
