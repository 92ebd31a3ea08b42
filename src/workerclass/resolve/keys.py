"""SSH public keys and private key material: what the design lets into pool and class values."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator
from typing import Any

from ..model.reader import looks_private

__all__ = ["holds_private", "looks_private", "private_key_paths", "public_key_problem"]

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


def holds_private(value: Any) -> bool:
    """Whether any string below ``value`` holds private key material (the cheap common answer).

    Plain loops, not ``any()`` over generators: this runs on every admission request. The two
    markers are :data:`~workerclass.model.reader.PRIVATE_KEY_MARKERS`, spelled out for speed.
    """
    if isinstance(value, str):
        return "PRIVATE KEY-----" in value or "PuTTY-User-Key-File-" in value
    if isinstance(value, dict):
        value = value.values()
    elif not isinstance(value, list):
        return False
    for item in value:
        if isinstance(item, str):
            if "PRIVATE KEY-----" in item or "PuTTY-User-Key-File-" in item:
                return True
        elif isinstance(item, dict | list) and holds_private(item):
            return True
    return False


def private_key_paths(value: Any, path: str) -> Iterator[str]:
    """Field paths of every string that holds private key material, depth first."""
    if not holds_private(value):
        return
    if isinstance(value, str):
        if looks_private(value):
            yield path
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from private_key_paths(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from private_key_paths(item, f"{path}[{index}]")


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
        return f"key type {key_type!r} is not an OpenSSH public key type ({known})"
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
