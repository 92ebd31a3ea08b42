"""Template names: which hash names a pool's machine templates, and why our code never renames them.

Owns the content hashes in template names. Its edge: text in, hex out, plus reading the hash
back from rendered objects; it renders nothing.

A pool's machines are replaced when its MachineDeployment's machine template changes in a field
that rolls, and the infrastructure template's name is the field that carries the content
(API.md section 2). So the name hash decides rollouts, and a change of *our* code must never
rename a running pool's template. How that is kept, per family:

- **Talos on KubeVirt (classless or classified)**: the KubevirtMachineTemplate's name is the
  chart's own: ``kubernetes-<cluster>-<pool>-<hash6>``, the first 6 hex digits of the sha256 of
  the exact text the chart's ``kubevirtmachinetemplate`` define renders (:func:`chart_hash`
  over the text :mod:`workerclass.chart` emits). It is not a hash of our choosing, so there is
  nothing of ours to version: the parity tests render pools through the real chart
  (``shared/tools/cozystack-render``) and compare the text byte for byte and every object field
  by field, and the golden files (``tests/render/golden``, regenerated from the oracle by
  ``scripts/regen-render-golden.py``) pin it in every clone. A renderer change that altered the
  text for unchanged values fails those tests before it can rename anything. The hash moves
  only when the chart would move it: a chart upgrade is a new :data:`HASH_VERSION`.
- **Kairos, and Talos on Proxmox** (no chart renders them): the KubevirtMachineTemplate or
  ProxmoxMachineTemplate and the KairosConfigTemplate are named ``kubernetes-<cluster>-<pool>-<hash6>``
  with :func:`content_hash` of their own canonical text (:func:`canonical_text`: the template's
  ``spec.template`` as JSON with sorted keys and no insignificant whitespace). The template
  content is a function of the pool's settings alone, and ``tests/render/test_templates.py``
  pins golden hashes for a table of pools: any change that alters a golden hash (a new field, a
  new default, another canonical form) fails the suite. Such a change is a rollout of every
  affected pool and must be made on purpose: bump :data:`HASH_VERSION`, update the golden
  hashes in the same commit, and name the pools it rolls in the history below.
- Nothing else is hashed: replicas, health settings, the class name, the WorkloadMonitor and the
  TalosConfigTemplate (stable name ``kubernetes-<cluster>-<pool>``: a content change reaches only
  machines created afterwards) change in place.

History: ``v1``: our own canonical JSON over an explicit field list, ``<pool>-<hash10>`` (never
the chart's names; superseded). ``v2``: the chart's KubevirtMachineTemplate hash at cozystack main
``3c780acd4``; canonical-JSON content hashes for the Kairos and Proxmox templates.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "HASH_LENGTH",
    "HASH_VERSION",
    "INFRASTRUCTURE_KINDS",
    "canonical_text",
    "chart_hash",
    "content_hash",
    "template_suffix",
]

HASH_VERSION = "v2"
#: Hex digits kept in names: the chart's ``trunc 6``.
HASH_LENGTH = 6
#: The kinds whose name carries the pool's rolling content hash.
INFRASTRUCTURE_KINDS = ("KubevirtMachineTemplate", "ProxmoxMachineTemplate")


def chart_hash(text: str) -> str:
    """``sha256sum | trunc 6`` of a text, as the chart names its KubevirtMachineTemplate."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:HASH_LENGTH]


def canonical_text(document: Any) -> str:
    """Sorted keys, no insignificant whitespace, UTF-8 text: one text per value."""
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def content_hash(document: Any) -> str:
    """The name hash of a template no chart renders: :func:`chart_hash` of its canonical text."""
    return chart_hash(canonical_text(document))


def template_suffix(objects: Iterable[Mapping[str, Any]]) -> str | None:
    """The content hash in the name of the rendered infrastructure template (``None``: none rendered)."""
    for obj in objects:
        if obj.get("kind") in INFRASTRUCTURE_KINDS:
            name = str(obj.get("metadata", {}).get("name", ""))
            return name.rsplit("-", 1)[-1]
    return None
