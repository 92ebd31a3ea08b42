"""SSH public keys and private key material: what the design lets into pool and class values."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator
from typing import Any

import orjson

from ..model.reader import key_path, looks_private

__all__ = [
    "holds_private",
    "looks_private",
    "private_key_paths",
    "public_key_problem",
    "text_cannot_hold_private",
]

PUBLIC_KEY_TYPES = frozenset(
    {
        "ssh-ed25519",
        "ssh-rsa",
        "ecdsa-sha2-nistp256",
        "ecdsa-sha2-nistp384",
        "ecdsa-sha2-nistp521",
        "sk-ssh-ed25519@openssh.com",
        "sk-ecdsa-sha2-nistp256@openssh.com",
    }
)


def _cannot_hold_private(value: Any) -> bool:
    """True when no string below ``value`` can pass :func:`looks_private`'s first test, read off
    one serialization of the whole value (orjson: one pass in C, ~10x cheaper than walking it here).

    Every string and mapping key the walk of :func:`holds_private` visits is in the JSON text as
    written, but for JSON's escapes of ``"``, ``\\`` and control characters, none of which is in the
    markers; lower-casing is per character, so a string whose lower case holds ``private key`` leaves
    it in the lower case of the text. Anything orjson does not take (a key that is not a string,
    an integer over 64 bits, a deep value, a type JSON lacks) is left to the walk (False).
    """
    try:
        text = orjson.dumps(value)
    except (TypeError, ValueError):
        return False
    return text_cannot_hold_private(text)


def text_cannot_hold_private(text: bytes) -> bool:
    """True when no string of the value ``text`` (its orjson serialization) can hold private key
    material: :func:`_cannot_hold_private` read off a text already made (admission's bounds text)."""
    folded = text.lower() if text.isascii() else text.decode().lower().encode()
    return b"private key" not in folded and b"PuTTY-User-Key-File-" not in text


def holds_private(value: Any) -> bool:
    """Whether any string below ``value`` holds private key material, in any armour.

    Iterative (an explicit stack), so values nested arbitrarily deep cannot exhaust the
    interpreter's recursion limit; keys of mappings are searched too. Values with no string that
    could hold a key (nearly all of them) are told apart without the walk.
    """
    if _cannot_hold_private(value):
        return False
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if looks_private(item):
                return True
        elif isinstance(item, dict):
            for key, child in item.items():
                if isinstance(key, str) and looks_private(key):
                    return True
                stack.append(child)
        elif isinstance(item, list):
            stack.extend(item)
    return False


def private_key_paths(value: Any, path: str, *, clean: bool = False) -> Iterator[str]:
    """Field paths of every string that holds private key material, depth first, in document order.

    Iterative, like :func:`holds_private`. A mapping key holding a key is reported at the mapping.
    ``clean``: the caller already read off a text of ``value`` (or of an object holding it) that
    none can (:func:`text_cannot_hold_private`), so nothing is serialized again.
    """
    if clean or not holds_private(value):
        return
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            if looks_private(item):
                yield where
        elif isinstance(item, dict):
            children: list[tuple[Any, str]] = []
            for key, child in item.items():
                if isinstance(key, str) and looks_private(key):
                    yield where
                    continue
                children.append((child, key_path(where, key)))
            stack.extend(reversed(children))
        elif isinstance(item, list):
            stack.extend(reversed([(child, f"{where}[{index}]") for index, child in enumerate(item)]))


def public_key_problem(line: str) -> str | None:
    """Why ``line`` is not a single OpenSSH public key line, or ``None`` when it is one."""
    if "\n" in line.strip() or "\r" in line:
        return "must be a single line"
    parts = line.strip().split(None, 2)
    if len(parts) < 2:
        return "must be '<type> <base64 key> [comment]', like 'ssh-ed25519 AAAA... user@host'"
    key_type, blob = parts[0], parts[1]
    if key_type not in PUBLIC_KEY_TYPES:
        known = ", ".join(sorted(PUBLIC_KEY_TYPES))
        return f"the key type is not an OpenSSH public key type ({known})"
    try:
        raw = base64.b64decode(blob, validate=True)
    except (binascii.Error, ValueError):
        return "the key body is not valid base64"
    if len(raw) < 4:
        return "the key body is truncated"
    length = int.from_bytes(raw[:4], "big")
    if raw[4 : 4 + length] != key_type.encode():
        return f"the key body does not encode a {key_type} key"
    return None
