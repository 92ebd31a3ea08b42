"""The kinds a State reads, in the shape the State and its readers index them by.

Every value here is taken from :mod:`workerclass.api.resources` (the one table of the API we
touch); the names are kept because the State's readers import them from :mod:`workerclass.state`.
Its edge: no declarations of its own, only views of that table.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from ..api.resources import (
    APPLICATION_KIND_LABEL,
    APPS,
    AUXILIARY_KINDS,
    CLUSTER_RELEASE_PREFIX,
    COZYSTACK,
    FLUX,
    INSTANCETYPE,
    POOL_KINDS,
    RESOURCES,
)

__all__ = [
    "APPLICATION_KIND_LABEL",
    "APPS",
    "AUXILIARY_KINDS",
    "CLUSTER_RELEASE_PREFIX",
    "COZYSTACK",
    "FLUX",
    "INSTANCETYPE_GROUP",
    "INSTANCETYPE_KIND",
    "KINDS",
    "POOL_KINDS",
]

#: the instance types' API group and kind: read into :attr:`State.instancetypes`, not indexed as objects
INSTANCETYPE_GROUP = INSTANCETYPE.group
INSTANCETYPE_KIND = INSTANCETYPE.kind

#: kind -> (API group, namespaced, dependency rank for ``check`` ordering), for the kinds indexed as
#: objects (every resource but the instance types, which are data, not admitted)
KINDS: Mapping[str, tuple[str, bool, int]] = MappingProxyType(
    {
        resource.kind: (resource.group, resource.namespaced, resource.rank)
        for resource in RESOURCES
        if resource.role != "instancetype"
    }
)
