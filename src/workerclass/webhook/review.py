"""admission.k8s.io/v1 AdmissionReview on the wire: bytes in, a checked request out; a Decision in, bytes out.

Its edge: this module knows the envelope (apiVersion, kind, uid, operation, object, oldObject,
dryRun) and the response shape of API.md section 5. It makes no admission decision: the core's
:class:`~workerclass.admission.decision.Decision` says allowed or denied, this module only says
how that travels back. It imports no HTTP server, so it is tested and benchmarked on its own.

Two kinds of bad input, answered differently:

* :class:`EnvelopeError`: not an AdmissionReview we can answer (not JSON, wrong apiVersion or
  kind, no ``request.uid``). There is no uid to echo, so the HTTP layer answers a plain 4xx.
* :class:`RequestError`: a well-formed envelope whose request cannot be decided (unknown
  operation, missing object, a kind this path does not serve). It is answered as a denial
  (``allowed: false``, ``status.code`` 400) carrying the uid, so the API server shows why.

Error messages never quote a client's value unless it has a strict shape that cannot carry a
secret (a kind, an API group or version); otherwise they name the field and what it should be.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

import orjson

from ..admission.decision import Decision
from ..api.caching import short_cache
from ..api.patterns import looks_like_token, looks_private, token_start
from ..api.webhooks import ADMITTED_OPERATIONS

API_VERSION = "admission.k8s.io/v1"
KIND = "AdmissionReview"

#: the HTTP status of a denial, by the first violation's code (API.md section 5)
DENIED_CODE = 403
INVALID_CODE = 422


class EnvelopeError(Exception):
    """The body is not an AdmissionReview this server can answer; ``status`` is the HTTP 4xx to send."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class RequestError(Exception):
    """A readable AdmissionReview whose request cannot be decided; answered as a denial with ``uid``."""

    def __init__(self, uid: str, message: str) -> None:
        super().__init__(message)
        self.uid = uid
        self.message = message


@dataclass(frozen=True, slots=True)
class Target:
    """What one webhook path serves: the kind it admits, with its API group and version.

    The version fills an object's missing apiVersion (the API server always sends one).
    """

    kind: str
    group: str
    version: str


class Review(NamedTuple):
    """One decoded admission request, checked against the path's target.

    Immutable like a frozen dataclass, and a quarter of its construction cost (one per request).
    """

    uid: str
    operation: str
    kind: str
    namespace: str
    name: str
    obj: dict[str, Any] | None
    old: dict[str, Any] | None
    dry_run: bool

    @property
    def identity(self) -> str:
        """``namespace/name`` (or ``name``) for logs: never the object's contents."""
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


#: shapes a client-sent value must have to be quoted back in an error (none can hold a secret of
#: any use: a CamelCase kind, a DNS-subdomain API group, an ``[group/]version`` API version)
_KIND = re.compile(r"[A-Z][A-Za-z0-9]{0,62}")
_GROUP = re.compile(r"([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?)?")  # "" is the core group
_API_VERSION = re.compile(r"([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/)?v[0-9]{1,3}((alpha|beta)[0-9]{1,3})?")


def _shown(value: object, pattern: re.Pattern[str], shape: str) -> str:
    """``value`` quoted when it has ``pattern``'s strict shape; otherwise only what it is (never the text)."""
    if isinstance(value, str) and pattern.fullmatch(value):
        return repr(value)
    if value is None:
        return "none"
    if isinstance(value, str):
        return f"a string that is not {shape}"
    return f"a JSON {_json_type(value)}"


def _json_type(value: object) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    return "string" if isinstance(value, str) else type(value).__name__


def _deep(body: bytes) -> Any:
    """A review deeper than orjson reads (1,024 levels), read by the standard library's reader
    (the server raises the recursion limit for it), so that the object it carries is answered
    with a denial (``ObjectTooLarge``) rather than an error; ``None`` if that fails too."""
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return None


