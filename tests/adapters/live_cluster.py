"""A fake API server (kmock) holding the generated webhook install, for the live preflight tests.

Shared by ``tests/adapters/test_live.py`` (the adapter) and ``tests/cli/test_preflight_live.py``
(the command line): :func:`healthy_install` is the generated install as a cluster would hold it
(the Deployment's status reported, cert-manager's CA injected), :func:`seed` stores objects in
the emulator, :func:`kubeconfig` points a kubeconfig at it.

kmock 0.8 cannot serve Namespaces (it parses ``/api/v1/namespaces`` as the prefix of a namespaced
path and answers 500), so :class:`WithNamespaces` lists them beside lightkube's real client.
"""

from __future__ import annotations

import base64
import copy
import datetime
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import kmock
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from workerclass.deploy import InstallOptions, webhook_manifests

NAMESPACE = "cozy-workerclass"
TENANT = "tenant-example"
TOKEN = "test-token-not-for-print"
#: the serving Secret the bundle's Deployment mounts, and a key that must never be read out or printed
SECRET = "workerclass-webhook-tls"
KEY_MARKER = b"-----BEGIN PRIVATE KEY-----\nnot-for-print\n-----END PRIVATE KEY-----\n"


def certificate_authority(common: str) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    """A self-signed CA (valid from an hour ago for a day)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return key, cert


def serving_certificate(
    ca: tuple[ec.EllipticCurvePrivateKey, x509.Certificate], *, days: float = 1.0, common: str = "workerclass-webhook"
) -> bytes:
    """A serving certificate signed by ``ca`` (PEM), valid from an hour ago for ``days`` (negative: expired)."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    start = now - datetime.timedelta(hours=1) + (datetime.timedelta(days=days) if days < 0 else datetime.timedelta())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)]))
        .issuer_name(ca[1].subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=days))
        .sign(ca[0], hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM)


def pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


#: the CA cert-manager's cainjector writes into every caBundle, and the one that signed the Secret
CA = certificate_authority("workerclass-webhook-ca")
CA_PEM = pem(CA[1])


def tls_secret(certificate: bytes, name: str = SECRET, namespace: str = NAMESPACE) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/tls",
        "metadata": {"name": name, "namespace": namespace},
        "data": {
            "tls.crt": base64.b64encode(certificate).decode(),
            "tls.key": base64.b64encode(KEY_MARKER).decode(),
        },
    }


#: kind -> (group, version, plural, namespaced): what the emulator serves
SERVED: dict[str, tuple[str, str, str, bool]] = {
    "MutatingWebhookConfiguration": ("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations", False),
    "ValidatingWebhookConfiguration": ("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations", False),
    "Service": ("", "v1", "services", True),
    "Secret": ("", "v1", "secrets", True),
    "Deployment": ("apps", "v1", "deployments", True),
    "PodDisruptionBudget": ("policy", "v1", "poddisruptionbudgets", True),
    "KubernetesNodes": ("apps.cozystack.io", "v1alpha1", "kubernetesnodes", True),
    "ComputePlane": ("apps.cozystack.io", "v1alpha1", "computeplanes", True),
    "CustomResourceDefinition": ("apiextensions.k8s.io", "v1", "customresourcedefinitions", False),
}

Objects = list[dict[str, Any]]


def resource_of(kind: str) -> kmock.resource:
    group, version, plural, _ = SERVED[kind]
    return kmock.resource(group, version, plural)


def kairos_crd(distributions: tuple[str, ...] = ("k0s", "k3s", "kubeadm")) -> dict[str, Any]:
    """The Kairos bootstrap provider's template CRD, reduced to what preflight reads (the
    ``distribution`` enum of the version the render writes)."""
    distribution = {"type": "string", "enum": list(distributions)}
    spec = {"type": "object", "properties": {"distribution": distribution}}
    template = {"type": "object", "properties": {"spec": spec}}
    schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": {"template": template}}}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "kairosconfigtemplates.bootstrap.cluster.x-k8s.io"},
        "spec": {
            "group": "bootstrap.cluster.x-k8s.io",
            "scope": "Namespaced",
            "names": {"kind": "KairosConfigTemplate", "plural": "kairosconfigtemplates"},
            "versions": [{"name": "v1beta2", "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}}],
        },
    }


def healthy_install(*, ready: int = 2, inject_ca: bool = True, secret: bool = True) -> Objects:
    """The generated install as the cluster holds it: status reported, the CA injected, the serving
    Secret (``secret``) signed by that CA, and a Kairos bootstrap provider with the kubeadm path."""
    objects = copy.deepcopy(webhook_manifests(InstallOptions()))
    for obj in objects:
        if obj["kind"] == "Deployment":
            obj["status"] = {"replicas": obj["spec"]["replicas"], "readyReplicas": ready}
        if inject_ca and "webhooks" in obj:
            for item in obj["webhooks"]:
                item["clientConfig"]["caBundle"] = base64.b64encode(CA_PEM).decode()
    if secret:
        objects.append(tls_secret(serving_certificate(CA)))
    objects.append(kairos_crd())
    objects += [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}
        for name, labels in (
            ("kube-system", {"kubernetes.io/metadata.name": "kube-system"}),
            (TENANT, {"kubernetes.io/metadata.name": TENANT, "tenant": "true"}),
        )
    ]
    return objects


