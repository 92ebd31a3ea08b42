"""What a chart rendered by Helm's engine may give the controller to apply: the pool's scope.

Owns :func:`scope_failures`. A chart no digest vouches for renders through Helm's engine
(:mod:`workerclass.adapters.helm`) with the pool's values, which a tenant writes; the controller
applies what comes back with its own rights (server-side apply in every namespace, ``bind`` and
``escalate`` on roles). So an object is applied only where the chart the port was proved against
would put one:

- its kind is one the chart is known to render (:data:`CHART_KINDS`, at that ``apiVersion``);
- a namespaced object lies in the pool's namespace (or names none: Helm puts it there);
- the only cluster-scoped objects are the talos-reconcile Job's CoreDNS read: the ClusterRole
  ``<namespace>-<release>-talos-reconcile-coredns`` with exactly its one rule, and the
  ClusterRoleBinding of that name binding it to ServiceAccounts of the pool's namespace;
- a RoleBinding binds a Role (of the pool's namespace), never a ClusterRole (``admin`` bound in a
  tenant's namespace would be a grant the chart never makes);
- a Role grants no more than the chart's Roles do (:data:`CHART_GRANTS`), and names its objects
  where they do.

Helm's hooks (``helm.sh/hook``) are Helm's lifecycle and never applied (``ops.workers``): not judged.
Anything else refuses the pool, one :class:`~workerclass.violations.Violation` per object, naming
its kind, namespace and name and what is wrong. Its edge: plain dicts in, violations out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

from ..violations import Violation

__all__ = ["CHART_GRANTS", "CHART_KINDS", "COREDNS_RULES", "coredns_role_name", "scope_failures"]

_RBAC = "rbac.authorization.k8s.io"

#: kind -> (apiVersion, namespaced): what the kubernetes-nodes chart renders for a pool (its
#: templates as the port mirrors them: dashboard-resourcemap, nodegroup, talos-reconcile-job)
CHART_KINDS: Mapping[str, tuple[str, bool]] = MappingProxyType(
    {
        "ServiceAccount": ("v1", True),
        "Role": (f"{_RBAC}/v1", True),
        "RoleBinding": (f"{_RBAC}/v1", True),
        "ClusterRole": (f"{_RBAC}/v1", False),
        "ClusterRoleBinding": (f"{_RBAC}/v1", False),
        "CiliumNetworkPolicy": ("cilium.io/v2", True),
        "KubevirtMachineTemplate": ("infrastructure.cluster.x-k8s.io/v1alpha1", True),
        "MachineDeployment": ("cluster.x-k8s.io/v1beta1", True),
        "MachineHealthCheck": ("cluster.x-k8s.io/v1beta1", True),
        "WorkloadMonitor": ("cozystack.io/v1alpha1", True),
        "Job": ("batch/v1", True),
    }
)

#: the talos-reconcile Job's one cluster-wide grant: reading the tenant cluster's DNS Service
COREDNS_RULES: tuple[Mapping[str, Any], ...] = (
    MappingProxyType({"apiGroups": [""], "resources": ["services"], "resourceNames": ["kube-dns"], "verbs": ["get"]}),
)

#: (apiGroup, resource) -> (verbs, whether the chart names the objects): the grants of the chart's
#: Roles (the talos-reconcile Job's and the dashboard's); a Role of another chart grants within them
CHART_GRANTS: Mapping[tuple[str, str], tuple[frozenset[str], bool]] = MappingProxyType(
    {
        ("", "services"): (frozenset({"get"}), True),
        ("", "secrets"): (frozenset({"get"}), True),
        ("controlplane.cluster.x-k8s.io", "kamajicontrolplanes"): (frozenset({"get", "patch"}), True),
        ("bootstrap.cluster.x-k8s.io", "talosconfigtemplates"): (
            frozenset({"get", "create", "patch", "update"}),
            False,
        ),
        ("cozystack.io", "workloadmonitors"): (frozenset({"get", "list", "watch"}), True),
    }
)

_HOOK = "helm.sh/hook"
#: longest name quoted in a message (a name past the API server's limit is refused there anyway)
_NAME_LIMIT = 253


def coredns_role_name(namespace: str, release: str) -> str:
    """The talos-reconcile Job's ClusterRole and ClusterRoleBinding name for a pool's release."""
    return f"{namespace}-{release}-talos-reconcile-coredns"


def scope_failures(objects: Iterable[Mapping[str, Any]], *, namespace: str, release: str) -> list[Violation]:
    """Why the objects Helm's engine rendered for the pool ``release`` in ``namespace`` may not be
    applied (empty: all may), one violation per object out of the pool's scope (see the module)."""
    failures: list[Violation] = []
    for obj in objects:
        metadata = obj.get("metadata")
        metadata = metadata if isinstance(metadata, Mapping) else {}
        annotations = metadata.get("annotations")
        if isinstance(annotations, Mapping) and _HOOK in annotations:
            continue
        problem = _problem(obj, metadata, namespace=namespace, release=release)
        if problem:
            failures.append(
                Violation(
                    "Invalid",
                    "spec",
                    f"the chart (rendered by Helm's engine) renders {_named(obj, metadata)}: {problem}; nothing "
                    "of the pool is applied, only the chart's known kinds in the pool's namespace are",
                )
            )
    return failures


