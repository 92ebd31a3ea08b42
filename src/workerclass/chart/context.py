"""The inputs of one chart render and the shape of a chart refusal.

``ChartInput`` is what Helm gives the templates: ``.Values`` (the pool values coalesced over
the chart's ``values.yaml``, with ``_cluster``/``_namespace`` from the platform), ``.Release``
(name and namespace) and what the chart's ``lookup`` calls would find (the instance types, and
optionally an existing MachineDeployment's owning release). ``ChartRefused`` carries every
:class:`~workerclass.violations.Violation` of a refused render (the chart's
``fail``, with its admission code).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ..api.frozen import fast_init
from ..api.resources import RELEASE_PREFIX
from ..violations import Violation
from .source import ChartSource

Variant = Literal["main", "pr3571"]


@fast_init
@dataclass(frozen=True, slots=True)
class ChartInput:
    """What the chart's templates see for one pool release."""

    #: coalesced: pool values over values.yaml, plus _cluster/_namespace. Its tables are the pool's,
    #: the platform's and the chart defaults' own (:func:`~.values.chart_input` copies none): read only
    values: Mapping[str, Any]
    release: str  # kubernetes-nodes-<cluster>-<pool>
    namespace: str
    instancetypes: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # name -> object
    variant: Variant = "main"
    #: What the chart's ``assertNoForeignPool`` lookup would find: the ``meta.helm.sh/release-name``
    #: of an existing MachineDeployment ``kubernetes-<cluster>-<pool>`` in the namespace ("" when it
    #: has none), or None when there is no such object or nothing is known (offline, as the oracle).
    existing_machinedeployment_release: str | None = None
    #: What Helm refuses before any template runs: the nulls of the values as written that its
    #: schema validation or the unguarded templates meet (:func:`workerclass.chart.schema.null_failures`).
    null_failures: tuple[Violation, ...] = ()
    #: PR 3315's lookups, where STATE or the cluster holds the objects (None: not known, as offline):
    #: the ``spec.clusterName`` of that MachineDeployment, and the ``spec.version`` of the parent
    #: KamajiControlPlane ``kubernetes-<cluster>`` in the namespace
    existing_machinedeployment_cluster: str | None = None
    parent_control_plane_version: str | None = None
    #: the values before the chart's defaults (the pool's over the platform's): what Helm's own engine
    #: is given for a chart the port does not know (empty for a known chart)
    supplied_values: Mapping[str, Any] = field(default_factory=dict)
    #: The chart in effect: its version, the facts of its upstream chart, its text when given.
    chart: ChartSource = field(default_factory=ChartSource.shipped)
    # Derived once (the templates read them dozens of times per render); values are not mutated.
    cluster: str = field(init=False, repr=False, compare=False)
    #: The parent Cluster API cluster: ``kubernetes-<cluster>``.
    cluster_name: str = field(init=False, repr=False, compare=False)
    #: ``<pool>``: the release name less ``kubernetes-nodes-<cluster>-``.
    group_name: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        value = self.values.get("cluster")
        cluster = value if isinstance(value, str) else ""
        object.__setattr__(self, "cluster", cluster)
        object.__setattr__(self, "cluster_name", f"kubernetes-{cluster}")
        object.__setattr__(self, "group_name", self.release.removeprefix(f"{RELEASE_PREFIX}{cluster}-"))


class ChartRefused(Exception):
    """The chart would refuse to render: every :class:`Violation` found (the chart stops at its first)."""

    def __init__(self, failures: list[Violation]) -> None:
        self.failures = list(failures)
        super().__init__("; ".join(f"{f.field}: {f.message}" for f in self.failures) or "chart refused")
