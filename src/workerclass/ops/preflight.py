"""Preflight: is the installed webhook safe to rely on before class-defaulting creates are exposed?

The design page: "A classless render does not look up a WorkerClass. That is not an API outage
exemption: a matching webhook with failurePolicy: Fail can refuse an UPDATE even when its healthy
handler would leave the legacy pool unchanged. Verify the installed package's webhook matching,
readiness and failure behavior before exposing class-defaulting creates." This module is that
verification over the webhook-installation objects a State keeps (``State.auxiliary``: webhook
configurations, Deployments, Services, PodDisruptionBudgets), in three groups:

* matching: every path of API.md section 5 receives exactly the kind and operations it serves
  (:data:`EXPECTED`), with admission.k8s.io/v1, no side effects, a sane timeout, and no selector
  or match condition that lets requests skip it;
* failure policy: ``Fail`` everywhere (``Ignore`` on the mutating webhook lets creates through
  without the stored platform default; on a validating one, unchecked objects), and always the
  page's caveat that ``Fail`` also refuses legacy-pool UPDATEs while the webhook is down;
* readiness: the Service each webhook calls exists, selects a Deployment's pods and targets a
  container port; the Deployment is probed on ``/readyz``, has ready replicas, and survives a
  node drain (2 replicas and a PodDisruptionBudget); the API server can trust the serving
  certificate (``caBundle`` or cert-manager's CA injection).

Verdicts are values (:class:`Check`); the whole result is safe when no check fails. Warnings
never fail it.

Its edge: plain objects in, checks out; no I/O. The expectations are written here rather than
imported from ``workerclass.webhook.routes`` and ``workerclass.deploy`` because the core imports
no door; ``tests/ops/test_preflight.py`` asserts they agree with the served routes and the
generated install.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..state import APPS, COZYSTACK, State

__all__ = [
    "CA_ANNOTATIONS",
    "EXPECTED",
    "READY_PATH",
    "WEBHOOK_DOMAIN",
    "Check",
    "Expectation",
    "Preflight",
    "preflight",
    "preflight_objects",
]

Verdict = Literal["ok", "warn", "fail"]

MUTATING = "MutatingWebhookConfiguration"
VALIDATING = "ValidatingWebhookConfiguration"
#: the suffix of the generated webhook names (``kubernetesnodes.mutate.workerclass.cozystack.io``)
WEBHOOK_DOMAIN = "workerclass.cozystack.io"
#: the server's readiness path: ready only once its cache of classes, pools and platform synced
READY_PATH = "/readyz"
#: configuration annotations with which cert-manager's cainjector fills ``caBundle``
CA_ANNOTATIONS = ("cert-manager.io/inject-ca-from", "cert-manager.io/inject-ca-from-secret")
ALL_OPERATIONS = ("CREATE", "UPDATE", "DELETE", "CONNECT")
MAX_TIMEOUT = 30
SLOW_TIMEOUT = 15
DEFAULT_TIMEOUT = 10  # admissionregistration.k8s.io/v1 default
DEFAULT_SERVICE_PORT = 443


@dataclass(frozen=True, slots=True)
class Expectation:
    """One served path: the configuration kind that must call it, and the requests it must receive."""

    path: str
    mutating: bool
    kind: str
    group: str
    version: str
    resource: str
    namespaced: bool
    operations: tuple[str, ...]

    @property
    def configuration(self) -> str:
        return MUTATING if self.mutating else VALIDATING

    @property
    def scope(self) -> str:
        return "Namespaced" if self.namespaced else "Cluster"

    @property
    def label(self) -> str:
        return f"{self.kind} ({self.group}/{self.version} {self.resource})"


#: API.md section 5: each path and what must be sent to it, no less (fail) and ideally no more (warn)
EXPECTED: tuple[Expectation, ...] = (
    Expectation(
        "/mutate/kubernetesnodes",
        True,
        "KubernetesNodes",
        APPS,
        "v1alpha1",
        "kubernetesnodes",
        True,
        ("CREATE", "UPDATE"),
    ),
    Expectation(
        "/validate/kubernetesnodes",
        False,
        "KubernetesNodes",
        APPS,
        "v1alpha1",
        "kubernetesnodes",
        True,
        ("CREATE", "UPDATE"),
    ),
    Expectation(
        "/validate/workerclasses",
        False,
        "WorkerClass",
        COZYSTACK,
        "v1alpha1",
        "workerclasses",
        False,
        ("CREATE", "UPDATE", "DELETE"),
    ),
    Expectation(
        "/validate/computeplanes", False, "ComputePlane", APPS, "v1alpha1", "computeplanes", True, ("CREATE", "UPDATE")
    ),
)
_BY_PATH = {expectation.path: expectation for expectation in EXPECTED}

#: the order checks are reported in (within a name: the order objects were found)
CHECK_ORDER = (
    "matching",
    "path",
    "admissionReviewVersions",
    "sideEffects",
    "timeoutSeconds",
    "selectors",
    "failurePolicy",
    "outage",
    "otherWebhooks",
    "caBundle",
    "service",
    "readiness",
    "replicas",
    "disruptionBudget",
)


@dataclass(frozen=True, slots=True)
class Check:
    """One verdict: which check, ok/warn/fail, on which object and field, and why."""

    check: str
    verdict: Verdict
    message: str
    object: str | None = None
    field: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "verdict": self.verdict,
            "object": self.object,
            "field": self.field,
            "message": self.message,
        }


@dataclass(frozen=True, slots=True)
class Preflight:
    checks: tuple[Check, ...]

    @property
    def safe(self) -> bool:
        """Safe when no check fails; warnings do not count."""
        return all(check.verdict != "fail" for check in self.checks)

    def of(self, name: str) -> tuple[Check, ...]:
        return tuple(check for check in self.checks if check.check == name)

    def as_dict(self) -> dict[str, Any]:
        return {"safe": self.safe, "checks": [check.as_dict() for check in self.checks]}


# ---------------------------------------------------------------------- reading plain objects


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else []


def _strings(value: Any) -> list[str]:
    return [item for item in _list(value) if isinstance(item, str)]


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return _map(obj.get("metadata"))


def _name(obj: Mapping[str, Any]) -> str:
    name = _meta(obj).get("name")
    return name if isinstance(name, str) and name else "?"


def _namespace(obj: Mapping[str, Any]) -> str:
    """A namespaced object's namespace; ``default`` when the manifest names none (as kubectl applies it)."""
    namespace = _meta(obj).get("namespace")
    return namespace if isinstance(namespace, str) and namespace else "default"


