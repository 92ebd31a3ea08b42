"""The install manifests, generated (``workerclass manifests``).

Its edge: plain dicts out, in a stable order; nothing is applied. The webhook rules come from the
API table's webhooks (:data:`workerclass.api.WEBHOOKS`, which the server routes by) and the RBAC
rules from its watch lists (:data:`workerclass.api.WATCHED`, :data:`workerclass.api.CONTROLLER_READS`,
which the cluster caches read), so what is installed is what is served and what is read, no more.
It imports neither the webhook nor the adapters: it is their sibling, and reads only the table:

* first the CustomResourceDefinitions the package owns (:mod:`workerclass.crds`: WorkerClass with
  its status subresource, WorkerPlatform);

* one MutatingWebhookConfiguration (KubernetesNodes CREATE/UPDATE: defaulting and restoring
  ``workerClassName``) and one ValidatingWebhookConfiguration (KubernetesNodes CREATE/UPDATE,
  WorkerClass CREATE/UPDATE/DELETE, ComputePlane and Kubernetes CREATE/UPDATE: node groups are
  pools), all ``failurePolicy: Fail``,
  ``sideEffects: None``, ``admissionReviewVersions: [v1]``, with a timeout. DELETE of a pool and
  every other operation are deliberately not matched: a Fail webhook that matches more than it
  needs can refuse requests its handler would allow (the design page's warning);
* no Namespace (unless ``create_namespace``, never for one of :data:`SHARED_NAMESPACES`): the
  namespace exists first, so deleting the bundle never deletes a namespace it did not create;
* a Service, a Deployment of 2 replicas spread over nodes with readiness on ``/readyz`` (cache
  synced and current) and liveness on ``/healthz``, memory requests and limits from the measured
  figures (:data:`WEBHOOK_MEMORY_REQUEST_MIB`, :data:`WEBHOOK_MEMORY_LIMIT_MIB`), a
  PodDisruptionBudget of ``maxUnavailable: 1`` (one replica at a time; a drain never waits on it,
  even with one replica or an unhealthy one);
* a NetworkPolicy per Deployment: the webhook's HTTPS port (the API server's calls, the kubelet's
  probes) from any source, since a portable policy cannot name the API server (it is not a pod,
  and its addresses depend on the cluster), and each Deployment's ``metrics`` port (``/metrics``
  is served apart from the HTTPS port: ``--metrics-port``) only from the pods of
  ``metrics_namespace`` (Cozystack's ``cozy-monitoring``; none without one). On Cilium
  (Cozystack's CNI), :func:`cilium_network_policy` narrows the HTTPS port to the
  ``kube-apiserver`` and ``host`` entities (``InstallOptions(network_policy="cilium")``). Without
  a CNI that enforces NetworkPolicy neither does anything; the server's own connection cap and
  deadlines hold regardless;
* a ServiceAccount with a ClusterRole of get/list/watch on exactly the watched resources; every
  RBAC rule's reason is written beside it in the YAML (:func:`rule_reasons`, :func:`to_yaml`);
* the serving certificate from cert-manager (a self-signed Issuer and a Certificate, the CA
  injected into both configurations), unless a CA bundle is given for a Secret made elsewhere;
* the WorkerClass controller (:func:`controller_manifests`, included unless
  ``--without-controller``): its own ServiceAccount and ClusterRole (read what the cache reads;
  patch WorkerClasses for the finalizer and ``workerclasses/status``; apply, pin and prune the
  objects of classified pools; create Events; hold, with neither ``escalate`` nor ``bind``, what
  the RBAC the chart renders for a pool grants: :mod:`workerclass.ops.pool_rbac`), a Role on its
  leader Lease, and a Deployment of two
  replicas of which only the holder of the Lease acts, liveness on ``/healthz`` and metrics on
  ``/metrics``.

Why one module over the house ~500 lines (about 820): it is the one generator of the install,
document by document in apply order, with the reason of each RBAC rule beside the rule, and the
webhook's and the controller's halves share its names, labels, identity, network policy and RBAC
helpers; split, both halves would import a third module of those helpers and the apply order would
live in two places. The package's Helm chart is generated from it (:mod:`workerclass.helm_chart`).
"""

from __future__ import annotations

import base64
import json
from collections import defaultdict
from dataclasses import dataclass
from importlib import metadata
from typing import Any

import yaml

