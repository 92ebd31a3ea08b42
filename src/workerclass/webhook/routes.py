"""The webhook paths of API.md section 5, as the server routes them: built once from the API table
(:data:`workerclass.api.webhooks.WEBHOOKS`), so the server, the install manifests and ``preflight``
cannot disagree on a path, a kind or an operation.

Kept apart from the server (no aiohttp here). A :class:`Route` is the table row plus what a request
needs at hand (the :class:`~.review.Target` the review is checked against, the metric/log name),
made at import: a request reads attributes, it builds nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..api import WEBHOOKS, Resource, Webhook
from ..api.webhooks import Decider
from .review import Target

__all__ = ["ROUTES", "Route"]


@dataclass(frozen=True, slots=True)
class Route:
    """One webhook path: its metric/log name, the kind it admits, and which core function decides."""

    path: str
    name: str
    target: Target
    mutating: bool
    decider: Decider  # "mutate" or "validate"
    resource: Resource

    @classmethod
    def of(cls, webhook: Webhook) -> Route:
        resource = webhook.resource
        return cls(
            webhook.path,
            webhook.name,
            Target(resource.kind, resource.group, resource.version),
            webhook.mutating,
            webhook.decider,
            resource,
        )


ROUTES: tuple[Route, ...] = tuple(Route.of(webhook) for webhook in WEBHOOKS)
