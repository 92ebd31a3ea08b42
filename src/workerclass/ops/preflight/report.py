"""The whole verdict: every check over an installation, in :data:`CHECK_ORDER`.

Its edge: plain objects (or a State's ``auxiliary`` records) in, a :class:`Preflight` out; no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ...state import State
from .certificates import ca_bundle
from .expectations import EXPECTED, SLOW_TIMEOUT
from .failure import failure_policy, other_webhooks, outage
from .matching import coverage, overmatching, path_check, selector_checks, wire_checks
from .objects import FoundWebhook, found_webhooks, kind_of, partition
from .readiness import Installation, readiness
from .verdicts import CHECK_ORDER, Check, Preflight

__all__ = ["preflight", "preflight_objects"]


def _per_webhook(
    name: str, webhooks: list[FoundWebhook], findings: Iterable[Check | None], summary: str
) -> list[Check]:
    """The findings of one per-webhook check, or one ok row saying what held for all of them."""
    found = [finding for finding in findings if finding is not None]
    if found or not webhooks:
        return found
    return [Check(name, "ok", summary)]


def preflight_objects(objects: Iterable[Mapping[str, Any]]) -> Preflight:
    """Check webhook-installation objects (any kinds; others are ignored)."""
    listed = list(objects)
    everything = found_webhooks(listed)
    webhooks, others = partition(everything)
    found = Installation(
        services=[o for o in listed if kind_of(o) == "Service"],
        deployments=[o for o in listed if kind_of(o) == "Deployment"],
        budgets=[o for o in listed if kind_of(o) == "PodDisruptionBudget"],
    )
    count = f"all {len(webhooks)} workerclass webhooks"
    checks: list[Check] = [coverage(expectation, webhooks) for expectation in EXPECTED]
    for webhook in webhooks:
        checks.extend(overmatching(webhook))
    checks += _per_webhook("path", webhooks, map(path_check, webhooks), f"{count} send to served paths")
    wire = [finding for webhook in webhooks for finding in wire_checks(webhook)]
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
        [finding for webhook in webhooks for finding in selector_checks(webhook)],
        f"{count} match every namespace and object",
    )
    checks += _per_webhook("failurePolicy", webhooks, map(failure_policy, webhooks), f"{count} have failurePolicy Fail")
    checks.append(outage(webhooks))
    checks += other_webhooks(others)
    checks += _per_webhook(
        "caBundle", webhooks, map(ca_bundle, webhooks), f"{count} have a caBundle or cert-manager CA injection"
    )
    checks += readiness(webhooks, found)
    rank = {name: index for index, name in enumerate(CHECK_ORDER)}
    return Preflight(tuple(sorted(checks, key=lambda check: rank[check.check])))


def preflight(state: State) -> Preflight:
    """Check the webhook installation a State holds (``state.auxiliary``)."""
    return preflight_objects(record.obj for record in state.auxiliary)
