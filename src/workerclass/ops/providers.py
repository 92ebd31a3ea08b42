"""What the cluster's Cluster API providers can do for the pools workerclass renders.

Kairos pools join through the Kairos bootstrap provider's kubeadm path (the design page), which the
render writes as a ``KairosConfigTemplate`` of :data:`~workerclass.render.templates.KAIROS_BOOTSTRAP_API`
with ``distribution: kubeadm``. The upstream provider's CRD lists only ``k0s`` and ``k3s`` in that
enum today, and a provider that knows no ``distribution`` field at all would have the API server
prune it and default the machine to k0s: either way a Kairos pool would not join as designed.
:func:`kairos_kubeadm` reads the provider's CRD (a plain dict, as the API server or a STATE folder
holds it) and says whether the cluster can take the render; the worker controller applies nothing
for Kairos pools until it can, and ``preflight`` warns.

Its edge: plain dicts in, a verdict out; reading the CRD is the caller's I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..render.templates import KAIROS_BOOTSTRAP_API, KAIROS_DISTRIBUTION

__all__ = ["KAIROS_TEMPLATE_CRD", "KAIROS_UNSUPPORTED", "ProviderSupport", "kairos_kubeadm"]

#: the CRD the Kairos bootstrap provider installs for the template the render writes
KAIROS_TEMPLATE_CRD = "kairosconfigtemplates.bootstrap.cluster.x-k8s.io"
#: the reason the controller and preflight give when the cluster cannot take a Kairos pool's render
KAIROS_UNSUPPORTED = "KairosProviderUnsupported"

#: where the render's distribution lives in the template's schema
_DISTRIBUTION_PATH = ("spec", "template", "spec", "distribution")


@dataclass(frozen=True, slots=True)
class ProviderSupport:
    """Whether the cluster can take what the render writes; ``message`` says why not (empty when it can)."""

    supported: bool
    message: str = ""


def _schema_at(schema: Mapping[str, Any], path: tuple[str, ...]) -> Mapping[str, Any] | None:
    node: Any = schema
    for key in path:
        properties = node.get("properties") if isinstance(node, Mapping) else None
        if not isinstance(properties, Mapping) or not isinstance(properties.get(key), Mapping):
            return None
        node = properties[key]
    return node if isinstance(node, Mapping) else None


def kairos_kubeadm(crd: Mapping[str, Any] | None) -> ProviderSupport:
    """Whether the KairosConfigTemplate CRD ``crd`` (``None``: the cluster has none) serves the
    render's version and accepts ``distribution: kubeadm`` there."""
    group_version = KAIROS_BOOTSTRAP_API
    if not crd:
        return ProviderSupport(
            False,
            f"the cluster has no {KAIROS_TEMPLATE_CRD} CRD: install a Kairos bootstrap provider with the "
            f"{KAIROS_DISTRIBUTION} path before creating Kairos pools",
        )
    version = group_version.rpartition("/")[2]
    versions = (crd.get("spec") or {}).get("versions") or []
    served = next(
        (
            entry
            for entry in versions
            if isinstance(entry, Mapping) and entry.get("name") == version and entry.get("served")
        ),
        None,
    )
    if served is None:
        return ProviderSupport(
            False,
            f"the Kairos bootstrap provider's {KAIROS_TEMPLATE_CRD} CRD does not serve {group_version}, "
            "the version workerclass renders",
        )
    schema = ((served.get("schema") or {}).get("openAPIV3Schema")) or {}
    field = _schema_at(schema, _DISTRIBUTION_PATH)
    where = "spec.template.spec.distribution"
    if field is None:
        return ProviderSupport(
            False,
            f"the Kairos bootstrap provider's {group_version} KairosConfigTemplate has no {where} field: the API "
            f"server would drop the {KAIROS_DISTRIBUTION} path the design page requires",
        )
    allowed = field.get("enum")
    if isinstance(allowed, list) and KAIROS_DISTRIBUTION not in allowed:
        listed = ", ".join(str(value) for value in allowed)
        return ProviderSupport(
            False,
            f"the Kairos bootstrap provider's {group_version} KairosConfigTemplate allows {where} "
            f"{listed} only, not {KAIROS_DISTRIBUTION} (the upstream provider lacks the kubeadm path the "
            "design page requires): install a provider version that has it",
        )
    return ProviderSupport(True)