def _kind(obj: Mapping[str, Any]) -> str:
    kind = obj.get("kind")
    return kind if isinstance(kind, str) else ""


def _show(value: Any) -> str:
    """A compact, stable rendering of a selector or list for messages."""
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{key}: {_show(value[key])}" for key in value) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_show(item) for item in value) + "]"
    return str(value)


def _selects(selector: Mapping[str, Any], labels: Mapping[str, Any]) -> bool:
    """Whether a LabelSelector (matchLabels + matchExpressions) selects ``labels``."""
    for key, value in _map(selector.get("matchLabels")).items():
        if labels.get(key) != value:
            return False
    for item in _list(selector.get("matchExpressions")):
        expression = _map(item)
        label, operator, values = expression.get("key"), expression.get("operator"), _strings(expression.get("values"))
        if not isinstance(label, str):
            return False
        key = label
        present = key in labels
        if operator == "In" and not (present and labels[key] in values):
            return False
        if operator == "NotIn" and present and labels[key] in values:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
        if operator not in ("In", "NotIn", "Exists", "DoesNotExist"):
            return False
    return True


def _selector_empty(selector: Any) -> bool:
    selector = _map(selector)
    return not _map(selector.get("matchLabels")) and not _list(selector.get("matchExpressions"))


# ---------------------------------------------------------------------- webhooks as found


