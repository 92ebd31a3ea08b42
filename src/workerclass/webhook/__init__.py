"""The admission webhook server: AdmissionReview over HTTPS, answered by the core.

``review`` is the wire format, ``sources`` where the State comes from, ``server`` the aiohttp
application and its lifecycle, ``metrics`` the Prometheus side. Nothing here decides admission.
"""

from .review import EnvelopeError, RequestError, Review, Target, decode, encode, from_decision, refusal
from .server import ROUTES, Route, Settings, WebhookServer
from .sources import FolderSource, StateSource, StaticSource

__all__ = [
    "ROUTES",
    "EnvelopeError",
    "FolderSource",
    "RequestError",
    "Review",
    "Route",
    "Settings",
    "StateSource",
    "StaticSource",
    "Target",
    "WebhookServer",
    "decode",
    "encode",
    "from_decision",
    "refusal",
]
