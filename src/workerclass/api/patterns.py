"""The value patterns of the API: one definition each, read by the parser and by the CRD schemas.

Each pattern is kept as its source text (what a CRD's ``pattern`` carries) and compiled once
(what the parser matches). Patterns the CRD carries must mean the same in Python's ``re``
(``fullmatch``) and in the API server's RE2 (a search, anchored by ``^...$``): no look-arounds, no
back-references, ``[0-9]`` rather than ``\\d`` (Python's ``\\d`` also matches other scripts'
digits, RE2's does not), and no ``\\s``/``\\S`` where a CRD reads the pattern (RE2's white space is
ASCII, Python's Unicode): a URL's path is "no space and no control character", spelled out, so both
engines and the Job's shell read it alike. The CRDs' declarations of fields are :mod:`.schema`'s.
Its edge: plain data.

Some patterns here are the rules' alone, no CRD carries them (so they need not be RE2-safe):
:data:`DIGEST_SUFFIX`, :data:`REFERENCE` and :data:`CREDENTIALS` (an image reference's rule,
:func:`workerclass.rules.classes.reference_problem`) and :data:`DNS_1035` (a pool's name and how a
name is quoted, :mod:`workerclass.rules.pools`). Patterns that live elsewhere, and why:

- ``model.pool.ROLE``: a role name's length is bounded by a look-ahead, which RE2 has not (the
  parser's alone, refusing for a classified pool what Kubernetes would refuse later);
- ``model.settings.PEM_CERTIFICATES``: a multi-line PEM block, whose whitespace classes differ
  between Python's ``re`` and RE2; the parser alone checks it (the agreement test lists it);
- ``chart.kernel_modules.KERNEL_MODULE_NAME``: the chart port's copy of :data:`MODULE_NAME`, kept
  beside the template it ports;
- the webhook's log and wire shapes (``webhook.logtext``, ``webhook.review``): text, not API values.
"""

from __future__ import annotations

import re

__all__ = [
    "CREDENTIALS",
    "DIGEST_SUFFIX",
    "DNS_1035",
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
    "REFERENCE",
    "REPOSITORY",
    "SCHEMATIC_ID",
    "TALOS_VERSION",
    "TOKEN",
    "URL_CREDENTIALS",
    "looks_like_token",
    "looks_private",
    "token_start",
]

TALOS_VERSION = re.compile(r"^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$")
KUBERNETES_MINOR = re.compile(r"^v[0-9]+\.[0-9]+$")
KUBERNETES_PATCH = re.compile(r"^v[0-9]+\.[0-9]+\.[0-9]+$")
SCHEMATIC_ID = re.compile(r"^[0-9a-f]{64}$")
#: an http(s) URL: a bracketed IP literal or a host name, an optional numeric port, then a path
#: of anything but white space and control characters (RE2 and Python read the class alike)
HTTP_URL = re.compile(r"^https?://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(:[0-9]{1,5})?([/?#][^ \x00-\x1f\x7f]*)?$")
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

# --------------------------------------------------------------------------- the rules' own

#: a DNS-1035 label (fullmatch; the length is the caller's): a pool's name, a name shown in a message
DNS_1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
#: ``@sha256:<64 hex>`` at the end (a search): whether a reference is pinned at all
DIGEST_SUFFIX = re.compile(r"@sha256:[0-9a-f]{64}$")
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_LABEL = r"[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?"
_DOMAIN = rf"(?:{_LABEL}(?:\.{_LABEL})*|\[[0-9a-fA-F:]+\])"
#: A pinned OCI image reference (the distribution/reference grammar): [registry[:port]/]path[:tag]@sha256:<hex>
REFERENCE = re.compile(
    rf"^(?:{_DOMAIN}(?::[0-9]+)?/)?{_COMPONENT}(?:/{_COMPONENT})*(?::[A-Za-z0-9_][A-Za-z0-9_.-]{{0,127}})?"
    r"@sha256:[0-9a-f]{64}$"
)
#: ``user:password@host/...`` or ``user@host/...`` in front of a reference: credentials, never a registry.
#: (A ``:`` before the first ``/`` or ``@``, which is an ``@``: the look-ahead finds that ``@`` once; as
#: ``[^/@]+:[^/@]*@`` each ``:`` of a run of them scanned the rest again, 16 KiB of ``a:`` took 0.3 s.)
CREDENTIALS = re.compile(r"^(?=[^/@]*+@)[^/@]+:|^[^/@]+@[^/]+/")