@dataclass(frozen=True, slots=True)
class _Webhook:
    configuration: str  # kind
    configuration_name: str
    annotations: Mapping[str, Any]
    index: int
    spec: Mapping[str, Any]

    @property
    def mutating(self) -> bool:
        return self.configuration == MUTATING

    @property
    def object(self) -> str:
        return f"{self.configuration} {self.configuration_name}"

    def field(self, path: str = "") -> str:
        return f"webhooks[{self.index}]" + (f".{path}" if path else "")

    @property
    def name(self) -> str:
        name = self.spec.get("name")
        return name if isinstance(name, str) and name else f"webhooks[{self.index}]"

    @property
    def service(self) -> tuple[str, str, int] | None:
        """``(namespace, name, port)`` of ``clientConfig.service``; ``None`` for a URL webhook."""
        service = _map(_map(self.spec.get("clientConfig")).get("service"))
        if not service:
            return None
        port = service.get("port", DEFAULT_SERVICE_PORT)
        return (
            str(service.get("namespace", "")),
            str(service.get("name", "")),
            port if isinstance(port, int) else DEFAULT_SERVICE_PORT,
        )

    @property
    def path(self) -> str | None:
        client = _map(self.spec.get("clientConfig"))
        service = _map(client.get("service"))
        if service:
            path = service.get("path")
            return path if isinstance(path, str) else None
        url = client.get("url")
        if isinstance(url, str) and "://" in url:
            rest = url.split("://", 1)[1]
            return "/" + rest.split("/", 1)[1].split("?", 1)[0] if "/" in rest else None
        return None

    @property
    def rules(self) -> list[Mapping[str, Any]]:
        return [_map(rule) for rule in _list(self.spec.get("rules"))]

    @property
    def failure_policy(self) -> str:
        policy = self.spec.get("failurePolicy")
        return policy if isinstance(policy, str) else "Fail"  # the v1 default


def _webhooks(objects: Sequence[Mapping[str, Any]]) -> list[_Webhook]:
    found: list[_Webhook] = []
    for obj in objects:
        kind = _kind(obj)
        if kind not in (MUTATING, VALIDATING):
            continue
        annotations = _map(_meta(obj).get("annotations"))
        for index, spec in enumerate(_list(obj.get("webhooks"))):
            found.append(_Webhook(kind, _name(obj), annotations, index, _map(spec)))
    return found


def _split_resource(entry: str) -> tuple[str, str]:
    resource, _, subresource = entry.partition("/")
    return resource, subresource


def _rule_matches(
    rule: Mapping[str, Any], group: str, version: str, resource: str, operation: str, scope: str, subresource: str = ""
) -> bool:
    """The API server's rule matcher (``admission/plugin/webhook/predicates/rules``) for one request."""
    groups, versions = _strings(rule.get("apiGroups")), _strings(rule.get("apiVersions"))
    operations = _strings(rule.get("operations"))
    if not ("*" in groups or group in groups) or not ("*" in versions or version in versions):
        return False
    if not ("*" in operations or operation in operations):
        return False
    rule_scope = rule.get("scope", "*")
    if rule_scope not in ("*", scope):
        return False
    for entry in _strings(rule.get("resources")):
        rule_resource, rule_subresource = _split_resource(entry)
        if rule_resource in ("*", resource) and rule_subresource in ("*", subresource):
            return True
    return False


def _webhook_matches(webhook: _Webhook, expectation: Expectation, operation: str) -> bool:
    return any(
        _rule_matches(rule, expectation.group, expectation.version, expectation.resource, operation, expectation.scope)
        for rule in webhook.rules
    )


def _is_ours(webhook: _Webhook, ours_services: set[tuple[str, str, int]]) -> bool:
    return (
        webhook.path in _BY_PATH
        or webhook.name.endswith("." + WEBHOOK_DOMAIN)
        or (webhook.service is not None and webhook.service in ours_services)
    )


def _partition(webhooks: list[_Webhook]) -> tuple[list[_Webhook], list[_Webhook]]:
    """The workerclass webhooks (served path, generated name, or the same Service) and the others."""
    seeds = [w for w in webhooks if w.path in _BY_PATH or w.name.endswith("." + WEBHOOK_DOMAIN)]
    services = {w.service for w in seeds if w.service is not None}
    configurations = {(w.configuration, w.configuration_name) for w in seeds}
    ours = [w for w in webhooks if _is_ours(w, services) or (w.configuration, w.configuration_name) in configurations]
    others = [w for w in webhooks if w not in ours]
    return ours, others


# ---------------------------------------------------------------------- (a) matching


