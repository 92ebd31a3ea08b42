"""``talos-reconcile-job.yaml``: the talos-reconcile Job, its RBAC and network policy, and the
TalosConfigTemplate the Job applies.

Owns the seven documents of that template (ServiceAccount, Role, CiliumNetworkPolicy,
RoleBinding, ClusterRole, ClusterRoleBinding, Job, in the chart's order), the template's
``$jobContext`` (:func:`job_context`) and the worker machine config the Job's heredoc
``kubectl apply``s (:func:`talos_config_template`, read back from the script the way the shell
expands it). Its edge: a :class:`ChartInput` and the pool's :class:`Sizing` in, parsed objects
out; it performs no checks of its own beyond refusing kernel modules and an installer image that
would break out of the heredoc (the chart's ``fail``s are the ``checks`` module's).

Where the rest of the template lives: the ``talos-reconcile-job-spec`` define, read from the chart
in effect and rendered, the Job's name and the command script in :mod:`.talos_job_spec` (without the
chart's files, :class:`~.source.ChartTextMissing`); Helm's ``toYaml`` of the kernel modules
(go-yaml v2, byte for byte, for the name's hash) in :mod:`.goyaml`; PR 3571's kernel modules and
PR 3294's installer image with their character rule in :mod:`.kernel_modules`. With
``kernel_modules`` and ``installer_image`` both ``None`` the output is exactly the chart's.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from ..violations import Violation
from .context import ChartInput, ChartRefused
from .dashboard import RBAC_GROUP
from .goyaml import to_yaml
from .kernel_modules import heredoc_installer_image, kernel_modules_list
from .kubeyaml import k8s_load, plain_scalar
from .labels import common_labels
from .quantity import go_str, truthy
from .scope import coredns_role_name
from .sizing import Sizing
from .talos_job_spec import RESTS_KEPT, JobContext, JobSpec, as_spec, image_scalar, job_name, job_spec
from .values import kubectl_image, version_map

__all__ = [
    "applied_template",
    "coredns_name",
    "expand_heredoc",
    "job_context",
    "job_documents",
    "load_expanded",
    "reconcile_name",
    "render_talos_job",
    "render_talos_rbac",
    "talos_config_template",
]

#: ``$mgmtClusterDomain`` when ``_cluster`` names none.
DEFAULT_MANAGEMENT_DOMAIN = "cozy.local"


def _talos(inp: ChartInput) -> Mapping[str, Any]:
    talos = inp.values.get("talos")
    return talos if isinstance(talos, Mapping) else {}


def _management_domain(inp: ChartInput) -> str:
    """``(index (.Values._cluster | default dict) "cluster-domain") | default "cozy.local"``."""
    cluster = inp.values.get("_cluster")
    domain = cluster.get("cluster-domain") if isinstance(cluster, Mapping) else None
    return go_str(domain) if truthy(domain) else DEFAULT_MANAGEMENT_DOMAIN


def job_context(
    inp: ChartInput,
    *,
    sizing: Sizing,
    kernel_modules: Sequence[Mapping[str, Any]] | None = None,
    installer_image: str | None = None,
) -> JobContext:
    """The template's ``$jobContext`` for ``inp`` (raises KeyError for a version outside the map)."""
    values = inp.values
    images = values.get("images")
    kubectl = images.get("kubectl") if isinstance(images, Mapping) else None
    modules = kernel_modules_list(kernel_modules, inp.group_name) if kernel_modules else []
    return JobContext(
        release=inp.release,
        namespace=inp.namespace,
        cluster_name=inp.cluster_name,
        group_name=inp.group_name,
        kubectl_image=go_str(kubectl) if truthy(kubectl) else kubectl_image(inp.chart.upstream),
        kubelet_version=version_map(inp.chart.upstream)[go_str(values.get("version"))],
        talos_version=go_str(_talos(inp).get("version")),
        mgmt_cluster_domain=_management_domain(inp),
        gpus=values.get("gpus"),
        system_reserved_cpu=sizing.system_reserved_cpu,
        system_reserved_memory=sizing.system_reserved_memory,
        kube_reserved_cpu=sizing.kube_reserved_cpu,
        kube_reserved_memory=sizing.kube_reserved_memory,
        eviction_hard_memory=sizing.eviction_hard_memory,
        eviction_soft_memory=sizing.eviction_soft_memory,
        values=values,
        installer_image=None if installer_image is None else heredoc_installer_image(installer_image, inp.group_name),
        kernel_modules_yaml=to_yaml(modules) if modules else "",
    )


