"""A small typed reader over plain dicts that collects ``Invalid`` violations with field paths.

Parsing never raises on bad input: every problem becomes a :class:`Violation` and the reader
returns ``None`` for the value it could not read, so later rules can still run on the rest.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..api.patterns import (
    DNS_LABEL,
    DURATION,
    HTTP_URL,
    KUBERNETES_MINOR,
    KUBERNETES_PATCH,
    LABEL_KEY,
    LABEL_VALUE,
    MODULE_NAME,
    NAME,
    PERCENT,
    PINNED,
    PRIVATE_KEY,
    PRIVATE_KEY_MARKERS,
    QUANTITY,
    REPOSITORY,
    SCHEMATIC_ID,
    TALOS_VERSION,
    URL_CREDENTIALS,
    looks_like_token,
    looks_private,
)
from ..violations import Violation

# The patterns are :mod:`workerclass.api.patterns`' (one definition, read by the CRDs too); they
# stay importable from here for the parser's other modules and older importers.
__all__ = [
    "CREDENTIALS_MESSAGE",
    "DNS_LABEL",
    "DURATION",
    "HTTP_URL",
    "KUBERNETES_MINOR",
    "KUBERNETES_PATCH",
    "LABEL_KEY",
    "LABEL_VALUE",
    "MODULE_NAME",
    "NAME",
    "PERCENT",
    "PINNED",
    "PRIVATE_KEY",
    "PRIVATE_KEY_MARKERS",
    "QUANTITY",
    "REPOSITORY",
    "SCHEMATIC_ID",
    "TALOS_VERSION",
    "URL",
    "URL_CREDENTIALS",
    "Reader",
    "key_path",
    "label_key_problem",
    "label_value_problem",
    "looks_private",
    "type_name",
]

#: ``user[:password]@`` refused: the message (the value is never quoted: it holds a secret)
CREDENTIALS_MESSAGE = (
    "must not carry credentials (user:password@): classes and pools hold no credentials; "
    "configure registry or Image Factory authentication on the platform side"
)
#: the parser's name for :data:`workerclass.api.patterns.HTTP_URL`
URL = HTTP_URL


def key_path(field: str, key: object) -> str:
    """``field.key``; a key that holds private key material or looks like a credential (an AWS key
    id, a ``ghp_`` token, a JWT: :func:`~workerclass.api.patterns.looks_like_token`) is never put in
    a path (``field``), so no door echoes it.

    Other keys stay: a field path names where the problem is, and each door decides how to show
    one (the webhook cuts a path before a key that is not label-key shaped, the CLI escapes it).
    """
    if isinstance(key, str) and (looks_private(key) or looks_like_token(key)):
        return field
    return f"{field}.{key}"


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
    """Collects violations while typed values are read out of plain dicts."""

    __slots__ = ("violations",)

    def __init__(self) -> None:
        self.violations: list[Violation] = []

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
        for key in data:
            if key not in allowed:
                known = ", ".join(sorted(allowed))
                path = key_path(field, key)
                what = "unknown field" if path != field else "has an unknown field (its name is not shown)"
                self.invalid(path, f"{what}; expected one of: {known}")

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
            if pattern is URL and URL_CREDENTIALS.match(value):
                self.invalid(path, CREDENTIALS_MESSAGE)  # the value is not quoted: it holds a secret
            else:
                self.invalid(path, _not(value, what))
            return None
        return value

    def integer(self, data: Mapping[str, Any], key: str, field: str) -> int | None:
        if key not in data or data[key] is None:
            return None
        value = data[key]
        if isinstance(value, bool) or not isinstance(value, int):
            self.invalid(f"{field}.{key}", f"must be an integer, not {type_name(value)}")
            return None
        return value

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
        path = f"{field}.{key}"
        if value is None:
            return ()
        if not isinstance(value, list):
            self.invalid(path, f"must be a list, not {type_name(value)}")
            return None
        out: list[str] = []
        for index, item in enumerate(value):
            if not isinstance(item, str):
                self.invalid(f"{path}[{index}]", f"must be a string, not {type_name(item)}")
                continue
            if pattern is not None and not pattern.fullmatch(item):
                if pattern is URL and URL_CREDENTIALS.match(item):
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
