"""Preflight: is the installed webhook safe to rely on before class-defaulting creates are exposed?

The design page: "A classless render does not look up a WorkerClass. That is not an API outage
exemption: a matching webhook with failurePolicy: Fail can refuse an UPDATE even when its healthy
handler would leave the legacy pool unchanged. Verify the installed package's webhook matching,
readiness and failure behavior before exposing class-defaulting creates." This package is that
verification over the webhook-installation objects a State keeps (``State.auxiliary``: webhook
configurations, Deployments, Services, PodDisruptionBudgets, Namespaces), read from a STATE folder
or live from the API server (:class:`Source`; the reading itself is
:mod:`workerclass.adapters.live`'s). Verdicts are values
(:class:`Check`); the whole result is safe when no check fails. Warnings never fail it.

Modules:

- :mod:`.expectations`: what must hold: :data:`EXPECTED`, a view of
  :data:`workerclass.api.webhooks.WEBHOOKS` (the paths, kinds and operations API.md section 5
  names), the webhook domain, the readiness path, the timeout bounds, the CA annotations.
- :mod:`.objects`: reading plain objects: the webhooks as found, label selectors, the API
  server's rule matcher, which webhooks are ours.
- :mod:`.matching`: (a) matching: coverage and over-matching of each path, the served path, the
  wire settings (review versions, side effects, timeout), selectors and match conditions.
- :mod:`.failure`: (b) failure policy, the outage caveat, other webhooks matching the pools.
- :mod:`.certificates`: whether the API server can trust the serving certificate.
- :mod:`.readiness`: (c) the Service, the Deployment behind it (probe, ready replicas, replicas)
  and its PodDisruptionBudget.
- :mod:`.source`: where the objects were read (:class:`Source`: a folder, or live) and the lists
  the API server refused (:class:`Unreadable`), which fail the checks that needed them.
- :mod:`.verdicts`: :class:`Check`, :class:`Preflight`, the report order.
- :mod:`.report`: :func:`preflight_objects` and :func:`preflight`, every check in that order.

Its edge: plain objects in, checks out; no I/O. The expectations come from :mod:`workerclass.api`,
the table the served routes and the generated install are built from too;
``tests/ops/test_preflight.py`` asserts they agree.
"""

from __future__ import annotations

from .expectations import (
    ALL_OPERATIONS,
    CA_ANNOTATIONS,
    DEFAULT_TIMEOUT,
    EXPECTED,
    MAX_TIMEOUT,
    MUTATING,
    READY_PATH,
    SLOW_TIMEOUT,
    VALIDATING,
    WEBHOOK_DOMAIN,
    Expectation,
)
from .matching import Namespaces
from .objects import DEFAULT_SERVICE_PORT
from .report import HELD_KINDS, NAMESPACE_LABEL, preflight, preflight_objects
from .source import FOLDER, Source, Unreadable
from .verdicts import CHECK_ORDER, Check, Preflight, Verdict

__all__ = [
    "ALL_OPERATIONS",
    "CA_ANNOTATIONS",
    "CHECK_ORDER",
    "DEFAULT_SERVICE_PORT",
    "DEFAULT_TIMEOUT",
    "EXPECTED",
    "FOLDER",
    "HELD_KINDS",
    "MAX_TIMEOUT",
    "MUTATING",
    "NAMESPACE_LABEL",
    "READY_PATH",
    "SLOW_TIMEOUT",
    "VALIDATING",
    "WEBHOOK_DOMAIN",
    "Check",
    "Expectation",
    "Namespaces",
    "Preflight",
    "Source",
    "Unreadable",
    "Verdict",
    "preflight",
    "preflight_objects",
]