from .api import CONTROLLER_READS, HEALTH_PATH, READY_PATH, WATCHED, WEBHOOKS, Resource, Webhook
from .api import WEBHOOK_DOMAIN as WEBHOOK_DOMAIN  # re-exported: the manifests' name suffix
from .api.resources import APPLICATION_DEFINITION, CHART_SOURCES, POOL_APPLICATION, WORKER_CLASS
from .crds import crd_manifests
from .ops.pool_rbac import PoolRoleRule, pool_role_rules, rules_grant, uncovered_verbs
from .ops.providers import KAIROS_TEMPLATE_CRD
from .ops.workers import WORKER_KINDS

NAME = "workerclass-webhook"
DEFAULT_NAMESPACE = "cozy-workerclass"
TLS_SECRET = f"{NAME}-tls"
PORT = 8443
#: the webhook's ``/metrics``, off the HTTPS port the API server reaches from anywhere, so that a
#: NetworkPolicy can admit the scrapers to it alone
METRICS_PORT = 9090

#: the operations each path is matched for (the smallest set its rules need), from the API table
OPERATIONS_BY_PATH: dict[str, list[str]] = {webhook.path: list(webhook.operations) for webhook in WEBHOOKS}


def package_version() -> str:
    try:
        return metadata.version("workerclass")
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0.1.0"


DEFAULT_IMAGE = f"ghcr.io/cozystack/cozystack/workerclass:v{package_version()}"


#: namespaces every Cozystack (or Kubernetes) cluster already has: the bundle never creates one,
#: since deleting the bundle would delete it, and everything in it
SHARED_NAMESPACES = frozenset(
    {"cozy-system", "cozy-public", "cozy-monitoring", "default", "kube-system", "kube-public", "kube-node-lease"}
)
#: Cozystack's monitoring namespace: where the scrapers of ``/metrics`` run
MONITORING_NAMESPACE = "cozy-monitoring"


@dataclass(frozen=True)
class InstallOptions:
    namespace: str = DEFAULT_NAMESPACE
    image: str = DEFAULT_IMAGE
    replicas: int = 2
    #: PEM CA bundle for a serving Secret made outside (then no cert-manager objects are generated)
    ca_bundle: bytes | None = None
    timeout_seconds: int = 10
    #: on SIGTERM, keep answering (reported not ready) this long so endpoints drop the pod first
    shutdown_delay: int = 5
    #: "kubernetes": a portable NetworkPolicy (the ports only); "cilium": a CiliumNetworkPolicy
    #: admitting the API server and the node (probes) only; "none": no policy
    network_policy: str = "kubernetes"
    #: a namespace whose pods may scrape ``/metrics`` (each Deployment's ``metrics`` port; ``None``:
    #: none may, the port is closed by the policy)
    metrics_namespace: str | None = MONITORING_NAMESPACE
    #: also a Namespace object: only for a namespace the install creates, so that deleting the
    #: bundle deletes it (never one of :data:`SHARED_NAMESPACES`)
    create_namespace: bool = False
    #: the webhook configurations: the runbook applies them last, once the webhook is ready, and
    #: removes them first (README: installing, upgrading, uninstalling)
    webhook_configurations: bool = True
    #: the Flux source the pools take their chart from (``KIND/NAMESPACE/NAME``: both servers'
    #: ``--chart-source``), for a cluster without the ApplicationDefinition; None: the ApplicationDefinition's
    chart_source: str | None = None


#: Memory of one webhook replica, from ``bench/README.md`` (issues 10, 21 and 29): ~55 MiB resident
#: with a small state; each open connection ~2 KB idle over TCP, ~21 KB over TLS (no TLS state until
#: the client speaks) and ~135 KB while it stalls mid-body; bodies being read at once are capped at
#: 32 MiB. The server's default cap of 256 connections then needs ~55 + 35 + 32 MiB at worst (a
#: flood of 1,500 TCP and 500 TLS connections peaked at 65 MiB); the limit leaves room for a larger
#: cluster state.
WEBHOOK_MEMORY_REQUEST_MIB = 128
WEBHOOK_MEMORY_LIMIT_MIB = 320


def _labels() -> dict[str, str]:
    return _labels_of(NAME)


