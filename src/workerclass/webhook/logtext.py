"""Request text as it may appear in the webhook's logs: checked against a shape, else escaped and cut.

Its edge: strings a client sent in, strings safe for one log line out. A value that has the shape
the API server gives it (a UUID for ``request.uid``, a Kubernetes name for a namespace and a name)
is logged as it is: such a shape cannot carry a newline, and the API server has already refused
any other. Anything else names the field's shape and length instead of the value (a request
that did not come from the API server, or a bug), so a secret sent as a uid or a name is never
written, and no client can forge a log line or fill the log with one field.
"""

from __future__ import annotations

import re

#: ``request.uid`` as the API server makes it (types.UID from a random UUID)
UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
#: a DNS subdomain (object names) or label (namespaces): what the API server admits as a name
NAME = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")

#: longest text :func:`escaped` keeps
LIMIT = 160


def uid_text(uid: object) -> str:
    """The uid when it is a UUID, else ``<not a UUID, N chars>``."""
    if isinstance(uid, str) and UUID.fullmatch(uid):
        return uid
    size = len(uid) if isinstance(uid, str) else 0
    return f"<not a UUID, {size} chars>"


def name_text(name: object) -> str:
    if isinstance(name, str) and NAME.fullmatch(name):
        return name
    if isinstance(name, str) and not name:
        return "<no name>"
    size = len(name) if isinstance(name, str) else 0
    return f"<not a Kubernetes name, {size} chars>"


def identity_text(namespace: str, name: str) -> str:
    """``namespace/name`` (or ``name``) with each part checked by :func:`name_text`."""
    return f"{name_text(namespace)}/{name_text(name)}" if namespace else name_text(name)


def escaped(text: str, limit: int = LIMIT) -> str:
    """``text`` on one line: control characters, backslashes and non-ASCII escaped, cut to ``limit``
    characters (then marked with ``...`` and the original length)."""
    if text.isascii() and text.isprintable() and "\\" not in text and len(text) <= limit:
        return text  # the usual case: a field path or a code
    out = text[: limit * 4].replace("\\", "\\\\").encode("ascii", "backslashreplace").decode("ascii")
    out = "".join(char if char.isprintable() else f"\\x{ord(char):02x}" for char in out)
    if len(out) > limit or len(text) > limit * 4:
        return f"{out[:limit]}...({len(text)} chars)"
    return out
