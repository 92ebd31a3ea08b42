"""Render: effective settings -> Cluster API manifests, and the versioned template hash.

Pure: no I/O, no clock, no State. ``render(effective)`` returns plain dicts in a deterministic
order (kind rank, then name); ``template_hash(effective)`` names the templates (see
:mod:`workerclass.render.hash` for the field list and the rules for bumping
:data:`HASH_VERSION`). A classless (legacy) pool renders through the same functions from its
effective settings alone, so no WorkerClass can be looked up on that path.

Kairos bootstrap uses ``distribution: kubeadm``, the path the design page describes, which the
current upstream ``KairosConfigTemplate`` enum (``k0s``, ``k3s``) does not list yet: the schema
tests accept exactly that one value beyond the enum and nothing else.
"""

from __future__ import annotations

from .defaults import RenderError
from .hash import HASH_ANNOTATION, HASH_VERSION, HASH_VERSION_ANNOTATION, hash_document, template_hash
from .manifests import KIND_RANK, cluster_api_name, render, sort_manifests, template_name

__all__ = [
    "HASH_ANNOTATION",
    "HASH_VERSION",
    "HASH_VERSION_ANNOTATION",
    "KIND_RANK",
    "RenderError",
    "cluster_api_name",
    "hash_document",
    "render",
    "sort_manifests",
    "template_hash",
    "template_name",
]
