"""The one declarative table of the API workerclass touches.

- :mod:`.resources`: every resource we read, watch, admit or install (group, version, kind, plural,
  scope, role, check order, watch labels), the webhook domain and the finalizer.
- :mod:`.webhooks`: the served paths, the resource each admits and the operations it needs, and the
  server's health, readiness and metrics paths.
- :mod:`.patterns`: the value patterns the parser matches and the CRD schemas carry.
- :mod:`.schema`: the declarations of the WorkerClass and WorkerPlatform specs (and the Talos and OS
  blocks a class and a pool share): the parser's key sets and patterns, and the CRD schemas
  ``crds.py`` generates from them.
- :mod:`.names`: the closed name sets (families, infrastructures, image sources) as ``Literal`` types.
- :mod:`.paths`: typed field paths.
- :mod:`.bounds`: how deep and how large an object workerclass reads may be, measured iteratively.
- :mod:`.frozen`: frozen records built at the cost of plain ones (the core's per-request records).
- :mod:`.caching`: caches that keep only short arguments (a tenant's text is never kept whole).

The bottom layer: it imports nothing else of the package, and every layer may import it.
"""

from .names import FAMILIES, IMAGE_SOURCES, INFRASTRUCTURES, Family, ImageSource, Infrastructure
from .paths import FieldPath
from .resources import (
    AUXILIARY_KINDS,
    CONTROLLER_READS,
    FINALIZER,
    POOL_KINDS,
    RESOURCES,
    WATCHED,
    WEBHOOK_DOMAIN,
    Resource,
    by_kind,
)
from .webhooks import ADMITTED_OPERATIONS, HEALTH_PATH, METRICS_PATH, READY_PATH, WEBHOOKS, Operation, Webhook, by_path

__all__ = [
    "ADMITTED_OPERATIONS",
    "AUXILIARY_KINDS",
    "CONTROLLER_READS",
    "FAMILIES",
    "FINALIZER",
    "HEALTH_PATH",
    "IMAGE_SOURCES",
    "INFRASTRUCTURES",
    "METRICS_PATH",
    "POOL_KINDS",
    "READY_PATH",
    "RESOURCES",
    "WATCHED",
    "WEBHOOKS",
    "WEBHOOK_DOMAIN",
    "Family",
    "FieldPath",
    "ImageSource",
    "Infrastructure",
    "Operation",
    "Resource",
    "Webhook",
    "by_kind",
    "by_path",
]
