"""Render: effective settings -> the objects Cozystack's ``kubernetes-nodes`` chart renders.

Pure: no I/O, no clock, no State. ``render(effective)`` returns plain dicts in the chart's order
(:mod:`workerclass.render.manifests` says which values and class-era inputs go to the chart port
:mod:`workerclass.chart`); ``render(effective, talos_config_template=True)`` also returns the
TalosConfigTemplate the talos-reconcile Job applies, run-time inputs as ``${NAME}``.
``template_hash(effective)`` is the content hash in the infrastructure template's name
(:mod:`workerclass.render.hash` says why our code never renames a running pool's template).
Kairos pools and Talos pools on Proxmox take the templates of :mod:`workerclass.render.templates`.
A classless pool renders its stored values verbatim and never looks up a WorkerClass.

Modules:

- ``manifests``: :func:`render` and :func:`template_hash`: which values and class-era inputs go to
  the chart port for a pool, by family and infrastructure; the apply order for people.
- ``legacy``: the chart values a classified pool renders with (its restore values) and its
  class-era inputs (kernel modules, disk source, installer image, Image Factory CA).
- ``templates``: the Kairos KubeVirt templates (and a Kairos pool's two bootstrap paths) and the
  Proxmox machine template that replace the chart's Talos KubeVirt ones.
- ``kairos_bootstrap``: a Kairos pool's bootstrap data on the data-secret path: the ``#cloud-config``
  Secret for Kairos's kubeadm provider (its join inputs redacted, named by that text) and how the
  worker controller fills the inputs in.
- ``hash``: the content hash in an infrastructure template's name, why a running pool's template is
  never renamed by our code, and :func:`keep_running`, which keeps running templates over a bump of
  the hash rule (the rule's version is stamped on every template we name).
- ``talos_template``: a classified Talos pool's TalosConfigTemplate, named by its content where the
  class changes the machine config or another content runs under the stable name (the Talos
  provider refuses a changed template under one name), and kept where the running one has the same
  content (a handoff, a re-render).
- ``text``: manifests as YAML and JSON text (the CLI's ``-o yaml`` / ``-o json``); its YAML writer is
  for people and PyYAML, not Helm's ``toYaml`` (that is :mod:`workerclass.chart.goyaml`).
- ``units``: quantities, read with the chart's ``toFloat``, as the Proxmox template's whole cores, MiB and GiB.
- ``errors``: :class:`RenderError`.
"""

from __future__ import annotations

from .errors import RenderError
from .hash import (
    HASH_VERSION,
    HASH_VERSION_ANNOTATION,
    INFRASTRUCTURE_KINDS,
    TEMPLATE_HASH_ANNOTATION,
    canonical_text,
    content_hash,
    keep_running,
    template_suffix,
)
from .legacy import CLASS_ERA_KEYS, ClassEra, class_era, legacy_values
from .manifests import KIND_RANK, chart_input_for, release_name, render, sort_manifests, template_hash

__all__ = [
    "CLASS_ERA_KEYS",
    "HASH_VERSION",
    "HASH_VERSION_ANNOTATION",
    "INFRASTRUCTURE_KINDS",
    "KIND_RANK",
    "TEMPLATE_HASH_ANNOTATION",
    "ClassEra",
    "RenderError",
    "canonical_text",
    "chart_input_for",
    "class_era",
    "content_hash",
    "keep_running",
    "legacy_values",
    "release_name",
    "render",
    "sort_manifests",
    "template_hash",
    "template_suffix",
]
