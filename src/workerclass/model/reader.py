"""A small typed reader over plain dicts that collects ``Invalid`` violations with field paths.

Parsing never raises on bad input: every problem becomes a :class:`Violation` and the reader
returns ``None`` for the value it could not read, so later rules can still run on the rest.
A key the reader does not know is a violation, or (a reader made with ``unknown="warn"``, as a
pool's values are read: Cozystack's API stores them unpruned and the chart ignores such keys) a
warning, with the known key it is closest to when there is one.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from typing import Any, Literal

from ..api.caching import short_cache
from ..api.patterns import (
    HTTP_URL,
    LABEL_KEY,
    LABEL_VALUE,
    URL_CREDENTIALS,
    looks_like_token,
    looks_private,
)
from ..violations import Violation

__all__ = [
    "CREDENTIALS_MESSAGE",
    "MAX_NAMED_UNKNOWN",
    "Reader",
    "key_path",
    "label_key_problem",
    "label_value_problem",
    "looks_private",
    "type_name",
    "unknown_key_message",
    "whole_number",
]

#: ``user[:password]@`` refused: the message (the value is never quoted: it holds a secret)
CREDENTIALS_MESSAGE = (
    "must not carry credentials (user:password@): classes and pools hold no credentials; "
    "configure registry or Image Factory authentication on the platform side"
)


def key_path(field: str, key: object) -> str:
    """``field.key``; a key that holds private key material or looks like a credential (an AWS key
    id, a ``ghp_`` token, a JWT: :func:`~workerclass.api.patterns.looks_like_token`) is never put in
    a path (``field``), so no door echoes it.

    Other keys stay: a field path names where the problem is, and each door decides how to show
    one (the webhook cuts a path before a key that is not label-key shaped, the CLI escapes it).
    """
    if isinstance(key, str) and _secret_key(key):
        return field
    return f"{field}.{key}"


@short_cache(maxsize=4096)
def _secret_key(key: str) -> bool:
    """:func:`key_path`'s test of a key; the same keys come in every pool: judged once each (bounded)."""
    return looks_private(key) or looks_like_token(key)


def _not(value: str, what: str) -> str:
    """``is not WHAT``: a value that failed its pattern is never quoted (it may be a secret)."""
    return f"is not {what} (the value is not shown)"


def label_key_problem(key: str) -> str | None:
    """Why ``key`` is not a Kubernetes label key (``[prefix/]name``), or ``None``."""
    if not LABEL_KEY.fullmatch(key):
        return "is not a valid label key ([prefix/]name)"
    prefix, _, name = key.rpartition("/")
    if len(name) > 63:
        return "has a name part longer than 63 characters"
    if len(prefix) > 253:
        return "has a prefix longer than 253 characters"
    return None


def label_value_problem(value: str) -> str | None:
    """Why ``value`` is not a Kubernetes label value, or ``None``. The value is never quoted: it may be a secret."""
    if len(value) > 63:
        return f"is {len(value)} characters long; a label value has at most 63"
    if not LABEL_VALUE.fullmatch(value):
        return "is not a valid label value (letters, digits, '-', '_', '.'; alphanumeric at both ends)"
    return None


#: unknown keys of one mapping said one by one; any more are counted in one line (:meth:`Reader.only`)
MAX_NAMED_UNKNOWN = 20

#: an unknown key shown in a message: a field name's shape (a camelCase word). Anything else
#: (``ghp_...``, ``AKIA...``, a JWT, a key with ``:`` or ``@``) may be a secret pasted as a key.
_SHOWN_KEY = re.compile(r"[a-z][A-Za-z0-9]{0,39}")


def _closest(key: str, known: frozenset[str]) -> str | None:
    """The known key ``key`` is a typo of: the same but for letter case, else the closest spelling.

    A key more than 1.5 times as long as every known key is the typo of none: difflib's ratio
    (twice the matched characters over both lengths) is then below the 0.8 asked for, so it is
    not run (it indexes the whole key first, 80 ms for a key of 900 KB)."""
    if len(key) > 1.5 * max(map(len, known), default=0):
        return None
    folded = {name.lower(): name for name in known}
    if key.lower() in folded:
        return folded[key.lower()]
    match = difflib.get_close_matches(key.lower(), list(folded), n=1, cutoff=0.8)
    return folded[match[0]] if match else None


def unknown_key_message(field: str, key: object, known: frozenset[str], *, text_only: bool) -> tuple[str, str]:
    """``(path, message)`` for a key of ``field`` outside ``known``; the known key it is closest
    to, when one is close, is suggested. A violation's path names any key but private key material
    (each door decides how to show a path); ``text_only`` (a warning, plain text every door prints
    as it is) names only a key with a field name's shape."""
    text = key if isinstance(key, str) else str(key)
    if text_only:
        shown = _SHOWN_KEY.fullmatch(text) is not None and not looks_private(text)
        path = key_path(field, text) if shown else field
    else:
        path = key_path(field, key)
        shown = path != field
    closest = _closest(text, known)
    what = "unknown field" if shown else "has an unknown field (its name is not shown)"
    hint = f" (did you mean {closest}?)" if closest is not None and closest != text else ""
    return path, f"{what}{hint}"


