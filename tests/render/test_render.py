"""The renderer's rules: layout, determinism, and what the versioned template hash covers."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest

from workerclass.adapters.folder import Document, read_folder
from workerclass.render import (
    HASH_ANNOTATION,
    HASH_VERSION,
    HASH_VERSION_ANNOTATION,
    KIND_RANK,
    RenderError,
    hash_document,
    render,
    template_hash,
)
from workerclass.render.text import manifests_yaml
from workerclass.resolve import resolve_pool
from workerclass.resolve.effective import Effective, EffectiveImage
from workerclass.state import State

from .builders import (
    CA,
    FIXED_REFERENCE,
    OTHER_SCHEMATIC,
    SCHEMATIC,
    SSH_KEY,
    Gpu,
    KernelModule,
    Resources,
    Taint,
    factory_url,
    make_effective,
    replace,
    with_pool,
    with_talos,
)
from .schemas import REPO

TEMPLATE_KINDS = {"KubevirtMachineTemplate", "ProxmoxMachineTemplate", "TalosConfigTemplate", "KairosConfigTemplate"}


def by_kind(manifests: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out = {obj["kind"]: obj for obj in manifests}
    assert len(out) == len(manifests)
    return out


def templates(effective: Effective) -> dict[str, dict[str, Any]]:
    """Name and spec of each template: the immutable part (metadata may change in place)."""
    return {
        kind: {"name": obj["metadata"]["name"], "spec": obj["spec"]}
        for kind, obj in by_kind(render(effective)).items()
        if kind in TEMPLATE_KINDS
    }


# --------------------------------------------------------------------------- layout


def test_order_is_kind_rank_then_name_and_repeatable() -> None:
    effective = with_talos(make_effective(), image_factory_ca=CA)
    first, second = render(effective), render(effective)
    assert first == second
    ranks = [KIND_RANK[obj["kind"]] for obj in first]
    assert ranks == sorted(ranks)
    assert [obj["kind"] for obj in first] == [
        "ConfigMap",
        "KubevirtMachineTemplate",
        "TalosConfigTemplate",
        "MachineDeployment",
        "MachineHealthCheck",
    ]


def test_render_returns_plain_json_data() -> None:
    manifests = render(make_effective())
    assert json.loads(json.dumps(manifests)) == manifests


def test_both_templates_carry_the_hash_in_their_name_and_the_version_beside_it() -> None:
    effective = make_effective()
    digest = template_hash(effective)
    objs = by_kind(render(effective))
    for kind in ("KubevirtMachineTemplate", "TalosConfigTemplate"):
        assert objs[kind]["metadata"]["name"] == f"workers-{digest}"
        assert objs[kind]["metadata"]["annotations"][HASH_ANNOTATION] == digest
        assert objs[kind]["metadata"]["annotations"][HASH_VERSION_ANNOTATION] == HASH_VERSION
    spec = objs["MachineDeployment"]["spec"]["template"]["spec"]
    assert spec["bootstrap"]["configRef"]["name"] == f"workers-{digest}"
    assert spec["infrastructureRef"]["name"] == f"workers-{digest}"
    assert len(digest) == 10 and all(c in "0123456789abcdef" for c in digest)


def test_replicas_are_left_to_the_autoscaler() -> None:
    objs = by_kind(render(with_pool(make_effective(), min_replicas=2, max_replicas=3)))
    md = objs["MachineDeployment"]
    assert "replicas" not in md["spec"]
    annotations = md["metadata"]["annotations"]
    assert annotations["cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size"] == "2"
    assert annotations["cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size"] == "3"


def test_roles_labels_and_taints_reach_the_machine_template() -> None:
    effective = with_pool(
        make_effective(),
        roles=("ingress-nginx",),
        labels={"team": "data"},
        taints=(Taint("dedicated", "gpu", "NoSchedule"), Taint("spot", "", "PreferNoSchedule")),
    )
    template = by_kind(render(effective))["MachineDeployment"]["spec"]["template"]
    assert template["metadata"]["labels"]["node-role.kubernetes.io/ingress-nginx"] == ""
    assert template["metadata"]["labels"]["team"] == "data"
    assert template["spec"]["taints"] == [
        {"key": "dedicated", "value": "gpu", "effect": "NoSchedule", "propagation": "Always"},
        {"key": "spot", "effect": "PreferNoSchedule", "propagation": "Always"},
    ]


@pytest.mark.parametrize(
    ("max_unhealthy", "expected"),
    [("50%", "50%"), (1, 1), (None, None)],
    ids=["percent-stays-a-string", "integer-stays-an-integer", "absent-no-trigger"],
)
def test_machine_health_check_max_unhealthy(max_unhealthy: int | str | None, expected: int | str | None) -> None:
    mhc = by_kind(render(with_pool(make_effective(), max_unhealthy=max_unhealthy)))["MachineHealthCheck"]
    trigger = mhc["spec"].get("remediation", {}).get("triggerIf", {}).get("unhealthyLessThanOrEqualTo")
    assert trigger == expected
    assert type(trigger) is type(expected)


def test_machine_health_check_timeouts_in_seconds() -> None:
    effective = with_pool(
        make_effective(), node_startup_timeout="20m", ready_unknown_timeout="90s", ready_false_timeout="1h30m"
    )
    checks = by_kind(render(effective))["MachineHealthCheck"]["spec"]["checks"]
    assert checks["nodeStartupTimeoutSeconds"] == 1200
    assert checks["unhealthyNodeConditions"] == [
        {"type": "Ready", "status": "Unknown", "timeoutSeconds": 90},
        {"type": "Ready", "status": "False", "timeoutSeconds": 5400},
    ]


def _vm(effective: Effective) -> dict[str, Any]:
    template = by_kind(render(effective))["KubevirtMachineTemplate"]
    vm: dict[str, Any] = template["spec"]["template"]["spec"]["virtualMachineTemplate"]["spec"]
    return vm


def test_factory_disk_is_a_cdi_http_import_with_the_ca_on_that_import_alone() -> None:
    effective = with_talos(make_effective(), image_factory_ca=CA)
    objs = by_kind(render(effective))
    source = _vm(effective)["dataVolumeTemplates"][0]["spec"]["source"]
    assert source == {"http": {"url": factory_url(), "certConfigMap": "workers-image-factory-ca"}}
    assert objs["ConfigMap"]["metadata"]["name"] == "workers-image-factory-ca"
    assert objs["ConfigMap"]["data"] == {"ca.pem": CA}
    # Nothing else refers to the CA: it is trust for the CDI import, not global trust.
    for kind, obj in objs.items():
        if kind not in ("ConfigMap", "KubevirtMachineTemplate"):
            assert "image-factory-ca" not in json.dumps(obj) and "CERTIFICATE" not in json.dumps(obj), kind


def test_builtin_disk_is_a_cdi_clone_of_the_golden_and_ignores_the_ca() -> None:
    golden = f"cozy-public/talos-worker-{SCHEMATIC}-v1.13.6"
    effective = replace(
        with_talos(make_effective(), image_factory_ca=CA),
        image=EffectiveImage("builtin", golden, "v1.13.6", SCHEMATIC),
    )
    objs = by_kind(render(effective))
    assert "ConfigMap" not in objs
    assert _vm(effective)["dataVolumeTemplates"][0]["spec"]["source"] == {
        "pvc": {"namespace": "cozy-public", "name": f"talos-worker-{SCHEMATIC}-v1.13.6"}
    }


def test_kairos_disk_is_a_container_disk_and_bootstraps_on_kubeadm() -> None:
    effective = replace(
        with_pool(make_effective(bootstrap="kairos"), ssh_keys=(SSH_KEY,)),
        image=EffectiveImage("fixed", FIXED_REFERENCE, "v1.35.6", None),
    )
    volumes = _vm(effective)["template"]["spec"]["volumes"]
    assert {"name": "system", "containerDisk": {"image": FIXED_REFERENCE}} in volumes
    spec = by_kind(render(effective))["KairosConfigTemplate"]["spec"]["template"]["spec"]
    assert spec == {
        "role": "worker",
        "distribution": "kubeadm",
        "kubernetesVersion": "v1.35.6",
        "userName": "kairos",
        "userGroups": ["admin"],
        "sshPublicKey": SSH_KEY,
    }


def test_kairos_without_a_key_renders_no_login() -> None:
    spec = by_kind(render(make_effective(bootstrap="kairos")))["KairosConfigTemplate"]["spec"]["template"]["spec"]
    assert not {"sshPublicKey", "userName", "userGroups", "userPassword", "githubUser"} & set(spec)


def test_talos_machine_config_patches() -> None:
    effective = replace(
        with_talos(make_effective(), registry_mirrors={"docker.io": ("https://mirror.example",)}),
        kernel_modules=(KernelModule("nvme_tcp"), KernelModule("nvidia", ("NVreg_NvLinkDisable=1",))),
    )
    spec = by_kind(render(effective))["TalosConfigTemplate"]["spec"]["template"]["spec"]
    assert spec["generateType"] == "worker"
    assert spec["talosVersion"] == "v1.13"
    patches = {patch["path"]: patch["value"] for patch in spec["configPatches"]}
    assert patches == {
        "/machine/install/image": f"factory.talos.dev/installer/{SCHEMATIC}:v1.13.6",
        "/machine/kubelet/image": "ghcr.io/siderolabs/kubelet:v1.35.6",
        "/machine/registries": {"mirrors": {"docker.io": {"endpoints": ["https://mirror.example"]}}},
        "/machine/kernel": {
            "modules": [{"name": "nvme_tcp"}, {"name": "nvidia", "parameters": ["NVreg_NvLinkDisable=1"]}]
        },
    }


def test_empty_mirrors_and_modules_patch_nothing() -> None:
    spec = by_kind(render(make_effective()))["TalosConfigTemplate"]["spec"]["template"]["spec"]
    assert [patch["path"] for patch in spec["configPatches"]] == ["/machine/install/image", "/machine/kubelet/image"]


def test_gpus_as_host_devices_or_mediated_gpus() -> None:
    effective = with_pool(make_effective(), gpus=(Gpu("nvidia.com/AD102GL_L40S"), Gpu("nvidia.com/L40S-24Q", True)))
    devices = _vm(effective)["template"]["spec"]["domain"]["devices"]
    assert devices["hostDevices"] == [{"name": "gpu0", "deviceName": "nvidia.com/AD102GL_L40S"}]
    assert devices["gpus"] == [{"name": "vgpu0", "deviceName": "nvidia.com/L40S-24Q"}]


def test_resources_replace_the_instance_type() -> None:
    vm = _vm(with_pool(make_effective(), instance_type="u1.large", resources=Resources("500m", "6Gi")))
    assert "instancetype" not in vm
    domain = vm["template"]["spec"]["domain"]
    assert domain["cpu"] == {"cores": 1}
    assert domain["memory"] == {"guest": "6Gi"}


def test_disk_size_and_storage_class() -> None:
    vm = _vm(with_pool(make_effective(), disk_size="50Gi", storage_class="replicated"))
    assert vm["dataVolumeTemplates"][0]["spec"]["storage"] == {
        "resources": {"requests": {"storage": "50Gi"}},
        "storageClassName": "replicated",
    }


def _proxmox(**pool: Any) -> Effective:
    effective = replace(
        make_effective(),
        infrastructure="proxmox",
        image=EffectiveImage("proxmox", None, "v1.13.6", SCHEMATIC, ("talos-v1.13.6", "b", "talos-v1.13.6")),
    )
    return with_pool(effective, **pool)


def test_proxmox_template_selected_by_the_final_tag_list() -> None:
    objs = by_kind(render(_proxmox(instance_type="u1.xlarge", disk_size="40Gi")))
    spec = objs["ProxmoxMachineTemplate"]["spec"]["template"]["spec"]
    assert spec["templateSelector"] == {"matchTags": ["b", "talos-v1.13.6"]}
    assert (spec["numCores"], spec["memoryMiB"]) == (4, 16384)
    assert spec["disks"]["bootVolume"]["sizeGb"] == 40
    assert "TalosConfigTemplate" in objs and "KubevirtMachineTemplate" not in objs


@pytest.mark.parametrize(
    "effective",
    [
        replace(make_effective(bootstrap="kairos"), infrastructure="proxmox"),
        _proxmox(instance_type="cx.custom"),
        replace(make_effective(), image=EffectiveImage("proxmox", None, None, None, ())),
        replace(_proxmox(), image=EffectiveImage("proxmox", None, None, None, ())),
        replace(make_effective(), bootstrap="flatcar"),
    ],
    ids=["kairos-on-proxmox", "proxmox-unknown-instance-type", "proxmox-image-on-kubevirt", "empty-tags", "family"],
)
def test_unrenderable_settings_raise_render_error(effective: Effective) -> None:
    with pytest.raises(RenderError):
        render(effective)


# --------------------------------------------------------------------------- the hash


def _roll(change: Callable[[Effective], Effective], base: Effective | None = None) -> tuple[bool, bool]:
    """(hash changed, templates changed) for one change."""
    before = base or make_effective()
    after = change(before)
    return template_hash(before) != template_hash(after), templates(before) != templates(after)


ROLLING: dict[str, Callable[[Effective], Effective]] = {
    "image-reference": lambda e: replace(
        e, image=EffectiveImage("factory", factory_url(endpoint="https://f.example"), "v1.13.6", SCHEMATIC)
    ),
    "talos-version": lambda e: replace(
        with_talos(e, version="v1.13.7"),
        image=EffectiveImage("factory", factory_url(version="v1.13.7"), "v1.13.7", SCHEMATIC),
        installer_image=f"factory.talos.dev/installer/{SCHEMATIC}:v1.13.7",
    ),
    "schematic": lambda e: replace(
        with_talos(e, schematic_id=OTHER_SCHEMATIC),
        image=EffectiveImage("factory", factory_url(schematic=OTHER_SCHEMATIC), "v1.13.6", OTHER_SCHEMATIC),
        installer_image=f"factory.talos.dev/installer/{OTHER_SCHEMATIC}:v1.13.6",
    ),
    "kubernetes-patch": lambda e: replace(e, kubernetes_version="v1.35.7"),
    "installer-repository": lambda e: replace(
        with_talos(e, installer_repository="mirror.example/installer"),
        installer_image=f"mirror.example/installer/{SCHEMATIC}:v1.13.6",
    ),
    "registry-mirrors": lambda e: with_talos(e, registry_mirrors={"docker.io": ("https://mirror.example",)}),
    "kernel-modules": lambda e: replace(e, kernel_modules=(KernelModule("nvme_tcp"),)),
    "instance-type": lambda e: with_pool(e, instance_type="u1.large"),
    "resources": lambda e: with_pool(e, resources=Resources("2", "4Gi")),
    "disk-size": lambda e: with_pool(e, disk_size="40Gi"),
    "storage-class": lambda e: with_pool(e, storage_class="replicated"),
    "gpus": lambda e: with_pool(e, gpus=(Gpu("nvidia.com/AD102GL_L40S"),)),
    "ca-added": lambda e: with_talos(e, image_factory_ca=CA),
    "builtin-source": lambda e: replace(
        e, image=EffectiveImage("builtin", f"cozy-public/talos-worker-{SCHEMATIC}-v1.13.6", "v1.13.6", SCHEMATIC)
    ),
}


@pytest.mark.parametrize("name", sorted(ROLLING), ids=sorted(ROLLING))
def test_what_the_machines_boot_is_in_the_hash(name: str) -> None:
    assert _roll(ROLLING[name]) == (True, True)


KAIROS_ROLLING: dict[str, Callable[[Effective], Effective]] = {
    "platform-digest": lambda e: replace(
        e,
        image=EffectiveImage("platform", e.image.reference.replace("ab712e", "000000"), "v1.35.6", None),  # type: ignore[union-attr]
    ),
    "ssh-key": lambda e: with_pool(e, ssh_keys=(SSH_KEY,)),
    "fixed-image": lambda e: replace(e, image=EffectiveImage("fixed", FIXED_REFERENCE, "v1.35.6", None)),
}


@pytest.mark.parametrize("name", sorted(KAIROS_ROLLING), ids=sorted(KAIROS_ROLLING))
def test_what_kairos_machines_boot_is_in_the_hash(name: str) -> None:
    assert _roll(KAIROS_ROLLING[name], make_effective(bootstrap="kairos")) == (True, True)


IN_PLACE: dict[str, Callable[[Effective], Effective]] = {
    "replicas": lambda e: with_pool(e, min_replicas=5, max_replicas=9),
    "health": lambda e: with_pool(
        e, max_unhealthy="50%", node_startup_timeout="30m", ready_unknown_timeout="1m", ready_false_timeout="2m"
    ),
    "roles-labels-taints": lambda e: with_pool(
        e, roles=("storage",), labels={"a": "b"}, taints=(Taint("k", "v", "NoExecute"),)
    ),
    "class-name": lambda e: replace(e, class_name="talos-example-r1"),
    "classless": lambda e: replace(e, class_name=None, kind="HelmRelease"),
    "ca-rotated": lambda e: with_talos(e, image_factory_ca=CA.replace("example", "rotated")),
    "factory-url-alone": lambda e: with_talos(e, image_factory_url="https://other.example"),
    "origins-and-warnings": lambda e: replace(e, origins={"talos.version": "pool"}, warnings=("w",)),
    "ssh-key-list-on-talos": lambda e: with_pool(e, ssh_keys=()),
    "explicit-defaults": lambda e: with_pool(e, instance_type="u1.medium", disk_size="20Gi"),
    "min-replicas-only": lambda e: with_pool(e, min_replicas=0),
}


@pytest.mark.parametrize("name", sorted(IN_PLACE), ids=sorted(IN_PLACE))
def test_what_is_changed_in_place_is_not_in_the_hash(name: str) -> None:
    base = with_talos(make_effective(), image_factory_ca=CA)
    assert _roll(IN_PLACE[name], base) == (False, False)


def test_ca_rotation_updates_the_configmap_under_a_stable_name() -> None:
    base = with_talos(make_effective(), image_factory_ca=CA)
    rotated = with_talos(base, image_factory_ca=CA.replace("example", "rotated"))
    before, after = by_kind(render(base))["ConfigMap"], by_kind(render(rotated))["ConfigMap"]
    assert before["metadata"]["name"] == after["metadata"]["name"]
    assert before["data"] != after["data"]


def test_hash_is_stable_for_a_known_input() -> None:
    # Pins HASH_VERSION v1: if this changes, the hash changed for unchanged settings, which
    # would roll every worker. Bump HASH_VERSION and follow the rules in render/hash.py.
    assert HASH_VERSION == "v1"
    assert template_hash(make_effective()) == "7dff871d22"
    assert template_hash(make_effective(bootstrap="kairos")) == "f0107e6bc5"


def test_hash_document_is_the_explicit_field_list() -> None:
    document = hash_document(with_pool(make_effective(), ssh_keys=(SSH_KEY,)))
    assert set(document) == {
        "bootstrap",
        "infrastructure",
        "kubernetesVersion",
        "image",
        "installerImage",
        "talos",
        "kernelModules",
        "machine",
    }
    assert "sshKey" in hash_document(with_pool(make_effective(bootstrap="kairos"), ssh_keys=(SSH_KEY,)))


def test_template_content_follows_the_hash_over_every_effective_field() -> None:
    """Equal hashes must mean equal templates, or an immutable template would be edited."""
    pool_fields = {field.name for field in dataclasses.fields(make_effective().pool)}
    seen: dict[str, str] = {}
    cases = [*ROLLING.values(), *IN_PLACE.values()]
    for change in cases:
        effective = change(with_talos(make_effective(), image_factory_ca=CA))
        digest = template_hash(effective)
        text = json.dumps(templates(effective), sort_keys=True)
        if digest in seen:
            assert seen[digest] == text
        seen[digest] = text
    assert "ssh_keys" in pool_fields


# --------------------------------------------------------------------------- classless, fixed images


class _NoLookups(dict[str, Any]):
    """Stands in for ``State.classes``: any lookup fails the test."""

    def _refuse(self, *args: object, **kwargs: object) -> Any:
        raise AssertionError("a classless pool looked up a WorkerClass")

    __getitem__ = get = __contains__ = items = values = keys = __iter__ = _refuse


def test_classless_pools_render_without_any_worker_class_lookup() -> None:
    state = State.load(REPO / "examples")
    state.classes = _NoLookups()
    record = state.pool("tenant-example/example-legacy")
    assert record is not None and record.class_name is None
    effective, denials, _ = resolve_pool(state, record)
    assert effective is not None, denials
    assert effective.class_name is None
    objs = by_kind(render(effective))
    assert "workerclass.cozystack.io/class" not in objs["MachineDeployment"]["metadata"]["annotations"]


def _state_with_platform_patch(patch: str) -> State:
    documents = []
    for document in read_folder(REPO / "examples"):
        obj = document.obj
        if obj.get("kind") == "WorkerPlatform":
            obj = json.loads(json.dumps(obj))
            obj["spec"]["kubernetesVersions"]["v1.35"]["patch"] = patch
        documents.append(Document(obj, document.origin))
    return State.from_documents(documents)


def _rendered(state: State, identity: str) -> str:
    record = state.pool(identity)
    assert record is not None
    effective, denials, _ = resolve_pool(state, record)
    assert effective is not None, denials
    return manifests_yaml(render(effective))


def test_platform_patch_change_leaves_a_fixed_kairos_image_byte_identical() -> None:
    before, after = _state_with_platform_patch("v1.35.6"), _state_with_platform_patch("v1.35.9")
    assert _rendered(before, "tenant-example/example-custom-kairos") == _rendered(
        after, "tenant-example/example-custom-kairos"
    )
    # ... while a Talos pool on the platform map follows the new patch.
    talos_after = _rendered(after, "tenant-example/example-talos")
    assert _rendered(before, "tenant-example/example-talos") != talos_after
    assert "kubelet:v1.35.9" in talos_after


# --------------------------------------------------------------------------- purity


def test_render_and_ops_import_no_server_client_or_cli_library() -> None:
    code = (
        "import sys, workerclass.render, workerclass.ops.plan;"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in"
        " {'kopf', 'aiohttp', 'lightkube', 'typer', 'rich', 'click'});"
        "print(','.join(bad))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == ""


# --------------------------------------------------------------------------- text


def test_yaml_text_round_trips_with_sorted_keys_and_a_literal_certificate() -> None:
    import yaml

    manifests = render(with_talos(make_effective(), image_factory_ca=CA))
    text = manifests_yaml(manifests)
    assert list(yaml.safe_load_all(text)) == manifests
    assert "  ca.pem: |\n    -----BEGIN CERTIFICATE-----\n" in text
    assert text.index("apiVersion:") < text.index("kind:") < text.index("metadata:")
