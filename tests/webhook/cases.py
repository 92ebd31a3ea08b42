"""Admission table rows as AdmissionReview inputs, shared by the HTTPS and the property tests.

The state is the bundled ``examples/`` folder plus a few objects the design page implies but
the examples do not hold: a parent cluster on Proxmox, one with an old control plane, and a
ComputePlane.
"""

from __future__ import annotations

import base64
import copy
import struct
from dataclasses import dataclass, field
from typing import Any

from workerclass.adapters.folder import load_state
from workerclass.state import State

from .helpers import EXAMPLES

NS = "tenant-example"
SCHEMATIC = "376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba"
OTHER_SCHEMATIC = "0" * 64
DIGEST = "3f7a9c2e1b4d6f8a0c2e4b6d8f0a2c4e6b8d0f2a4c6e8b0d2f4a6c8e0b2d4f6a"


def ssh_key(comment: str = "user@host") -> str:
    """A syntactically complete ed25519 public key line."""
    blob = struct.pack(">I", 11) + b"ssh-ed25519" + struct.pack(">I", 32) + bytes(range(32))
    return f"ssh-ed25519 {base64.b64encode(blob).decode()} {comment}"


PRIVATE_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n"


def pool(name: str = "new-pool", *, cluster: str = "example", **spec: Any) -> dict[str, Any]:
    """A KubernetesNodes named ``<cluster>-<name>`` as the chart requires (a name that already
    starts with ``<cluster>-`` is kept)."""
    prefix = f"{cluster}-" if isinstance(cluster, str) and cluster else "example-"
    full = name if name.startswith(prefix) else prefix + name
    return {
        "apiVersion": "apps.cozystack.io/v1alpha1",
        "kind": "KubernetesNodes",
        "metadata": {"name": full, "namespace": NS},
        "spec": {"cluster": cluster, "version": "v1.35", "minReplicas": 1, "maxReplicas": 2, **spec},
    }


def worker_class(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "cozystack.io/v1alpha1", "kind": "WorkerClass", "metadata": {"name": name}, "spec": spec}


def compute_plane(name: str = "plane", **groups: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps.cozystack.io/v1alpha1",
        "kind": "ComputePlane",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"nodeGroups": groups},
    }


def cluster(name: str, version: str = "v1.35", infrastructure: str = "kubevirt") -> dict[str, Any]:
    return {
        "apiVersion": "apps.cozystack.io/v1alpha1",
        "kind": "Kubernetes",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"version": version, "infrastructure": infrastructure},
    }


EXTRA_OBJECTS = [
    cluster("pve", infrastructure="proxmox"),
    cluster("old-cp", version="v1.34"),
    cluster("new-cp", version="v1.36"),  # a control plane on a minor the platform does not map
]


def table_state(*, extra: list[dict[str, Any]] | None = None) -> State:
    base = load_state(EXAMPLES)
    return State.from_objects([record.obj for record in base.objects] + EXTRA_OBJECTS + list(extra or []))


def stored(name: str) -> dict[str, Any]:
    """An object of the examples as stored (the old object of an UPDATE or DELETE)."""
    record = table_state().find(*_identity(name))
    assert record is not None, name
    return copy.deepcopy(dict(record.obj))


def _identity(name: str) -> tuple[str, str, str]:
    kind, _, rest = name.partition(":")
    namespace, _, object_name = rest.rpartition("/")
    return kind, namespace, object_name


@dataclass(frozen=True)
class Denial:
    """A row of API.md section 3's code table: the request and the code it must be denied with."""

    id: str
    path: str
    obj: dict[str, Any] | None
    code: str
    operation: str = "CREATE"
    old: dict[str, Any] | None = None
    extra: list[str] = field(default_factory=list)


