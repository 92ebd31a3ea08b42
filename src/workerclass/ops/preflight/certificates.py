"""Whether the API server can trust the serving certificate: a base64 ``caBundle`` holding a PEM
certificate, or cert-manager's CA injection annotation (check ``caBundle``).

Read from a folder, the annotation is enough (cert-manager's cainjector fills ``caBundle`` in the
cluster); read live, the cainjector should have done so already, so an annotated configuration
whose ``caBundle`` is still empty is a broken injection and fails.

Read live, the serving certificate itself is checked too (:func:`chain_checks`): the reader gets
the Secrets the webhook's Deployment mounts (:func:`serving_secrets` names them: the
``secret.secretName`` of each volume of a Deployment behind a Service a webhook calls) and hands
over only their ``tls.crt`` (:class:`ServingCertificate`; the key is never kept). A ``caBundle``
that holds no CA which signed that certificate (directly, or through the intermediates in
``tls.crt``), or a certificate out of its validity, fails; a Secret the identity may not get (403,
404) is a warning: the chain cannot be verified, and preflight never asks for more than it needs.
"""

from __future__ import annotations

import base64
import binascii
import datetime
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cryptography import x509
from cryptography.exceptions import InvalidSignature

from .expectations import CA_ANNOTATIONS
from .objects import FoundWebhook, as_list, as_map, metadata_of, name_of, namespace_of
from .source import FOLDER, Source
from .verdicts import Check

__all__ = ["SecretRef", "ServingCertificate", "ca_bundle", "chain_checks", "serving_secrets"]

_PEM_CERTIFICATE = b"-----BEGIN CERTIFICATE-----"


def ca_bundle(webhook: FoundWebhook, source: Source = FOLDER) -> Check | None:
    bundle = as_map(webhook.spec.get("clientConfig")).get("caBundle")
    field = webhook.field("clientConfig.caBundle")
    if isinstance(bundle, str) and bundle:
        try:
            decoded = base64.b64decode(bundle, validate=True)
        except (binascii.Error, ValueError):
            return Check("caBundle", "fail", f"{webhook.name} caBundle is not base64", webhook.object, field)
        if _PEM_CERTIFICATE not in decoded:
            return Check(
                "caBundle",
                "fail",
                f"{webhook.name} caBundle holds no PEM certificate: the API server cannot verify the serving "
                "certificate, so every matched request fails",
                webhook.object,
                field,
            )
        return None
    annotation = next(
        (key for key in CA_ANNOTATIONS if isinstance(webhook.annotations.get(key), str) and webhook.annotations[key]),
        None,
    )
    if annotation is not None and not source.live:
        return None
    if annotation is not None:
        return Check(
            "caBundle",
            "fail",
            f"{webhook.name} has no clientConfig.caBundle although its configuration asks cert-manager to inject "
            f"one ({annotation}: {webhook.annotations[annotation]}): the CA was not injected (is cert-manager's "
            "cainjector running, and that certificate issued?), so the API server cannot trust the serving "
            "certificate and every matched request fails",
            webhook.object,
            field,
        )
    return Check(
        "caBundle",
        "fail",
        f"{webhook.name} has no clientConfig.caBundle and its configuration no {CA_ANNOTATIONS[0]} annotation: "
        "the API server cannot trust the serving certificate, so every matched request fails",
        webhook.object,
        field,
    )


# ---------------------------------------------------------------------- the serving certificate


@dataclass(frozen=True, slots=True)
class SecretRef:
    """A Secret a webhook's Deployment mounts, and the Service (``namespace``, ``name``) it backs."""

    namespace: str
    name: str
    deployment: str
    service: tuple[str, str]

    @property
    def label(self) -> str:
        return f"Secret {self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class ServingCertificate:
    """What was read of one :class:`SecretRef`: its ``tls.crt`` (PEM), or why it could not be read."""

    ref: SecretRef
    #: the Secret's ``tls.crt``, decoded; ``None`` when the Secret has none or was not read
    certificate: bytes | None = None
    #: the HTTP status of a refused GET (``403 Forbidden``), never the server's message
    status: str | None = None


def serving_secrets(
    webhooks: Iterable[FoundWebhook], services: Sequence[Mapping[str, Any]], deployments: Sequence[Mapping[str, Any]]
) -> list[SecretRef]:
    """The Secrets mounted by the Deployments behind the Services the webhooks call (each once)."""
    out: list[SecretRef] = []
    for reference in sorted({w.service[:2] for w in webhooks if w.service is not None}):
        namespace, name = reference
        service = next((s for s in services if (namespace_of(s), name_of(s)) == (namespace, name)), None)
        selector = as_map(as_map(service.get("spec")).get("selector")) if service is not None else {}
        if not selector:
            continue
        for deployment in deployments:
            template = as_map(as_map(deployment.get("spec")).get("template"))
            labels = as_map(metadata_of(template).get("labels"))
            if namespace_of(deployment) != namespace or any(labels.get(k) != v for k, v in selector.items()):
                continue
            for volume in as_list(as_map(template.get("spec")).get("volumes")):
                secret = as_map(as_map(volume).get("secret")).get("secretName")
                if isinstance(secret, str) and secret:
                    ref = SecretRef(namespace, secret, f"{namespace}/{name_of(deployment)}", reference)
                    if ref not in out:
                        out.append(ref)
    return out