def decode(body: bytes, target: Target) -> Review:
    """Check an AdmissionReview body for ``target``. Raises :class:`EnvelopeError` or :class:`RequestError`."""
    try:
        # orjson: several times faster than json on reviews (the server's hot path), strict about
        # what JSON is (no NaN, UTF-8 only) and limited to 1024 levels of nesting.
        envelope = orjson.loads(body)
    except orjson.JSONDecodeError as error:
        envelope = _deep(body) if "depth" in str(error) else None
        if envelope is None:
            raise EnvelopeError(400, "the body is not JSON (UTF-8)") from None
    if not isinstance(envelope, dict):
        raise EnvelopeError(400, "the body is not a JSON object")
    if envelope.get("apiVersion") != API_VERSION or envelope.get("kind") != KIND:
        raise EnvelopeError(
            400,
            f"expected apiVersion {API_VERSION} kind {KIND}, got apiVersion "
            f"{_shown(envelope.get('apiVersion'), _API_VERSION, 'an API version')} "
            f"kind {_shown(envelope.get('kind'), _KIND, 'a kind')}",
        )
    request = envelope.get("request")
    if not isinstance(request, dict):
        raise EnvelopeError(400, "the AdmissionReview has no request object")
    uid = request.get("uid")
    if not isinstance(uid, str) or not uid:
        raise EnvelopeError(400, "request.uid is missing or not a string")
    return _decode_request(uid, request, target)


def _decode_request(uid: str, request: Mapping[str, Any], target: Target) -> Review:
    operation = request.get("operation")
    if operation not in ADMITTED_OPERATIONS:
        raise RequestError(uid, f"request.operation is not one of {', '.join(ADMITTED_OPERATIONS)}")
    obj = request.get("object")
    old = request.get("oldObject")
    if obj is not None and not isinstance(obj, dict):
        raise RequestError(uid, "request.object is not an object")
    if old is not None and not isinstance(old, dict):
        raise RequestError(uid, "request.oldObject is not an object")
    if operation in ("CREATE", "UPDATE") and obj is None:
        raise RequestError(uid, f"request.object is required for {operation}")
    if operation in ("UPDATE", "DELETE") and old is None:
        raise RequestError(uid, f"request.oldObject is required for {operation}")
    dry_run = request.get("dryRun", False)
    if dry_run is None:
        dry_run = False
    if not isinstance(dry_run, bool):
        raise RequestError(uid, "request.dryRun is not a boolean")
    namespace = request.get("namespace") or ""
    name = request.get("name") or ""
    if not isinstance(namespace, str) or not isinstance(name, str):
        raise RequestError(uid, "request.namespace and request.name must be strings")

    # The kind the API server says it sends (request.kind) and the kind of the object(s) must
    # both be the one this path serves: a mismatch is a misconfigured webhook, never guessed at.
    request_kind = request.get("kind")
    if request_kind is not None:
        if not isinstance(request_kind, dict):
            raise RequestError(uid, "request.kind is not a GroupVersionKind object")
        group, kind = request_kind.get("group"), request_kind.get("kind")
        if kind != target.kind or group != target.group:
            raise RequestError(
                uid,
                f"this webhook serves {target.kind}.{target.group}, the request is for kind "
                f"{_shown(kind, _KIND, 'a kind')} in group {_shown(group, _GROUP, 'an API group')}",
            )
    version = request_kind.get("version") if isinstance(request_kind, dict) else None
    obj = _checked_object(uid, "object", obj, target, version, namespace)
    old = _checked_object(uid, "oldObject", old, target, version, namespace)
    if not name:
        stored = obj if obj is not None else old
        metadata = stored.get("metadata") if stored is not None else None
        found = metadata.get("name") if isinstance(metadata, dict) else None
        name = found if isinstance(found, str) else ""
    return Review(uid, operation, target.kind, namespace, name, obj, old, dry_run)


def _checked_object(
    uid: str,
    field: str,
    obj: dict[str, Any] | None,
    target: Target,
    version: object,
    namespace: str,
) -> dict[str, Any] | None:
    """The object as the core should see it: its kind checked, apiVersion/kind/namespace filled if absent."""
    if obj is None:
        return None
    kind = obj.get("kind")
    api_version = obj.get("apiVersion")
    metadata = obj.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise RequestError(uid, f"request.{field}.metadata is not an object")
    if kind is not None and kind != target.kind:
        raise RequestError(
            uid, f"this webhook serves {target.kind}, request.{field}.kind is {_shown(kind, _KIND, 'a kind')}"
        )
    if api_version is not None and (not isinstance(api_version, str) or not api_version.startswith(target.group + "/")):
        raise RequestError(
            uid,
            f"request.{field}.apiVersion {_shown(api_version, _API_VERSION, 'an API version')} "
            f"is not in {target.group}",
        )
    filled: dict[str, Any] | None = None
    if kind is None or api_version is None:
        # The API server always sends both; an object without them is filled from request.kind
        # so that the core dispatches on the kind the path serves.
        filled = dict(obj)
        filled["kind"] = target.kind
        if api_version is None:
            filled["apiVersion"] = (
                f"{target.group}/{version if isinstance(version, str) and version else target.version}"
            )
    if namespace and (metadata is None or not metadata.get("namespace")):
        filled = dict(obj) if filled is None else filled
        filled["metadata"] = {**(metadata or {}), "namespace": namespace}
    return obj if filled is None else filled


