"""Template names: which hash names a pool's machine templates, and why our code never renames them.

Owns the content hashes in template names. Its edge: text in, hex out, plus reading the hash
back from rendered objects; it renders nothing.

A pool's machines are replaced when its MachineDeployment's machine template changes in a field
that rolls, and the infrastructure template's name is the field that carries the content
(API.md section 2). So the name hash decides rollouts, and a change of *our* code must never
rename a running pool's template. How that is kept, per family:

- **Talos on KubeVirt (classless or classified)**: the KubevirtMachineTemplate's name is the
  chart's own: ``kubernetes-<cluster>-<pool>-<hash6>``, the first 6 hex digits of the sha256 of
  the exact text the chart's ``kubevirtmachinetemplate`` define renders (:func:`~workerclass.chart.nodegroup.chart_hash`
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
  ``spec.template`` as JSON with sorted keys and no insignificant whitespace); a Kairos pool's
  bootstrap data Secret (the data-secret path) the same way, of ``{"value": <its cloud-config with
  the join inputs redacted>}``, so the token and the CA never enter the name. The template
  content is a function of the pool's settings alone, and ``tests/render/test_templates.py``
  pins golden hashes for a table of pools: any change that alters a golden hash (a new field, a
  new default, another canonical form) fails the suite. Such a change must be made on purpose:
  bump :data:`HASH_VERSION` (running templates are then kept and re-stamped, not renamed: below),
  update the golden hashes in the same commit, and say what changed in the history below.
- **The TalosConfigTemplate**: a classless pool's keeps the chart's stable name
  ``kubernetes-<cluster>-<pool>`` (whose spec the Talos provider keeps immutable: a content change
  is refused, see ``workerclass.ops.plan``); a classified pool's is named by its content where it
  must be (:mod:`.talos_template`), and :func:`keep_running` keeps a running one of the same content.
- Nothing else is hashed: replicas, health settings, the class name and the WorkloadMonitor change
  in place.

**A bump renames nothing that runs** (Karpenter's drift-hash versioning, applied to templates):
every template we name (:func:`named_by_content`) carries the rule that named it
(:data:`HASH_VERSION_ANNOTATION`) and its content hash under that rule
(:data:`TEMPLATE_HASH_ANNOTATION`). :func:`keep_running` takes a pool's rendered objects and its
running ones (the MachineDeployment and the templates it references) and keeps each running
template, name and spec, re-stamped with the current rule's version and hash, when

- it was named under another rule (a bump: hashes of two rules cannot be compared, so, as
  Karpenter re-stamps its NodeClaims instead of calling them drifted, the running template is
  taken as current), or
- it was named or re-stamped under the current rule with the hash the pool renders now (the
  content did not change, whatever name it kept);

and otherwise lets the rendered name through, which rolls the pool: a real change. A template
from before these annotations is a ``v2`` one whose name carries its hash. The chart's own names
(Talos on KubeVirt, classless or classified) carry nothing of ours: their objects stay the chart's
byte for byte, and the chart chooses their hash.

History: ``v1``: our own canonical JSON over an explicit field list, ``<pool>-<hash10>`` (never
the chart's names; superseded). ``v2``: the chart's KubevirtMachineTemplate hash at cozystack main
``3c780acd4``; canonical-JSON content hashes for the Kairos and Proxmox templates (stamped with
the two annotations from issue 21 on; the hashes themselves did not change).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from ..api.resources import WEBHOOK_DOMAIN
from ..chart.nodegroup import chart_hash
from ..chart.values import copy_values
from .talos_template import TALOS_TEMPLATE_KIND, keep_running_template

__all__ = [
    "HASH_VERSION",
    "HASH_VERSION_ANNOTATION",
    "INFRASTRUCTURE_KINDS",
    "TEMPLATE_HASH_ANNOTATION",
    "canonical_text",
    "content_hash",
    "keep_running",
    "named_by_content",
    "template_suffix",
]

HASH_VERSION = "v2"
#: The kinds whose name carries the pool's rolling content hash.
INFRASTRUCTURE_KINDS = ("KubevirtMachineTemplate", "ProxmoxMachineTemplate")
#: On a template we name: the hash rule (:data:`HASH_VERSION`) that named it or last re-stamped it.
HASH_VERSION_ANNOTATION = f"{WEBHOOK_DOMAIN}/hash-version"
#: On a template we name: its content hash under that rule (its name's suffix until a re-stamp).
TEMPLATE_HASH_ANNOTATION = f"{WEBHOOK_DOMAIN}/template-hash"
#: The rule a template we named before the annotations existed was named by.
_UNSTAMPED_VERSION = "v2"


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


def named_by_content(base: str, namespace: str, template: Any) -> dict[str, Any]:
    """The metadata of a template we name: ``<base>-<hash6>`` of ``template`` (the object's
    ``spec.template``), stamped with the rule's version and the hash."""
    digest = content_hash(template)
    return {
        "name": f"{base}-{digest}",
        "namespace": namespace,
        "annotations": {HASH_VERSION_ANNOTATION: HASH_VERSION, TEMPLATE_HASH_ANNOTATION: digest},
    }