def _coverage(expectation: Expectation, webhooks: list[_Webhook]) -> Check:
    """Every required operation of one path is sent to it by a webhook of the right configuration kind."""
    callers = [w for w in webhooks if w.configuration == expectation.configuration and w.path == expectation.path]
    wanted = ", ".join(expectation.operations)
    if not callers:
        return Check(
            "matching",
            "fail",
            f"no {expectation.configuration} webhook sends {expectation.label} {wanted} to service path "
            f"{expectation.path}",
        )
    missing = [
        operation
        for operation in expectation.operations
        if not any(_webhook_matches(w, expectation, operation) for w in callers)
    ]
    first = callers[0]
    where = ", ".join(w.name for w in callers)
    if missing:
        return Check(
            "matching",
            "fail",
            f"{expectation.label} {', '.join(missing)} is not sent to {expectation.path}: the rules of {where} "
            f"do not match it (needed: {wanted} on {expectation.scope} {expectation.resource})",
            first.object,
            first.field("rules"),
        )
    return Check(
        "matching",
        "ok",
        f"{expectation.label} {wanted} are sent to {expectation.path} by {where}",
        first.object,
        first.field("rules"),
    )


def _overmatching(webhook: _Webhook) -> list[Check]:
    """What a webhook's rules match beyond what its path serves.

    Another resource is a failure: the path refuses kinds it does not serve (a 400 denial) even
    when healthy. Extra operations, subresources or API groups are warnings: the healthy handler
    answers them, but with ``Fail`` an outage refuses them needlessly (pool DELETE, for example).
    """
    expectation = _BY_PATH.get(webhook.path or "")
    if expectation is None:
        return []
    found: list[Check] = []
    for index, rule in enumerate(webhook.rules):
        field = webhook.field(f"rules[{index}]")
        others = [
            entry for entry in _strings(rule.get("resources")) if _split_resource(entry)[0] != expectation.resource
        ]
        if others:
            found.append(
                Check(
                    "matching",
                    "fail",
                    f"{webhook.name} also sends resources {_show(others)} to {expectation.path}, which serves only "
                    f"{expectation.kind} and refuses every other kind even when healthy",
                    webhook.object,
                    f"{field}.resources",
                )
            )
        subresources = [entry for entry in _strings(rule.get("resources")) if _split_resource(entry)[1]]
        if subresources:
            found.append(
                Check(
                    "matching",
                    "warn",
                    f"{webhook.name} also matches subresources {_show(subresources)}: with failurePolicy "
                    f"{webhook.failure_policy} an outage refuses those requests too",
                    webhook.object,
                    f"{field}.resources",
                )
            )
        groups = [group for group in _strings(rule.get("apiGroups")) if group != expectation.group]
        if groups:
            found.append(
                Check(
                    "matching",
                    "warn",
                    f"{webhook.name} also matches API groups {_show(groups)} besides {expectation.group}",
                    webhook.object,
                    f"{field}.apiGroups",
                )
            )
        extra = [
            operation
            for operation in ALL_OPERATIONS
            if operation not in expectation.operations
            and _rule_matches(
                rule, expectation.group, expectation.version, expectation.resource, operation, expectation.scope
            )
        ]
        if extra:
            found.append(
                Check(
                    "matching",
                    "warn",
                    f"{webhook.name} also matches {expectation.kind} {', '.join(extra)} "
                    f"(operations: {_show(_strings(rule.get('operations')))}), which {expectation.path} does not "
                    f"need: with failurePolicy {webhook.failure_policy} an outage refuses them needlessly",
                    webhook.object,
                    f"{field}.operations",
                )
            )
    return found


def _path(webhook: _Webhook) -> Check | None:
    path = webhook.path
    expectation = _BY_PATH.get(path or "")
    field = webhook.field("clientConfig.service.path" if webhook.service is not None else "clientConfig.url")
    if expectation is None:
        served = ", ".join(_BY_PATH)
        return Check(
            "path",
            "fail",
            f"{webhook.name} sends to {path or 'no path'}, which the server does not serve (it serves {served}): "
            f"every matched request fails, and with failurePolicy {webhook.failure_policy} is refused",
            webhook.object,
            field,
        )
    if expectation.mutating != webhook.mutating:
        handler = "mutating" if expectation.mutating else "validating"
        return Check(
            "path",
            "fail",
            f"{webhook.name} in a {webhook.configuration} sends to the {handler} path {path}",
            webhook.object,
            field,
        )
    return None


