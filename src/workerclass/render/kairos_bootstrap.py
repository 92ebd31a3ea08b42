"""A Kairos pool's bootstrap data: the ``#cloud-config`` its machines boot with, as the Secret the
MachineDeployment names in ``bootstrap.dataSecretName`` (the data-secret path).

Cluster API needs no bootstrap provider for a machine whose ``bootstrap.dataSecretName`` names a
Secret of type ``cluster.x-k8s.io/secret`` with the key ``value``: the infrastructure provider hands
those bytes to the VM (CAPK v0.1.10: the ``<secret>-userdata`` Secret of the VM's cloud-init,
``controllers/kubevirtmachine_controller.go:555-601``; unchanged where the KubevirtCluster is
externally managed, as Cozystack's Kamaji-managed one is: otherwise CAPK adds a ``capk`` user with
the cluster's own SSH key to a cloud-config, ``:203-214``, ``:571-579``). A Kairos image reads them as
its cloud-config, and Kairos's kubeadm provider (kairos-io/provider-kubeadm at ``da12c04``) turns
its ``cluster:`` block into a ``kubeadm join``. What it reads, and the three traps of its source
this module is written against:

- ``cluster.role: worker`` and ``cluster.control_plane_host`` (``main.go:112-121``: the host gets
  ``:6443`` when it has no port); ``cluster.config`` is the kubeadm configuration as YAML text
  (``clusterplugin.Cluster.Options``, yaml key ``config``), read as ``clusterConfiguration``,
  ``joinConfiguration`` and ``kubeletConfiguration`` (``domain/kubeadm_types.go:9-14``,
  ``main.go:160-163``).
- ``clusterConfiguration.kubernetesVersion`` is required: the provider parses it to choose the
  kubeadm API and stops when it cannot (``main.go:84-86``, ``main.go:202-208``,
  ``utils/misc.go:20-26``). It is the pool's exact Kubernetes patch (the disk's).
- ``cluster_token`` is not a kubeadm token: the provider hashes it into one
  (``utils/certs.go:16-21``, ``main.go:117``), used only when the join configuration has no
  discovery of its own. So the real bootstrap token goes in
  ``joinConfiguration.discovery.bootstrapToken.token``, and ``cluster_token`` is a non-secret
  identifier of the pool.
- Without an explicit ``discovery.bootstrapToken`` the provider writes one with
  ``unsafeSkipCAVerification: true`` (``stages/join.go:108-115``; v1beta3: ``:70-77``). Ours is
  always explicit and pins the tenant cluster's CA with ``caCertHashes`` (``sha256:`` of the CA
  certificate's SubjectPublicKeyInfo, as kubeadm computes it), never skipping verification.

The join's run-time inputs are the ones Cozystack's talos-reconcile Job reads for Talos workers of
the same cluster: the bootstrap token (Secret ``kubernetes-<cluster>-talos-secrets``, key
``bootstrapToken``, which Cozystack's ``kubernetes`` chart creates) and the tenant CA (Secret
``kubernetes-<cluster>-ca``, key ``ca.crt``, Kamaji's), and the endpoint the Talos workers dial,
``kubernetes-<cluster>.<namespace>.svc:6443`` (a name the parent chart's KamajiControlPlane lists
in its ``certSANs`` from its first render on, so the join's TLS check holds without a Talos pool's
Job). The render never knows the token or the CA:
:func:`bootstrap_secret` writes ``${BOOTSTRAP_TOKEN}`` and ``${CA_CERT_HASH}`` in their place (what
``workerclass render`` prints, in ``stringData``), and names the Secret
``kubernetes-<cluster>-<pool>-<hash6>`` by that redacted text, so the name is a function of the
pool's settings alone: a change of users, key, version or endpoint is a new Secret, a new
``dataSecretName``, a new MachineSet and replacement workers, which ``plan`` predicts; a rotated
token or CA is written under the same name and reaches only machines created afterwards.
:func:`with_join_inputs` (the worker controller's, with the values it read) fills them in
structurally, never by text substitution of tenant-written values, and returns the Secret as it is
applied (``data.value``).

Its edge: the effective settings in, plain dicts out; the inputs' bytes in, a Secret out. Nothing
here logs, and no error message quotes an input.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Mapping
from typing import Any

import yaml

from ..chart.values import copy_values
from ..resolve.effective import Effective
from .errors import RenderError
from .hash import named_by_content
from .text import yaml_document

__all__ = [
    "BOOTSTRAP_SECRET_TYPE",
    "CA_HASH_PLACEHOLDER",
    "CLOUD_CONFIG_HEADER",
    "JOIN_INPUTS",
    "KAIROS_DATA_SECRET_USER",
    "TOKEN_PLACEHOLDER",
    "JoinInputsInvalid",
    "bootstrap_secret",
    "ca_cert_hashes",
    "cloud_config",
    "is_bootstrap_secret",
    "join_input_names",
    "with_join_inputs",
]

BOOTSTRAP_SECRET_TYPE = "cluster.x-k8s.io/secret"
CLOUD_CONFIG_HEADER = "#cloud-config"
#: in the rendered (redacted) cloud-config: the run-time inputs, as ``render --talos-config-template`` writes them
TOKEN_PLACEHOLDER = "${BOOTSTRAP_TOKEN}"
CA_HASH_PLACEHOLDER = "${CA_CERT_HASH}"
#: the guest user (the design page: a supplied key authorizes a sudo-capable user)
KAIROS_DATA_SECRET_USER = "kairos"
_ADMIN_GROUP = "admin"
#: the parent's Secrets and keys the join reads (Cozystack's talos-reconcile Job reads the same)
JOIN_INPUTS = (("-talos-secrets", "bootstrapToken"), ("-ca", "ca.crt"))
#: kubeadm's bootstrap token: ``[a-z0-9]{6}.[a-z0-9]{16}``
_TOKEN = re.compile(r"[a-z0-9]{6}\.[a-z0-9]{16}")
_PEM = re.compile(rb"-----BEGIN CERTIFICATE-----\s*(.*?)\s*-----END CERTIFICATE-----", re.S)
_API_PORT = 6443
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class JoinInputsInvalid(ValueError):
    """The run-time inputs cannot make a join (the message never quotes them)."""


def _endpoint_host(effective: Effective) -> str:
    return f"kubernetes-{effective.cluster}.{effective.namespace}.svc"


def join_input_names(cluster_name: str) -> tuple[tuple[str, str], ...]:
    """``(secret, key)`` of the bootstrap token and the CA for the CAPI cluster ``cluster_name``."""
    return tuple((f"{cluster_name}{suffix}", key) for suffix, key in JOIN_INPUTS)


def _kubeadm_config(effective: Effective, token: str, ca_hashes: list[str]) -> dict[str, Any]:
    host = _endpoint_host(effective)
    return {
        "clusterConfiguration": {"kubernetesVersion": effective.kubernetes_version},
        "joinConfiguration": {
            "discovery": {
                "bootstrapToken": {
                    "apiServerEndpoint": f"{host}:{_API_PORT}",
                    "token": token,
                    "caCertHashes": ca_hashes,
                    "unsafeSkipCAVerification": False,
                }
            },
        },
    }


def _document(effective: Effective, base: str, token: str, ca_hashes: list[str]) -> dict[str, Any]:
    user: dict[str, Any] = {"name": KAIROS_DATA_SECRET_USER, "groups": [_ADMIN_GROUP], "lockPasswd": True}
    if effective.ssh_key:
        # One key authorizes a sudo-capable guest user (the page); without one nobody logs in.
        user["ssh_authorized_keys"] = [effective.ssh_key]
    return {
        "users": [user],
        "cluster": {
            # not a secret: the provider only hashes it into a token its own discovery would use,
            # and ours is explicit (utils/certs.go:16-21, stages/join.go:108-115)
            "cluster_token": f"{effective.namespace}/{base}",
            "control_plane_host": _endpoint_host(effective),
            "role": "worker",
            "config": _kubeadm_config(effective, token, ca_hashes),
        },
    }


#: stands for ``cluster.config`` while the rest of the document is written
_CONFIG_SLOT = "workerclass-kubeadm-config"


def _text(document: Mapping[str, Any]) -> str:
    """The cloud-config text: the header, then the document with keys sorted (the project's YAML
    writer), ``cluster.config`` (the kubeadm configuration, a mapping here) as a literal block of
    YAML text, as the provider reads it (a string)."""
    outer = copy_values(dict(document))
    config = yaml_document(outer["cluster"]["config"])
    outer["cluster"]["config"] = _CONFIG_SLOT
    block = "|\n" + "".join(f"    {line}\n" for line in config.splitlines())
    text = yaml_document(outer).replace(f"config: {_CONFIG_SLOT}\n", f"config: {block}", 1)
    return f"{CLOUD_CONFIG_HEADER}\n{text}"


def cloud_config(effective: Effective, base: str, *, token: str, ca_hashes: list[str]) -> str:
    """The pool's cloud-config with these join inputs (``base``: ``kubernetes-<cluster>-<pool>``)."""
    return _text(_document(effective, base, token, ca_hashes))