def find(objects: Objects, kind: str) -> dict[str, Any]:
    return next(obj for obj in objects if obj["kind"] == kind)


def webhook(objects: Objects, path: str) -> dict[str, Any]:
    for obj in objects:
        for item in obj.get("webhooks", []):
            if item["clientConfig"].get("service", {}).get("path") == path:
                return item  # type: ignore[no-any-return]
    raise LookupError(path)


def pool(name: str, namespace: str = TENANT) -> dict[str, Any]:
    return {
        "apiVersion": "apps.cozystack.io/v1alpha1",
        "kind": "KubernetesNodes",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"cluster": "example", "version": "v1.35", "minReplicas": 1, "maxReplicas": 2},
    }


def seed(emulator: kmock.KubernetesEmulator, objects: Objects, *, skip: tuple[str, ...] = ()) -> None:
    """Serve every kind of :data:`SERVED` (but ``skip``) and store the objects of those kinds."""
    for kind, (_, _, _, namespaced) in SERVED.items():
        if kind not in skip:
            emulator.resources[resource_of(kind)] = kmock.ResourceInfo(kind=kind, namespaced=namespaced)
    for obj in objects:
        if obj["kind"] in SERVED and obj["kind"] not in skip:
            metadata = obj["metadata"]
            emulator.objects[resource_of(obj["kind"]), metadata.get("namespace"), metadata["name"]] = obj


def refuse(emulator: kmock.KubernetesEmulator, kind: str, status: int = 403, reason: str = "Forbidden") -> None:
    """Every list of ``kind`` is answered ``status``, with a message that must never be printed."""
    message = f"{SERVED[kind][2]} is forbidden: User secret-user cannot list (server message)"
    emulator["list", resource_of(kind)] << kmock.KubernetesError(status=status, reason=reason, message=message)


class Refused(Exception):
    """A client error as lightkube raises it for a non-JSON answer: only the response's status."""

    def __init__(self, code: int) -> None:
        super().__init__("a server message that must never be printed")
        self.response = SimpleNamespace(status_code=code)


class WithNamespaces:
    """A lightkube client whose Namespace lists come from ``namespaces`` (or fail with ``refused``)."""

    def __init__(self, client: Any, namespaces: Objects, refused: int | None = None) -> None:
        self.client = client
        self.namespaces = namespaces
        self.refused = refused
        self.namespace_lists = 0

    def get(self, resource: Any, name: str, **scope: Any) -> Any:
        return self.client.get(resource, name, **scope)

    def list(self, resource: Any, **scope: Any) -> Iterator[Any]:
        if getattr(resource, "__name__", "") != "Namespace":
            return iter(self.client.list(resource, **scope))
        self.namespace_lists += 1
        if self.refused is not None:
            raise Refused(self.refused)
        return iter(copy.deepcopy(self.namespaces))

    def close(self) -> None:
        self.client.close()


def namespaces(objects: Objects) -> Objects:
    return [obj for obj in objects if obj["kind"] == "Namespace"]


def kubeconfig(server: str, *, token: str = TOKEN, context: str = "kmock") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": context, "cluster": {"server": server}}],
        "users": [{"name": "reader", "user": {"token": token}}],
        "contexts": [{"name": context, "context": {"cluster": context, "user": "reader"}}],
        "current-context": context,
    }


def write_kubeconfig(path: Path, server: str, **options: Any) -> Path:
    path.write_text(yaml.safe_dump(kubeconfig(server, **options)))
    return path