# ----------------------------------------------------------------------------- the documents


def reconcile_name(inp: ChartInput) -> str:
    return f"{inp.release}-talos-reconcile"


def coredns_name(inp: ChartInput) -> str:
    return coredns_role_name(inp.namespace, inp.release)


def _meta(inp: ChartInput, name: str, labels: Mapping[str, str], *, namespaced: bool = True) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespaced:
        meta["namespace"] = inp.namespace
    meta["labels"] = dict(labels)
    return meta


def render_talos_rbac(inp: ChartInput) -> list[dict[str, Any]]:
    """The documents of ``talos-reconcile-job.yaml`` before the Job: its ServiceAccount, RBAC and
    network policy. They need none of the chart's text, so the install can read from them what the
    controller must hold to apply them (:mod:`workerclass.deploy`)."""
    return _rbac_documents(inp, common_labels(inp))


def _rbac_documents(inp: ChartInput, labels: Mapping[str, str]) -> list[dict[str, Any]]:
    name = reconcile_name(inp)
    cluster = inp.cluster_name
    subject = {"kind": "ServiceAccount", "name": name, "namespace": inp.namespace}
    service_account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(inp, name, labels)}
    role = {
        "apiVersion": f"{RBAC_GROUP}/v1",
        "kind": "Role",
        "metadata": _meta(inp, name, labels),
        "rules": [
            {"apiGroups": [""], "resources": ["services"], "resourceNames": [cluster], "verbs": ["get"]},
            {
                "apiGroups": [""],
                "resources": ["secrets"],
                "resourceNames": [f"{cluster}-talos-secrets", f"{cluster}-talos-ca", f"{cluster}-ca"],
                "verbs": ["get"],
            },
            {
                "apiGroups": ["controlplane.cluster.x-k8s.io"],
                "resources": ["kamajicontrolplanes"],
                "resourceNames": [cluster],
                "verbs": ["get", "patch"],
            },
            {
                "apiGroups": ["bootstrap.cluster.x-k8s.io"],
                "resources": ["talosconfigtemplates"],
                "verbs": ["get", "create", "patch", "update"],
            },
        ],
    }
    dns_ports = [{"port": "53", "protocol": "UDP"}, {"port": "53", "protocol": "TCP"}]
    network_policy = {
        "apiVersion": "cilium.io/v2",
        "kind": "CiliumNetworkPolicy",
        "metadata": _meta(inp, name, labels),
        "spec": {
            "endpointSelector": {"matchLabels": {"cozystack.io/talos-reconcile": inp.release}},
            "egress": [
                {"toEntities": ["kube-apiserver"]},
                {
                    "toEndpoints": [
                        {"matchLabels": {"k8s:io.kubernetes.pod.namespace": "kube-system", "k8s:k8s-app": "kube-dns"}}
                    ],
                    "toPorts": [{"ports": dns_ports}],
                },
            ],
        },
    }
    role_binding = {
        "apiVersion": f"{RBAC_GROUP}/v1",
        "kind": "RoleBinding",
        "metadata": _meta(inp, name, labels),
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role", "name": name},
        "subjects": [subject],
    }
    coredns = coredns_name(inp)
    cluster_role = {
        "apiVersion": f"{RBAC_GROUP}/v1",
        "kind": "ClusterRole",
        "metadata": _meta(inp, coredns, labels, namespaced=False),
        "rules": [{"apiGroups": [""], "resources": ["services"], "resourceNames": ["kube-dns"], "verbs": ["get"]}],
    }
    cluster_role_binding = {
        "apiVersion": f"{RBAC_GROUP}/v1",
        "kind": "ClusterRoleBinding",
        "metadata": _meta(inp, coredns, labels, namespaced=False),
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": coredns},
        "subjects": [dict(subject)],
    }
    return [service_account, role, network_policy, role_binding, cluster_role, cluster_role_binding]


_SECRET_ENV = (
    ("TALOS_TOKEN", "token"),
    ("CLUSTER_ID", "clusterId"),
    ("CLUSTER_SECRET", "clusterSecret"),
    ("BOOTSTRAP_TOKEN", "bootstrapToken"),
)