def _certificates(pem: bytes) -> list[x509.Certificate]:
    try:
        return list(x509.load_pem_x509_certificates(pem))
    except ValueError:
        return []


def _issued_by(certificate: x509.Certificate, issuer: x509.Certificate) -> bool:
    try:
        certificate.verify_directly_issued_by(issuer)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def _valid(certificate: x509.Certificate, now: datetime.datetime) -> bool:
    return certificate.not_valid_before_utc <= now <= certificate.not_valid_after_utc


def _anchor(chain: list[x509.Certificate], roots: list[x509.Certificate]) -> x509.Certificate | None:
    """The root of ``roots`` that signed ``chain[0]``, directly or through the rest of ``chain``."""
    current, rest = chain[0], chain[1:]
    for _ in range(len(chain)):
        root = next((ca for ca in roots if _issued_by(current, ca)), None)
        if root is not None:
            return root
        parent = next((ca for ca in rest if _issued_by(current, ca)), None)
        if parent is None:
            return None
        rest = [ca for ca in rest if ca is not parent]
        current = parent
    return None


def _subject(certificate: x509.Certificate) -> str:
    return certificate.subject.rfc4514_string() or "(no subject)"


def _bundle(webhook: FoundWebhook) -> bytes | None:
    bundle = as_map(webhook.spec.get("clientConfig")).get("caBundle")
    if not isinstance(bundle, str) or not bundle:
        return None
    try:
        return base64.b64decode(bundle, validate=True)
    except (binascii.Error, ValueError):
        return None


def chain_checks(
    webhooks: Sequence[FoundWebhook],
    certificates: Iterable[ServingCertificate],
    now: datetime.datetime | None = None,
) -> list[Check]:
    """Whether each webhook's ``caBundle`` holds the CA that signed the serving certificate of the
    Deployment behind its Service, and whether that certificate is valid ``now`` (check ``caBundle``)."""
    moment = now or datetime.datetime.now(datetime.UTC)
    out: list[Check] = []
    for served in certificates:
        ref = served.ref
        if served.status is not None:
            out.append(
                Check(
                    "caBundle",
                    "warn",
                    f"cannot get {ref.label}, the serving certificate Deployment {ref.deployment} mounts "
                    f"({served.status}): whether the caBundle holds the CA that signed it cannot be verified",
                    ref.label,
                    "data",
                )
            )
            continue
        chain = _certificates(served.certificate or b"")
        if not chain:
            out.append(
                Check(
                    "caBundle",
                    "warn",
                    f"{ref.label}, which Deployment {ref.deployment} mounts, holds no PEM certificate in tls.crt: "
                    "the serving certificate cannot be checked against the caBundle",
                    ref.label,
                    "data.tls.crt",
                )
            )
            continue
        leaf = chain[0]
        if not _valid(leaf, moment):
            expired = moment > leaf.not_valid_after_utc
            out.append(
                Check(
                    "caBundle",
                    "fail",
                    f"the serving certificate in {ref.label} ({_subject(leaf)}) "
                    + (
                        f"expired at {leaf.not_valid_after_utc.isoformat()}"
                        if expired
                        else f"is not valid before {leaf.not_valid_before_utc.isoformat()}"
                    )
                    + ": the API server refuses the TLS handshake, so every matched request fails",
                    ref.label,
                    "data.tls.crt",
                )
            )
        for webhook in webhooks:
            if webhook.service is None or webhook.service[:2] != ref.service:
                continue
            decoded = _bundle(webhook)
            roots = _certificates(decoded) if decoded is not None else []
            if decoded is None or (not roots and b"-----BEGIN CERTIFICATE-----" not in decoded):
                continue  # ca_bundle reports a missing or malformed bundle
            field = webhook.field("clientConfig.caBundle")
            root = _anchor(chain, roots)
            if root is None:
                out.append(
                    Check(
                        "caBundle",
                        "fail",
                        f"{webhook.name} caBundle holds no CA that signed the serving certificate in {ref.label} "
                        f"(issuer {leaf.issuer.rfc4514_string()}): the API server refuses the TLS handshake, so "
                        "every matched request fails",
                        webhook.object,
                        field,
                    )
                )
            elif not _valid(root, moment):
                out.append(
                    Check(
                        "caBundle",
                        "fail",
                        f"{webhook.name} caBundle CA {_subject(root)}, which signed the serving certificate in "
                        f"{ref.label}, is not valid now (until {root.not_valid_after_utc.isoformat()}): the API "
                        "server refuses the TLS handshake, so every matched request fails",
                        webhook.object,
                        field,
                    )
                )
    return out
