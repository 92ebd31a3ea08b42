"""What the cluster's Cluster API providers can do for the pools workerclass renders: the one
switch between a Kairos pool's two bootstrap paths.

Kairos pools join through kubeadm (the design page). Where the cluster serves a Kairos bootstrap
provider whose ``KairosConfigTemplate`` (:data:`~workerclass.render.templates.KAIROS_BOOTSTRAP_API`)
takes ``distribution: kubeadm``, the render writes that template (the provider path). No released
provider does: kairos-io/cluster-api-provider-kairos's CRD lists only ``k0s`` and ``k3s``, its
kubeadm work is unreleased, and its releases need a newer Cluster API than Cozystack's v1.10.1; a
provider that knows no ``distribution`` field would have the API server prune it. Everywhere else
a Kairos pool takes the data-secret path: its kubeadm join as a cloud-config Secret the
MachineDeployment names (:mod:`workerclass.render.kairos_bootstrap`), which needs no bootstrap
provider. :func:`kairos_kubeadm` reads the provider's CRD (a plain dict, as the API server or a
STATE folder holds it) and says whether it takes kubeadm; :func:`kairos_path` is the switch the
worker controller, ``render`` and ``preflight`` share.

Its edge: plain dicts in, a verdict out; reading the CRD is the caller's I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..render.templates import (
    KAIROS_BOOTSTRAP_API,
    KAIROS_DATA_SECRET_PATH,
    KAIROS_DISTRIBUTION,
    KAIROS_PROVIDER_PATH,
)
from ..state import State

__all__ = ["KAIROS_TEMPLATE_CRD", "ProviderSupport", "kairos_kubeadm", "kairos_path", "kairos_path_of"]

#: the CRD the Kairos bootstrap provider installs for the template the provider path writes
KAIROS_TEMPLATE_CRD = "kairosconfigtemplates.bootstrap.cluster.x-k8s.io"

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
            f"the cluster has no {KAIROS_TEMPLATE_CRD} CRD (no Kairos bootstrap provider)",
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
            f"server would drop {KAIROS_DISTRIBUTION}",
        )
    allowed = field.get("enum")
    if isinstance(allowed, list) and KAIROS_DISTRIBUTION not in allowed:
        listed = ", ".join(str(value) for value in allowed)
        return ProviderSupport(
            False,
            f"the Kairos bootstrap provider's {group_version} KairosConfigTemplate allows {where} "
            f"{listed} only, not {KAIROS_DISTRIBUTION} (no released upstream provider has the kubeadm path)",
        )
    return ProviderSupport(True)


def kairos_path(crd: Mapping[str, Any] | None) -> str:
    """The bootstrap path of the cluster's Kairos pools: :data:`KAIROS_PROVIDER_PATH` where ``crd``
    takes ``distribution: kubeadm``, else :data:`KAIROS_DATA_SECRET_PATH`."""
    return KAIROS_PROVIDER_PATH if kairos_kubeadm(crd).supported else KAIROS_DATA_SECRET_PATH


def kairos_path_of(state: State) -> str:
    """:func:`kairos_path` of the CRD a STATE folder holds (none: the data-secret path, as on a
    cluster without the CRD, Cozystack as it ships)."""
    for record in state.auxiliary:
        if record.kind == "CustomResourceDefinition" and record.name == KAIROS_TEMPLATE_CRD:
            return kairos_path(record.obj)
    return KAIROS_DATA_SECRET_PATH