def denial_rows() -> list[Denial]:
    talos_pool = stored("KubernetesNodes:tenant-example/example-talos")
    classless_pool = pool("legacy")
    class_spec_changed = stored("WorkerClass:/talos-example-r1")
    class_spec_changed["spec"]["talos"]["version"] = "v1.13.7"
    nodes = "/validate/kubernetesnodes"
    return [
        Denial("ClassNotFound", nodes, pool(workerClassName="no-such-class"), "ClassNotFound"),
        Denial("ClusterNotFound", nodes, pool(cluster="no-such-cluster", workerClassName="talos"), "ClusterNotFound"),
        Denial(
            "BootstrapFamilyChange",
            nodes,
            {
                **talos_pool,
                "spec": {**talos_pool["spec"], "workerClassName": "kairos", "talos": {}, "kernelModules": []},
            },
            "BootstrapFamilyChange",
            operation="UPDATE",
            old=talos_pool,
        ),
        Denial(
            "BootstrapFamilyChange-legacy",
            nodes,
            pool("legacy", workerClassName="kairos"),
            "BootstrapFamilyChange",
            operation="UPDATE",
            old=classless_pool,
        ),
        Denial("SSHKeysOnTalos", nodes, pool(workerClassName="talos", sshKeys=[ssh_key()]), "SSHKeysOnTalos"),
        Denial(
            "TooManySSHKeys",
            nodes,
            pool(workerClassName="kairos", sshKeys=[ssh_key("a"), ssh_key("b")]),
            "TooManySSHKeys",
        ),
        Denial("InvalidSSHKey", nodes, pool(workerClassName="kairos", sshKeys=["not a key"]), "InvalidSSHKey"),
        Denial(
            "PrivateKeyMaterial-pool",
            nodes,
            pool(workerClassName="kairos", sshKeys=[PRIVATE_KEY]),
            "PrivateKeyMaterial",
        ),
        Denial(
            "PrivateKeyMaterial-class",
            "/validate/workerclasses",
            worker_class("leaky", bootstrap="talos", talos={"imageFactoryCA": PRIVATE_KEY}),
            "PrivateKeyMaterial",
        ),
        Denial("KairosOnProxmox", nodes, pool(cluster="pve", workerClassName="kairos"), "KairosOnProxmox"),
        Denial(
            "TalosSettingOnKairos-pool",
            nodes,
            pool(workerClassName="kairos", talos={"version": "v1.13.6"}),
            "TalosSettingOnKairos",
        ),
        Denial(
            "TalosSettingOnKairos-class",
            "/validate/workerclasses",
            worker_class("kairos-with-talos", bootstrap="kairos", kernelModules=[{"name": "nvme_tcp"}]),
            "TalosSettingOnKairos",
        ),
        Denial(
            "IncompleteImage",
            "/validate/workerclasses",
            worker_class("half", bootstrap="kairos", image={"kubernetesVersion": "v1.35.6"}),
            "IncompleteImage",
        ),
        Denial(
            "ImageNotPinned",
            "/validate/workerclasses",
            worker_class(
                "unpinned",
                bootstrap="kairos",
                image={"kubernetesVersion": "v1.35.6", "reference": "registry.example.com/workers/kairos:v1"},
            ),
            "ImageNotPinned",
        ),
        Denial(
            "VersionMismatch",
            nodes,
            pool(cluster="example", workerClassName="kairos-example-v1-35-6-r1", version="v1.34"),
            "VersionMismatch",
        ),
        Denial(
            "UnsupportedVersion",
            nodes,
            pool(cluster="new-cp", workerClassName="talos", version="v1.36"),
            "UnsupportedVersion",
        ),
        Denial("ControlPlaneTooOld", nodes, pool(cluster="old-cp", workerClassName="talos"), "ControlPlaneTooOld"),
        # TalosKubernetesIncompatible needs a platform whose support matrix lists a Talos minor
        # that does not run v1.35 (the chart's matrix lists only v1.13, which runs every minor the
        # chart accepts): test_admission_https.test_talos_kubernetes_incompatible serves one.
        Denial(
            "OsImageSourceConflict",
            nodes,
            pool(
                workerClassName="talos",
                kubevirt={"osImage": {"builtin": {}, "factory": {}}},
            ),
            "OsImageSourceConflict",
        ),
        Denial(
            "GoldenNotFound",
            nodes,
            pool(
                workerClassName="talos",
                talos={"schematicID": OTHER_SCHEMATIC},
                kubevirt={"osImage": {"builtin": {}}},
            ),
            "GoldenNotFound",
        ),
        Denial(
            "ArtifactConflict",
            nodes,
            pool(workerClassName="talos", kubevirt={"osImage": {"factory": {"version": "v1.13.5"}}}),
            "ArtifactConflict",
        ),
        Denial(
            "EmptyTemplateTags",
            nodes,
            pool(cluster="pve", workerClassName="talos", proxmox={"templateTags": []}),
            "EmptyTemplateTags",
        ),
        Denial(
            "OsImageOnProxmox",
            nodes,
            pool(
                cluster="pve",
                workerClassName="talos",
                proxmox={"templateTags": ["talos-v1.13.6"]},
                kubevirt={"osImage": {"factory": {"version": "v1.13.6"}}},
            ),
            "OsImageOnProxmox",
        ),
        Denial(
            "ClassImmutable",
            "/validate/workerclasses",
            class_spec_changed,
            "ClassImmutable",
            operation="UPDATE",
            old=stored("WorkerClass:/talos-example-r1"),
        ),
        Denial(
            "ClassInUse",
            "/validate/workerclasses",
            None,
            "ClassInUse",
            operation="DELETE",
            old=stored("WorkerClass:/talos-example-r1"),
        ),
        Denial(
            "TalosVGPU",
            nodes,
            pool(workerClassName="talos", gpus=[{"name": "nvidia.com/AD102GL_L40S", "vgpu": True}]),
            "TalosVGPU",
        ),
        Denial(
            "InvalidReplicas", nodes, pool(workerClassName="talos", minReplicas=3, maxReplicas=1), "InvalidReplicas"
        ),
        Denial(
            "InvalidReplicas-computeplane",
            "/validate/computeplanes",
            compute_plane(md0={"minReplicas": -1, "maxReplicas": 2}),
            "InvalidReplicas",
        ),
        Denial(
            "NotAllowedInComputePlane",
            "/validate/computeplanes",
            compute_plane(md0={"minReplicas": 1, "maxReplicas": 2, "workerClassName": "kairos"}),
            "NotAllowedInComputePlane",
        ),
        Denial(
            "NotAllowedInNodeGroup",
            "/validate/kuberneteses",
            {**cluster("parent"), "spec": {"version": "v1.35", "nodeGroups": {"md0": {"workerClassName": "kairos"}}}},
            "NotAllowedInNodeGroup",
        ),
        Denial("Invalid", nodes, pool(workerClassName="talos", minReplicas="three"), "Invalid"),
    ]