def _job(inp: ChartInput, ctx: JobContext, spec: JobSpec, labels: Mapping[str, str]) -> dict[str, Any]:
    secrets = f"{ctx.cluster_name}-talos-secrets"
    env: list[dict[str, Any]] = [
        {"name": "RELEASE", "value": ctx.cluster_name},
        {"name": "NS", "value": ctx.namespace},
        {"name": "GROUP_NAME", "value": ctx.group_name},
    ]
    env += [{"name": n, "valueFrom": {"secretKeyRef": {"name": secrets, "key": k}}} for n, k in _SECRET_ENV]
    container = {
        "name": "kubectl",
        "image": image_scalar(ctx.kubectl_image) or ctx.kubectl_image,  # as YAML reads the quoted text
        "env": env,
        "command": ["sh", "-ec", spec.script],
        "resources": {"requests": {"cpu": "10m", "memory": "64Mi"}, "limits": {"cpu": "100m", "memory": "256Mi"}},
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "readOnlyRootFilesystem": True,
            "runAsNonRoot": True,
            "runAsUser": 65532,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": _meta(inp, job_name(ctx.release, ctx.group_name, spec), labels),
        "spec": {
            "backoffLimit": 30,
            "ttlSecondsAfterFinished": 600,
            "template": {
                "metadata": {"labels": {"cozystack.io/talos-reconcile": ctx.release}},
                "spec": {
                    "restartPolicy": "OnFailure",
                    "serviceAccountName": reconcile_name(inp),
                    "containers": [container],
                },
            },
        },
    }


def render_talos_job(
    inp: ChartInput,
    *,
    sizing: Sizing,
    kernel_modules: Sequence[Mapping[str, Any]] | None = None,
    installer_image: str | None = None,
) -> list[dict[str, Any]]:
    """The documents of ``talos-reconcile-job.yaml`` in the chart's order, the Job last."""
    ctx = job_context(inp, sizing=sizing, kernel_modules=kernel_modules, installer_image=installer_image)
    return job_documents(inp, ctx, job_spec(ctx, inp.chart))


def job_documents(inp: ChartInput, ctx: JobContext, spec: str | JobSpec) -> list[dict[str, Any]]:
    """:func:`render_talos_job` from the context and the define's text it renders (computed once
    where the TalosConfigTemplate is read from the same text: :func:`applied_template`)."""
    labels = common_labels(inp)
    return [*_rbac_documents(inp, labels), _job(inp, ctx, as_spec(spec), labels)]


# ----------------------------------------------------------------------------- the applied TalosConfigTemplate

_EXPANSION = re.compile(r"(\\[$`\\])|\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")


def expand_heredoc(body: str, env: Mapping[str, str]) -> str:
    """An unquoted heredoc as the shell expands it: ``\\$ \\` \\\\`` unescape, known variables fill in,
    the others (the Job's run-time inputs) stay ``${NAME}``."""

    def expand(match: re.Match[str]) -> str:
        if match.group(1):
            return match.group(1)[1]
        var = match.group(2) or match.group(3)
        return env.get(var, "${" + var + "}")

    return _EXPANSION.sub(expand, body)


def talos_config_template(
    inp: ChartInput,
    *,
    sizing: Sizing,
    kernel_modules: Sequence[Mapping[str, Any]] | None = None,
    installer_image: str | None = None,
) -> dict[str, Any]:
    """The ``bootstrap.cluster.x-k8s.io/v1alpha3`` TalosConfigTemplate the Job applies, run-time
    inputs (token, CA, IPs, KCP uid) left as ``${NAME}``."""
    ctx = job_context(inp, sizing=sizing, kernel_modules=kernel_modules, installer_image=installer_image)
    return applied_template(ctx, job_spec(ctx, inp.chart))


def applied_template(ctx: JobContext, spec: str | JobSpec) -> dict[str, Any]:
    """:func:`talos_config_template` from the context and the define's text it renders."""
    body = as_spec(spec).heredoc
    if body is None:  # the literal template always carries it
        raise AssertionError("the talos-reconcile script has no TalosConfigTemplate heredoc")
    env = {"RELEASE": ctx.cluster_name, "NS": ctx.namespace, "GROUP_NAME": ctx.group_name}
    try:
        loaded = load_expanded(body, env)
    except yaml.YAMLError:
        loaded = None
    if not isinstance(loaded, dict):
        # the chart renders such a Job (it writes these values unquoted), and its kubectl apply fails
        raise ChartRefused([Violation("Invalid", "spec.talos", _UNREADABLE_TEMPLATE)])
    return loaded


