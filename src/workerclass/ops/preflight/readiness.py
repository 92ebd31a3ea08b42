"""(c) Readiness: the Service each webhook calls exists, selects a Deployment's pods and targets a
container port; the Deployment is probed on ``/readyz``, has ready replicas, and survives a node
drain (2 replicas and a PodDisruptionBudget) (checks ``service``, ``readiness``, ``replicas``,
``disruptionBudget``).

A webhook that calls ``clientConfig.url`` instead of a Service fails ``service``: preflight sees no
workload behind a URL (its readiness, replicas and disruption budget), and an installation whose
server it cannot see is not one it calls safe; the message says to verify that server where it
runs. The generated install always calls a Service. Read live, a list the API server refused
(:class:`~.source.Unreadable`) fails the check that needed it (``service``, ``readiness``,
``disruptionBudget``) with the list and its status, rather than reporting the objects missing."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .expectations import MUTATING, READY_PATH, VALIDATING
from .objects import FoundWebhook, as_list, as_map, metadata_of, name_of, namespace_of, selector_empty, selects, show
from .source import FOLDER, Source
from .verdicts import Check

__all__ = ["Installation", "readiness"]


@dataclass(frozen=True, slots=True)
class Installation:
    services: list[Mapping[str, Any]]
    deployments: list[Mapping[str, Any]]
    budgets: list[Mapping[str, Any]]
    source: Source = FOLDER


def _pod_labels(deployment: Mapping[str, Any]) -> Mapping[str, Any]:
    return as_map(metadata_of(as_map(as_map(deployment.get("spec")).get("template"))).get("labels"))


def _containers(deployment: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    template = as_map(as_map(deployment.get("spec")).get("template"))
    return [as_map(container) for container in as_list(as_map(template.get("spec")).get("containers"))]


def _label(kind: str, obj: Mapping[str, Any]) -> str:
    return f"{kind} {namespace_of(obj)}/{name_of(obj)}"


def _serving_containers(deployment: Mapping[str, Any], target: Any) -> list[int]:
    """Indexes of the containers that expose ``target`` (a port number or a port name)."""
    indexes = []
    for index, container in enumerate(_containers(deployment)):
        for port in as_list(container.get("ports")):
            port = as_map(port)
            if (isinstance(target, int) and port.get("containerPort") == target) or (
                isinstance(target, str) and port.get("name") == target
            ):
                indexes.append(index)
                break
    return indexes


def _service(
    reference: tuple[str, str, int], callers: list[FoundWebhook], objects: Installation
) -> tuple[list[Check], list[tuple[Mapping[str, Any], list[int]]]]:
    """The Service a webhook calls, and the Deployments (with serving containers) behind it."""
    namespace, name, port = reference
    first = callers[0]
    where = f"Service {namespace}/{name}"
    service = next((s for s in objects.services if (namespace_of(s), name_of(s)) == (namespace, name)), None)
    if service is None:
        unread = objects.source.unread("Service", namespace)
        missing = f"cannot be read: {unread.text}" if unread else f"is not in {objects.source.where}"
        return [
            Check(
                "service",
                "fail",
                f"{where} that {', '.join(w.name for w in callers)} call {missing}",
                first.object,
                first.field("clientConfig.service"),
            )
        ], []
    spec = as_map(service.get("spec"))
    selector = as_map(spec.get("selector"))
    if not selector:
        return [Check("service", "fail", f"{where} has no selector: no pods back it", where, "spec.selector")], []
    entry = next((as_map(p) for p in as_list(spec.get("ports")) if as_map(p).get("port") == port), None)
    if entry is None:
        ports = [as_map(p).get("port") for p in as_list(spec.get("ports"))]
        return [
            Check(
                "service",
                "fail",
                f"{where} has no port {port} (it has {show(ports)}), which {first.name} calls",
                where,
                "spec.ports",
            )
        ], []
    target = entry.get("targetPort", port)
    backing = [
        d
        for d in objects.deployments
        if namespace_of(d) == namespace and all(_pod_labels(d).get(k) == v for k, v in selector.items())
    ]
    unread = objects.source.unread("Deployment", namespace)
    if not backing and unread is not None:
        return [
            Check(
                "readiness",
                "fail",
                f"the Deployments behind {where} cannot be read ({unread.text}): their readiness cannot be verified",
                where,
                "spec.selector",
            )
        ], []
    if not backing:
        return [
            Check(
                "service",
                "fail",
                f"{where} selector {show(selector)} matches no Deployment's pod labels in {objects.source.where}",
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


def _deployment(deployment: Mapping[str, Any], indexes: list[int], objects: Installation) -> list[Check]:
    where = _label("Deployment", deployment)
    checks: list[Check] = []
    containers = _containers(deployment)
    probed = [
        i
        for i in indexes
        if as_map(as_map(containers[i].get("readinessProbe")).get("httpGet")).get("path") == READY_PATH
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
    spec = as_map(deployment.get("spec"))
    replicas = spec.get("replicas", 1)
    replicas = replicas if isinstance(replicas, int) else 1
    status = deployment.get("status")
    if not isinstance(status, Mapping) or not status:
        why = (
            "the deployment controller has not reported on it yet"
            if objects.source.live
            else "the folder holds no live readiness; run against exported live objects"
        )
        checks.append(Check("readiness", "fail", f"{where} has no status: {why}", where, "status"))
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
            if namespace_of(b) == namespace_of(deployment)
            and not selector_empty(as_map(b.get("spec")).get("selector"))
            and selects(as_map(as_map(b.get("spec")).get("selector")), labels)
        ),
        None,
    )
    unread = objects.source.unread("PodDisruptionBudget", namespace_of(deployment))
    if budget is None and unread is not None:
        checks.append(
            Check(
                "disruptionBudget",
                "fail",
                f"whether a PodDisruptionBudget covers {where} cannot be verified: {unread.text}",
                where,
                "spec.template.metadata.labels",
            )
        )
    elif budget is None:
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


def readiness(webhooks: list[FoundWebhook], objects: Installation) -> list[Check]:
    checks: list[Check] = []
    references: dict[tuple[str, str, int], list[FoundWebhook]] = {}
    for webhook in webhooks:
        reference = webhook.service
        if reference is None:
            checks.append(
                Check(
                    "service",
                    "fail",
                    f"{webhook.name} is served from a URL (clientConfig.url), not a Service: the server behind it "
                    f"(its readiness, replicas and disruption budget) cannot be verified from {objects.source.where}; "
                    "verify it where it runs",
                    webhook.object,
                    webhook.field("clientConfig.url"),
                )
            )
            continue
        references.setdefault(reference, []).append(webhook)
    configurations_read = not any(objects.source.unread(kind) for kind in (MUTATING, VALIDATING))
    if not webhooks and configurations_read:
        checks.append(
            Check(
                "service",
                "fail",
                f"no workerclass webhook configuration in {objects.source.where}: nothing calls a server",
            )
        )
    seen: set[tuple[str, str]] = set()
    for reference, callers in references.items():
        service_checks, backing = _service(reference, callers, objects)
        checks.extend(service_checks)
        for deployment, indexes in backing:
            key = (namespace_of(deployment), name_of(deployment))
            if key not in seen:
                seen.add(key)
                checks.extend(_deployment(deployment, indexes, objects))
    return checks