def bootstrap_secret(effective: Effective, base: str, namespace: str) -> dict[str, Any]:
    """The pool's bootstrap data Secret as rendered: the join inputs redacted, named by that text."""
    text = cloud_config(effective, base, token=TOKEN_PLACEHOLDER, ca_hashes=[CA_HASH_PLACEHOLDER])
    metadata = named_by_content(base, namespace, {"value": text})
    metadata["labels"] = {"cluster.x-k8s.io/cluster-name": f"kubernetes-{effective.cluster}"}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": metadata,
        "type": BOOTSTRAP_SECRET_TYPE,
        "stringData": {"value": text},
    }


def is_bootstrap_secret(obj: Mapping[str, Any]) -> bool:
    """Whether ``obj`` is a bootstrap data Secret as :func:`bootstrap_secret` renders it."""
    return obj.get("kind") == "Secret" and obj.get("type") == BOOTSTRAP_SECRET_TYPE


# --------------------------------------------------------------------------- the run-time inputs


def _der_element(data: bytes, at: int) -> tuple[int, int, int]:
    """``(tag, start of content, end of content)`` of the DER element at ``at``."""
    if at + 2 > len(data):
        raise JoinInputsInvalid("the CA certificate is truncated")
    tag, length = data[at], data[at + 1]
    at += 2
    if length & 0x80:
        count = length & 0x7F
        if count == 0 or count > 4 or at + count > len(data):
            raise JoinInputsInvalid("the CA certificate has an invalid length")
        length = int.from_bytes(data[at : at + count], "big")
        at += count
    if at + length > len(data):
        raise JoinInputsInvalid("the CA certificate is truncated")
    return tag, at, at + length