#: Cheap markers of private key material; :data:`PRIVATE_KEY` decides. Every armour counts:
#: PEM and OpenSSH (``-----BEGIN [RSA |EC |ENCRYPTED |OPENSSH ]PRIVATE KEY-----``), PGP
#: (``-----BEGIN PGP PRIVATE KEY BLOCK-----``), SSH2 exports (``---- BEGIN SSH2 [ENCRYPTED ]PRIVATE
#: KEY ----``) and PuTTY key files (``PuTTY-User-Key-File-<n>:``).
PRIVATE_KEY_MARKERS = ("PRIVATE KEY", "PuTTY-User-Key-File-")
PRIVATE_KEY = re.compile(
    r"-{4,5} ?BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)? ?-{4,5}|PuTTY-User-Key-File-\d+:",
    re.IGNORECASE,
)


#: Credentials by the shapes their issuers publish (a search): AWS access key ids, GitHub, GitLab
#: and Slack tokens, Google API keys, Stripe live keys, JSON Web Tokens (``eyJ...`` header and
#: payload, dot-separated). A value of these shapes is never an identifier a pool or class needs.
TOKEN = re.compile(
    r"(?:A3T[A-Z0-9]|AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA)[A-Z0-9]{16}"
    r"|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_-]{20,}"
    r"|xox[abposr]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{35}|[sr]k_live_[0-9A-Za-z]{20,}"
    r"|eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}"
)
#: a run of base64 or base64url characters long enough to be a random secret (judged by :func:`looks_like_token`)
_SECRET_RUN = re.compile(r"[A-Za-z0-9+/=_-]{32,}")

# :data:`TOKEN` searched in time linear in the text (tenant text reaches it: a map key of 90 KB
# of ``eyJ`` repeated took TOKEN's search 12 s, its JWT branch trying every ``eyJ`` to the end of
# the run). The other branches end where their characters end, so a failed start costs little; a
# JWT's ``eyJ...`` ends at the first character outside its alphabet, which must be the dot: a run
# of that alphabet holds a JWT exactly when its first ``eyJ`` does, so the JWT search starts only
# at runs (the look-behind) and tries only their first ``eyJ`` (the atomic group).
_FIXED_TOKENS = re.compile(TOKEN.pattern.rsplit("|", 1)[0])
_JWT_RUN = re.compile(r"(?<![A-Za-z0-9_-])(?>[A-Za-z0-9_-]*?eyJ)[A-Za-z0-9_-]{4,}+\.[A-Za-z0-9_-]{4}")
#: both in one search, for whether there is any (where one starts is :func:`token_start`'s)
_ANY_TOKEN = re.compile(f"{_FIXED_TOKENS.pattern}|{_JWT_RUN.pattern}")
assert TOKEN.pattern.rsplit("|", 1)[1] == r"eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}"


def token_start(text: str) -> int | None:
    """Where :data:`TOKEN`'s search finds its first credential in ``text`` (``TOKEN.search(text).start()``),
    or None; in time linear in the text."""
    fixed = _FIXED_TOKENS.search(text)
    jwt = _JWT_RUN.search(text)
    if jwt is None:
        return fixed.start() if fixed is not None else None
    start = text.index("eyJ", jwt.start())
    return start if fixed is None else min(start, fixed.start())


_UPPER, _LOWER, _DIGIT = re.compile("[A-Z]"), re.compile("[a-z]"), re.compile("[0-9]")


def looks_like_token(text: str) -> bool:
    """True for text holding a credential of a published shape (:data:`TOKEN`), or a run of 32 or
    more base64 characters mixing upper case, lower case and digits (a random secret: identifiers,
    schematic IDs and digests are not shaped so)."""
    if _ANY_TOKEN.search(text):
        return True
    # (the runs are ASCII: their upper case, lower case and digits are these classes, searched in C)
    return any(_UPPER.search(run) and _LOWER.search(run) and _DIGIT.search(run) for run in _SECRET_RUN.findall(text))


def looks_private(text: str) -> bool:
    """True for a private key in any armour, whatever surrounds it; a mere mention is not one."""
    if "PRIVATE KEY" not in text and "PuTTY-User-Key-File-" not in text and "private key" not in text.lower():
        return False
    return PRIVATE_KEY.search(text) is not None
