"""Effective settings -> the objects Cozystack's ``kubernetes-nodes`` chart renders for the pool.

Owns which values and class-era inputs go to the chart port (:mod:`workerclass.chart`) for a pool,
and the families no chart renders (API.md section 2, "What the resolved values become"):

- a **classless** Talos pool (KubernetesNodes, a KubernetesNodes HelmRelease without a class) renders
  exactly what the chart renders for its stored values, verbatim: nothing of ours is added (no
  label, no annotation), so names and the KubevirtMachineTemplate's content hash are the chart's;
- a **classified** Talos pool renders as the chart renders its restore values
  (:func:`workerclass.render.legacy.legacy_values`), plus what the main chart lacks in the shapes of
  the upstream pull requests (:func:`workerclass.render.legacy.class_era`): kernel modules as
  PR 3571 renders them, a builtin golden clone or a non-default factory disk and the installer image
  as PR 3294, the Image Factory CA as PR 3797. A class that resolves to exactly what a classless
  pool has renders exactly that pool's objects;
- **Kairos** pools and Talos pools on **Proxmox**: the chart's objects for the legacy values, with
  the templates of :mod:`workerclass.render.templates` in place of the Talos KubeVirt ones;
- a **ComputePlane** node group (its real renderer is the parent ``kubernetes`` chart, which has no
  oracle here) renders through the same chart as the pool ``<computeplane>-<group>`` of the
  cluster ``<computeplane>``, release ``kubernetes-nodes-<computeplane>-<group>``.

Objects come in the chart's order (template files in path order, documents in file order, as the
oracle's ``--order chart``); :func:`sort_manifests` gives the kind-rank order for people. Its edge:
pure data in, plain dicts out; the renderer never sees the State, so a classless pool can never
look up a WorkerClass.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, NamedTuple

from ..api.bounds import MAX_SHARED_INPUT_TEXT
from ..api.names import FAMILIES, INFRASTRUCTURES
from ..api.resources import RELEASE_PREFIX
from ..chart import ChartInput, Prechecked, chart_failures, passes_rest_as, release_free
from ..chart.context import ChartRefused
from ..chart.nodegroup import Disk
from ..chart.render import kubevirtmachinetemplate_hash, kubevirtmachinetemplate_spec, render_chart
from ..chart.schema import plain_json_text
from ..chart.sizing import Sizing, sizing
from ..chart.source import ChartSource
from ..chart.talos_job import talos_config_template as chart_talos_config_template
from ..chart.talos_naming import talos_template_naming
from ..chart.values import chart_input
from ..resolve.effective import Effective
from .errors import RenderError
from .hash import content_hash, template_suffix
from .legacy import class_era, legacy_values
from .talos_template import TALOS_TEMPLATE_KIND, content_named
from .templates import KAIROS_DATA_SECRET_PATH, kairos_objects, kairos_vm_template, proxmox_objects

__all__ = [
    "KIND_RANK",
    "chart_input_for",
    "chart_values",
    "release_name",
    "render",
    "sort_manifests",
    "template_hash",
]

#: Apply order for people: what a template references comes before it, the deployment after both.
KIND_RANK: dict[str, int] = {
    "ConfigMap": 0,
    "KubevirtMachineTemplate": 1,
    "ProxmoxMachineTemplate": 1,
    "TalosConfigTemplate": 2,
    "KairosConfigTemplate": 2,
    "Secret": 2,
    "MachineDeployment": 3,
    "MachineHealthCheck": 4,
    "WorkloadMonitor": 5,
}


def sort_manifests(manifests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Kind rank, then namespace, then name; the kind name breaks ties within a rank."""
    return sorted(
        manifests,
        key=lambda obj: (
            KIND_RANK.get(obj["kind"], len(KIND_RANK)),
            obj["metadata"].get("namespace", ""),
            obj["metadata"]["name"],
            obj["kind"],
        ),
    )


def release_name(effective: Effective) -> str:
    """The Helm release the chart renders under (``kubernetes-nodes-<name>`` for a KubernetesNodes)."""
    if effective.kind == "ComputePlane":  # <computeplane>-<group>: the pool <group> of the cluster <computeplane>
        return f"{RELEASE_PREFIX}{effective.name}"
    if effective.release:
        return effective.release
    if effective.kind == "HelmRelease":
        return effective.name
    return f"{RELEASE_PREFIX}{effective.name}"


def chart_values(effective: Effective) -> dict[str, Any]:
    """The values the chart renders for the pool: the legacy values (and a ComputePlane's cluster)."""
    values = legacy_values(effective)
    if effective.kind == "ComputePlane":
        values.setdefault("cluster", effective.cluster)
    return values


def chart_input_for(effective: Effective) -> ChartInput:
    """What the chart's templates see for this pool."""
    return _chart_input(effective)[0]