def _annotations(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    metadata = obj.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, Mapping) else None
    return annotations if isinstance(annotations, Mapping) else {}


def _references(md: Mapping[str, Any]) -> dict[str, str]:
    """kind -> the name a MachineDeployment's machines reference (infrastructure, bootstrap)."""
    machine = ((md.get("spec") or {}).get("template") or {}).get("spec") or {}
    out: dict[str, str] = {}
    for ref in (machine.get("infrastructureRef"), (machine.get("bootstrap") or {}).get("configRef")):
        if isinstance(ref, Mapping) and isinstance(ref.get("kind"), str) and isinstance(ref.get("name"), str):
            out[ref["kind"]] = ref["name"]
    data_secret = (machine.get("bootstrap") or {}).get("dataSecretName")
    if isinstance(data_secret, str):  # a Kairos pool's bootstrap data Secret
        out["Secret"] = data_secret
    return out


def _kept(rendered: Mapping[str, Any], running: Mapping[str, Any]) -> bool:
    """Whether the running template stands for the rendered one (see the module docstring)."""
    stamped = _annotations(running)
    version = stamped.get(HASH_VERSION_ANNOTATION, _UNSTAMPED_VERSION)
    if version != HASH_VERSION:
        return True
    running_hash = stamped.get(TEMPLATE_HASH_ANNOTATION) or str(running["metadata"]["name"]).rsplit("-", 1)[-1]
    return bool(running_hash == _annotations(rendered).get(TEMPLATE_HASH_ANNOTATION))


def keep_running(rendered: list[dict[str, Any]], running: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``rendered`` (a pool's objects) with each template we name replaced by the running one it
    stands for, re-stamped, and the MachineDeployment pointed at it (see the module docstring).

    ``running``: the pool's live objects, of which the MachineDeployment and the templates it
    references are read (without a running MachineDeployment nothing runs: ``rendered`` as it is).
    The chart's own templates carry no stamp and pass through untouched.
    """
    live = {(str(obj.get("kind")), str((obj.get("metadata") or {}).get("name"))): obj for obj in running}
    deployment = next((obj for obj in rendered if obj.get("kind") == "MachineDeployment"), None)
    live_deployment = live.get(("MachineDeployment", str(deployment["metadata"]["name"]))) if deployment else None
    if deployment is None or live_deployment is None:
        return rendered
    rendered = _talos_template_kept(rendered, live, live_deployment)
    deployment = next(obj for obj in rendered if obj.get("kind") == "MachineDeployment")
    renamed: dict[str, str] = {}  # kind -> the running name kept
    out: list[dict[str, Any]] = []
    for obj in rendered:
        kind = str(obj.get("kind"))
        name = _references(live_deployment).get(kind)
        current = live.get((kind, name)) if name is not None else None
        if (
            HASH_VERSION_ANNOTATION not in _annotations(obj)
            or current is None
            or name == obj["metadata"]["name"]  # the same template: nothing to keep
            or not _kept(obj, current)
        ):
            out.append(obj)
            continue
        kept = copy_values(obj)
        kept["metadata"]["name"] = name
        if "spec" in current:  # what the machines run (templates do not change in place)
            kept["spec"] = copy_values(current["spec"])
        # a bootstrap Secret keeps its name and takes the rendered text: its join inputs are the
        # controller's to fill in, and only machines created afterwards read it
        kept["metadata"]["annotations"] = {
            **kept["metadata"]["annotations"],
            HASH_VERSION_ANNOTATION: HASH_VERSION,
            TEMPLATE_HASH_ANNOTATION: _annotations(obj)[TEMPLATE_HASH_ANNOTATION],
        }
        renamed[kind] = str(name)
        out.append(kept)
    if not renamed:
        return rendered
    return [_pointed(obj, renamed) if obj is deployment else obj for obj in out]


def _talos_template_kept(
    rendered: list[dict[str, Any]], live: Mapping[tuple[str, str], Mapping[str, Any]], deployment: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """A classified Talos pool's TalosConfigTemplate (named by its content, :mod:`.talos_template`)
    keeps the running one's name when their contents are the same (a bump, a handoff)."""
    template = next((obj for obj in rendered if obj.get("kind") == TALOS_TEMPLATE_KIND), None)
    name = _references(deployment).get(TALOS_TEMPLATE_KIND)
    running = live.get((TALOS_TEMPLATE_KIND, name)) if name is not None else None
    return keep_running_template(rendered, template, running)


def _pointed(md: Mapping[str, Any], renamed: Mapping[str, str]) -> dict[str, Any]:
    """A copy of ``md`` whose template references of the ``renamed`` kinds name the kept templates."""
    out: dict[str, Any] = copy_values(dict(md))
    machine = out["spec"]["template"]["spec"]
    for ref in (machine.get("infrastructureRef"), (machine.get("bootstrap") or {}).get("configRef")):
        if isinstance(ref, dict) and ref.get("kind") in renamed:
            ref["name"] = renamed[ref["kind"]]
    if "Secret" in renamed and "dataSecretName" in (machine.get("bootstrap") or {}):
        machine["bootstrap"]["dataSecretName"] = renamed["Secret"]
    return out
