"""The value patterns of the API: one definition each, read by the parser and by the CRD schemas.

Each pattern is kept as its source text (what a CRD's ``pattern`` carries) and compiled once
(what the parser matches). Patterns the CRD carries must mean the same in Python's ``re``
(``fullmatch``) and in the API server's RE2 (a search, anchored by ``^...$``): no look-arounds, no
back-references, and ``[0-9]`` rather than ``\\d`` (Python's ``\\d`` also matches other scripts'
digits, RE2's does not). The CRDs' declarations of fields are :mod:`.schema`'s.
``\\S`` stays: RE2 counts a vertical tab and Unicode spaces as non-space where Python does not
(the agreement test, tests/test_crds_agreement.py, names that case). Its edge: plain data.
"""

from __future__ import annotations

import re

__all__ = [
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
    "URL_CREDENTIALS",
    "looks_private",
]

TALOS_VERSION = re.compile(r"^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$")
KUBERNETES_MINOR = re.compile(r"^v[0-9]+\.[0-9]+$")
KUBERNETES_PATCH = re.compile(r"^v[0-9]+\.[0-9]+\.[0-9]+$")
SCHEMATIC_ID = re.compile(r"^[0-9a-f]{64}$")
#: an http(s) URL: a bracketed IP literal or a host name, an optional numeric port, then a path
HTTP_URL = re.compile(r"^https?://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(:[0-9]{1,5})?([/?#]\S*)?$")
#: ``user[:password]@`` in the authority of an http(s) URL: credentials never belong in these values
URL_CREDENTIALS = re.compile(r"^https?://[^\s/?#]*@")
#: ``<repository>@sha256:<64 hex>``: a disk pinned by digest
PINNED = re.compile(r"^\S*@sha256:[0-9a-f]{64}$")
REPOSITORY = re.compile(r"^[a-z0-9]([a-z0-9._-]*[a-z0-9])?(:[0-9]+)?(/[a-z0-9._/-]+)?$")
#: Kubernetes' quantity pattern, as the chart's values.schema.json spells it
QUANTITY = re.compile(
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
DURATION = re.compile(r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$")
PERCENT = re.compile(r"^[0-9]{1,3}%$")
NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
MODULE_NAME = re.compile(r"^[a-z0-9_-]+$")  # PR 3571's rule
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
LABEL_KEY = re.compile(r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")

#: Cheap markers of private key material; :data:`PRIVATE_KEY` decides. Every armour counts:
#: PEM and OpenSSH (``-----BEGIN [RSA |EC |ENCRYPTED |OPENSSH ]PRIVATE KEY-----``), PGP
#: (``-----BEGIN PGP PRIVATE KEY BLOCK-----``), SSH2 exports (``---- BEGIN SSH2 [ENCRYPTED ]PRIVATE
#: KEY ----``) and PuTTY key files (``PuTTY-User-Key-File-<n>:``).
PRIVATE_KEY_MARKERS = ("PRIVATE KEY", "PuTTY-User-Key-File-")
PRIVATE_KEY = re.compile(
    r"-{4,5} ?BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)? ?-{4,5}|PuTTY-User-Key-File-\d+:",
    re.IGNORECASE,
)


def looks_private(text: str) -> bool:
    """True for a private key in any armour, whatever surrounds it; a mere mention is not one."""
    if "PRIVATE KEY" not in text and "PuTTY-User-Key-File-" not in text and "private key" not in text.lower():
        return False
    return PRIVATE_KEY.search(text) is not None