# --------------------------------------------------------------------------- responses


def encode(response: Mapping[str, Any]) -> bytes:
    """The AdmissionReview envelope around ``response``, as compact JSON bytes."""
    envelope = {"apiVersion": API_VERSION, "kind": KIND, "response": response}
    try:
        return orjson.dumps(envelope)
    except TypeError:  # a value orjson does not know (or an int over 64 bits): the slower, lenient path
        return json.dumps(envelope, separators=(",", ":"), ensure_ascii=False, default=str).encode("utf-8")


#: what a field path is made of: field names, ``[index]``, and map keys that are label-key shaped
#: (``[prefix/]name``: no ``:``, ``@``, space or quote, so no URL credentials or key material)
_FIELD = re.compile(r"[A-Za-z0-9_.\[\]/-]{0,256}")
#: the runs :func:`~workerclass.api.patterns.looks_like_token` judges, to find where one starts
_SECRET_RUNS = re.compile(r"[A-Za-z0-9+/=_-]{32,}")


def shown_field(field: str) -> str:
    """A violation's field path as answered: whole when every character is one a path or a
    label-key-shaped map key has and no part looks like a credential (an AWS key id, a ``ghp_``
    token, a JWT, whose dots would make it look like three segments); otherwise cut before the
    segment that is not (a map key taken from the request, which may be anything) and that
    segment named, not shown."""
    token = token_start(field)
    if _FIELD.fullmatch(field) and token is None and not looks_like_token(field):
        return field
    index = next(
        (at for at, char in enumerate(field) if not (char.isascii() and (char.isalnum() or char in "_.[]/-"))),
        len(field),
    )
    if token is not None:
        index = min(index, token)
    elif looks_like_token(field):
        run = next(run for run in _SECRET_RUNS.finditer(field) if looks_like_token(run.group()))
        index = min(index, run.start())
    head = field[: min(index, 256)]
    cut = head.rfind(".")
    return (head[:cut] if cut > 0 else "") + ".(a key that is not shown)"


#: a request string that may appear in an answer as it is: a Kubernetes name or label, a version,
#: a kind, a number (none can hold a credential or key material of any use)
_SAFE_VALUE = re.compile(
    r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?|v?[0-9]{1,4}(\.[0-9]{1,4}){0,2}|[A-Z][A-Za-z0-9]{0,62}|-?[0-9]{1,20}"
)
#: what is left of a secret in text after the request's values are taken out: URL credentials, PEM blocks
_CREDENTIALS = re.compile(
    r"(?<=://)[^/\s@]*@|-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(-----END [A-Z0-9 ]*-----|$)", re.S
)
HIDDEN = "(a value that is not shown)"
#: denials (``status.details.causes``) and warnings an answer carries at most, each list in the
#: core's order; past them the answer says how many it leaves out. Every line is compared with the
#: request's values before it is sent (:func:`scrub`), and the API server keeps 4096 characters of
#: warnings in all: 20,000 denials would take the loop for seconds and answer megabytes.
MAX_ANSWERED = 50
#: request strings compared with an answer's text at most (a wide object costs the denial path only)
MAX_VALUES = 5000