def whole_number(value: object) -> int | None:
    """An integer, or a float with no fractional part as the integer it is (JSON has one number
    type: a 3.0 the API server, Helm and the chart's schema take for the integer 3); else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def type_name(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


class Reader:
    """Collects violations (and, reading a pool's values, warnings) while typed values are read
    out of plain dicts. ``unknown``: what a key :meth:`only` does not know is, ``"invalid"`` (a
    class, the platform: our own CRDs) or ``"warn"`` (a pool's values, which the chart reads)."""

    __slots__ = ("unknown", "unread", "violations", "warnings")

    def __init__(
        self,
        *,
        unknown: Literal["invalid", "warn"] = "invalid",
        unread: str = "neither the chart nor workerclass reads it, so it has no effect",
    ) -> None:
        self.violations: list[Violation] = []
        self.warnings: list[str] = []
        self.unknown = unknown
        #: why an unknown key (``unknown="warn"``) has no effect, true of the chart that reads the values
        self.unread = unread

    def add(self, code: str, field: str, message: str) -> None:
        self.violations.append(Violation(code, field, message))

    def invalid(self, field: str, message: str) -> None:
        self.violations.append(Violation("Invalid", field, message))

    def mapping(self, value: object, field: str) -> Mapping[str, Any] | None:
        if isinstance(value, dict):
            return value
        self.invalid(field, f"must be a mapping, not {type_name(value)}")
        return None

    def only(self, data: Mapping[str, Any], allowed: frozenset[str], field: str) -> None:
        """Say each key of ``data`` outside ``allowed``: the first :data:`MAX_NAMED_UNKNOWN` one by one
        (with the known key each is closest to), any more in one line that counts them. Each named
        key costs a spelling search, and a review's answer carries every line: a mapping of 30,000
        unknown keys would otherwise take the webhook's loop for a second and answer megabytes."""
        unknown = [key for key in data if key not in allowed]
        if not unknown:
            return
        warn = self.unknown == "warn"
        for key in unknown[:MAX_NAMED_UNKNOWN]:
            path, message = unknown_key_message(field, key, allowed, text_only=warn)
            if warn:
                self.warnings.append(f"{path}: {message}: {self.unread}")
            else:
                self.invalid(path, f"{message}; expected one of: {', '.join(sorted(allowed))}")
        rest = len(unknown) - MAX_NAMED_UNKNOWN
        if rest > 0:
            counted = f"{rest} more unknown fields (their names are not shown)"
            if warn:
                self.warnings.append(f"{field}: {counted}: {self.unread}")
            else:
                self.invalid(field, f"has {counted}; expected one of: {', '.join(sorted(allowed))}")

    def string(
        self,
        data: Mapping[str, Any],
        key: str,
        field: str,
        *,
        pattern: re.Pattern[str] | None = None,
        what: str = "",
        required: bool = False,
    ) -> str | None:
        """Read ``data[key]`` as a string: ``None`` when absent, ``""`` kept as supplied."""
        if key not in data:
            if required:
                self.invalid(f"{field}.{key}", "is required")
            return None
        value = data[key]
        if value.__class__ is str and value and not required and pattern is None:
            return value  # the usual read: a nonempty string, no rule beyond its type
        path = f"{field}.{key}"
        if value is None:
            # YAML ``key:`` with nothing after it: treated as supplied and empty.
            value = ""
        if not isinstance(value, str):
            self.invalid(path, f"must be a string, not {type_name(value)}")
            return None
        if required and value == "":
            self.invalid(path, "is required and must not be empty")
            return value
        if value and pattern is not None and not pattern.fullmatch(value):
            if pattern is HTTP_URL and URL_CREDENTIALS.match(value):
                self.invalid(path, CREDENTIALS_MESSAGE)  # the value is not quoted: it holds a secret
            else:
                self.invalid(path, _not(value, what))
            return None
        return value

    def integer(self, data: Mapping[str, Any], key: str, field: str) -> int | None:
        if key not in data or data[key] is None:
            return None
        value = data[key]
        number = whole_number(value)
        if number is None:
            self.invalid(f"{field}.{key}", f"must be an integer, not {type_name(value)}")
        return number

    def boolean(self, data: Mapping[str, Any], key: str, field: str) -> bool | None:
        if key not in data or data[key] is None:
            return None
        value = data[key]
        if not isinstance(value, bool):
            self.invalid(f"{field}.{key}", f"must be true or false, not {type_name(value)}")
            return None
        return value

    def string_list(
        self,
        data: Mapping[str, Any],
        key: str,
        field: str,
        *,
        pattern: re.Pattern[str] | None = None,
        what: str = "",
    ) -> tuple[str, ...] | None:
        """Read a list of strings: ``None`` when absent, ``()`` when supplied empty."""
        if key not in data:
            return None
        value = data[key]
        if value is None:
            return ()
        path = f"{field}.{key}"
        if not isinstance(value, list):
            self.invalid(path, f"must be a list, not {type_name(value)}")
            return None
        if pattern is None and all(item.__class__ is str for item in value):
            return tuple(value)  # the usual list: strings only, no rule beyond their type
        out: list[str] = []
        for index, item in enumerate(value):
            if not isinstance(item, str):
                self.invalid(f"{path}[{index}]", f"must be a string, not {type_name(item)}")
                continue
            if pattern is not None and not pattern.fullmatch(item):
                if pattern is HTTP_URL and URL_CREDENTIALS.match(item):
                    self.invalid(f"{path}[{index}]", CREDENTIALS_MESSAGE)
                else:
                    self.invalid(f"{path}[{index}]", _not(item, what))
                continue
            out.append(item)
        return tuple(out)

    def object_list(self, data: Mapping[str, Any], key: str, field: str) -> list[tuple[str, Mapping[str, Any]]] | None:
        """A list of mappings, each with its field path; ``None`` when absent."""
        if key not in data:
            return None
        value = data[key]
        path = f"{field}.{key}"
        if value is None:
            return []
        if not isinstance(value, list):
            self.invalid(path, f"must be a list, not {type_name(value)}")
            return None
        out: list[tuple[str, Mapping[str, Any]]] = []
        for index, item in enumerate(value):
            item_path = f"{path}[{index}]"
            mapping = self.mapping(item, item_path)
            if mapping is not None:
                out.append((item_path, mapping))
        return out
