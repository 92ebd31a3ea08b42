"""Render: effective settings -> the objects Cozystack's ``kubernetes-nodes`` chart renders.

Pure: no I/O, no clock, no State. ``render(effective)`` returns plain dicts in the chart's order
(:mod:`workerclass.render.manifests` says which values and class-era inputs go to the chart port
:mod:`workerclass.chart`); ``render(effective, talos_config_template=True)`` also returns the
TalosConfigTemplate the talos-reconcile Job applies, run-time inputs as ``${NAME}``.
``template_hash(effective)`` is the content hash in the infrastructure template's name
(:mod:`workerclass.render.hash` says why our code never renames a running pool's template).
Kairos pools and Talos pools on Proxmox take the templates of :mod:`workerclass.render.templates`.
A classless pool renders its stored values verbatim and never looks up a WorkerClass.
"""

from __future__ import annotations

from .errors import RenderError
from .hash import HASH_VERSION, INFRASTRUCTURE_KINDS, canonical_text, chart_hash, content_hash, template_suffix
from .legacy import CLASS_ERA_KEYS, ClassEra, class_era, legacy_values
from .manifests import KIND_RANK, chart_input_for, release_name, render, sort_manifests, template_hash

__all__ = [
    "CLASS_ERA_KEYS",
    "HASH_VERSION",
    "INFRASTRUCTURE_KINDS",
    "KIND_RANK",
    "ClassEra",
    "RenderError",
    "canonical_text",
    "chart_hash",
    "chart_input_for",
    "class_era",
    "content_hash",
    "legacy_values",
    "release_name",
    "render",
    "sort_manifests",
    "template_hash",
    "template_suffix",
]