def _wire(webhook: _Webhook) -> list[Check]:
    found: list[Check] = []
    versions = _strings(webhook.spec.get("admissionReviewVersions"))
    if "v1" not in versions:
        found.append(
            Check(
                "admissionReviewVersions",
                "fail",
                f"{webhook.name} offers {_show(versions)}; the server speaks admission.k8s.io/v1 only",
                webhook.object,
                webhook.field("admissionReviewVersions"),
            )
        )
    side_effects = webhook.spec.get("sideEffects")
    if side_effects not in ("None", "NoneOnDryRun"):
        found.append(
            Check(
                "sideEffects",
                "fail",
                f"{webhook.name} declares sideEffects {side_effects!s}: must be None or NoneOnDryRun, "
                "or dry-run requests are refused",
                webhook.object,
                webhook.field("sideEffects"),
            )
        )
    timeout = webhook.spec.get("timeoutSeconds", DEFAULT_TIMEOUT)
    if not isinstance(timeout, int) or isinstance(timeout, bool) or not 1 <= timeout <= MAX_TIMEOUT:
        found.append(
            Check(
                "timeoutSeconds",
                "fail",
                f"{webhook.name} timeoutSeconds {timeout!s} is outside 1..{MAX_TIMEOUT}",
                webhook.object,
                webhook.field("timeoutSeconds"),
            )
        )
    elif timeout > SLOW_TIMEOUT:
        found.append(
            Check(
                "timeoutSeconds",
                "warn",
                f"{webhook.name} timeoutSeconds {timeout} is above {SLOW_TIMEOUT}: a hung server holds every "
                "matched request that long before it is refused",
                webhook.object,
                webhook.field("timeoutSeconds"),
            )
        )
    return found


def _selectors(webhook: _Webhook) -> list[Check]:
    found: list[Check] = []
    expectation = _BY_PATH.get(webhook.path or "")
    for key in ("namespaceSelector", "objectSelector"):
        selector = webhook.spec.get(key)
        if selector is None or _selector_empty(selector):
            continue
        if key == "namespaceSelector" and expectation is not None and not expectation.namespaced:
            continue  # a namespace selector never excludes a cluster-scoped object
        if key == "objectSelector":
            # Object labels belong to whoever writes the object: a tenant could label a pool out of
            # defaulting, restoring and every denial. Namespace labels stay with the hoster: a warning.
            found.append(
                Check(
                    "selectors",
                    "fail",
                    f"{webhook.name} objectSelector {_show(selector)} lets the writer of an object skip the webhook "
                    "by its own labels (no stored default class, no validation): remove it",
                    webhook.object,
                    webhook.field(key),
                )
            )
            continue
        found.append(
            Check(
                "selectors",
                "warn",
                f"{webhook.name} namespaceSelector {_show(selector)} could exclude tenant namespaces: requests "
                "there skip the webhook (no stored default class, no validation)",
                webhook.object,
                webhook.field(key),
            )
        )
    conditions = _list(webhook.spec.get("matchConditions"))
    if conditions:
        names = [_map(condition).get("name", "?") for condition in conditions]
        found.append(
            Check(
                "selectors",
                "warn",
                f"{webhook.name} matchConditions {_show(names)} could exclude requests: those skip the webhook",
                webhook.object,
                webhook.field("matchConditions"),
            )
        )
    return found


# ---------------------------------------------------------------------- (b) failure policy


def _failure_policy(webhook: _Webhook) -> Check | None:
    policy = webhook.failure_policy
    if policy == "Fail":
        return None
    if webhook.mutating:
        why = (
            "while it is unavailable, KubernetesNodes CREATEs are stored without the platform default class "
            "(the page asks for a stored default), and classified pools' UPDATEs lose the class restore"
        )
    else:
        why = "while it is unavailable, objects are stored without these checks"
    return Check(
        "failurePolicy",
        "fail",
        f"{webhook.name} failurePolicy {policy}: {why}; use Fail",
        webhook.object,
        webhook.field("failurePolicy"),
    )