def _labels_of(name: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": "workerclass"}


def _metadata(name: str, namespace: str | None = None, **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    meta["labels"] = _labels()
    meta.update(extra)
    return meta


def _webhook(webhook: Webhook, options: InstallOptions) -> dict[str, Any]:
    resource = webhook.resource
    client: dict[str, Any] = {
        "service": {"name": NAME, "namespace": options.namespace, "path": webhook.path, "port": 443},
    }
    if options.ca_bundle is not None:
        client["caBundle"] = base64.b64encode(options.ca_bundle).decode("ascii")
    entry: dict[str, Any] = {
        "name": webhook.webhook_name,
        "admissionReviewVersions": ["v1"],
        "clientConfig": client,
        "rules": [
            {
                "apiGroups": [resource.group],
                "apiVersions": [resource.version],
                "resources": [resource.plural],
                "operations": list(webhook.operations),
                "scope": resource.scope,
            }
        ],
        "failurePolicy": "Fail",
        "matchPolicy": "Equivalent",
        "sideEffects": "None",
        "timeoutSeconds": options.timeout_seconds,
    }
    if webhook.mutating:
        # the mutation is idempotent, so running it again after later mutations is safe
        entry["reinvocationPolicy"] = "IfNeeded"
    return entry


def _configuration(kind: str, webhooks: list[Webhook], options: InstallOptions) -> dict[str, Any]:
    annotations = (
        {} if options.ca_bundle is not None else {"cert-manager.io/inject-ca-from": f"{options.namespace}/{NAME}"}
    )
    meta = _metadata(f"{NAME}-{'mutating' if kind.startswith('Mutating') else 'validating'}")
    if annotations:
        meta["annotations"] = annotations
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": meta,
        "webhooks": [_webhook(webhook, options) for webhook in webhooks],
    }


def _identity(
    account: dict[str, Any], cluster_wide: dict[str, Any], rules: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """A ServiceAccount (``account`` metadata) and its ClusterRole and binding (``cluster_wide`` metadata)."""
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": account},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": cluster_wide, "rules": rules},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": dict(cluster_wide),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": cluster_wide["name"]},
            "subjects": [{"kind": "ServiceAccount", "name": account["name"], "namespace": account["namespace"]}],
        },
    ]


#: what each kind the caches read is to the install, for the reasons written beside the RBAC
_ROLE_WORDS = {
    "platform": "the platform's defaults, version map and images",
    "class": "the classes pools select",
    "parent": "the parent clusters (their version and infrastructure)",
    "pool": "the pools (KubernetesNodes, their HelmReleases, ComputePlane node groups)",
    "instancetype": "KubeVirt's instance types (a pool's size)",
}

Reasoned = list[tuple[dict[str, Any], str]]


def _read_rules(watched_resources: tuple[Resource, ...], who: str) -> Reasoned:
    """get/list/watch on exactly what a cluster cache reads, one rule per API group, with its reason."""
    by_group: dict[str, list[Resource]] = defaultdict(list)
    for watched in watched_resources:
        by_group[watched.group].append(watched)
    out: Reasoned = []
    for group, resources in sorted(by_group.items()):
        plurals = sorted(resource.plural for resource in resources)
        roles = list(dict.fromkeys(_ROLE_WORDS[resource.role] for resource in resources))
        reason = f"{', '.join(plurals)}: {'; '.join(roles)}: read into the cache {who}; nothing is written"
        out.append(({"apiGroups": [group], "resources": plurals, "verbs": ["get", "list", "watch"]}, reason))
    return out


def _chart_rules() -> Reasoned:
    """Reading the chart the pools run (:mod:`workerclass.adapters.flux`): by name only."""
    application = APPLICATION_DEFINITION
    sources = sorted({source.group for source in CHART_SOURCES.values()})
    return [
        (
            {
                "apiGroups": [application.group],
                "resources": [application.plural],
                "resourceNames": [POOL_APPLICATION],
                "verbs": ["get"],
            },
            f"{application.plural}: the one named {POOL_APPLICATION}, read by name: which Flux source the pools' "
            "releases take their chart from",
        ),
        *(
            (
                {
                    "apiGroups": [group],
                    "resources": sorted(s.plural for s in CHART_SOURCES.values() if s.group == group),
                    "verbs": ["get"],
                },
                "the Flux sources a pool's chartRef may name, read by name: where the chart's artifact is and its "
                "digest (its text, and whether it carries the chart gate)",
            )
            for group in sources
        ),
    ]


def rbac_rules(watched_resources: tuple[Resource, ...] = WATCHED) -> list[dict[str, Any]]:
    """get/list/watch on exactly what a cluster cache reads, one rule per API group, and get on the
    chart the pools run."""
    return [rule for rule, _ in [*_read_rules(watched_resources, "admission decides against"), *_chart_rules()]]


def rule_reasons() -> dict[str, str]:
    """Why each RBAC rule of the install is there, by the rule (its JSON, keys sorted): what
    :func:`to_yaml` writes beside each rule."""
    reasoned = [
        *_read_rules(WATCHED, "admission decides against"),
        *_chart_rules(),
        *_controller_rules(),
        *_lease_rules(),
    ]
    return {json.dumps(rule, sort_keys=True): reason for rule, reason in reasoned}