def _chart_input(effective: Effective) -> tuple[ChartInput, Prechecked | None]:
    """:func:`chart_input_for`, and what the chart's checks resolution ran established for it: the
    input resolution checked itself, kept on the settings, when it is this one
    (:meth:`~workerclass.resolve.effective.Effective.checked_input`: every check passed), else one
    that agrees with it on all but the rewritten checks' keys (:func:`~workerclass.chart.passes_rest_as`:
    those checks passed; the rewritten ones are run here, and a pass is shared with the next pool
    whose chart values are these, under its own release), else nothing (None: the render runs them
    all)."""
    release = release_name(effective)
    same = effective.checked_input(release)
    if same is not None:
        return same.input, Prechecked(same.size, whole=True)
    values = chart_values(effective)
    kept = effective.chart_input
    # shared only under a release the checks read as a name alone
    key = _shared_key(values, effective) if kept is not None and release_free(release, values.get("cluster")) else None
    shared = _SHARED_INPUTS.get(key) if key is not None else None
    if (
        kept is not None
        and shared is not None
        and shared.instancetypes is (effective.instancetypes or None)
        and shared.chart is effective.chart
    ):
        inp = replace(shared.input, release=release)
        if passes_rest_as(inp, kept.input):
            # the rest passed on this pool's stored values, the rewritten ones on these values
            # under another release they read only as a name: every check passes
            return inp, Prechecked(kept.size, whole=True)
    inp = chart_input(
        values,
        namespace=effective.namespace,
        release=release,
        cluster_values=effective.cluster_values or None,
        instancetypes=effective.instancetypes or None,
        chart=effective.chart,
    )
    if kept is not None and passes_rest_as(inp, kept.input):
        if key is None or chart_failures(inp, size=kept.size, rest_passed=True):
            return inp, Prechecked(kept.size, whole=False)  # the render runs them (and refuses)
        _SHARED_INPUTS[key] = _SharedInput(inp, effective.instancetypes or None, effective.chart)
        if len(_SHARED_INPUTS) > SHARED_INPUTS_SIZE:
            with contextlib.suppress(KeyError):  # another thread may have evicted it meanwhile
                _SHARED_INPUTS.popitem(last=False)
        return inp, Prechecked(kept.size, whole=True)
    return inp, None


class _SharedInput(NamedTuple):
    """A chart input every rewritten check passed on, under a release the checks read only as a name
    (:func:`~workerclass.chart.release_free`), with the instance types and chart it was built with."""

    input: ChartInput
    instancetypes: Mapping[str, Mapping[str, Any]] | None
    chart: ChartSource


#: Chart inputs shared between pools whose chart values, namespace and platform values are the same
#: (the pools of one shape, differing in name): keyed by their canonical text, for the last 128
#: such shapes added (an input holds the values as objects, many times their text).
SHARED_INPUTS_SIZE = 128
_SHARED_INPUTS: OrderedDict[bytes, _SharedInput] = OrderedDict()


def _shared_key(values: Mapping[str, Any], effective: Effective) -> bytes | None:
    """The canonical text of what a classified pool's chart input is built from but its release
    (the instance types and the chart are compared by identity), or None (not plain JSON data, or
    longer than :data:`~workerclass.api.bounds.MAX_SHARED_INPUT_TEXT`: not shared)."""
    text = plain_json_text([values, effective.namespace, effective.cluster_values])
    return text if text is not None and len(text) <= MAX_SHARED_INPUT_TEXT else None


def _size(inp: ChartInput, checked: Prechecked | None) -> Sizing:
    """The pool's sizing: resolution's when it established it for this input (:class:`Prechecked`)."""
    return checked.size if checked is not None else sizing(inp)


def _disk(effective: Effective) -> tuple[Disk | None, dict[str, Any]]:
    era = class_era(effective)
    extras: dict[str, Any] = {
        "kernel_modules": list(era.kernel_modules) or None,
        "installer_image": era.installer_image,
        "image_factory_ca": era.image_factory_ca,
    }
    if era.golden is not None:
        namespace, _, name = era.golden.partition("/")
        return Disk.pvc(namespace, name), extras
    if era.factory_url is not None:
        return Disk.http(era.factory_url), extras
    return None, extras


