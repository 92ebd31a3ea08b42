"""Which resources a cluster may lack: the rows the cluster cache reads as empty when not served or hidden."""

from __future__ import annotations

from workerclass.api.resources import COMPUTE_PLANE, INSTANCETYPE, KUBERNETES, RESOURCES, WATCHED


def test_only_compute_planes_and_instance_types_are_optional() -> None:
    assert {resource.kind for resource in RESOURCES if resource.optional} == {
        "ComputePlane",
        "VirtualMachineClusterInstancetype",
    }
    assert COMPUTE_PLANE.optional and INSTANCETYPE.optional


def test_what_admission_cannot_decide_without_is_required() -> None:
    """Platform, classes, pools and their HelmReleases, and parent clusters: a KubernetesNodes names
    its Kubernetes app, and without the app's API every pool would be denied ClusterNotFound."""
    required = {resource.kind for resource in WATCHED if not resource.optional}
    assert required == {"WorkerPlatform", "WorkerClass", "Kubernetes", "KubernetesNodes", "HelmRelease"}
    assert not KUBERNETES.optional
    assert not any(resource.optional for resource in RESOURCES if resource.owned)