CONTROLLER = "workerclass-controller"
CONTROLLER_LIVENESS_PORT = 8080
CONTROLLER_METRICS_PORT = 9090
#: the leader Lease of the controller's replicas (in its namespace)
CONTROLLER_LEASE = CONTROLLER


def controller_rbac_rules() -> list[dict[str, Any]]:
    """The controller's ClusterRole rules (:func:`_controller_rules`, without their reasons)."""
    return [rule for rule, _ in _controller_rules()]


#: verbs of the rows of what the controller applies: it lists and watches them by its label (and
#: lists Helm's, to pin them), reads one it has not applied before its first apply (whose owner it
#: is: it never takes over an object it does not own), applies them server-side (a patch, and a
#: create where the object is new) and prunes them; it never updates them
WORKER_VERBS = ["get", "list", "watch", "create", "patch", "delete"]

#: what a worker row lets its holder do beyond writing a pool's objects, by API group
_WORKER_NOTES = {
    "": "a ConfigMap is a private Image Factory's CA (talos.imageFactoryCA), which the pool's disk import "
    "names; RBAC narrows list and watch by no label, so they reach every ConfigMap and ServiceAccount of "
    "the cluster, although the controller asks only by its label and Helm's",
    "batch": "a Job runs its pod as any ServiceAccount of its namespace, so these verbs let their holder act as "
    "any ServiceAccount of any namespace; RBAC limits create by neither name nor namespace (names come from "
    "each release, namespaces are the tenants'), so this cannot be narrowed: the controller creates only the "
    "talos-reconcile Job the chart renders, which runs as the pool's own reconcile ServiceAccount",
    "rbac.authorization.k8s.io": "no escalate and no bind: the API server lets roles and bindings be written "
    "only with permissions this ClusterRole holds itself (the rows held for the chart's roles), so the "
    "controller grants nothing it does not have; their names come from each release, so RBAC cannot list them",
}


def _controller_rules() -> Reasoned:
    """The controller cache's reads, plus what it writes: the class finalizer and status, the objects
    of classified pools, Events; then what it holds only so that it may write the chart's RBAC.

    The first rows come from the API table (:data:`workerclass.api.CONTROLLER_READS`,
    :data:`~workerclass.api.resources.WORKER_CLASS`); the worker rows from the kinds the chart
    renders for a pool (:data:`workerclass.ops.workers.WORKER_KINDS`) with the verbs the
    controller calls on them (:data:`WORKER_VERBS`), and it lists MachineSets to know which
    templates are still in use. Then Events (a pool's state, a class whose retention fails), and
    one CRD read by name, the Kairos bootstrap provider's template (:mod:`workerclass.ops.providers`).
    Last, :func:`_held_for_chart_roles`: the chart renders RBAC for a pool, which the API server lets
    a subject without ``escalate`` and ``bind`` (the install grants neither) write only while it
    holds every permission granted.
    """
    by_group: dict[str, list[str]] = defaultdict(list)
    for kind in WORKER_KINDS:
        if kind.kind != "Secret":  # its own row, with get
            by_group[kind.group].append(kind.plural)
    worker_rows: Reasoned = []
    for group, plurals in sorted(by_group.items()):
        note = _WORKER_NOTES.get(group)
        worker_rows.append(
            (
                {"apiGroups": [group], "resources": sorted(plurals), "verbs": list(WORKER_VERBS)},
                f"{', '.join(sorted(plurals))}: the objects the chart renders for a classified pool: listed by the "
                "controller's label (and Helm's, to pin them for a handoff), watched by its label (a hand edit or "
                "deletion is repaired in seconds), read by name before the first apply "
                "(an object another owner has is never taken over), applied server-side (patch, and create "
                "where new), pinned (patch) and pruned when the pool changes or goes" + (f"; {note}" if note else ""),
            )
        )
    worker_rows.append(
        (
            {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list", "create", "patch", "delete"]},
            "secrets: a Kairos pool's bootstrap data Secret (listed by the controller's label, applied server-side, "
            "pruned) and, read by name in the pool's own namespace, the parent cluster's join inputs "
            "(kubernetes-<cluster>-talos-secrets, kubernetes-<cluster>-ca, which the talos-reconcile Job's Role "
            "grants get on too); RBAC narrows create and list by neither name nor label, and these names come from "
            "each release, so these verbs reach every Secret of the cluster (list reads them all) although the "
            "controller lists only by its label and gets only those names; no watch: no Secret is cached",
        )
    )
    own: Reasoned = [
        *_read_rules(CONTROLLER_READS, "the controller renders pools and writes class status from"),
        *_chart_rules(),
        (
            {"apiGroups": [WORKER_CLASS.group], "resources": [WORKER_CLASS.plural], "verbs": ["patch"]},
            "workerclasses: add and release the finalizer that holds a custom class while pools select it",
        ),
        (
            {"apiGroups": [WORKER_CLASS.group], "resources": [f"{WORKER_CLASS.plural}/status"], "verbs": ["patch"]},
            "workerclasses/status: the Accepted, InUse and WorkersApplied conditions and the count of pools",
        ),
        *worker_rows,
        (
            {"apiGroups": ["bootstrap.cluster.x-k8s.io"], "resources": ["talosconfigtemplates"], "verbs": ["get"]},
            "talosconfigtemplates get: read by name, the template a Talos pool's running MachineDeployment names "
            "and the one under its stable name, to decide the name its talos-reconcile Job applies the template "
            "under (the Talos provider refuses a changed template under one name); never written by the controller",
        ),
        (
            {"apiGroups": ["cluster.x-k8s.io"], "resources": ["machinesets"], "verbs": ["list"]},
            "machinesets: an old machine template is deleted only once no MachineSet uses it (listed, never changed)",
        ),
        (
            {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "list"]},
            "events: each pool's state on its HelmRelease, listed so that a restart does not say one again, and "
            "a WorkerClass whose deletion cannot be decided or whose finalizer cannot be written",
        ),
        (
            {
                "apiGroups": ["apiextensions.k8s.io"],
                "resources": ["customresourcedefinitions"],
                "resourceNames": [KAIROS_TEMPLATE_CRD],
                "verbs": ["get"],
            },
            "the Kairos bootstrap provider's template CRD, read by name: whether it takes the kubeadm path (Kairos "
            "pools then get a KairosConfigTemplate, else their bootstrap data Secret)",
        ),
    ]
    return [*own, *_held_for_chart_roles([rule for rule, _ in own])]


