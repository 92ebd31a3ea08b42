"""The admission webhook: AdmissionReview over HTTPS, answered by the core.

``review`` is the wire format, ``routes`` the served paths, ``sources`` where the State comes
from, ``server`` the aiohttp application and its lifecycle (import it from
``workerclass.webhook.server``: this package itself imports no HTTP server), ``metrics`` the
Prometheus side. Nothing here decides admission.
"""

from .review import EnvelopeError, RequestError, Review, Target, decode, encode, from_decision, refusal
from .routes import ROUTES, Route
from .sources import FolderSource, StateSource, StaticSource

__all__ = [
    "ROUTES",
    "EnvelopeError",
    "FolderSource",
    "RequestError",
    "Review",
    "Route",
    "StateSource",
    "StaticSource",
    "Target",
    "decode",
    "encode",
    "from_decision",
    "refusal",
]
