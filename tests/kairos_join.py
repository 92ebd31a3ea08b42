"""The run-time inputs of a Kairos pool's join, as a tenant cluster holds them: the bootstrap token
Secret Cozystack's ``kubernetes`` chart makes (``kubernetes-<cluster>-talos-secrets``, key
``bootstrapToken``) and Kamaji's CA Secret (``kubernetes-<cluster>-ca``, key ``ca.crt``), with a
real self-signed CA made by ``cryptography`` so that the pin can be checked against an independent
computation of kubeadm's hash."""

from __future__ import annotations

import base64
import datetime
import functools
import hashlib
import secrets
from typing import Any

#: a bootstrap token of kubeadm's shape, unique per test run so that a search for it finds only its copies
TOKEN = f"{secrets.token_hex(3)}.{secrets.token_hex(8)}"


@functools.lru_cache(maxsize=4)
def ca_certificate(common_name: str = "kubernetes") -> bytes:
    """A self-signed CA certificate, PEM."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return certificate.public_bytes(serialization.Encoding.PEM)


def kubeadm_hash(pem: bytes) -> str:
    """kubeadm's ``caCertHashes`` entry, computed by ``cryptography`` (not by our DER reader)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    public = x509.load_pem_x509_certificate(pem).public_key()
    der = public.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return f"sha256:{hashlib.sha256(der).hexdigest()}"


def join_input_secrets(
    namespace: str, cluster: str, *, token: str = TOKEN, ca: bytes | None = None
) -> list[dict[str, Any]]:
    """The two Secrets of the parent cluster ``kubernetes-<cluster>`` in ``namespace``."""
    ca = ca if ca is not None else ca_certificate()

    def secret(name: str, data: dict[str, bytes]) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": name, "namespace": namespace},
            "type": "Opaque",
            "data": {key: base64.b64encode(value).decode() for key, value in data.items()},
        }

    return [
        secret(f"kubernetes-{cluster}-talos-secrets", {"bootstrapToken": token.encode(), "token": b"talos-side"}),
        secret(f"kubernetes-{cluster}-ca", {"ca.crt": ca, "ca.key": b"-----BEGIN EC PRIVATE KEY-----not-for-print"}),
    ]