def _held_for_chart_roles(own: list[dict[str, Any]]) -> Reasoned:
    """Rows for what the roles the chart renders for a pool grant and ``own`` does not hold
    (:func:`workerclass.ops.pool_rbac.pool_role_rules`), each with the roles it is held for.

    A rule the chart names by release is held on every name; one held row that another covers
    (CoreDNS's ``kube-dns`` under the parent Service's ``get`` on every Service) is folded into it.
    """
    rows: dict[str, tuple[dict[str, Any], list[PoolRoleRule]]] = {}
    for entry in pool_role_rules():
        verbs = uncovered_verbs(own, entry.rule)
        if not verbs:
            continue
        rule = {key: value for key, value in entry.rule.items() if key != "verbs"}
        key = json.dumps(rule, sort_keys=True)
        held, sources = rows.setdefault(key, ({**rule, "verbs": []}, []))
        held["verbs"] += [verb for verb in verbs if verb not in held["verbs"]]
        sources.append(entry)
    kept = list(rows.values())
    for row in list(kept):
        others = [other for other in kept if other is not row]
        into = next((other for other in others if rules_grant([other[0]], row[0])), None)
        if into is not None:
            into[1].extend(row[1])
            kept.remove(row)
    return [(rule, _held_reason(rule, sources)) for rule, sources in kept]


def _held_reason(rule: dict[str, Any], sources: list[PoolRoleRule]) -> str:
    def granted(entry: PoolRoleRule) -> str:
        names = f" on {', '.join(entry.names)}" if entry.names else " on every name"
        return f"{entry.source} grants {', '.join(entry.rule['verbs'])}{names}" + (
            " (names from the release)" if entry.named_by_release else ""
        )

    by_release = any(entry.named_by_release for entry in sources)
    return (
        f"{', '.join(rule['resources'])} {', '.join(rule['verbs'])}: never called by the controller; held because "
        "the API server lets a subject without escalate write a role, and without bind bind it, only while it "
        f"holds every permission the role grants: {'; '.join(granted(entry) for entry in sources)}"
        + ("; names from a release cannot be listed in advance, so these are held on every name" if by_release else "")
    )


def _lease_rules() -> Reasoned:
    return [
        (
            {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "create", "update"]},
            "leases, in this namespace only: the replicas elect the one that writes",
        )
    ]


def controller_lease_role(namespace: str) -> list[dict[str, Any]]:
    """The leader Lease: a Role in the controller's namespace, and its binding."""
    meta = {"name": CONTROLLER, "namespace": namespace, "labels": _controller_labels()}
    return [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": dict(meta),
            "rules": [rule for rule, _ in _lease_rules()],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": dict(meta),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": CONTROLLER},
            "subjects": [{"kind": "ServiceAccount", "name": CONTROLLER, "namespace": namespace}],
        },
    ]


