"""(b) Failure policy: ``Fail`` everywhere (``Ignore`` on the mutating webhook lets creates through
without the stored platform default; on a validating one, unchecked objects), the design page's
outage caveat that ``Fail`` also refuses legacy-pool UPDATEs, and the other webhooks whose outages
refuse the same requests (checks ``failurePolicy``, ``outage``, ``otherWebhooks``)."""

from __future__ import annotations

from ...api.resources import KUBERNETES_NODES
from .expectations import EXPECTED
from .objects import FoundWebhook, webhook_matches
from .verdicts import Check

__all__ = ["failure_policy", "other_webhooks", "outage"]


def failure_policy(webhook: FoundWebhook) -> Check | None:
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


def outage(webhooks: list[FoundWebhook]) -> Check:
    pool = next(
        (
            w
            for w in webhooks
            if w.failure_policy == "Fail"
            and any(webhook_matches(w, e, "UPDATE") for e in EXPECTED if e.webhook.resource == KUBERNETES_NODES)
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


def other_webhooks(webhooks: list[FoundWebhook]) -> list[Check]:
    """Other webhooks that match the pools' UPDATE: their outages refuse legacy pool UPDATEs too."""
    found: list[Check] = []
    for webhook in webhooks:
        if webhook.failure_policy != "Fail":
            continue
        matched = sorted({e.kind for e in EXPECTED for op in e.operations if webhook_matches(webhook, e, op)})
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
