"""The serving certificate against the caBundle (``chain_checks``): signed by a bundle CA directly or
through an intermediate, another CA's, expired, and a Secret that could not be read."""

from __future__ import annotations

import base64
import datetime

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from workerclass.api.webhooks import WEBHOOKS
from workerclass.deploy import InstallOptions, webhook_manifests
from workerclass.ops.preflight.certificates import SecretRef, ServingCertificate, chain_checks, serving_secrets
from workerclass.ops.preflight.objects import found_webhooks, partition

NOW = datetime.datetime(2030, 1, 1, tzinfo=datetime.UTC)
Pair = tuple[ec.EllipticCurvePrivateKey, x509.Certificate]


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def issue(common: str, issuer: Pair | None, *, ca: bool, days: int = 30) -> Pair:
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(common))
        .issuer_name(issuer[1].subject if issuer else _name(common))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(NOW - datetime.timedelta(days=1))
        .not_valid_after(NOW + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        .sign(issuer[0] if issuer else key, hashes.SHA256())
    )
    return key, cert


def pem(*pairs: Pair) -> bytes:
    return b"".join(pair[1].public_bytes(serialization.Encoding.PEM) for pair in pairs)


def install(bundle: bytes) -> list[dict]:  # type: ignore[type-arg]
    objects = webhook_manifests(InstallOptions())
    for obj in objects:
        for item in obj.get("webhooks", []):
            item["clientConfig"]["caBundle"] = base64.b64encode(bundle).decode()
    return objects


def checks(bundle: bytes, served: ServingCertificate) -> list:  # type: ignore[type-arg]
    ours, _ = partition(found_webhooks(install(bundle)))
    return chain_checks(ours, [served], NOW)


def ref() -> SecretRef:
    return SecretRef("cozy-workerclass", "workerclass-webhook-tls", "cozy-workerclass/workerclass-webhook",
                     ("cozy-workerclass", "workerclass-webhook"))  # fmt: skip


def test_the_bundle_names_the_secret_its_deployment_mounts() -> None:
    objects = install(b"")
    ours, _ = partition(found_webhooks(objects))
    services = [o for o in objects if o["kind"] == "Service"]
    deployments = [o for o in objects if o["kind"] == "Deployment"]
    assert serving_secrets(ours, services, deployments) == [ref()]


def test_a_certificate_signed_by_the_bundle_ca_passes() -> None:
    root = issue("root", None, ca=True)
    leaf = issue("workerclass-webhook", root, ca=False)
    assert checks(pem(root), ServingCertificate(ref(), pem(leaf))) == []


def test_an_intermediate_in_tls_crt_chains_to_the_bundle() -> None:
    root = issue("root", None, ca=True)
    middle = issue("intermediate", root, ca=True)
    leaf = issue("workerclass-webhook", middle, ca=False)
    assert checks(pem(root), ServingCertificate(ref(), pem(leaf, middle))) == []
    assert len(checks(pem(root), ServingCertificate(ref(), pem(leaf)))) == len(WEBHOOKS)  # without it: no chain


def test_another_ca_fails_every_webhook_of_that_service() -> None:
    root, other = issue("root", None, ca=True), issue("other", None, ca=True)
    found = checks(pem(other), ServingCertificate(ref(), pem(issue("workerclass-webhook", root, ca=False))))
    assert [c.verdict for c in found] == ["fail"] * len(WEBHOOKS)
    assert all("holds no CA that signed the serving certificate in Secret cozy-workerclass/" in c.message
               for c in found)  # fmt: skip
    assert {c.field for c in found} >= {"webhooks[0].clientConfig.caBundle"}


def test_an_expired_certificate_fails() -> None:
    root = issue("root", None, ca=True)
    leaf = issue("workerclass-webhook", root, ca=False, days=-1)
    (found,) = checks(pem(root), ServingCertificate(ref(), pem(leaf)))
    assert found.verdict == "fail" and "expired at" in found.message and found.field == "data.tls.crt"


def test_an_unreadable_secret_only_warns() -> None:
    root = issue("root", None, ca=True)
    (found,) = checks(pem(root), ServingCertificate(ref(), status="403 Forbidden"))
    assert found.verdict == "warn" and "403 Forbidden" in found.message
    (empty,) = checks(pem(root), ServingCertificate(ref()))
    assert empty.verdict == "warn" and "no PEM certificate in tls.crt" in empty.message