def _controller_labels() -> dict[str, str]:
    return {"app.kubernetes.io/name": CONTROLLER, "app.kubernetes.io/part-of": "workerclass"}


def controller_manifests(options: InstallOptions | None = None) -> list[dict[str, Any]]:
    """The controller's ServiceAccount, ClusterRole, binding and Deployment."""
    options = options or InstallOptions()
    namespace = options.namespace

    def meta(namespaced: bool) -> dict[str, Any]:
        out: dict[str, Any] = {"name": CONTROLLER}
        if namespaced:
            out["namespace"] = namespace
        out["labels"] = _controller_labels()
        return out

    container = {
        "name": "controller",
        "image": options.image,
        "command": ["workerclass"],
        "args": [
            "serve",
            "controller",
            "--liveness-port",
            str(CONTROLLER_LIVENESS_PORT),
            "--metrics-port",
            str(CONTROLLER_METRICS_PORT),
            "--lease-namespace",
            namespace,
            *_chart_source_args(options),
        ],
        "env": [
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        ],
        "ports": [
            {"name": "liveness", "containerPort": CONTROLLER_LIVENESS_PORT, "protocol": "TCP"},
            {"name": "metrics", "containerPort": CONTROLLER_METRICS_PORT, "protocol": "TCP"},
        ],
        "livenessProbe": {
            "httpGet": {"path": HEALTH_PATH, "port": "liveness"},
            "initialDelaySeconds": 10,
            "periodSeconds": 20,
            "failureThreshold": 3,
            "timeoutSeconds": 5,
        },
        "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"memory": "512Mi"}},
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
    }
    return [
        *_identity(meta(True), meta(False), controller_rbac_rules()),
        *controller_lease_role(namespace),
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": meta(True),
            "spec": {
                # two replicas, one leader (a Lease): a killed leader is replaced within ~15 s
                "replicas": 2,
                "selector": {"matchLabels": {"app.kubernetes.io/name": CONTROLLER}},
                "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 1}},
                "template": {
                    "metadata": {"labels": _controller_labels()},
                    "spec": {
                        "serviceAccountName": CONTROLLER,
                        "securityContext": {
                            "runAsNonRoot": True,
                            "runAsUser": 65532,
                            "runAsGroup": 65532,
                            "seccompProfile": {"type": "RuntimeDefault"},
                        },
                        "terminationGracePeriodSeconds": 30,
                        "containers": [container],
                    },
                },
            },
        },
        *_policies(options, CONTROLLER, CONTROLLER_LIVENESS_PORT),
    ]


def _chart_source_args(options: InstallOptions) -> list[str]:
    """``--chart-source`` for both servers when the hoster names the chart's Flux source."""
    return ["--chart-source", options.chart_source] if options.chart_source else []


def _deployment(options: InstallOptions) -> dict[str, Any]:
    probe = {"scheme": "HTTPS", "port": "https"}
    args = [
        "serve",
        "webhook",
        "--tls-cert",
        "/tls/tls.crt",
        "--tls-key",
        "/tls/tls.key",
        "--port",
        str(PORT),
        "--shutdown-delay",
        str(options.shutdown_delay),
        "--metrics-port",
        str(METRICS_PORT),
        *_chart_source_args(options),
    ]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _metadata(NAME, options.namespace),
        "spec": {
            "replicas": options.replicas,
            "selector": {"matchLabels": {"app.kubernetes.io/name": NAME}},
            # a Fail webhook must keep answering during a rollout: add before removing
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}},
            "template": {
                "metadata": {"labels": _labels()},
                "spec": {
                    "serviceAccountName": NAME,
                    "securityContext": {
                        "runAsNonRoot": True,
                        "runAsUser": 65532,
                        "runAsGroup": 65532,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    "terminationGracePeriodSeconds": options.shutdown_delay + 25,
                    "topologySpreadConstraints": [
                        {
                            "maxSkew": 1,
                            "topologyKey": "kubernetes.io/hostname",
                            "whenUnsatisfiable": "ScheduleAnyway",
                            "labelSelector": {"matchLabels": {"app.kubernetes.io/name": NAME}},
                        }
                    ],
                    "containers": [
                        {
                            "name": "webhook",
                            "image": options.image,
                            "command": ["workerclass"],
                            "args": args,
                            "ports": [
                                {"name": "https", "containerPort": PORT, "protocol": "TCP"},
                                {"name": "metrics", "containerPort": METRICS_PORT, "protocol": "TCP"},
                            ],
                            "readinessProbe": {
                                "httpGet": {"path": READY_PATH, **probe},
                                "periodSeconds": 5,
                                "failureThreshold": 2,
                                "timeoutSeconds": 2,
                            },
                            "livenessProbe": {
                                "httpGet": {"path": HEALTH_PATH, **probe},
                                "initialDelaySeconds": 5,
                                "periodSeconds": 10,
                                "failureThreshold": 3,
                                "timeoutSeconds": 2,
                            },
                            "resources": {
                                "requests": {"cpu": "100m", "memory": f"{WEBHOOK_MEMORY_REQUEST_MIB}Mi"},
                                "limits": {"memory": f"{WEBHOOK_MEMORY_LIMIT_MIB}Mi"},
                            },
                            "securityContext": {
                                "allowPrivilegeEscalation": False,
                                "readOnlyRootFilesystem": True,
                                "capabilities": {"drop": ["ALL"]},
                            },
                            "volumeMounts": [{"name": "tls", "mountPath": "/tls", "readOnly": True}],
                        }
                    ],
                    "volumes": [{"name": "tls", "secret": {"secretName": TLS_SECRET}}],
                },
            },
        },
    }