def _outage(webhooks: list[_Webhook]) -> Check:
    pool = next(
        (
            w
            for w in webhooks
            if w.failure_policy == "Fail"
            and any(_webhook_matches(w, e, "UPDATE") for e in EXPECTED if e.resource == "kubernetesnodes")
        ),
        None,
    )
    return Check(
        "outage",
        "warn",
        "with failurePolicy Fail, while the webhook is unavailable the API server refuses every matched request, "
        "including UPDATEs of legacy classless KubernetesNodes pools that the healthy handler would leave "
        "unchanged (a classless render needs no WorkerClass, but that is no outage exemption): keep the webhook "
        "highly available before exposing class-defaulting creates",
        pool.object if pool else None,
        pool.field("failurePolicy") if pool else None,
    )


def _others(webhooks: list[_Webhook]) -> list[Check]:
    """Other webhooks that match the pools' UPDATE: their outages refuse legacy pool UPDATEs too."""
    found: list[Check] = []
    for webhook in webhooks:
        if webhook.failure_policy != "Fail":
            continue
        matched = sorted({e.kind for e in EXPECTED for op in e.operations if _webhook_matches(webhook, e, op)})
        if matched:
            found.append(
                Check(
                    "otherWebhooks",
                    "warn",
                    f"{webhook.name} (not the workerclass server) also matches {', '.join(matched)} with "
                    "failurePolicy Fail: its outage refuses those requests too",
                    webhook.object,
                    webhook.field("rules"),
                )
            )
    return found


def _ca_bundle(webhook: _Webhook) -> Check | None:
    bundle = _map(webhook.spec.get("clientConfig")).get("caBundle")
    if isinstance(bundle, str) and bundle:
        try:
            base64.b64decode(bundle, validate=True)
        except (binascii.Error, ValueError):
            return Check(
                "caBundle",
                "fail",
                f"{webhook.name} caBundle is not base64",
                webhook.object,
                webhook.field("clientConfig.caBundle"),
            )
        return None
    if any(isinstance(webhook.annotations.get(key), str) and webhook.annotations.get(key) for key in CA_ANNOTATIONS):
        return None
    return Check(
        "caBundle",
        "fail",
        f"{webhook.name} has no clientConfig.caBundle and its configuration no {CA_ANNOTATIONS[0]} annotation: "
        "the API server cannot trust the serving certificate, so every matched request fails",
        webhook.object,
        webhook.field("clientConfig.caBundle"),
    )


# ---------------------------------------------------------------------- (c) readiness


@dataclass(frozen=True, slots=True)
class _Objects:
    services: list[Mapping[str, Any]]
    deployments: list[Mapping[str, Any]]
    budgets: list[Mapping[str, Any]]


def _pod_labels(deployment: Mapping[str, Any]) -> Mapping[str, Any]:
    return _map(_meta(_map(_map(deployment.get("spec")).get("template"))).get("labels"))


