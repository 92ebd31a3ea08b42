"""What a safe installation must satisfy: the served paths and the requests each must receive.

:data:`EXPECTED` is a view of :data:`workerclass.api.webhooks.WEBHOOKS` (API.md section 5), the same
table the server routes by and ``deploy`` writes the webhook configurations from, so the three
cannot drift. The numbers below (timeouts, the default Service port) and the cert-manager
annotations are the API server's and cert-manager's, not ours. Its edge: plain data.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...api.resources import WEBHOOK_DOMAIN
from ...api.webhooks import ALL_OPERATIONS, READY_PATH, WEBHOOKS, Operation, Webhook

__all__ = [
    "ALL_OPERATIONS",
    "BY_PATH",
    "CA_ANNOTATIONS",
    "DEFAULT_TIMEOUT",
    "EXPECTED",
    "MAX_TIMEOUT",
    "MUTATING",
    "READY_PATH",
    "SLOW_TIMEOUT",
    "VALIDATING",
    "WEBHOOK_DOMAIN",
    "Expectation",
]

MUTATING = "MutatingWebhookConfiguration"
VALIDATING = "ValidatingWebhookConfiguration"
#: configuration annotations with which cert-manager's cainjector fills ``caBundle``
CA_ANNOTATIONS = ("cert-manager.io/inject-ca-from", "cert-manager.io/inject-ca-from-secret")
MAX_TIMEOUT = 30
SLOW_TIMEOUT = 15
DEFAULT_TIMEOUT = 10  # admissionregistration.k8s.io/v1 default


@dataclass(frozen=True, slots=True)
class Expectation:
    """One served path seen as preflight reads it: the configuration kind that must call it, and
    the requests (group, version, plural ``resource``, scope, operations) it must receive."""

    webhook: Webhook

    @property
    def path(self) -> str:
        return self.webhook.path

    @property
    def mutating(self) -> bool:
        return self.webhook.mutating

    @property
    def kind(self) -> str:
        return self.webhook.resource.kind

    @property
    def group(self) -> str:
        return self.webhook.resource.group

    @property
    def version(self) -> str:
        return self.webhook.resource.version

    @property
    def resource(self) -> str:
        """The plural, as a webhook rule's ``resources`` names it."""
        return self.webhook.resource.plural

    @property
    def namespaced(self) -> bool:
        return self.webhook.resource.namespaced

    @property
    def operations(self) -> tuple[Operation, ...]:
        return self.webhook.operations

    @property
    def configuration(self) -> str:
        return self.webhook.configuration

    @property
    def scope(self) -> str:
        return self.webhook.resource.scope

    @property
    def label(self) -> str:
        return f"{self.kind} ({self.group}/{self.version} {self.resource})"


#: API.md section 5: each path and what must be sent to it, no less (fail) and ideally no more (warn)
EXPECTED: tuple[Expectation, ...] = tuple(Expectation(webhook) for webhook in WEBHOOKS)
BY_PATH = {expectation.path: expectation for expectation in EXPECTED}
