"""The resources workerclass reads, watches, admits and installs: one row each.

Every place that names a resource (the State's kinds and check order, the cluster cache's watches,
the webhook routes, the install manifests' rules and RBAC, ``preflight``'s expectations, the
controller, the CRDs) reads it from :data:`RESOURCES`. A row says whether a cluster may lack the
resource (``optional``: ComputePlane and KubeVirt's instance types), which the cluster cache reads
as empty when the API server does not serve it or RBAC hides it. Its edge: plain data, no imports
of the rest of the package.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

from .frozen import fast_init

__all__ = [
    "APPLICATION_DEFINITION",
    "APPLICATION_KIND_LABEL",
    "APPS",
    "AUXILIARY_KINDS",
    "CHART_CONTEXT_KINDS",
    "CHART_SOURCES",
    "CLASS_CONDITIONS",
    "CLASS_SELECTORS",
    "CLUSTER_RELEASE_PREFIX",
    "COMPUTE_PLANE",
    "CONTROLLER_READS",
    "COZYSTACK",
    "FINALIZER",
    "FLUX",
    "HELM_RELEASE",
    "INSTANCETYPE",
    "INSTANCETYPES",
    "KUBERNETES",
    "KUBERNETES_NODES",
    "LOOKED_UP",
    "POOL_APPLICATION",
    "POOL_KINDS",
    "RELEASE_PREFIX",
    "RESOURCES",
    "WATCHED",
    "WEBHOOK_DOMAIN",
    "WORKER_CLASS",
    "WORKER_PLATFORM",
    "Fetched",
    "Resource",
    "Role",
    "by_kind",
]

COZYSTACK = "cozystack.io"
APPS = "apps.cozystack.io"
FLUX = "helm.toolkit.fluxcd.io"
INSTANCETYPES = "instancetype.kubevirt.io"

#: the label Cozystack puts on the HelmRelease behind every application (here: ``KubernetesNodes``)
APPLICATION_KIND_LABEL = "apps.cozystack.io/application.kind"
#: the ApplicationDefinition's ``release.prefix``: KubernetesNodes ``N`` is HelmRelease ``kubernetes-nodes-N``
RELEASE_PREFIX = "kubernetes-nodes-"
#: the Kubernetes app's ``release.prefix``: the parent cluster ``N`` is HelmRelease ``kubernetes-N``
#: (labelled ``application.kind: Kubernetes``), its CAPI cluster ``kubernetes-N`` too
CLUSTER_RELEASE_PREFIX = "kubernetes-"
#: the suffix of the webhook names (``kubernetesnodes.mutate.workerclass.cozystack.io``) and the
#: finalizer's prefix
WEBHOOK_DOMAIN = "workerclass.cozystack.io"
#: the finalizer that holds a custom class while live pools select it
FINALIZER = f"{WEBHOOK_DOMAIN}/retain-while-selected"
#: the condition types of a WorkerClass's status (the controller writes them; the CRD allows only these)
CLASS_CONDITIONS = ("Accepted", "InUse", "WorkersApplied")

#: what a kind is to workerclass
Role = Literal["platform", "class", "parent", "pool", "instancetype"]


@fast_init
@dataclass(frozen=True, slots=True)
class Resource:
    """One resource: its API coordinates, what it is to us, and where it is read."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    role: Role
    #: dependency rank: ``check`` admits the objects of a STATE folder in this order
    rank: int
    #: the label selector the cluster cache lists and watches it with (empty: all of them)
    labels: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}), hash=False)
    #: its CRD is ours to ship (``crds.py``); the others are Cozystack's, Flux's or KubeVirt's
    owned: bool = False
    #: the controller reads it (a class's status needs the platform and the pools; rendering a
    #: classified pool needs its parent cluster and the instance types too)
    controller: bool = False
    #: a cluster may lack it: the cluster cache reads a list answered 404 (the API server does not
    #: serve the group) or 403 (RBAC hides it) as listed and empty, and keeps probing it. The rest
    #: are required: without them admission cannot decide (no platform, classes, pools or parent
    #: clusters: KubernetesNodes only exist beside Cozystack's Kubernetes app), so the cache does not
    #: sync without them
    optional: bool = False

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    @property
    def name(self) -> str:
        """``plural.group``, as RBAC, kubectl and the CRD name it."""
        return f"{self.plural}.{self.group}"

    @property
    def scope(self) -> Literal["Namespaced", "Cluster"]:
        return "Namespaced" if self.namespaced else "Cluster"


WORKER_PLATFORM = Resource(
    COZYSTACK, "v1alpha1", "WorkerPlatform", "workerplatforms", False, "platform", 0, owned=True, controller=True
)
WORKER_CLASS = Resource(
    COZYSTACK, "v1alpha1", "WorkerClass", "workerclasses", False, "class", 1, owned=True, controller=True
)
KUBERNETES = Resource(APPS, "v1alpha1", "Kubernetes", "kuberneteses", True, "parent", 2, controller=True)
KUBERNETES_NODES = Resource(APPS, "v1alpha1", "KubernetesNodes", "kubernetesnodes", True, "pool", 3, controller=True)
HELM_RELEASE = Resource(
    FLUX,
    "v2",
    "HelmRelease",
    "helmreleases",
    True,
    "pool",
    4,
    labels=MappingProxyType({APPLICATION_KIND_LABEL: "KubernetesNodes"}),
    controller=True,
)
#: optional: older Cozystack releases do not serve ComputePlane
COMPUTE_PLANE = Resource(
    APPS, "v1alpha1", "ComputePlane", "computeplanes", True, "pool", 5, optional=True, controller=True
)
#: optional: a cluster without KubeVirt's instance types reads Cozystack's shipped set only
INSTANCETYPE = Resource(
    INSTANCETYPES,
    "v1beta1",
    "VirtualMachineClusterInstancetype",
    "virtualmachineclusterinstancetypes",
    False,
    "instancetype",
    6,
    optional=True,
    controller=True,
)

