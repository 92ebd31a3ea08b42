"""(a) Matching: every served path receives exactly the kind and operations it serves, over
admission.k8s.io/v1, with no side effects, a sane timeout, and no selector or match condition
that lets requests skip it (checks ``matching``, ``path``, ``admissionReviewVersions``,
``sideEffects``, ``timeoutSeconds``, ``selectors``).

A ``namespaceSelector`` is judged against the namespaces read (:class:`Namespaces`: the Namespace
objects of a folder, or every namespace when read live) and the namespaces that hold the served
kind: excluding a namespace that holds KubernetesNodes (or ComputePlanes) fails, since those
objects' requests skip the webhook; excluding only others is a warning (objects created there
later would skip it), and so is a selector a folder gives no Namespace objects to judge by. Read
live, a refused list of Namespaces or of the kind fails: the selector cannot be judged."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .expectations import ALL_OPERATIONS, BY_PATH, DEFAULT_TIMEOUT, MAX_TIMEOUT, SLOW_TIMEOUT, Expectation
from .objects import (
    FoundWebhook,
    as_list,
    as_map,
    rule_matches,
    selector_empty,
    selects,
    show,
    split_resource,
    strings,
    webhook_matches,
)
from .source import FOLDER, Source
from .verdicts import Check

__all__ = ["Namespaces", "coverage", "overmatching", "path_check", "selector_checks", "wire_checks"]

#: how many namespace names a message lists before it says how many more
_SHOWN_NAMESPACES = 5


@dataclass(frozen=True, slots=True)
class Namespaces:
    """What a ``namespaceSelector`` is judged against: the labels of the namespaces read (with the
    ``kubernetes.io/metadata.name`` label the API server gives every namespace), the namespaces that
    hold objects of each served kind, and where they were read."""

    labels: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    holding: Mapping[str, frozenset[str]] = field(default_factory=dict)
    source: Source = FOLDER


def _listed(names: list[str]) -> str:
    shown = ", ".join(names[:_SHOWN_NAMESPACES])
    more = len(names) - _SHOWN_NAMESPACES
    return shown + (f" and {more} more" if more > 0 else "")


def coverage(expectation: Expectation, webhooks: list[FoundWebhook]) -> Check:
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
        if not any(webhook_matches(w, expectation, operation) for w in callers)
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


def overmatching(webhook: FoundWebhook) -> list[Check]:
    """What a webhook's rules match beyond what its path serves.

    Another resource is a failure: the path refuses kinds it does not serve (a 400 denial) even
    when healthy. Extra operations, subresources or API groups are warnings: the healthy handler
    answers them, but with ``Fail`` an outage refuses them needlessly (pool DELETE, for example).
    """
    expectation = BY_PATH.get(webhook.path or "")
    if expectation is None:
        return []
    found: list[Check] = []
    for index, rule in enumerate(webhook.rules):
        field = webhook.field(f"rules[{index}]")
        others = [entry for entry in strings(rule.get("resources")) if split_resource(entry)[0] != expectation.resource]
        if others:
            found.append(
                Check(
                    "matching",
                    "fail",
                    f"{webhook.name} also sends resources {show(others)} to {expectation.path}, which serves only "
                    f"{expectation.kind} and refuses every other kind even when healthy",
                    webhook.object,
                    f"{field}.resources",
                )
            )
        subresources = [entry for entry in strings(rule.get("resources")) if split_resource(entry)[1]]
        if subresources:
            found.append(
                Check(
                    "matching",
                    "warn",
                    f"{webhook.name} also matches subresources {show(subresources)}: with failurePolicy "
                    f"{webhook.failure_policy} an outage refuses those requests too",
                    webhook.object,
                    f"{field}.resources",
                )
            )
        groups = [group for group in strings(rule.get("apiGroups")) if group != expectation.group]
        if groups:
            found.append(
                Check(
                    "matching",
                    "warn",
                    f"{webhook.name} also matches API groups {show(groups)} besides {expectation.group}",
                    webhook.object,
                    f"{field}.apiGroups",
                )
            )
        extra = [
            operation
            for operation in ALL_OPERATIONS
            if operation not in expectation.operations
            and rule_matches(
                rule, expectation.group, expectation.version, expectation.resource, operation, expectation.scope
            )
        ]
        if extra:
            found.append(
                Check(
                    "matching",
                    "warn",
                    f"{webhook.name} also matches {expectation.kind} {', '.join(extra)} "
                    f"(operations: {show(strings(rule.get('operations')))}), which {expectation.path} does not "
                    f"need: with failurePolicy {webhook.failure_policy} an outage refuses them needlessly",
                    webhook.object,
                    f"{field}.operations",
                )
            )
    return found


def path_check(webhook: FoundWebhook) -> Check | None:
    path = webhook.path
    expectation = BY_PATH.get(path or "")
    field = webhook.field("clientConfig.service.path" if webhook.service is not None else "clientConfig.url")
    if expectation is None:
        served = ", ".join(BY_PATH)
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


def wire_checks(webhook: FoundWebhook) -> list[Check]:
    found: list[Check] = []
    versions = strings(webhook.spec.get("admissionReviewVersions"))
    if "v1" not in versions:
        found.append(
            Check(
                "admissionReviewVersions",
                "fail",
                f"{webhook.name} offers {show(versions)}; the server speaks admission.k8s.io/v1 only",
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


def _namespace_selector(
    webhook: FoundWebhook, expectation: Expectation | None, selector: Mapping[str, Any], namespaces: Namespaces
) -> Check:
    """A non-empty namespaceSelector on a namespaced (or unknown) path, judged against the namespaces read."""
    field = webhook.field("namespaceSelector")
    shown = show(selector)
    skip = "requests there skip the webhook (no stored default class, no validation)"
    source = namespaces.source
    if expectation is not None and (namespaces.labels or source.live):
        kind = expectation.kind
        unread = source.unread("Namespace") or source.unread(kind)
        if unread is not None:
            return Check(
                "selectors",
                "fail",
                f"{webhook.name} namespaceSelector {shown}: which namespaces it excludes cannot be verified "
                f"({unread.text})",
                webhook.object,
                field,
            )
        labels = namespaces.labels
        held = namespaces.holding.get(kind, frozenset())
        excluded_held = sorted(ns for ns in held if ns in labels and not selects(selector, labels[ns]))
        if excluded_held:
            return Check(
                "selectors",
                "fail",
                f"{webhook.name} namespaceSelector {shown} excludes namespaces that hold {kind}: "
                f"{_listed(excluded_held)}: {skip}",
                webhook.object,
                field,
            )
        excluded = sorted(ns for ns in labels if not selects(selector, labels[ns]))
        if excluded:
            return Check(
                "selectors",
                "warn",
                f"{webhook.name} namespaceSelector {shown} excludes namespaces {_listed(excluded)} (none holds "
                f"{kind} in {source.where}): {kind} created there would skip the webhook",
                webhook.object,
                field,
            )
        return Check(
            "selectors",
            "warn",
            f"{webhook.name} namespaceSelector {shown} matches every namespace in {source.where}, but a namespace "
            "created without those labels would skip the webhook",
            webhook.object,
            field,
        )
    return Check(
        "selectors",
        "warn",
        f"{webhook.name} namespaceSelector {shown} could exclude tenant namespaces: {skip}",
        webhook.object,
        field,
    )


def selector_checks(webhook: FoundWebhook, namespaces: Namespaces | None = None) -> list[Check]:
    found: list[Check] = []
    expectation = BY_PATH.get(webhook.path or "")
    for key in ("namespaceSelector", "objectSelector"):
        selector = webhook.spec.get(key)
        if selector is None or selector_empty(selector):
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
                    f"{webhook.name} objectSelector {show(selector)} lets the writer of an object skip the webhook "
                    "by its own labels (no stored default class, no validation): remove it",
                    webhook.object,
                    webhook.field(key),
                )
            )
            continue
        found.append(_namespace_selector(webhook, expectation, as_map(selector), namespaces or Namespaces()))
    conditions = as_list(webhook.spec.get("matchConditions"))
    if conditions:
        names = [as_map(condition).get("name", "?") for condition in conditions]
        found.append(
            Check(
                "selectors",
                "warn",
                f"{webhook.name} matchConditions {show(names)} could exclude requests: those skip the webhook",
                webhook.object,
                webhook.field("matchConditions"),
            )
        )
    return found