def render(
    effective: Effective,
    *,
    talos_config_template: bool = False,
    chart_text: bool = True,
    kairos_path: str = KAIROS_DATA_SECRET_PATH,
) -> list[dict[str, Any]]:
    """The pool's objects in the chart's order. Raises :class:`RenderError` (the chart's refusals).

    ``kairos_path``: how a Kairos pool's machines get their bootstrap (:mod:`.templates`): the
    data-secret path (a cloud-config Secret, the join inputs redacted; the default: Cozystack as it
    ships) or the provider path (a KairosConfigTemplate). Talos pools ignore it.

    A Talos pool's talos-reconcile Job, the TalosConfigTemplate it applies and PR 3315's unpin hook are the chart's own
    text: without the chart's files (``effective.chart``) they raise
    :class:`~workerclass.chart.source.ChartTextMissing`, unless ``chart_text=False`` leaves them out.
    A Kairos pool renders none of them."""
    if effective.bootstrap not in FAMILIES:
        raise RenderError(f"{effective.identity}: unknown bootstrap family {effective.bootstrap!r}")
    if effective.infrastructure not in INFRASTRUCTURES:
        raise RenderError(f"{effective.identity}: unknown infrastructure {effective.infrastructure!r}")
    if effective.bootstrap == "kairos" and effective.infrastructure != "kubevirt":
        raise RenderError(f"{effective.identity}: Kairos pools run on KubeVirt only, not Proxmox")
    inp, checked = _chart_input(effective)
    disk, extras = _disk(effective) if effective.bootstrap == "talos" else (None, {})
    talos = effective.bootstrap == "talos"
    # a classified Talos pool's template is named by its content (.talos_template): read it always
    named = (
        talos
        and chart_text
        and not effective.legacy
        and inp.chart.known  # Helm's engine renders the others: the chart's own names, nothing of ours
        and talos_template_naming(inp.chart) == "stable"
    )
    try:
        objects = render_chart(
            inp,
            talos_config_template=(talos_config_template or named) and talos,
            disk=disk,
            chart_text=chart_text and talos,
            checked=checked,
            **extras,
        )
    except ChartRefused as refused:
        raise _refused(effective, refused) from None
    if named:
        template = next(obj for obj in objects if obj.get("kind") == TALOS_TEMPLATE_KIND)
        # only the class-era kernel modules and installer image reach the machine config: without
        # them it is the chart's own, and the chart's template is not rendered a second time
        adds = extras.get("kernel_modules") or extras.get("installer_image")
        if adds and template.get("spec") != chart_talos_config_template(inp, sizing=_size(inp, checked)).get("spec"):
            # the class changes the machine config the chart would apply: a template of its own
            # content, whose changes roll the pool
            objects = content_named(objects, template)
        if not talos_config_template:
            objects = [obj for obj in objects if obj.get("kind") != TALOS_TEMPLATE_KIND]
    if effective.bootstrap == "kairos":
        return kairos_objects(objects, effective, kairos_path=kairos_path)
    if effective.infrastructure == "proxmox":
        size = _size(inp, checked)
        disk_size = str(inp.values.get("diskSize") or "20Gi")
        return proxmox_objects(
            objects, effective, cpu=size.effective_cpu, memory=size.effective_memory, disk_size=disk_size
        )
    return objects


def _refused(effective: Effective, refused: ChartRefused) -> RenderError:
    """The chart's refusal of the pool as the renderer's error, its failures kept."""
    messages = "; ".join(failure.message for failure in refused.failures)
    return RenderError(f"{effective.identity}: the chart refuses the pool: {messages}", refused.failures)


def template_hash(effective: Effective) -> str:
    """The content hash in the name of the pool's infrastructure template (the chart's for Talos KubeVirt).

    ``resolve -o json``'s ``templateHash``: what rolls the pool when it changes. Raises
    :class:`RenderError` when the pool cannot be rendered.
    """
    if effective.bootstrap == "talos" and effective.infrastructure == "kubevirt":
        # The chart's own KubevirtMachineTemplate: its name hash needs only the define's text
        # (the same refusals as render, none of the other objects).
        disk, extras = _disk(effective)
        inp, checked = _chart_input(effective)
        try:
            return kubevirtmachinetemplate_hash(inp, disk=disk, checked=checked, **extras)
        except ChartRefused as refused:
            raise _refused(effective, refused) from None
    if effective.bootstrap == "kairos" and effective.infrastructure == "kubevirt":
        # Kairos: the chart's KubevirtMachineTemplate made a Kairos one, nothing else rendered.
        try:
            inp, checked = _chart_input(effective)
            template = kubevirtmachinetemplate_spec(inp, checked=checked)
        except ChartRefused as refused:
            raise _refused(effective, refused) from None
        reference = effective.image.reference
        if not reference:  # as kairos_objects refuses it
            raise RenderError(f"{effective.identity}: the Kairos image has no reference")
        return content_hash(kairos_vm_template(template, reference))  # the name's hash (named_by_content)
    else:
        suffix = template_suffix(render(effective, chart_text=False))
    if suffix is None:  # pragma: no cover - every family renders an infrastructure template
        raise RenderError(f"{effective.identity}: no infrastructure template rendered")
    return suffix