def request_values(*objects: object) -> list[str]:
    """String values of the request (walked without recursion) that could be a secret: every one
    that is not :data:`_SAFE_VALUE`-shaped, longest first.

    Map keys are not collected, but for those shaped like a credential (an AWS key id, a ``ghp_``
    token, a JWT) or holding key material: the others are the object's structure (``sshKeys``,
    ``workerClassName``), and hiding them would turn messages that name a field into ones a tenant
    cannot act on. The rules never quote a client's key that is not label-key shaped (field paths
    stop before one)."""
    found: set[str] = set()
    stack = [obj for obj in objects if obj is not None]
    while stack and len(found) < MAX_VALUES:
        item = stack.pop()
        if isinstance(item, str):
            if len(item) >= 3 and not _SAFE_VALUE.fullmatch(item):
                found.add(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
            found.update(key for key in item if isinstance(key, str) and _secret_key(key))
        elif isinstance(item, list):
            stack.extend(item)
    return sorted(found, key=len, reverse=True)


@short_cache(maxsize=4096)
def _secret_key(key: str) -> bool:
    """A map key shaped like a credential or holding key material. The same field names come in
    every review: judged once each (a bounded cache)."""
    return looks_like_token(key) or looks_private(key)


def scrubbed(text: str, values: list[str]) -> str:
    """``text`` with every request value of ``values`` it quotes, and anything credential-shaped, hidden."""
    for value in values:
        if value in text:
            text = text.replace(value, HIDDEN)
    if "://" not in text and "-----BEGIN " not in text:  # neither of the shapes can match
        return text
    return _CREDENTIALS.sub(HIDDEN, text)


def scrub(response: dict[str, Any], *objects: object) -> dict[str, Any]:
    """The answer's messages and warnings without the request's values (the rules' messages should
    never quote one unless it has a strict shape; this holds the line if one does)."""
    status = response.get("status")
    causes = status.get("details", {}).get("causes") if isinstance(status, dict) else None
    warnings = response.get("warnings")
    if not causes and not warnings:
        return response
    values = request_values(*objects)
    if causes and isinstance(status, dict):
        # what follows the causes in the message is ours (how many were left out): kept as it is
        message = status.get("message")
        joined = _joined(causes)
        tail = message[len(joined) :] if isinstance(message, str) and message.startswith(joined) else ""
        for cause in causes:
            cause["message"] = scrubbed(cause["message"], values)
        status["message"] = _joined(causes) + tail
    if warnings:
        response["warnings"] = [scrubbed(warning, values) for warning in warnings]
    return response


def refusal(uid: str, code: int, reason: str, message: str) -> dict[str, Any]:
    """A denial that is not about the object's values: a bad request, not ready, an internal error."""
    return {
        "uid": uid,
        "allowed": False,
        "status": {"status": "Failure", "code": code, "reason": reason, "message": message},
    }


def from_decision(uid: str, decision: Decision, *, mutating: bool) -> dict[str, Any]:
    """The response for a core decision.

    Allowed: ``patch`` (base64 RFC 6902, ``patchType: JSONPatch``) only from a mutating webhook and
    only when there is a change. Denied: ``status.code`` 403, or 422 when the first denial is
    ``Invalid``; ``status.reason`` the first code; ``status.message`` every denial as
    ``CODE field: message`` joined by ``"; "``; ``status.details.causes`` the same, structured.
    Warnings in both cases.
    """
    response: dict[str, Any] = {"uid": uid, "allowed": bool(decision.allowed)}
    if decision.allowed:
        if mutating and decision.patch:
            try:
                patch = orjson.dumps(list(decision.patch))
            except TypeError:
                patch = json.dumps(list(decision.patch), separators=(",", ":"), default=str).encode("utf-8")
            response["patch"] = base64.b64encode(patch).decode("ascii")
            response["patchType"] = "JSONPatch"
    else:
        denials = list(decision.denials)
        if denials:
            first = denials[0].code
            causes = [
                {"reason": violation.code, "field": shown_field(violation.field), "message": violation.message}
                for violation in denials[:MAX_ANSWERED]
            ]
            response["status"] = {
                "status": "Failure",
                "code": INVALID_CODE if first == "Invalid" else DENIED_CODE,
                "reason": first,
                "message": status_message(causes, len(denials)),
                "details": {"causes": causes},
            }
        else:  # the core denied without saying why: still a denial, and say so
            response["status"] = {
                "status": "Failure",
                "code": DENIED_CODE,
                "reason": "Forbidden",
                "message": "denied by workerclass admission without a stated reason",
            }
    if decision.warnings:
        warnings = [str(warning) for warning in decision.warnings[:MAX_ANSWERED]]
        if len(decision.warnings) > MAX_ANSWERED:
            warnings.append(f"workerclass: {len(decision.warnings) - MAX_ANSWERED} more warnings not shown")
        response["warnings"] = warnings
    return response


def status_message(causes: list[dict[str, Any]], total: int) -> str:
    """``status.message``: each cause as ``CODE field: message``, joined by ``"; "``, and how many
    of the ``total`` denials the answer leaves out (past :data:`MAX_ANSWERED`)."""
    message = _joined(causes)
    if total > len(causes):
        message += f"; and {total - len(causes)} more denials not shown (fix these first)"
    return message


def _joined(causes: list[dict[str, Any]]) -> str:
    return "; ".join(f"{cause['reason']} {cause['field']}: {cause['message']}" for cause in causes)
