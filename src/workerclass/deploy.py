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
  WorkerClass CREATE/UPDATE/DELETE, ComputePlane CREATE/UPDATE), all ``failurePolicy: Fail``,
  ``sideEffects: None``, ``admissionReviewVersions: [v1]``, with a timeout. DELETE of a pool and
  every other operation are deliberately not matched: a Fail webhook that matches more than it
  needs can refuse requests its handler would allow (the design page's warning);
* a Service, a Deployment of 2 replicas spread over nodes with readiness on ``/readyz`` (cache
  synced and current) and liveness on ``/healthz``, memory requests and limits from the measured
  figures (:data:`WEBHOOK_MEMORY_REQUEST_MIB`, :data:`WEBHOOK_MEMORY_LIMIT_MIB`), a
  PodDisruptionBudget keeping one up;
* a NetworkPolicy admitting ingress to the webhook pods on the HTTPS port only (the API server's
  calls, the kubelet's probes and a scrape of ``/metrics`` all use it). A portable policy cannot
  name the API server (it is not a pod, and its addresses depend on the cluster), so it does not
  restrict the source; on Cilium (Cozystack's CNI), :func:`cilium_network_policy` narrows it to
  the ``kube-apiserver`` and ``host`` entities (plus a Prometheus namespace when given): apply it
  beside or instead of the portable one (``InstallOptions(network_policy="cilium")``). Without a
  CNI that enforces NetworkPolicy neither does anything; the server's own connection cap and
  deadlines hold regardless;
* a ServiceAccount with a ClusterRole of get/list/watch on exactly the watched resources;
* the serving certificate from cert-manager (a self-signed Issuer and a Certificate, the CA
  injected into both configurations), unless a CA bundle is given for a Secret made elsewhere;
* the WorkerClass controller (:func:`controller_manifests`, included unless
  ``--without-controller``): its own ServiceAccount and ClusterRole (read what the cache reads;
  patch WorkerClasses for the finalizer and ``workerclasses/status``; apply, pin and prune the
  objects of classified pools; create Events; list and watch CRDs, which kopf discovers resources
  through), a Role on its leader Lease, and a Deployment of two replicas of which only the holder
  of the Lease acts (kopf runs standalone, so it runs on the leader only), liveness on ``/healthz``
  and metrics on ``/metrics``.

Why one module over the house ~500 lines (about 550): it is the one generator of the install,
document by document in apply order, and the webhook's and the controller's halves share its
names, labels, identity and RBAC helpers; split, both halves would import a third module of those
helpers and the apply order would live in two places.
"""

from __future__ import annotations

import base64
from collections import defaultdict
from dataclasses import dataclass
from importlib import metadata
from typing import Any

import yaml

from .api import CONTROLLER_READS, HEALTH_PATH, READY_PATH, WATCHED, WEBHOOKS, Resource, Webhook
from .api import WEBHOOK_DOMAIN as WEBHOOK_DOMAIN  # re-exported: the manifests' name suffix
from .api.resources import WORKER_CLASS
from .crds import crd_manifests
from .ops.providers import KAIROS_TEMPLATE_CRD
from .ops.workers import WORKER_KINDS

NAME = "workerclass-webhook"
DEFAULT_NAMESPACE = "cozy-workerclass"
TLS_SECRET = f"{NAME}-tls"
PORT = 8443

#: the operations each path is matched for (the smallest set its rules need), from the API table
OPERATIONS: dict[str, list[str]] = {webhook.path: list(webhook.operations) for webhook in WEBHOOKS}


def package_version() -> str:
    try:
        return metadata.version("workerclass")
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0.1.0"


DEFAULT_IMAGE = f"ghcr.io/cozystack/cozystack/workerclass:v{package_version()}"


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
    #: "kubernetes": a portable NetworkPolicy (the port only); "cilium": a CiliumNetworkPolicy
    #: admitting the API server and the node (probes) only; "none": no policy
    network_policy: str = "kubernetes"
    #: with ``network_policy="cilium"``: a namespace whose pods may scrape ``/metrics`` (``None``: none)
    metrics_namespace: str | None = None


#: Memory of one webhook replica, from ``bench/README.md`` (issues 10 and 21): ~55 MiB resident
#: with a small state; each open connection ~300 KB (asyncio's own TLS protocol, idle or not yet
#: in its handshake) and ~500 KB while it stalls mid-body; bodies being read at once are capped at
#: 32 MiB. The server's default cap of 256 connections then needs ~55 + 126 + 32 MiB at worst (a
#: flood of idle connections peaked at 136 MiB); the limit leaves room for a larger cluster state.
WEBHOOK_MEMORY_REQUEST_MIB = 128
WEBHOOK_MEMORY_LIMIT_MIB = 320


def _labels() -> dict[str, str]:
    return {"app.kubernetes.io/name": NAME, "app.kubernetes.io/part-of": "workerclass"}


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


def rbac_rules(watched_resources: tuple[Resource, ...] = WATCHED) -> list[dict[str, Any]]:
    """get/list/watch on exactly what a cluster cache reads, one rule per API group."""
    by_group: dict[str, list[str]] = defaultdict(list)
    for watched in watched_resources:
        by_group[watched.group].append(watched.plural)
    return [
        {"apiGroups": [group], "resources": sorted(plurals), "verbs": ["get", "list", "watch"]}
        for group, plurals in sorted(by_group.items())
    ]


CONTROLLER = "workerclass-controller"
CONTROLLER_LIVENESS_PORT = 8080
CONTROLLER_METRICS_PORT = 9090
#: the leader Lease of the controller's replicas (in its namespace)
CONTROLLER_LEASE = CONTROLLER


def controller_rbac_rules() -> list[dict[str, Any]]:
    """The controller cache's reads, plus what it writes: the class finalizer and status, the objects
    of classified pools, kopf's Events.

    The first rows come from the API table (:data:`workerclass.api.CONTROLLER_READS`,
    :data:`~workerclass.api.resources.WORKER_CLASS`); the worker rows from the kinds the chart
    renders for a pool (:data:`workerclass.ops.workers.WORKER_KINDS`): the controller applies,
    pins (patch) and prunes them, and reads MachineSets to know which templates are still in use.
    The chart renders RBAC for a pool (the talos-reconcile Job's Role and ClusterRole, the
    dashboard's Role), which the API server lets only a holder of those permissions create, or one
    granted ``bind`` and ``escalate`` on roles: those two verbs are the price of applying the chart's
    RBAC for Helm (which runs as cluster-admin in Cozystack). The last two rows are the framework's,
    not the API's: kopf posts Events about the objects it handles and lists and watches the
    CustomResourceDefinitions to discover its resources; the controller itself gets one CRD, the Kairos
    bootstrap provider's template (:mod:`workerclass.ops.providers`).
    """
    by_group: dict[str, list[str]] = defaultdict(list)
    for kind in WORKER_KINDS:
        by_group[kind.group].append(kind.plural)
    worker_rows = [
        {
            "apiGroups": [group],
            "resources": sorted(plurals),
            "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"],
        }
        for group, plurals in sorted(by_group.items())
    ]
    return [
        *rbac_rules(CONTROLLER_READS),
        {"apiGroups": [WORKER_CLASS.group], "resources": [WORKER_CLASS.plural], "verbs": ["patch"]},
        {"apiGroups": [WORKER_CLASS.group], "resources": [f"{WORKER_CLASS.plural}/status"], "verbs": ["patch"]},
        *worker_rows,
        {"apiGroups": ["cluster.x-k8s.io"], "resources": ["machinesets"], "verbs": ["get", "list", "watch"]},
        {
            "apiGroups": ["rbac.authorization.k8s.io"],
            "resources": ["roles", "clusterroles"],
            "verbs": ["bind", "escalate"],
        },
        # kopf's own needs and ours: Events (listed, so that a restart does not say one again), and CRD discovery
        {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "list"]},
        {"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"], "verbs": ["list", "watch"]},
        # whether the Kairos bootstrap provider takes the render (kubeadm), read before any Kairos pool is applied
        {
            "apiGroups": ["apiextensions.k8s.io"],
            "resources": ["customresourcedefinitions"],
            "resourceNames": [KAIROS_TEMPLATE_CRD],
            "verbs": ["get"],
        },
    ]


def controller_lease_role(namespace: str) -> list[dict[str, Any]]:
    """The leader Lease: a Role in the controller's namespace, and its binding."""
    meta = {"name": CONTROLLER, "namespace": namespace, "labels": _controller_labels()}
    return [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": dict(meta),
            "rules": [
                {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "create", "update"]}
            ],
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
    ]


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
                            "ports": [{"name": "https", "containerPort": PORT, "protocol": "TCP"}],
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


def network_policy(options: InstallOptions) -> dict[str, Any]:
    """Ingress to the webhook pods on the HTTPS port only, from any source (see the module docstring)."""
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": _metadata(NAME, options.namespace),
        "spec": {
            "podSelector": {"matchLabels": {"app.kubernetes.io/name": NAME}},
            "policyTypes": ["Ingress"],
            "ingress": [{"ports": [{"protocol": "TCP", "port": PORT}]}],
        },
    }


def cilium_network_policy(options: InstallOptions) -> dict[str, Any]:
    """Cilium: the HTTPS port from the API server (``kube-apiserver``: its calls) and the pod's own
    node (``host``: the kubelet's probes) only, plus pods of ``metrics_namespace`` when given."""
    ingress: list[dict[str, Any]] = [
        {
            "fromEntities": ["kube-apiserver", "host"],
            "toPorts": [{"ports": [{"port": str(PORT), "protocol": "TCP"}]}],
        }
    ]
    if options.metrics_namespace:
        ingress.append(
            {
                "fromEndpoints": [{"matchLabels": {"k8s:io.kubernetes.pod.namespace": options.metrics_namespace}}],
                "toPorts": [{"ports": [{"port": str(PORT), "protocol": "TCP"}]}],
            }
        )
    return {
        "apiVersion": "cilium.io/v2",
        "kind": "CiliumNetworkPolicy",
        "metadata": _metadata(NAME, options.namespace),
        "spec": {"endpointSelector": {"matchLabels": {"app.kubernetes.io/name": NAME}}, "ingress": ingress},
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
    objects: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": _metadata(namespace)},
        *_identity(_metadata(NAME, namespace), _metadata(NAME), rbac_rules()),
    ]
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
                "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app.kubernetes.io/name": NAME}}},
            },
            _configuration("MutatingWebhookConfiguration", mutating, options),
            _configuration("ValidatingWebhookConfiguration", validating, options),
        ]
    )
    return objects


def _policies(options: InstallOptions) -> list[dict[str, Any]]:
    if options.network_policy == "none":
        return []
    if options.network_policy == "cilium":
        return [cilium_network_policy(options)]
    if options.network_policy == "kubernetes":
        return [network_policy(options)]
    raise ValueError(f"network_policy must be kubernetes, cilium or none, not {options.network_policy!r}")


HEADER = (
    "# Generated by `workerclass manifests`: the admission webhook and controller install. Do not edit;\n"
    "# regenerate (tests/webhook/test_manifests.py checks this file matches the generator).\n"
)


def install_manifests(options: InstallOptions | None = None, *, controller: bool = True) -> list[dict[str, Any]]:
    """The whole install: the CRDs the package owns, the webhook, then (by default) the controller."""
    objects = [*crd_manifests(), *webhook_manifests(options)]
    if controller:
        objects += controller_manifests(options)
    return objects


def to_yaml(objects: list[dict[str, Any]]) -> str:
    """Multi-document YAML, keys in the order written above (stable across runs)."""
    body = yaml.safe_dump_all(objects, sort_keys=False, default_flow_style=False, explicit_start=True, width=1000)
    return HEADER + body