def _containers(deployment: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    template = _map(_map(deployment.get("spec")).get("template"))
    return [_map(container) for container in _list(_map(template.get("spec")).get("containers"))]


def _label(kind: str, obj: Mapping[str, Any]) -> str:
    return f"{kind} {_namespace(obj)}/{_name(obj)}"


def _serving_containers(deployment: Mapping[str, Any], target: Any) -> list[int]:
    """Indexes of the containers that expose ``target`` (a port number or a port name)."""
    indexes = []
    for index, container in enumerate(_containers(deployment)):
        for port in _list(container.get("ports")):
            port = _map(port)
            if (isinstance(target, int) and port.get("containerPort") == target) or (
                isinstance(target, str) and port.get("name") == target
            ):
                indexes.append(index)
                break
    return indexes


def _service(
    reference: tuple[str, str, int], callers: list[_Webhook], objects: _Objects
) -> tuple[list[Check], list[tuple[Mapping[str, Any], list[int]]]]:
    """The Service a webhook calls, and the Deployments (with serving containers) behind it."""
    namespace, name, port = reference
    first = callers[0]
    where = f"Service {namespace}/{name}"
    service = next((s for s in objects.services if (_namespace(s), _name(s)) == (namespace, name)), None)
    if service is None:
        return [
            Check(
                "service",
                "fail",
                f"{where} that {', '.join(w.name for w in callers)} call is not in STATE",
                first.object,
                first.field("clientConfig.service"),
            )
        ], []
    spec = _map(service.get("spec"))
    selector = _map(spec.get("selector"))
    if not selector:
        return [Check("service", "fail", f"{where} has no selector: no pods back it", where, "spec.selector")], []
    entry = next((_map(p) for p in _list(spec.get("ports")) if _map(p).get("port") == port), None)
    if entry is None:
        ports = [_map(p).get("port") for p in _list(spec.get("ports"))]
        return [
            Check(
                "service",
                "fail",
                f"{where} has no port {port} (it has {_show(ports)}), which {first.name} calls",
                where,
                "spec.ports",
            )
        ], []
    target = entry.get("targetPort", port)
    backing = [
        d
        for d in objects.deployments
        if _namespace(d) == namespace and all(_pod_labels(d).get(k) == v for k, v in selector.items())
    ]
    if not backing:
        return [
            Check(
                "service",
                "fail",
                f"{where} selector {_show(selector)} matches no Deployment's pod labels in STATE",
                where,
                "spec.selector",
            )
        ], []
    checks: list[Check] = []
    served: list[tuple[Mapping[str, Any], list[int]]] = []
    for deployment in backing:
        indexes = _serving_containers(deployment, target)
        if not indexes:
            checks.append(
                Check(
                    "service",
                    "fail",
                    f"{where} port {port} targets {target}, which no container of {_label('Deployment', deployment)} "
                    "exposes",
                    where,
                    "spec.ports",
                )
            )
            continue
        served.append((deployment, indexes))
        checks.append(
            Check(
                "service",
                "ok",
                f"{where} port {port} -> {target} reaches {_label('Deployment', deployment)}",
                where,
                "spec.selector",
            )
        )
    return checks, served


def _deployment(deployment: Mapping[str, Any], indexes: list[int], objects: _Objects) -> list[Check]:
    where = _label("Deployment", deployment)
    checks: list[Check] = []
    containers = _containers(deployment)
    probed = [
        i for i in indexes if _map(_map(containers[i].get("readinessProbe")).get("httpGet")).get("path") == READY_PATH
    ]
    if probed:
        checks.append(
            Check(
                "readiness",
                "ok",
                f"{where} is probed on {READY_PATH} (ready only once the cache has synced)",
                where,
                f"spec.template.spec.containers[{probed[0]}].readinessProbe",
            )
        )
    else:
        checks.append(
            Check(
                "readiness",
                "fail",
                f"{where} has no readinessProbe on {READY_PATH}: pods receive requests before their cache has "
                "synced and refuse them",
                where,
                f"spec.template.spec.containers[{indexes[0]}].readinessProbe",
            )
        )
    spec = _map(deployment.get("spec"))
    replicas = spec.get("replicas", 1)
    replicas = replicas if isinstance(replicas, int) else 1
    status = deployment.get("status")
    if not isinstance(status, Mapping) or not status:
        checks.append(
            Check(
                "readiness",
                "fail",
                f"{where} has no status: the folder holds no live readiness; run against exported live objects",
                where,
                "status",
            )
        )
    else:
        ready = status.get("readyReplicas", 0)
        ready = ready if isinstance(ready, int) else 0
        if ready < 1:
            checks.append(
                Check("readiness", "fail", f"{where} is not ready: 0 of {replicas} replicas ready", where, "status")
            )
        elif ready < replicas:
            checks.append(
                Check("readiness", "warn", f"{where} is ready with {ready} of {replicas} replicas", where, "status")
            )
        else:
            checks.append(
                Check("readiness", "ok", f"{where} is ready: {ready} of {replicas} replicas", where, "status")
            )
    if replicas < 2:
        checks.append(
            Check(
                "replicas",
                "warn",
                f"{where} has {replicas} replica: a restart or a drain leaves no server, and every matched "
                "request (legacy pool UPDATEs too) is refused meanwhile",
                where,
                "spec.replicas",
            )
        )
    else:
        checks.append(Check("replicas", "ok", f"{where} has {replicas} replicas", where, "spec.replicas"))
    labels = _pod_labels(deployment)
    budget = next(
        (
            b
            for b in objects.budgets
            if _namespace(b) == _namespace(deployment)
            and not _selector_empty(_map(b.get("spec")).get("selector"))
            and _selects(_map(_map(b.get("spec")).get("selector")), labels)
        ),
        None,
    )
    if budget is None:
        checks.append(
            Check(
                "disruptionBudget",
                "warn",
                f"no PodDisruptionBudget selects the pods of {where}: a node drain can evict every replica at once",
                where,
                "spec.template.metadata.labels",
            )
        )
    else:
        checks.append(
            Check(
                "disruptionBudget",
                "ok",
                f"{_label('PodDisruptionBudget', budget)} covers {where}",
                _label("PodDisruptionBudget", budget),
                "spec.selector",
            )
        )
    return checks


def _readiness(webhooks: list[_Webhook], objects: _Objects) -> list[Check]:
    checks: list[Check] = []
    references: dict[tuple[str, str, int], list[_Webhook]] = {}
    for webhook in webhooks:
        reference = webhook.service
        if reference is None:
            checks.append(
                Check(
                    "service",
                    "fail",
                    f"{webhook.name} calls a URL, not a Service: its readiness cannot be verified from STATE",
                    webhook.object,
                    webhook.field("clientConfig.url"),
                )
            )
            continue
        references.setdefault(reference, []).append(webhook)
    if not webhooks:
        checks.append(Check("service", "fail", "no workerclass webhook configuration in STATE: nothing calls a server"))
    seen: set[tuple[str, str]] = set()
    for reference, callers in references.items():
        service_checks, backing = _service(reference, callers, objects)
        checks.extend(service_checks)
        for deployment, indexes in backing:
            key = (_namespace(deployment), _name(deployment))
            if key not in seen:
                seen.add(key)
                checks.extend(_deployment(deployment, indexes, objects))
    return checks


# ---------------------------------------------------------------------- the whole verdict


def _per_webhook(name: str, webhooks: list[_Webhook], findings: Iterable[Check | None], summary: str) -> list[Check]:
    """The findings of one per-webhook check, or one ok row saying what held for all of them."""
    found = [finding for finding in findings if finding is not None]
    if found or not webhooks:
        return found
    return [Check(name, "ok", summary)]


def preflight_objects(objects: Iterable[Mapping[str, Any]]) -> Preflight:
    """Check webhook-installation objects (any kinds; others are ignored)."""
    listed = list(objects)
    everything = _webhooks(listed)
    webhooks, others = _partition(everything)
    found = _Objects(
        services=[o for o in listed if _kind(o) == "Service"],
        deployments=[o for o in listed if _kind(o) == "Deployment"],
        budgets=[o for o in listed if _kind(o) == "PodDisruptionBudget"],
    )
    count = f"all {len(webhooks)} workerclass webhooks"
    checks: list[Check] = [_coverage(expectation, webhooks) for expectation in EXPECTED]
    for webhook in webhooks:
        checks.extend(_overmatching(webhook))
    checks += _per_webhook("path", webhooks, map(_path, webhooks), f"{count} send to served paths")
    wire = [finding for webhook in webhooks for finding in _wire(webhook)]
    checks += _per_webhook(
        "admissionReviewVersions",
        webhooks,
        [c for c in wire if c.check == "admissionReviewVersions"],
        f"{count} accept admission.k8s.io/v1",
    )
    checks += _per_webhook(
        "sideEffects", webhooks, [c for c in wire if c.check == "sideEffects"], f"{count} declare no side effects"
    )
    checks += _per_webhook(
        "timeoutSeconds",
        webhooks,
        [c for c in wire if c.check == "timeoutSeconds"],
        f"{count} time out within {SLOW_TIMEOUT}s",
    )
    checks += _per_webhook(
        "selectors",
        webhooks,
        [finding for webhook in webhooks for finding in _selectors(webhook)],
        f"{count} match every namespace and object",
    )
    checks += _per_webhook(
        "failurePolicy", webhooks, map(_failure_policy, webhooks), f"{count} have failurePolicy Fail"
    )
    checks.append(_outage(webhooks))
    checks += _others(others)
    checks += _per_webhook(
        "caBundle", webhooks, map(_ca_bundle, webhooks), f"{count} have a caBundle or cert-manager CA injection"
    )
    checks += _readiness(webhooks, found)
    rank = {name: index for index, name in enumerate(CHECK_ORDER)}
    return Preflight(tuple(sorted(checks, key=lambda check: rank[check.check])))


def preflight(state: State) -> Preflight:
    """Check the webhook installation a State holds (``state.auxiliary``)."""
    return preflight_objects(record.obj for record in state.auxiliary)