def network_policy(
    options: InstallOptions, name: str = NAME, open_port: int = PORT, metrics_port: int = METRICS_PORT
) -> dict[str, Any]:
    """Ingress to ``name``'s pods: ``open_port`` from any source (the webhook's HTTPS port, which
    the API server calls from an address a portable policy cannot name; the controller's liveness
    port), and ``metrics_port`` from the pods of ``metrics_namespace`` only (none without one)."""
    ingress: list[dict[str, Any]] = [{"ports": [{"protocol": "TCP", "port": open_port}]}]
    if options.metrics_namespace:
        namespace = {"matchLabels": {"kubernetes.io/metadata.name": options.metrics_namespace}}
        ingress.append(
            {"from": [{"namespaceSelector": namespace}], "ports": [{"protocol": "TCP", "port": metrics_port}]}
        )
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {**_metadata(name, options.namespace), "labels": _labels_of(name)},
        "spec": {
            "podSelector": {"matchLabels": {"app.kubernetes.io/name": name}},
            "policyTypes": ["Ingress"],
            "ingress": ingress,
        },
    }


def cilium_network_policy(
    options: InstallOptions, name: str = NAME, open_port: int = PORT, metrics_port: int = METRICS_PORT
) -> dict[str, Any]:
    """Cilium: ``open_port`` from the API server (``kube-apiserver``: its calls) and the pod's own
    node (``host``: the kubelet's probes) only, ``metrics_port`` from pods of ``metrics_namespace``."""
    ingress: list[dict[str, Any]] = [
        {
            "fromEntities": ["kube-apiserver", "host"],
            "toPorts": [{"ports": [{"port": str(open_port), "protocol": "TCP"}]}],
        }
    ]
    if options.metrics_namespace:
        ingress.append(
            {
                "fromEndpoints": [{"matchLabels": {"k8s:io.kubernetes.pod.namespace": options.metrics_namespace}}],
                "toPorts": [{"ports": [{"port": str(metrics_port), "protocol": "TCP"}]}],
            }
        )
    return {
        "apiVersion": "cilium.io/v2",
        "kind": "CiliumNetworkPolicy",
        "metadata": {**_metadata(name, options.namespace), "labels": _labels_of(name)},
        "spec": {"endpointSelector": {"matchLabels": {"app.kubernetes.io/name": name}}, "ingress": ingress},
    }


def _certificate_objects(options: InstallOptions) -> list[dict[str, Any]]:
    issuer = f"{NAME}-selfsigned"
    return [
        {
            "apiVersion": "cert-manager.io/v1",
            "kind": "Issuer",
            "metadata": _metadata(issuer, options.namespace),
            "spec": {"selfSigned": {}},
        },
        {
            "apiVersion": "cert-manager.io/v1",
            "kind": "Certificate",
            "metadata": _metadata(NAME, options.namespace),
            "spec": {
                "secretName": TLS_SECRET,
                "dnsNames": [f"{NAME}.{options.namespace}.svc", f"{NAME}.{options.namespace}.svc.cluster.local"],
                "issuerRef": {"kind": "Issuer", "name": issuer},
                "privateKey": {"algorithm": "ECDSA", "size": 256, "rotationPolicy": "Always"},
                "duration": "2160h",
                "renewBefore": "720h",
            },
        },
    ]


