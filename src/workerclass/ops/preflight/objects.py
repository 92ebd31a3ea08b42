"""Reading the installation's plain objects: tolerant accessors, label selectors, the webhooks as
found (:class:`FoundWebhook`), the API server's rule matcher, and which webhooks are ours.

Its edge: it reads and matches; it passes no verdict.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .expectations import BY_PATH, MUTATING, VALIDATING, WEBHOOK_DOMAIN, Expectation

__all__ = [
    "DEFAULT_SERVICE_PORT",
    "FoundWebhook",
    "as_list",
    "as_map",
    "found_webhooks",
    "kind_of",
    "metadata_of",
    "name_of",
    "namespace_of",
    "partition",
    "rule_matches",
    "selector_empty",
    "selects",
    "show",
    "split_resource",
    "strings",
    "webhook_matches",
]

DEFAULT_SERVICE_PORT = 443


def as_map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else []


def strings(value: Any) -> list[str]:
    return [item for item in as_list(value) if isinstance(item, str)]


def metadata_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return as_map(obj.get("metadata"))


def name_of(obj: Mapping[str, Any]) -> str:
    name = metadata_of(obj).get("name")
    return name if isinstance(name, str) and name else "?"


def namespace_of(obj: Mapping[str, Any]) -> str:
    """A namespaced object's namespace; ``default`` when the manifest names none (as kubectl applies it)."""
    namespace = metadata_of(obj).get("namespace")
    return namespace if isinstance(namespace, str) and namespace else "default"


def kind_of(obj: Mapping[str, Any]) -> str:
    kind = obj.get("kind")
    return kind if isinstance(kind, str) else ""


def show(value: Any) -> str:
    """A compact, stable rendering of a selector or list for messages."""
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{key}: {show(value[key])}" for key in value) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(show(item) for item in value) + "]"
    return str(value)


def selects(selector: Mapping[str, Any], labels: Mapping[str, Any]) -> bool:
    """Whether a LabelSelector (matchLabels + matchExpressions) selects ``labels``."""
    for key, value in as_map(selector.get("matchLabels")).items():
        if labels.get(key) != value:
            return False
    for item in as_list(selector.get("matchExpressions")):
        expression = as_map(item)
        label, operator, values = expression.get("key"), expression.get("operator"), strings(expression.get("values"))
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


def selector_empty(selector: Any) -> bool:
    selector = as_map(selector)
    return not as_map(selector.get("matchLabels")) and not as_list(selector.get("matchExpressions"))


# ---------------------------------------------------------------------- webhooks as found


@dataclass(frozen=True, slots=True)
class FoundWebhook:
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
        service = as_map(as_map(self.spec.get("clientConfig")).get("service"))
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
        client = as_map(self.spec.get("clientConfig"))
        service = as_map(client.get("service"))
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
        return [as_map(rule) for rule in as_list(self.spec.get("rules"))]

    @property
    def failure_policy(self) -> str:
        policy = self.spec.get("failurePolicy")
        return policy if isinstance(policy, str) else "Fail"  # the v1 default


def found_webhooks(objects: Sequence[Mapping[str, Any]]) -> list[FoundWebhook]:
    found: list[FoundWebhook] = []
    for obj in objects:
        kind = kind_of(obj)
        if kind not in (MUTATING, VALIDATING):
            continue
        annotations = as_map(metadata_of(obj).get("annotations"))
        for index, spec in enumerate(as_list(obj.get("webhooks"))):
            found.append(FoundWebhook(kind, name_of(obj), annotations, index, as_map(spec)))
    return found


def split_resource(entry: str) -> tuple[str, str]:
    resource, _, subresource = entry.partition("/")
    return resource, subresource


def rule_matches(
    rule: Mapping[str, Any], group: str, version: str, resource: str, operation: str, scope: str, subresource: str = ""
) -> bool:
    """The API server's rule matcher (``admission/plugin/webhook/predicates/rules``) for one request."""
    groups, versions = strings(rule.get("apiGroups")), strings(rule.get("apiVersions"))
    operations = strings(rule.get("operations"))
    if not ("*" in groups or group in groups) or not ("*" in versions or version in versions):
        return False
    if not ("*" in operations or operation in operations):
        return False
    rule_scope = rule.get("scope", "*")
    if rule_scope not in ("*", scope):
        return False
    for entry in strings(rule.get("resources")):
        rule_resource, rule_subresource = split_resource(entry)
        if rule_resource in ("*", resource) and rule_subresource in ("*", subresource):
            return True
    return False


def webhook_matches(webhook: FoundWebhook, expectation: Expectation, operation: str) -> bool:
    return any(
        rule_matches(rule, expectation.group, expectation.version, expectation.resource, operation, expectation.scope)
        for rule in webhook.rules
    )


def _is_ours(webhook: FoundWebhook, ours_services: set[tuple[str, str, int]]) -> bool:
    return (
        webhook.path in BY_PATH
        or webhook.name.endswith("." + WEBHOOK_DOMAIN)
        or (webhook.service is not None and webhook.service in ours_services)
    )


def partition(webhooks: list[FoundWebhook]) -> tuple[list[FoundWebhook], list[FoundWebhook]]:
    """The workerclass webhooks (served path, generated name, or the same Service) and the others."""
    seeds = [w for w in webhooks if w.path in BY_PATH or w.name.endswith("." + WEBHOOK_DOMAIN)]
    services = {w.service for w in seeds if w.service is not None}
    configurations = {(w.configuration, w.configuration_name) for w in seeds}
    ours = [w for w in webhooks if _is_ours(w, services) or (w.configuration, w.configuration_name) in configurations]
    others = [w for w in webhooks if w not in ours]
    return ours, others