def _named(obj: Mapping[str, Any], metadata: Mapping[str, Any]) -> str:
    kind = str(obj.get("kind") or "an object without a kind")[:_NAME_LIMIT]
    name = str(metadata.get("name") or "")[:_NAME_LIMIT]
    where = str(metadata.get("namespace") or "")[:_NAME_LIMIT]
    return f"{kind} {where}/{name}" if where else f"{kind} {name}"


def _problem(obj: Mapping[str, Any], metadata: Mapping[str, Any], *, namespace: str, release: str) -> str:
    kind = obj.get("kind")
    known = CHART_KINDS.get(kind) if isinstance(kind, str) else None
    if known is None or obj.get("apiVersion") != known[0]:
        kinds = ", ".join(CHART_KINDS)
        return f"{obj.get('apiVersion')} {kind} is not a kind the chart is known to render ({kinds})"
    if not known[1]:
        return _cluster_wide(obj, metadata, namespace=namespace, release=release)
    if metadata.get("namespace") not in (None, "", namespace):
        return f"it lies outside the pool's namespace {namespace}"
    if kind == "RoleBinding":
        return _role_binding(obj)
    if kind == "Role":
        return _role(obj)
    return ""


def _cluster_wide(obj: Mapping[str, Any], metadata: Mapping[str, Any], *, namespace: str, release: str) -> str:
    """The CoreDNS ClusterRole and its binding, as the chart renders them; nothing else cluster-wide."""
    name = coredns_role_name(namespace, release)
    refused = (
        f"a cluster-wide object other than the talos-reconcile Job's CoreDNS read ({name}: get on the Service "
        "kube-dns, bound to ServiceAccounts of the pool's namespace)"
    )
    if metadata.get("name") != name or metadata.get("namespace"):
        return refused
    if obj.get("kind") == "ClusterRole":
        rules = obj.get("rules")
        if not isinstance(rules, list) or [_plain(rule) for rule in rules] != [_plain(r) for r in COREDNS_RULES]:
            return refused
        return ""
    role = obj.get("roleRef")
    if not (isinstance(role, Mapping) and role.get("kind") == "ClusterRole" and role.get("name") == name):
        return refused
    if role.get("apiGroup") not in (None, _RBAC):
        return refused
    subjects = obj.get("subjects")
    if not isinstance(subjects, list) or not all(_own_account(subject, namespace) for subject in subjects):
        return refused
    return ""


def _own_account(subject: Any, namespace: str) -> bool:
    return (
        isinstance(subject, Mapping)
        and subject.get("kind") == "ServiceAccount"
        and subject.get("namespace") == namespace
        and bool(subject.get("name"))
    )


def _role_binding(obj: Mapping[str, Any]) -> str:
    role = obj.get("roleRef")
    if isinstance(role, Mapping) and role.get("kind") == "Role" and role.get("apiGroup") in (None, _RBAC):
        return ""
    if isinstance(role, Mapping) and role.get("kind") == "ClusterRole":
        return f"it binds the ClusterRole {str(role.get('name'))[:_NAME_LIMIT]} (the chart binds only its own Roles)"
    return "its roleRef is not a Role of the pool's namespace"


def _role(obj: Mapping[str, Any]) -> str:
    rules = obj.get("rules")
    if rules is None:
        return ""
    if not isinstance(rules, list):
        return "its rules are not a list"
    for rule in rules:
        beyond = _beyond(rule)
        if beyond:
            return f"it grants more than the chart is known to ({beyond})"
    return ""


def _beyond(rule: Any) -> str:
    """What of one Role rule the chart's own Roles do not grant ("" when they do)."""
    if not isinstance(rule, Mapping) or rule.get("nonResourceURLs"):
        return "a rule that is not about resources"
    groups, resources, verbs = (_strings(rule.get(key)) for key in ("apiGroups", "resources", "verbs"))
    if groups is None or resources is None or verbs is None:
        return "a rule whose apiGroups, resources or verbs are not lists of names"
    named = bool(_strings(rule.get("resourceNames")))
    for group in groups:
        for resource in resources:
            allowed = CHART_GRANTS.get((group, resource))
            if allowed is None:
                return f"{resource} of the API group {group or 'core'!r}"
            extra = sorted(set(verbs) - allowed[0])
            if extra:
                return f"{', '.join(extra)} on {resource}"
            if allowed[1] and not named:
                return f"{resource} without resourceNames"
    return ""


def _strings(value: Any) -> list[str] | None:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        return None
    return list(value)


def _plain(value: Any) -> Any:
    """A rule as plain dicts and lists, to compare with :data:`COREDNS_RULES`."""
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value
