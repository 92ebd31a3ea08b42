"""Render: effective settings -> Cluster API manifests, and the versioned template hash.

Pure: no I/O, no clock. ``render(effective)`` returns plain dicts in a deterministic order;
``template_hash(effective)`` names the templates (see :mod:`workerclass.render.hash`).
"""

from __future__ import annotations

from .defaults import RenderError
from .hash import HASH_ANNOTATION, HASH_VERSION, HASH_VERSION_ANNOTATION, hash_document, template_hash

__all__ = [
    "HASH_ANNOTATION",
    "HASH_VERSION",
    "HASH_VERSION_ANNOTATION",
    "RenderError",
    "hash_document",
    "template_hash",
]
