"""``dashboard-resourcemap.yaml``: the Role and RoleBinding that let a tenant's dashboard read the pool.

Owns those two objects and the port of the cozy-lib RBAC helper they call
(``cozy-lib.rbac.subjectsForTenantAndAccessLevel`` with its ``accessLevelsAtOrAbove`` and
``allParentTenantsAndThis``, ``charts/cozy-lib/templates/_rbac.tpl``). Its edge: a
:class:`ChartInput` in, the parsed objects out, in the template's document order. A namespace
that is no tenant is the chart's ``fail``, raised here as :class:`InvalidTenant`.
"""

from __future__ import annotations

import functools
from typing import Any

from .context import ChartInput

__all__ = [
    "ACCESS_LEVELS",
    "InvalidTenant",
    "access_levels_at_or_above",
    "all_parent_tenants_and_this",
    "dashboard_resources_name",
    "render_dashboard",
    "subjects_for_tenant_and_access_level",
]

#: ``cozy-lib.rbac.accessLevelMap``.
ACCESS_LEVELS: dict[str, int] = {"view": 0, "use": 1, "admin": 2, "super-admin": 3}

RBAC_GROUP = "rbac.authorization.k8s.io"


class InvalidTenant(ValueError):
    """``'NS' is not a valid tenant identifier``: cozy-lib refuses a namespace outside ``tenant-*``."""


def access_levels_at_or_above(level: str) -> list[str]:
    """``cozy-lib.rbac.accessLevelsAtOrAbove``: level names by name order (Go ranges a map sorted)."""
    if level not in ACCESS_LEVELS:
        raise ValueError(f"encountered access level of {level}, allowed values are {sorted(ACCESS_LEVELS)}")
    floor = ACCESS_LEVELS[level]
    return [name for name in sorted(ACCESS_LEVELS) if ACCESS_LEVELS[name] >= floor]


def all_parent_tenants_and_this(namespace: str) -> list[str]:
    """``cozy-lib.rbac.allParentTenantsAndThis``: ``tenant-a``, ``tenant-a-b``, ..., then ``tenant-root``."""
    if not namespace.startswith("tenant-"):
        raise InvalidTenant(f"'{namespace}' is not a valid tenant identifier")
    parts = [*namespace.split("-"), ""]
    tenants = ["-".join(parts[:end]) for end in range(2, len(parts))]
    if namespace != "tenant-root":
        tenants.append("tenant-root")
    return tenants


def subjects_for_tenant_and_access_level(level: str, namespace: str) -> list[dict[str, str]]:
    """``cozy-lib.rbac.subjectsForTenantAndAccessLevel``: per tenant its ServiceAccount, then its groups."""
    return [dict(subject) for subject in _subjects(level, namespace)]


@functools.lru_cache(maxsize=256)
def _subjects(level: str, namespace: str) -> tuple[dict[str, str], ...]:
    """Computed once per (level, namespace); callers get fresh copies (never hand these out)."""
    levels = access_levels_at_or_above(level)
    subjects: list[dict[str, str]] = []
    for tenant in all_parent_tenants_and_this(namespace):
        subjects.append({"kind": "ServiceAccount", "name": tenant, "namespace": tenant})
        subjects.extend({"kind": "Group", "name": f"{tenant}-{lvl}", "apiGroup": RBAC_GROUP} for lvl in levels)
    return tuple(subjects)


def dashboard_resources_name(inp: ChartInput) -> str:
    return f"{inp.release}-dashboard-resources"


def render_dashboard(inp: ChartInput) -> list[dict[str, Any]]:
    """The documents of ``dashboard-resourcemap.yaml``: the Role, then the RoleBinding."""
    name = dashboard_resources_name(inp)
    role = {
        "apiVersion": f"{RBAC_GROUP}/v1",
        "kind": "Role",
        "metadata": {"name": name},
        "rules": [
            {
                "apiGroups": ["cozystack.io"],
                "resources": ["workloadmonitors"],
                "resourceNames": [f"{inp.cluster_name}-{inp.group_name}"],
                "verbs": ["get", "list", "watch"],
            }
        ],
    }
    binding = {
        "kind": "RoleBinding",
        "apiVersion": f"{RBAC_GROUP}/v1",
        "metadata": {"name": name},
        "subjects": subjects_for_tenant_and_access_level("use", inp.namespace),
        "roleRef": {"kind": "Role", "name": name, "apiGroup": RBAC_GROUP},
    }
    return [role, binding]