def _spki(der: bytes) -> bytes:
    """The DER SubjectPublicKeyInfo of an X.509 certificate (RFC 5280 4.1)."""
    tag, start, _ = _der_element(der, 0)  # Certificate
    if tag != 0x30:
        raise JoinInputsInvalid("the CA is not an X.509 certificate")
    tag, at, end = _der_element(der, start)  # TBSCertificate
    if tag != 0x30:
        raise JoinInputsInvalid("the CA is not an X.509 certificate")
    fields: list[tuple[int, int, int]] = []
    while at < end and len(fields) < 7:
        element = _der_element(der, at)
        fields.append((element[0], at, element[2]))
        at = element[2]
    if fields and fields[0][0] == 0xA0:  # [0] version
        fields = fields[1:]
    # serialNumber, signature, issuer, validity, subject, subjectPublicKeyInfo
    if len(fields) < 6 or fields[5][0] != 0x30:
        raise JoinInputsInvalid("the CA certificate has no public key")
    return der[fields[5][1] : fields[5][2]]


def ca_cert_hashes(ca_pem: bytes) -> list[str]:
    """kubeadm's ``caCertHashes`` for a PEM bundle: ``sha256:<hex>`` of each certificate's
    SubjectPublicKeyInfo (a bundle mid-rotation pins every CA it holds)."""
    hashes: list[str] = []
    for block in _PEM.findall(ca_pem):
        try:
            der = base64.b64decode(b"".join(block.split()), validate=True)
        except ValueError:
            raise JoinInputsInvalid("the CA certificate is not valid base64") from None
        digest = f"sha256:{hashlib.sha256(_spki(der)).hexdigest()}"
        if digest not in hashes:
            hashes.append(digest)
    if not hashes:
        raise JoinInputsInvalid("the CA holds no PEM certificate")
    return hashes


def with_join_inputs(secret: Mapping[str, Any], *, token: str, ca_pem: bytes) -> dict[str, Any]:
    """The rendered Secret ``secret`` with the bootstrap token and the CA's hashes in place, as the
    controller applies it (``data.value``, no ``stringData``). Raises :class:`JoinInputsInvalid`."""
    if not _TOKEN.fullmatch(token):
        raise JoinInputsInvalid("the bootstrap token is not a kubeadm bootstrap token ([a-z0-9]{6}.[a-z0-9]{16})")
    hashes = ca_cert_hashes(ca_pem)
    text = str((secret.get("stringData") or {}).get("value") or "")
    if not text.startswith(CLOUD_CONFIG_HEADER):
        raise RenderError("the bootstrap Secret holds no cloud-config")
    document = yaml.load(text, Loader=_LOADER)  # our own text: PyYAML's safe loader, in C where built
    config = yaml.load(document["cluster"]["config"], Loader=_LOADER)
    discovery = config["joinConfiguration"]["discovery"]["bootstrapToken"]
    if discovery.get("token") != TOKEN_PLACEHOLDER or discovery.get("caCertHashes") != [CA_HASH_PLACEHOLDER]:
        raise RenderError("the bootstrap Secret's join inputs are not the render's placeholders")
    discovery["token"] = token
    discovery["caCertHashes"] = hashes
    document["cluster"]["config"] = config
    out: dict[str, Any] = copy_values(dict(secret))
    out.pop("stringData", None)
    out["data"] = {"value": base64.b64encode(_text(document).encode()).decode()}
    return out