#: every resource, in check order
RESOURCES: tuple[Resource, ...] = (
    WORKER_PLATFORM,
    WORKER_CLASS,
    KUBERNETES,
    KUBERNETES_NODES,
    HELM_RELEASE,
    COMPUTE_PLANE,
    INSTANCETYPE,
)
_BY_KIND: Mapping[str, Resource] = MappingProxyType({resource.kind: resource for resource in RESOURCES})

#: the kinds that are pools, in the order a pool name's kinds are listed
POOL_KINDS: tuple[str, ...] = tuple(resource.kind for resource in RESOURCES if resource.role == "pool")
#: what the webhook's cluster cache lists and watches: everything above, in this order
WATCHED: tuple[Resource, ...] = (
    WORKER_PLATFORM,
    WORKER_CLASS,
    KUBERNETES,
    KUBERNETES_NODES,
    COMPUTE_PLANE,
    INSTANCETYPE,
    HELM_RELEASE,
)
#: the kinds a denial code rests on not finding there. A watch cache hears of a write moments after
#: the API server made it (a pool created right after its class), so before the webhook denies with
#: one of these codes it reads these kinds live
#: (:meth:`~workerclass.adapters.kube.ClusterCache.fresher`) and decides again on what it read
LOOKED_UP: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "ClassNotFound": (WORKER_CLASS.kind,),
        "ClusterNotFound": (KUBERNETES.kind, COMPUTE_PLANE.kind),
        "InstanceTypeNotFound": (INSTANCETYPE.kind,),
        "GoldenNotFound": (WORKER_PLATFORM.kind,),
    }
)
#: the pool kinds that can select a class: a WorkerClass DELETE is allowed because none of them does
#: and denied ``ClassInUse`` because one does, so the webhook reads them live before it answers one
#: (a pool may have selected the class, or been deleted, a moment ago)
CLASS_SELECTORS: tuple[str, ...] = (KUBERNETES_NODES.kind, HELM_RELEASE.kind)
#: what the WorkerClass controller's cache lists and watches
CONTROLLER_READS: tuple[Resource, ...] = tuple(resource for resource in WATCHED if resource.controller)

#: kinds the chart in effect looks up (PR 3315: the parent KamajiControlPlane's version, the live
#: MachineDeployment's clusterName) and the Flux sources that say which chart a release runs
#: (a HelmRelease's ``spec.chartRef``): read, never admitted
CHART_CONTEXT_KINDS = frozenset({"KamajiControlPlane", "MachineDeployment", "ExternalArtifact", "HelmChart"})
#: kinds not admitted or resolved but read beside the others: how the webhook is installed, the
#: Namespaces (their labels) a webhook's namespaceSelector is judged against and the CRDs (whether the
#: Kairos bootstrap provider takes the render), for ``preflight``; and :data:`CHART_CONTEXT_KINDS`
AUXILIARY_KINDS = (
    frozenset(
        {
            "MutatingWebhookConfiguration",
            "ValidatingWebhookConfiguration",
            "Deployment",
            "Service",
            "PodDisruptionBudget",
            "Namespace",
            "CustomResourceDefinition",
        }
    )
    | CHART_CONTEXT_KINDS
)


@fast_init
@dataclass(frozen=True, slots=True)
class Fetched:
    """A resource read by name only (``get``: never listed or watched), so RBAC grants ``get`` alone."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"


#: Cozystack's ApplicationDefinition: the one named ``kubernetes-nodes`` serves KubernetesNodes, and its
#: ``spec.release.chartRef`` names the Flux source every pool's HelmRelease takes the chart from
APPLICATION_DEFINITION = Fetched(COZYSTACK, "v1alpha1", "ApplicationDefinition", "applicationdefinitions", False)
#: the ApplicationDefinition that serves KubernetesNodes
POOL_APPLICATION = "kubernetes-nodes"
#: the Flux sources a HelmRelease's ``chartRef`` may name, by kind: their ``status.artifact`` is the chart
CHART_SOURCES: Mapping[str, Fetched] = MappingProxyType(
    {
        kind: Fetched("source.toolkit.fluxcd.io", "v1", kind, plural, True)
        for kind, plural in (
            ("ExternalArtifact", "externalartifacts"),
            ("HelmChart", "helmcharts"),
            ("OCIRepository", "ocirepositories"),
        )
    }
)


def by_kind(kind: object) -> Resource | None:
    """The resource of a kind, or ``None`` for a kind we do not read."""
    return _BY_KIND.get(kind) if isinstance(kind, str) else None
