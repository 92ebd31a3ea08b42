"""The versioned template hash: which effective settings roll a pool's machines.

Owns the explicit list of hashed fields and their canonical form. Its edge: it reads an
:class:`~workerclass.resolve.effective.Effective` and returns text; it renders nothing.

Modelled on Karpenter's drift hash (``designs/drift-hash-versioning.md``): a canonical JSON
document of an *explicit* field list, never "the whole object minus some fields", so that a
new field is left out until someone decides it should roll machines. The hash names both
templates of a pool (``<pool>-<hash>``) and is stored beside :data:`HASH_VERSION` in the
annotations :data:`HASH_ANNOTATION` and :data:`HASH_VERSION_ANNOTATION`.

In the hash (what the machines boot and how they bootstrap): bootstrap family,
infrastructure, exact Kubernetes version, the image (source, reference, version, schematic,
Proxmox template tags), the installer image, Talos version/schematic/installer repository/
registry mirrors, kernel modules, the machine shape (instance type or resources, disk size,
storage class, GPUs; storage class and GPUs on KubeVirt only) and the Kairos SSH key.

Not in the hash (changed in place or not part of the machine): replicas and autoscaling
bounds, health-check settings, roles, labels and taints (Cluster API propagates them to
Machines and Nodes in place), the class name (a classless pool and a class resolving to the
same settings boot the same machines), the Image Factory URL on its own (it reaches the
machines only through the image reference, which is hashed) and the Image Factory CA's text
(trust for the CDI import: it does not change the bytes booted, and its ConfigMap has a stable
name). Whether a factory import has a CA at all *is* hashed, because the template then names
the ConfigMap: template content must be a function of the hashed fields and the pool identity.

Rules for bumping :data:`HASH_VERSION` (write the reason in the history below). Template
names are ``<pool>-<hash>`` and templates are immutable, so a new hash is a new template and
a rollout of the pool:

- Changing how unchanged settings hash (a field added to or removed from the list, a renamed
  key, another canonical form or digest, a default filled in before hashing) needs a bump, and
  must not roll anything by itself: whoever reconciles live pools compares the stored version
  annotation with :data:`HASH_VERSION` and, when they differ, decides drift field by field
  (as :mod:`workerclass.ops.plan` names reasons, from the effective settings) and re-stamps
  the annotations of the running templates instead of renaming them.
- Changing template content for unchanged settings (a renderer change: a new template field, a
  new rendering default) is a rollout of every affected pool, because the name must change with
  the content. Make it only on purpose: add a ``layout`` entry to the hashed document for the
  affected family, bump the version, and name the pools it rolls in the history. Otherwise
  template content must stay a function of the hashed fields and the pool identity (the tests
  check this for every field).
- Adding an optional field whose absent value is left out of the document (see
  :func:`_drop_empty`) needs no bump: every existing hash stays the same.
- Objects other than the two templates (MachineDeployment metadata, MachineHealthCheck, the CA
  ConfigMap) change in place; their rendering never needs a bump.

History: ``v1``: first version.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from ..resolve.effective import Effective
from .defaults import machine_shape, template_tags

__all__ = [
    "HASH_ANNOTATION",
    "HASH_LENGTH",
    "HASH_VERSION",
    "HASH_VERSION_ANNOTATION",
    "hash_document",
    "template_hash",
]

HASH_VERSION = "v1"
HASH_ANNOTATION = "workerclass.cozystack.io/template-hash"
HASH_VERSION_ANNOTATION = "workerclass.cozystack.io/template-hash-version"
#: Hex digits of SHA-256 kept in names: 40 bits, like the pod-template-hash of a ReplicaSet.
HASH_LENGTH = 10


def _drop_empty(document: dict[str, Any]) -> dict[str, Any]:
    """Leave absent values (``None``) out, so that a new optional field keeps old hashes."""
    return {key: value for key, value in document.items() if value is not None}


def hash_document(effective: Effective) -> dict[str, Any]:
    """The explicit field list that is hashed, as plain JSON data (shown by ``plan``)."""
    talos = effective.talos
    image = effective.image
    shape = machine_shape(effective)
    document: dict[str, Any] = {
        "bootstrap": effective.bootstrap,
        "infrastructure": effective.infrastructure,
        "kubernetesVersion": effective.kubernetes_version,
        "image": _drop_empty(
            {
                "source": image.source,
                "reference": image.reference,
                "version": image.version,
                "schematicID": image.schematic_id,
                "templateTags": template_tags(image.template_tags),
            }
        ),
        "installerImage": effective.installer_image,
        # Whether the CDI import carries a CA (the template then references its ConfigMap),
        # never the CA itself: rotating trust must not roll machines.
        "imageFactoryCA": True if image.source == "factory" and talos is not None and talos.image_factory_ca else None,
        "talos": _drop_empty(
            {
                "version": talos.version,
                "schematicID": talos.schematic_id,
                "installerRepository": talos.installer_repository,
                "registryMirrors": {
                    registry: list(endpoints) for registry, endpoints in sorted(talos.registry_mirrors.items())
                },
            }
        )
        if talos is not None
        else None,
        "kernelModules": [
            {"name": module.name, "parameters": list(module.parameters)} for module in effective.kernel_modules
        ]
        if effective.bootstrap == "talos"
        else None,
        "machine": shape.as_hash(),
        "sshKey": effective.ssh_key if effective.bootstrap == "kairos" else None,
    }
    return _drop_empty(document)


def canonical_json(document: Any) -> str:
    """Sorted keys, no insignificant whitespace, UTF-8 text: one byte string per value."""
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def template_hash(effective: Effective) -> str:
    """The first :data:`HASH_LENGTH` hex digits of SHA-256 over the canonical hash document."""
    payload = canonical_json(hash_document(effective)).encode("utf-8")
    return hashlib.sha256(payload).hexdigest()[:HASH_LENGTH]
