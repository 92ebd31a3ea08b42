"""The webhooks of API.md section 5: each path, the resource it admits and the operations it needs.

The server routes by this table, ``deploy`` writes the webhook configurations from it and
``preflight`` checks an installation against it. Its edge: plain data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .frozen import fast_init
from .resources import COMPUTE_PLANE, KUBERNETES, KUBERNETES_NODES, WEBHOOK_DOMAIN, WORKER_CLASS, Resource

__all__ = [
    "ADMITTED_OPERATIONS",
    "ALL_OPERATIONS",
    "HEALTH_PATH",
    "METRICS_PATH",
    "READY_PATH",
    "WEBHOOKS",
    "Decider",
    "Operation",
    "Webhook",
    "by_path",
]

Operation = Literal["CREATE", "UPDATE", "DELETE", "CONNECT"]
#: every operation an admission webhook rule can name
ALL_OPERATIONS: tuple[Operation, ...] = ("CREATE", "UPDATE", "DELETE", "CONNECT")
#: which core function decides a path's requests
Decider = Literal["mutate", "validate"]
#: the server's readiness path: ready only once its cache of classes, pools and platform synced
READY_PATH = "/readyz"
#: the liveness path: the webhook server's (up while the process serves, synced or not), and
#: ``serve controller``'s (every replica, :mod:`workerclass.controller.liveness`)
HEALTH_PATH = "/healthz"
#: the server's Prometheus metrics path
METRICS_PATH = "/metrics"


@fast_init
@dataclass(frozen=True, slots=True)
class Webhook:
    """One served path: what it admits and the requests it must receive (no fewer, ideally no more)."""

    path: str
    resource: Resource
    mutating: bool
    operations: tuple[Operation, ...]

    @property
    def decider(self) -> Decider:
        return "mutate" if self.mutating else "validate"

    @property
    def name(self) -> str:
        """The metric and log name: ``mutate-kubernetesnodes``."""
        return f"{self.decider}-{self.resource.plural}"

    @property
    def webhook_name(self) -> str:
        """The name in the webhook configuration: ``kubernetesnodes.mutate.workerclass.cozystack.io``."""
        return f"{self.resource.plural}.{self.decider}.{WEBHOOK_DOMAIN}"

    @property
    def configuration(self) -> Literal["MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"]:
        return "MutatingWebhookConfiguration" if self.mutating else "ValidatingWebhookConfiguration"


WEBHOOKS: tuple[Webhook, ...] = (
    Webhook("/mutate/kubernetesnodes", KUBERNETES_NODES, True, ("CREATE", "UPDATE")),
    Webhook("/validate/kubernetesnodes", KUBERNETES_NODES, False, ("CREATE", "UPDATE")),
    Webhook("/validate/workerclasses", WORKER_CLASS, False, ("CREATE", "UPDATE", "DELETE")),
    Webhook("/validate/computeplanes", COMPUTE_PLANE, False, ("CREATE", "UPDATE")),
    # the parent app's node groups are pools of its own chart, which reads no class-era key
    Webhook("/validate/kuberneteses", KUBERNETES, False, ("CREATE", "UPDATE")),
)
_BY_PATH = {webhook.path: webhook for webhook in WEBHOOKS}
#: the operations some webhook receives, in ALL_OPERATIONS' order: (CREATE, UPDATE, DELETE); the
#: server answers any other operation as a bad request, and ``workerclass admit`` refuses it
ADMITTED_OPERATIONS: tuple[Operation, ...] = tuple(
    operation for operation in ALL_OPERATIONS if any(operation in webhook.operations for webhook in WEBHOOKS)
)


def by_path(path: str) -> Webhook | None:
    return _BY_PATH.get(path)