#: A value the shell puts in the heredoc that cannot change how YAML reads the text around it
#: (no whitespace, quote, indicator or escape): a Kubernetes name is one.
_NAME_LIKE = re.compile(r"[a-z0-9][a-z0-9.-]*")
#: Stand-ins for those values while the text is read: of the same characters to YAML, never in a name.
_STAND_INS = {"RELEASE": "WcReleaseStandIn", "NS": "WcNamespaceStandIn", "GROUP_NAME": "WcGroupStandIn"}
_READ: OrderedDict[str, Any] = OrderedDict()
_UNUSABLE = object()


def load_expanded(body: str, env: Mapping[str, str]) -> Any:
    """``k8s_load(expand_heredoc(body, env))``, the text read once per body for every pool.

    The heredoc's body is the same for every pool of the same settings: only the shell's
    ``${RELEASE}``, ``${NS}`` and ``${GROUP_NAME}`` name the pool. Where those are names
    (:data:`_NAME_LIKE`), the body is read once with stand-ins of the same characters to YAML, and
    each pool's document is that reading with the stand-ins replaced, which is the reading of its
    own text: the text differs only inside scalars, and a scalar that reads as something other
    than its text (a name ``123`` alone, a number) or a stand-in that did not come through as
    written (in a key, a comment, an escape) sends the pool to the reading of its own text."""
    if set(env) != set(_STAND_INS) or not all(_NAME_LIKE.fullmatch(value) for value in env.values()):
        return k8s_load(expand_heredoc(body, env))
    read = _READ.get(body)
    if read is None:
        read = _read_with_stand_ins(body)
        if len(_READ) >= RESTS_KEPT:  # one reading per kept rest's body
            _READ.popitem(last=False)
        _READ[body] = read
    if read is _UNUSABLE:
        return k8s_load(expand_heredoc(body, env))
    pairs = [(_STAND_INS[name], value) for name, value in env.items()]
    out = _filled(read, pairs)
    return k8s_load(expand_heredoc(body, env)) if out is _UNUSABLE else out


def _read_with_stand_ins(body: str) -> Any:
    if any(stand_in in body for stand_in in _STAND_INS.values()):
        return _UNUSABLE
    text = expand_heredoc(body, _STAND_INS)
    try:
        loaded = k8s_load(text)
    except yaml.YAMLError:
        return _UNUSABLE
    written = sum(text.count(stand_in) for stand_in in _STAND_INS.values())
    found = _stand_ins_in(loaded)
    return loaded if found is not None and found == written else _UNUSABLE


def _stand_ins_in(value: Any) -> int | None:
    """How many stand-ins the strings of ``value`` hold (None: one is in a key)."""
    if isinstance(value, str):
        return sum(value.count(stand_in) for stand_in in _STAND_INS.values())
    if isinstance(value, dict):
        if any(stand_in in str(key) for key in value for stand_in in _STAND_INS.values()):
            return None
        items: Any = value.values()
    elif isinstance(value, list):
        items = value
    else:
        return 0
    total = 0
    for item in items:
        inner = _stand_ins_in(item)
        if inner is None:
            return None
        total += inner
    return total


def _filled(value: Any, pairs: list[tuple[str, str]]) -> Any:
    """A fresh copy of ``value`` with the stand-ins replaced (:data:`_UNUSABLE` where a string
    with one would not read as its own text once filled in)."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            filled = _filled(item, pairs)
            if filled is _UNUSABLE:
                return _UNUSABLE
            out[key] = filled
        return out
    if isinstance(value, list):
        items = [_filled(item, pairs) for item in value]
        return _UNUSABLE if any(item is _UNUSABLE for item in items) else items
    if isinstance(value, str) and "Wc" in value:
        text = value
        for stand_in, name in pairs:
            text = text.replace(stand_in, name)
        if text != value and not (text and plain_scalar(text) == text and type(plain_scalar(text)) is str):
            return _UNUSABLE  # plain, it would read as something else: the text's own reading decides
        return text
    return value


_UNREADABLE_TEMPLATE = (
    "the TalosConfigTemplate the talos-reconcile Job applies is not valid YAML with these values "
    "(the chart writes talos.installerRepository, talos.schematicID and talos.version into it unquoted): "
    "kubectl would refuse it and the Job fail"
)