def webhook_manifests(options: InstallOptions | None = None) -> list[dict[str, Any]]:
    """Every object of the install, in apply order."""
    options = options or InstallOptions()
    namespace = options.namespace
    mutating = [webhook for webhook in WEBHOOKS if webhook.mutating]
    validating = [webhook for webhook in WEBHOOKS if not webhook.mutating]
    objects: list[dict[str, Any]] = []
    if options.create_namespace:
        if namespace in SHARED_NAMESPACES:
            raise ValueError(f"{namespace} exists in every cluster: the install must not create or own it")
        objects.append({"apiVersion": "v1", "kind": "Namespace", "metadata": _metadata(namespace)})
    objects.extend(_identity(_metadata(NAME, namespace), _metadata(NAME), rbac_rules()))
    if options.ca_bundle is None:
        objects.extend(_certificate_objects(options))
    objects.extend(
        [
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": _metadata(NAME, namespace),
                "spec": {
                    "type": "ClusterIP",
                    "selector": {"app.kubernetes.io/name": NAME},
                    "ports": [{"name": "https", "port": 443, "targetPort": "https", "protocol": "TCP"}],
                },
            },
            _deployment(options),
            *_policies(options),
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": _metadata(NAME, namespace),
                # one replica at a time, never none: with 1 replica a drain still evicts it (a
                # minAvailable of 1 would hold the drain forever), and a replica that is not
                # healthy never holds one either
                "spec": {
                    "maxUnavailable": 1,
                    "unhealthyPodEvictionPolicy": "AlwaysAllow",
                    "selector": {"matchLabels": {"app.kubernetes.io/name": NAME}},
                },
            },
        ]
    )
    if options.webhook_configurations:
        objects.append(_configuration("MutatingWebhookConfiguration", mutating, options))
        objects.append(_configuration("ValidatingWebhookConfiguration", validating, options))
    return objects


def _policies(options: InstallOptions, name: str = NAME, open_port: int = PORT) -> list[dict[str, Any]]:
    if options.network_policy == "none":
        return []
    if options.network_policy == "cilium":
        return [cilium_network_policy(options, name, open_port)]
    if options.network_policy == "kubernetes":
        return [network_policy(options, name, open_port)]
    raise ValueError(f"network_policy must be kubernetes, cilium or none, not {options.network_policy!r}")


HEADER = (
    "# Generated by `workerclass manifests`: the admission webhook and controller install. Do not edit;\n"
    "# regenerate (tests/webhook/test_manifests.py checks this file matches the generator).\n"
)


def kept_crds() -> list[dict[str, Any]]:
    """The CRDs the package owns, marked ``helm.sh/resource-policy: keep``: deleting a CRD deletes
    every object of its kind (every WorkerClass, the WorkerPlatform), so uninstalling the package's
    chart leaves them; ``workerclass manifests --no-crds`` leaves them out of a bundle to delete."""
    out = []
    for crd in crd_manifests():
        metadata = {**crd["metadata"], "annotations": {"helm.sh/resource-policy": "keep"}}
        out.append({**crd, "metadata": metadata})
    return out


def install_manifests(
    options: InstallOptions | None = None, *, controller: bool = True, crds: bool = True
) -> list[dict[str, Any]]:
    """The whole install: the CRDs the package owns, the webhook, then (by default) the controller."""
    objects = [*(kept_crds() if crds else []), *webhook_manifests(options)]
    if controller:
        objects += controller_manifests(options)
    return objects


def _dump(obj: Any) -> str:
    return yaml.safe_dump(obj, sort_keys=False, default_flow_style=False, width=1000)


def document_yaml(obj: dict[str, Any], reasons: dict[str, str] | None = None) -> str:
    """One object as YAML, keys in the order written above; a Role's or ClusterRole's rules each
    with its reason as a comment above it (:func:`rule_reasons`; a rule without one is an error)."""
    if obj.get("kind") not in ("Role", "ClusterRole") or not obj.get("rules"):
        return _dump(obj)
    reasons = rule_reasons() if reasons is None else reasons
    head = _dump({key: value for key, value in obj.items() if key != "rules"})
    lines = [head.rstrip("\n"), "rules:"]
    for rule in obj["rules"]:
        reason = reasons.get(json.dumps(rule, sort_keys=True))
        if reason is None:
            raise ValueError(f"no reason is written for the {obj['kind']} rule {rule}")
        lines.append(f"# {reason}")
        lines.append(_dump([rule]).rstrip("\n"))
    return "\n".join(lines) + "\n"


def to_yaml(objects: list[dict[str, Any]]) -> str:
    """Multi-document YAML, keys in the order written above (stable across runs), with the reason
    of every RBAC rule written beside it."""
    reasons = rule_reasons()
    return HEADER + "".join(f"---\n{document_yaml(obj, reasons)}" for obj in objects)
