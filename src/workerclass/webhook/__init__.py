"""The admission webhook: AdmissionReview over HTTPS, answered by the core. Nothing here decides
admission.

- :mod:`.review`: the wire format (decode a review against its path's target, encode an answer,
  scrub request values from messages).
- :mod:`.routes`: the served paths, built from the API table (:data:`workerclass.api.WEBHOOKS`).
- :mod:`.sources`: where the State comes from (a fixed state, a STATE folder; the cluster cache is
  :mod:`workerclass.adapters.kube`).
- :mod:`.handler`: one review over HTTP (limits, decoding, the core's decision, the answer);
  :mod:`.livereads`: its live reads of the cluster, shared between requests and rate-bounded.
- :mod:`.server`: the aiohttp application and its lifecycle (import it from
  ``workerclass.webhook.server``: this package itself imports no HTTP server); its limits are
  :mod:`.settings`.
- :mod:`.connections`: the connection cap, deadlines for slow clients, TLS handshakes;
  :mod:`.tlsstream`: TLS on the public ``ssl.SSLObject``, no state until a client speaks.
- :mod:`.metrics`: the Prometheus side; :mod:`.logtext`: request text made safe for a log line.
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
