"""Builders for the core tests: plain dicts with defaults plus overrides, and a State from them.

Everything here is written from the specification and API.md sections 1-3 and 6, not from
the implementation: a pool is a plain ``KubernetesNodes`` dict, a class a ``WorkerClass``
dict, and the state is ``State.from_objects`` over a parent ``Kubernetes`` app, a
``WorkerPlatform`` named ``default`` and the classes of the design page's examples.

Override rules: ``make_pool(minReplicas=2)`` sets a spec key, ``make_pool(sshKeys=ABSENT)``
removes it, so "unset", "empty" and "set" can be told apart in every table.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

import jsonpatch

from workerclass import Denied, State, resolve
from workerclass.chart.identity import by_name
from workerclass.chart.source import ChartSource

ABSENT: Any = type("Absent", (), {"__repr__": lambda self: "ABSENT"})()

NAMESPACE = "tenant-example"  # pools live in tenant-* namespaces
CLUSTER = "example"  # the parent Kubernetes app on KubeVirt
PROXMOX_CLUSTER = "pve"  # a parent Kubernetes app on Proxmox

SCHEMATIC_A = "376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba"  # platform default
SCHEMATIC_B = "0f" * 32  # has a golden at v1.13.6
SCHEMATIC_C = "c3" * 32  # has no golden anywhere

TALOS_VERSION = "v1.13.6"  # platform Talos version (also the chart's)
#: The chart's values.yaml Talos defaults: a classless pool's fallbacks (not the platform's)
CHART_SCHEMATIC = "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515"
CHART_FACTORY_URL = "https://factory.talos.dev"
CHART_INSTALLER_REPOSITORY = "factory.talos.dev/installer"
#: The chart's files/versions.yaml: a classless pool's Kubernetes patch
CHART_PATCHES = {"v1.35": "v1.35.6", "v1.34": "v1.34.9", "v1.33": "v1.33.13", "v1.32": "v1.32.13", "v1.31": "v1.31.14"}
FACTORY_URL = "https://factory.example"
INSTALLER_REPOSITORY = "factory.example/installer"

PLATFORM_KAIROS_134 = "ghcr.io/cozystack/cozystack/kairos-worker@sha256:" + "1" * 64
PLATFORM_KAIROS_135 = "ghcr.io/cozystack/cozystack/kairos-worker@sha256:" + "2" * 64
FIXED_REFERENCE = "registry.example.com/workers/kairos-worker@sha256:" + "3f7a9c2e" * 8

# Real ed25519 public keys (ssh-keygen output); never a private key in values.
SSH_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKPzq9uaCGBnfTpFZkwH6e5KO7we4dEpHqktWTCH5wkC tenant@example"
SSH_KEY_2 = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGE/1+hscngiq1K50KuHA6f/lmgBEZ6HnwYu16DAXXuu second@example"
PRIVATE_KEY = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
    "-----END OPENSSH PRIVATE KEY-----\n"
)
RSA_PRIVATE_KEY = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----\n"
CERTIFICATE = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQ\n-----END CERTIFICATE-----\n"
CERTIFICATE_2 = "-----BEGIN CERTIFICATE-----\nMIIBtDCCAVqgAwIBAgIUR\n-----END CERTIFICATE-----\n"

#: The Kubernetes minors of the test platform and their platform patch.
KUBERNETES_VERSIONS = {
    "v1.31": "v1.31.12",
    "v1.32": "v1.32.9",
    "v1.33": "v1.33.5",
    "v1.34": "v1.34.5",
    "v1.35": "v1.35.6",
    "v1.36": "v1.36.2",
}

#: Every denial code of API.md section 3, as written there.
API_CODES = (
    "ClassNotFound",
    "ClusterNotFound",
    "BootstrapFamilyChange",
    "SSHKeysOnTalos",
    "TooManySSHKeys",
    "InvalidSSHKey",
    "PrivateKeyMaterial",
    "KairosOnProxmox",
    "TalosSettingOnKairos",
    "IncompleteImage",
    "ImageNotPinned",
    "VersionMismatch",
    "UnsupportedVersion",
    "ControlPlaneTooOld",
    "TalosKubernetesIncompatible",
    "OsImageSourceConflict",
    "GoldenNotFound",
    "ArtifactConflict",
    "EmptyTemplateTags",
    "OsImageOnProxmox",
    "ClassImmutable",
    "ClassInUse",
    "TalosVGPU",
    "InvalidReplicas",
    "NotAllowedInComputePlane",
    "NotAllowedInNodeGroup",
    "InvalidPoolName",
    "InstanceTypeNotFound",
    "IncompleteResources",
    "InvalidPodCPU",
    "InvalidKubeletReservation",
    "InvalidDuration",
    "InvalidMaxUnhealthy",
    "InvalidKernelModule",
    "PoolFieldImmutable",
    "ChartNotGated",
    "PlatformValueInPool",
    "PlatformImageOverride",
    "TenantImageSetting",
    "ObjectTooLarge",
    "Invalid",
)

#: The NVIDIA rule of API.md section 2, exactly.
NVIDIA_MODULES = [
    {"name": "nvidia", "parameters": ["NVreg_NvLinkDisable=1"]},
    {"name": "nvidia_uvm", "parameters": []},
    {"name": "nvidia_drm", "parameters": []},
    {"name": "nvidia_modeset", "parameters": []},
]
NVIDIA_GPU = {"name": "nvidia.com/AD102GL_L40S", "vgpu": False}


def _apply(base: dict[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in overrides.items():
        if value is ABSENT:
            out.pop(key, None)
        else:
            out[key] = copy.deepcopy(value)
    return out


# --------------------------------------------------------------------------- resources


def make_platform(**overrides: Any) -> dict[str, Any]:
    """The singleton WorkerPlatform ``default``; overrides replace top-level spec keys."""
    spec = {
        "defaultWorkerClass": "talos",
        "kubernetesVersions": {minor: {"patch": patch} for minor, patch in KUBERNETES_VERSIONS.items()},
        "talos": {
            "version": TALOS_VERSION,
            "schematicID": SCHEMATIC_A,
            "imageFactoryURL": FACTORY_URL,
            "installerRepository": INSTALLER_REPOSITORY,
            "goldens": [
                {"version": "v1.13.6", "schematicID": SCHEMATIC_A},
                {"version": "v1.13.6", "schematicID": SCHEMATIC_B},
                {"version": "v1.12.4", "schematicID": SCHEMATIC_A},
            ],
            "supportMatrix": {
                "v1.12": {"min": "v1.30", "max": "v1.34"},
                "v1.13": {"min": "v1.31", "max": "v1.36"},
            },
        },
        "kairos": {
            "images": {
                "v1.34": {"reference": PLATFORM_KAIROS_134, "kubernetesVersion": "v1.34.5"},
                "v1.35": {"reference": PLATFORM_KAIROS_135, "kubernetesVersion": "v1.35.6"},
            }
        },
    }
    return {
        "apiVersion": "cozystack.io/v1alpha1",
        "kind": "WorkerPlatform",
        "metadata": {"name": "default"},
        "spec": _apply(spec, overrides),
    }


def platform_talos(**overrides: Any) -> dict[str, Any]:
    """The platform ``talos`` block with overrides, for ``make_platform(talos=...)``."""
    return _apply(make_platform()["spec"]["talos"], overrides)


def make_cluster(
    name: str = CLUSTER, namespace: str = NAMESPACE, *, version: str = "v1.35", infrastructure: str = "kubevirt"
) -> dict[str, Any]:
    """The parent managed-Kubernetes app (read, never written)."""
    return {
        "apiVersion": "apps.cozystack.io/v1alpha1",
        "kind": "Kubernetes",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"version": version, "infrastructure": infrastructure},
    }


def make_class(name: str = "custom", bootstrap: Any = "talos", **spec: Any) -> dict[str, Any]:
    """A WorkerClass; ``bootstrap=ABSENT`` leaves the required field out."""
    body = _apply({"bootstrap": bootstrap}, spec)
    if bootstrap is ABSENT:
        body.pop("bootstrap", None)
    return {"apiVersion": "cozystack.io/v1alpha1", "kind": "WorkerClass", "metadata": {"name": name}, "spec": body}


#: The design page's Talos baseline and fixed custom Kairos image.
TALOS_EXAMPLE = make_class("talos-example-r1", talos={"version": "v1.13.6"})
KAIROS_FIXED = make_class(
    "kairos-example-v1-35-6-r1", "kairos", image={"kubernetesVersion": "v1.35.6", "reference": FIXED_REFERENCE}
)

POOL_DEFAULTS: dict[str, Any] = {
    "cluster": CLUSTER,
    "workerClassName": "talos",
    "version": "v1.35",
    "minReplicas": 1,
    "maxReplicas": 3,
}


def pool_name(name: str, cluster: Any = CLUSTER) -> str:
    """API.md section 1: a KubernetesNodes is named ``<cluster>-<pool>``; ``name`` is the pool part
    (a name that already starts with ``<cluster>-`` is kept)."""
    cluster = cluster if isinstance(cluster, str) and cluster else CLUSTER
    return name if name.startswith(f"{cluster}-") else f"{cluster}-{name}"


def make_pool(name: str = "pool", namespace: str = NAMESPACE, **spec: Any) -> dict[str, Any]:
    """A KubernetesNodes pool of the application API (the built-in talos class by default),
    named ``<cluster>-<name>`` (use :func:`rename` for a name that breaks the rule)."""
    body = _apply(POOL_DEFAULTS, spec)
    return {
        "apiVersion": "apps.cozystack.io/v1alpha1",
        "kind": "KubernetesNodes",
        "metadata": {"name": pool_name(name, body.get("cluster")), "namespace": namespace},
        "spec": body,
    }


def rename(obj: Mapping[str, Any], name: str) -> dict[str, Any]:
    """``obj`` with exactly ``metadata.name`` = ``name`` (no naming rule applied)."""
    out = copy.deepcopy(dict(obj))
    out["metadata"]["name"] = name
    return out


def make_release(name: str = "release", namespace: str = NAMESPACE, **values: Any) -> dict[str, Any]:
    """A direct-writer HelmRelease carrying KubernetesNodes values (classless by default), named
    ``kubernetes-nodes-<cluster>-<name>`` as the chart requires."""
    body = _apply({k: v for k, v in POOL_DEFAULTS.items() if k != "workerClassName"}, values)
    full = name if name.startswith("kubernetes-nodes-") else f"kubernetes-nodes-{pool_name(name, body.get('cluster'))}"
    return {
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {
            "name": full,
            "namespace": namespace,
            "labels": {"apps.cozystack.io/application.kind": "KubernetesNodes"},
        },
        "spec": {
            "interval": "5m",
            "chart": {"spec": {"chart": "kubernetes-nodes"}},
            "values": body,
        },
    }


def make_compute_plane(
    name: str = "plane", namespace: str = NAMESPACE, node_groups: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    groups = {"workers": {"minReplicas": 1, "maxReplicas": 2}} if node_groups is None else node_groups
    return {
        "apiVersion": "apps.cozystack.io/v1alpha1",
        "kind": "ComputePlane",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"nodeGroups": copy.deepcopy(dict(groups))},
    }


def make_state(
    objects: Iterable[Mapping[str, Any]] = (),
    *,
    platform: Mapping[str, Any] | None = None,
    classes: Iterable[Mapping[str, Any]] | None = None,
    clusters: Iterable[Mapping[str, Any]] | None = None,
) -> State:
    """A State: the test platform, a KubeVirt and a Proxmox parent, the example classes, ``objects``."""
    base: list[Mapping[str, Any]] = [platform if platform is not None else make_platform()]
    base += list(
        clusters if clusters is not None else [make_cluster(), make_cluster(PROXMOX_CLUSTER, infrastructure="proxmox")]
    )
    base += list(classes if classes is not None else [TALOS_EXAMPLE, KAIROS_FIXED])
    return State.from_objects([*base, *objects])


# --------------------------------------------------------------------------- reading outcomes


def apply_patch(obj: Mapping[str, Any], patch: list[dict[str, Any]]) -> dict[str, Any]:
    patched: dict[str, Any] = jsonpatch.apply_patch(copy.deepcopy(dict(obj)), patch)  # jsonpatch is untyped
    return patched


def pairs(violations: Iterable[Any]) -> set[tuple[str, str]]:
    """``{(code, field)}`` of violations (of a Decision's ``denials`` or a ``Denied``)."""
    return {(v.code, v.field) for v in violations}


def has_denial(violations: Iterable[Any], code: str, fields: str | tuple[str, ...]) -> bool:
    """A violation with ``code`` at one of the accepted field paths."""
    accepted = (fields,) if isinstance(fields, str) else fields
    return any(v.code == code and v.field in accepted for v in violations)


def view(effective: Any) -> dict[str, Any]:
    """Effective settings in the ``resolve -o json`` pool shape of API.md section 4."""
    image = effective.image
    out: dict[str, Any] = {
        "class": effective.class_name,
        "bootstrap": effective.bootstrap,
        "kubernetesVersion": effective.kubernetes_version,
        "kernelModules": [{"name": m.name, "parameters": list(m.parameters)} for m in effective.kernel_modules],
        "image": {
            "source": image.source,
            "reference": image.reference,
            "version": image.version,
            "schematicID": image.schematic_id,
            "templateTags": list(image.template_tags) if image.template_tags is not None else None,
        },
        "installerImage": effective.installer_image,
        "talos": None,
    }
    talos = effective.talos
    if talos is not None:
        out["talos"] = {
            "version": talos.version,
            "schematicID": talos.schematic_id,
            "imageFactoryURL": talos.image_factory_url,
            "imageFactoryCA": talos.image_factory_ca,
            "installerRepository": talos.installer_repository,
            # the mirror maps as the class or pool wrote them (Talos machine.registries.mirrors)
            "registryMirrors": {registry: dict(mirror) for registry, mirror in talos.registry_mirrors.items()},
        }
    return out


def resolved(state: State, obj: Mapping[str, Any]) -> dict[str, Any]:
    """The effective settings of ``obj``; fails the test with the denials when it is refused."""
    try:
        return view(resolve(state, obj))
    except Denied as denied:
        raise AssertionError(f"unexpectedly denied: {[str(v) for v in denied.violations]}") from None


def refused(state: State, obj: Mapping[str, Any]) -> tuple[Any, ...]:
    """The violations ``resolve`` raises for ``obj``; fails the test when it resolves."""
    try:
        effective = resolve(state, obj)
    except Denied as denied:
        return denied.violations
    raise AssertionError(f"unexpectedly resolved: {view(effective)}")


def factory_url(schematic: str, version: str, endpoint: str = FACTORY_URL) -> str:
    """API.md section 2: ``<endpoint>/image/<schematicID>/<version>/openstack-amd64.raw.xz``."""
    return f"{endpoint}/image/{schematic}/{version}/openstack-amd64.raw.xz"


def golden_name(schematic: str, version: str) -> str:
    """API.md section 2: the golden DataVolume ``cozy-public/talos-worker-<schematicID>-<version>``."""
    return f"cozy-public/talos-worker-{schematic}-{version}"


def installer_image(
    schematic: str = SCHEMATIC_A, version: str = TALOS_VERSION, repository: str = INSTALLER_REPOSITORY
) -> str:
    """API.md section 2: ``<installerRepository>/<schematicID>:<version>``."""
    return f"{repository}/{schematic}:{version}"


def chart_known_as(name: str, *, artifacts: frozenset[str] = frozenset()) -> ChartSource:
    """A chart the cluster is known to run (a known identity, by name), without its text."""
    identity = by_name(name)
    return ChartSource(identity, identity.digest, identity.version, origin="this test", artifacts=artifacts)


# --------------------------------------------------------------------------- worker states


class PoolStatesLog:
    """The worker controller's report as class status reads it (``ops.status.PoolStates``): each
    pool's state, and a journal of the pools whose state changed, by change number. ``forget``
    drops the journal, as the controller's bounded one loses what is too old."""

    def __init__(self) -> None:
        self.states: dict[str, str] = {}
        self.changes: list[tuple[int, str]] = []
        self.serial = 0

    @property
    def state_serial(self) -> int:
        return self.serial

    def states_changed_since(self, serial: int) -> set[str] | None:
        if serial == self.serial:
            return set()
        if not self.changes or self.changes[0][0] > serial + 1:
            return None
        return {identity for number, identity in self.changes if number > serial}

    def pool_state(self, identity: str) -> str | None:
        return self.states.get(identity)

    def set(self, identity: str, state: str | None) -> None:
        """Pool ``identity``'s state now (``None``: the pool went), one change when it differs."""
        if self.states.get(identity) == state:
            return
        if state is None:
            del self.states[identity]
        else:
            self.states[identity] = state
        self.serial += 1
        self.changes.append((self.serial, identity))

    def forget(self) -> None:
        self.changes = []
