"""Test helpers for the webhook: certificates, a server on a background loop, an HTTPS client, reviews."""

from __future__ import annotations

import asyncio
import base64
import datetime
import http.client
import ipaddress
import json
import os
import socket
import ssl
import threading
import uuid
from collections.abc import Coroutine, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import jsonpatch
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from workerclass.webhook.server import WebhookServer

T = TypeVar("T")
ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"

# --------------------------------------------------------------------------- certificates


@dataclass
class Authority:
    key: ec.EllipticCurvePrivateKey
    cert: x509.Certificate

    @property
    def pem(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.PEM)

    @classmethod
    def create(cls, name: str = "workerclass test CA") -> Authority:
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        now = datetime.datetime.now(datetime.UTC)
        cert = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256())
        )
        return cls(key, cert)

    def issue(self, common_name: str = "workerclass-webhook") -> tuple[bytes, bytes, int]:
        """A serving certificate for 127.0.0.1/localhost: ``(cert_pem, key_pem, serial)``."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        serial = x509.random_serial_number()
        cert = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
            .issuer_name(self.cert.subject)
            .public_key(key.public_key())
            .serial_number(serial)
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(hours=12))
            .add_extension(
                x509.SubjectAlternativeName(
                    [
                        x509.DNSName("localhost"),
                        x509.DNSName("workerclass-webhook.cozy-workerclass.svc"),
                        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                    ]
                ),
                critical=False,
            )
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()), critical=False)
            .sign(self.key, hashes.SHA256())
        )
        key_pem = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        return cert.public_bytes(serialization.Encoding.PEM), key_pem, serial


@dataclass
class CertFiles:
    authority: Authority
    directory: Path

    @property
    def ca(self) -> Path:
        return self.directory / "ca.crt"

    @property
    def cert(self) -> Path:
        return self.directory / "tls.crt"

    @property
    def key(self) -> Path:
        return self.directory / "tls.key"

    @classmethod
    def create(cls, directory: Path) -> CertFiles:
        directory.mkdir(parents=True, exist_ok=True)
        files = cls(Authority.create(), directory)
        files.ca.write_bytes(files.authority.pem)
        files.rotate()
        return files

    def rotate(self, *, atomic: bool = True) -> int:
        """Write a fresh pair; returns its serial."""
        cert, key, serial = self.authority.issue()
        if atomic:
            for path, data in ((self.key, key), (self.cert, cert)):
                temporary = path.with_suffix(".tmp")
                temporary.write_bytes(data)
                os.replace(temporary, path)
        else:  # the racy way: certificate first, key after (a reader may see a mismatched pair)
            self.cert.write_bytes(cert)
            self.key.write_bytes(key)
        return serial

    def client_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.ca))
        return context


# --------------------------------------------------------------------------- a server on its own loop


class Running:
    """A :class:`WebhookServer` started on an event loop in a background thread."""

    def __init__(self, server: WebhookServer) -> None:
        self.server = server
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="webhook-test-loop", daemon=True)
        self.thread.start()
        self.call(server.start())

    def call(self, coroutine: Coroutine[Any, Any, T], timeout: float = 30.0) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    @property
    def port(self) -> int:
        return self.server.port

    def close(self) -> None:
        try:
            self.call(self.server.stop())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)
            self.loop.close()


# --------------------------------------------------------------------------- client


@dataclass
class Reply:
    status: int
    headers: Mapping[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def response(self) -> dict[str, Any]:
        data = self.json()
        assert data["apiVersion"] == "admission.k8s.io/v1"
        assert data["kind"] == "AdmissionReview"
        response: dict[str, Any] = data["response"]
        return response


class Client:
    """A keep-alive HTTPS client that reconnects when the server closed the connection."""

    def __init__(self, port: int, context: ssl.SSLContext, *, timeout: float = 10.0) -> None:
        self.port = port
        self.context = context
        self.timeout = timeout
        self.connection: http.client.HTTPSConnection | None = None

    def _connection(self) -> http.client.HTTPSConnection:
        if self.connection is None:
            self.connection = http.client.HTTPSConnection(
                "127.0.0.1", self.port, context=self.context, timeout=self.timeout
            )
        return self.connection

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Reply:
        sent_headers = {"Content-Type": "application/json"} if body is not None else {}
        sent_headers.update(headers or {})
        for attempt in (1, 2):
            connection = self._connection()
            try:
                connection.request(method, path, body=body, headers=sent_headers)
                answer = connection.getresponse()
                data = answer.read()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                self.close()
                if attempt == 2:
                    raise
                continue
            if answer.getheader("Connection", "").lower() == "close":
                self.close()
            return Reply(answer.status, {k.lower(): v for k, v in answer.getheaders()}, data)
        raise AssertionError("unreachable")

    def post_review(self, path: str, review: Mapping[str, Any]) -> Reply:
        return self.request("POST", path, json.dumps(review).encode())

    def close(self) -> None:
        if self.connection is not None:
            self.connection.close()
            self.connection = None


def raw_tls_socket(port: int, context: ssl.SSLContext, *, timeout: float = 5.0) -> ssl.SSLSocket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    return context.wrap_socket(sock, server_hostname="127.0.0.1")


# --------------------------------------------------------------------------- AdmissionReviews

PLURALS = {
    "KubernetesNodes": "kubernetesnodes",
    "WorkerClass": "workerclasses",
    "ComputePlane": "computeplanes",
}


def review(
    obj: Mapping[str, Any] | None,
    *,
    operation: str = "CREATE",
    old: Mapping[str, Any] | None = None,
    dry_run: bool = False,
    uid: str | None = None,
) -> dict[str, Any]:
    """An admission.k8s.io/v1 AdmissionReview as the API server sends it."""
    subject = obj if obj is not None else old
    assert subject is not None
    group, _, version = subject["apiVersion"].rpartition("/")
    kind = subject["kind"]
    metadata = subject.get("metadata", {})
    gvk = {"group": group, "version": version, "kind": kind}
    gvr = {"group": group, "version": version, "resource": PLURALS.get(kind, kind.lower() + "s")}
    request: dict[str, Any] = {
        "uid": uid or str(uuid.uuid4()),
        "kind": gvk,
        "resource": gvr,
        "requestKind": gvk,
        "requestResource": gvr,
        "name": metadata.get("name", ""),
        "operation": operation,
        "userInfo": {"username": "tenant-example-admin", "groups": ["system:authenticated"]},
        "object": obj,
        "oldObject": old,
        "dryRun": dry_run,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": f"{operation.title()}Options"},
    }
    if metadata.get("namespace"):
        request["namespace"] = metadata["namespace"]
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


def patched(obj: Mapping[str, Any], response: Mapping[str, Any]) -> dict[str, Any]:
    """``obj`` with the response's JSONPatch applied (or unchanged when there is none)."""
    if "patch" not in response:
        assert "patchType" not in response
        unchanged: dict[str, Any] = json.loads(json.dumps(obj))
        return unchanged
    assert response["patchType"] == "JSONPatch"
    operations = json.loads(base64.b64decode(response["patch"]))
    result: dict[str, Any] = jsonpatch.apply_patch(json.loads(json.dumps(obj)), operations)
    return result
