"""The effective settings of one pool: what resolution hands to the renderer and the CLI.

Every value is final (platform defaults filled in) and ``origins`` says, per field path, why
that value won (``pool``, ``class <name>``, ``platform``, a rule), so users can see why. Beside
them, what the chart needs to render the pool as Cozystack would: the values verbatim, the Helm
release name, the platform's ``_cluster`` values and the instance types the chart looks up.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ..api.frozen import fast_init
from ..api.names import Family, ImageSource, Infrastructure
from ..chart.context import ChartInput
from ..chart.sizing import Sizing
from ..chart.source import ChartSource
from ..model import KernelModule, PoolSpec


class CheckedInput(NamedTuple):
    """A chart input the chart's checks passed on, with the pool's values and the platform's it was
    built from (the input holds the release, namespace, instance types and chart itself), and its
    sizing: a classless render reads the input itself only for an :class:`Effective` that still
    holds all of them; any render skips the checks that must pass on its own input because they
    passed on this one (:func:`~workerclass.chart.passes_rest_as`)."""

    values: Mapping[str, Any]
    cluster_values: Mapping[str, Any]
    input: ChartInput
    size: Sizing


@fast_init
@dataclass(frozen=True, slots=True)
class EffectiveTalos:
    """Final Talos settings.

    ``registry_mirrors`` is Talos ``machine.registries.mirrors`` as the class or pool wrote it:
    registry -> the mirror's map (``endpoints``, ``skipFallback``, ``overridePath`` and any other
    key), passed through to the render as the chart passes ``talos.registryMirrors``.
    """

    version: str
    schematic_id: str
    image_factory_url: str
    image_factory_ca: str
    installer_repository: str
    registry_mirrors: Mapping[str, Mapping[str, Any]]

    def as_dict(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "schematicID": self.schematic_id,
            "imageFactoryURL": self.image_factory_url,
            "imageFactoryCA": self.image_factory_ca,
            "installerRepository": self.installer_repository,
            "registryMirrors": {
                registry: {key: list(value) if isinstance(value, list) else value for key, value in mirror.items()}
                for registry, mirror in sorted(self.registry_mirrors.items())
            },
        }


@fast_init
@dataclass(frozen=True, slots=True)
class EffectiveImage:
    """The selected disk.

    ``source`` is one of ``factory`` (Image Factory URL imported by CDI over HTTP), ``builtin``
    (CDI clone of a golden DataVolume, ``reference`` = ``namespace/name``), ``proxmox``
    (template chosen by ``template_tags``), ``fixed`` (a class's pinned Kairos container disk)
    or ``platform`` (the platform's Kairos container disk for the pool's minor).
    """

    source: ImageSource
    reference: str | None
    version: str | None
    schematic_id: str | None
    template_tags: tuple[str, ...] | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "reference": self.reference,
            "version": self.version,
            "schematicID": self.schematic_id,
            "templateTags": list(self.template_tags) if self.template_tags is not None else None,
        }


@fast_init
@dataclass(frozen=True, slots=True)
class Effective:
    """Everything needed to render one pool's workers, and why each value won."""

    kind: str  # KubernetesNodes | HelmRelease | ComputePlane
    namespace: str
    name: str
    cluster: str
    class_name: str | None  # None: classless, the legacy Talos path
    bootstrap: Family
    infrastructure: Infrastructure
    kubernetes_minor: str  # vX.Y
    kubernetes_version: str  # vX.Y.Z
    talos: EffectiveTalos | None  # Talos only
    kernel_modules: tuple[KernelModule, ...]
    image: EffectiveImage
    installer_image: str | None  # <installerRepository>/<schematicID>:<version>, Talos only
    pool: PoolSpec  # replicas, sizing, labels, taints, health, GPUs, SSH keys
    origins: Mapping[str, str] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    #: the pool's values as stored, verbatim (KubernetesNodes ``spec``, HelmRelease ``spec.values``;
    #: on an UPDATE without the values Cozystack's API filled in): what a classless pool renders from
    values: Mapping[str, Any] = field(default_factory=dict)
    #: the Helm release name: ``kubernetes-nodes-<name>`` for a KubernetesNodes; a HelmRelease's
    #: ``spec.releaseName`` or ``[<targetNamespace>-]<name>``, as helm-controller names it
    release: str = ""
    #: the platform values the chart reads: ``{"_cluster": <WorkerPlatform spec.clusterValues>}``
    cluster_values: Mapping[str, Any] = field(default_factory=dict)
    #: the VirtualMachineClusterInstancetype objects the chart's lookup finds (name -> object); at
    #: least the one the pool's ``instanceType`` names, when the cluster has it
    instancetypes: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: the chart in effect (the State's): its facts and, when given, its text render the pool
    chart: ChartSource = field(default_factory=ChartSource.shipped)
    #: the pool's chart input as resolution built it from the stored values to run the chart's
    #: checks, and found none failing (None: not kept). A classless pool's render reads it rather
    #: than building the same input again, while the settings still hold what it was built from
    #: (:meth:`checked_input`); a classified pool's render, whose input has the class's Talos
    #: settings, runs only the checks that read them on its own
    #: (:func:`~workerclass.chart.passes_rest_as`).
    chart_input: CheckedInput | None = field(default=None, compare=False, repr=False)

    @property
    def identity(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def legacy(self) -> bool:
        return self.class_name is None

    def checked_input(self, release: str) -> CheckedInput | None:
        """The chart input resolution checked, when it is the one this classless pool's render
        (under ``release``) would build; else None (the render builds its own)."""
        kept = self.chart_input
        if kept is None or self.class_name is not None or self.kind == "ComputePlane":
            return None
        inp = kept.input
        same = kept.values is self.values and inp.instancetypes is self.instancetypes and inp.chart is self.chart
        if not same:
            return None
        if inp.release != release or inp.namespace != self.namespace or kept.cluster_values != self.cluster_values:
            return None
        return kept

    @property
    def ssh_key(self) -> str | None:
        """The single SSH public key of a Kairos pool, if any."""
        keys = self.pool.ssh_keys or ()
        return keys[0] if keys else None
