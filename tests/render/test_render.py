"""The renderer's rules beyond parity: names, class-era inputs, what rolls and what changes in place.

Every pool here goes through the public path (State, ``resolve``, ``render``). Parity with the chart
itself is ``test_parity.py``; the Kairos and Proxmox templates' own hashes are ``test_templates.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from workerclass.adapters.folder import Document, read_folder
from workerclass.render import HASH_VERSION, KIND_RANK, RenderError, render, sort_manifests, template_hash
from workerclass.render.templates import KAIROS_PROVIDER_PATH
from workerclass.render.text import manifests_yaml
from workerclass.resolve import resolve_pool
from workerclass.state import State

from .builders import (
    CA,
    CHART_SCHEMATIC,
    FIXED_REFERENCE,
    SSH_KEY,
    by_kind,
    effective_of,
    factory_url,
    parent,
    pool,
    render_pool,
    worker_class,
)
from .schemas import REPO

#: these tests render the talos-reconcile Job, the chart's own text: the mirror's chart is given
pytestmark = pytest.mark.usefixtures("chart_text")

BASE = "kubernetes-example-workers"


def _machine_config(objects: list[dict[str, Any]]) -> dict[str, Any]:
    data = by_kind(objects)["TalosConfigTemplate"]["spec"]["template"]["spec"]["data"]
    loaded: dict[str, Any] = yaml.safe_load(data)
    return loaded


def _vm(objects: list[dict[str, Any]]) -> dict[str, Any]:
    vm: dict[str, Any] = by_kind(objects)["KubevirtMachineTemplate"]["spec"]["template"]["spec"][
        "virtualMachineTemplate"
    ]["spec"]
    return vm


# --------------------------------------------------------------------------- layout and names


def test_render_is_repeatable_plain_json_data() -> None:
    first, second = render_pool(pool()), render_pool(pool())
    assert first == second
    assert json.loads(json.dumps(first)) == first


def test_names_follow_the_chart() -> None:
    objects = by_kind(render_pool(pool()))
    kmt = objects["KubevirtMachineTemplate"]["metadata"]["name"]
    assert kmt.startswith(f"{BASE}-") and len(kmt.rsplit("-", 1)[1]) == 6
    for kind in ("MachineDeployment", "MachineHealthCheck", "WorkloadMonitor", "TalosConfigTemplate"):
        assert objects[kind]["metadata"]["name"] == BASE, kind
    machine = objects["MachineDeployment"]["spec"]["template"]["spec"]
    assert machine["infrastructureRef"]["name"] == kmt
    assert machine["bootstrap"]["configRef"] == {
        "apiVersion": "bootstrap.cluster.x-k8s.io/v1alpha3",
        "kind": "TalosConfigTemplate",
        "name": BASE,
        "namespace": "tenant-example",
    }
    assert machine["clusterName"] == "kubernetes-example"
    assert objects["TalosConfigTemplate"]["spec"]["template"]["spec"]["generateType"] == "none"


def test_the_api_versions_cozystack_serves() -> None:
    versions = {obj["kind"]: obj["apiVersion"] for obj in render_pool(pool())}
    assert versions["MachineDeployment"] == versions["MachineHealthCheck"] == "cluster.x-k8s.io/v1beta1"
    assert versions["KubevirtMachineTemplate"] == "infrastructure.cluster.x-k8s.io/v1alpha1"
    assert versions["TalosConfigTemplate"] == "bootstrap.cluster.x-k8s.io/v1alpha3"
    assert versions["WorkloadMonitor"] == "cozystack.io/v1alpha1"


def test_template_hash_is_the_infrastructure_template_suffix() -> None:
    effective = effective_of(pool())
    name = by_kind(render(effective))["KubevirtMachineTemplate"]["metadata"]["name"]
    assert template_hash(effective) == name.rsplit("-", 1)[1]
    assert HASH_VERSION == "v2"


def test_replicas_are_left_to_the_autoscaler() -> None:
    md = by_kind(render_pool(pool(minReplicas=2, maxReplicas=3)))["MachineDeployment"]
    assert "replicas" not in md["spec"]
    annotations = md["metadata"]["annotations"]
    assert annotations["cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size"] == "2"
    assert annotations["cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size"] == "3"


def test_sort_manifests_orders_by_kind_rank_for_people() -> None:
    ordered = sort_manifests(render_pool(pool()))
    ranks = [KIND_RANK.get(obj["kind"], len(KIND_RANK)) for obj in ordered]
    assert ranks == sorted(ranks)


# --------------------------------------------------------------------------- class-era inputs (PR shapes)


def test_kernel_modules_go_to_the_machine_config_as_pr3571_renders_them() -> None:
    modules = [{"name": "nvme_tcp"}, {"name": "nvidia", "parameters": ["NVreg_NvLinkDisable=1"]}]
    config = _machine_config(render_pool(pool(workerClassName="talos", kernelModules=modules)))
    assert config["machine"]["kernel"] == {
        "modules": [{"name": "nvme_tcp"}, {"name": "nvidia", "parameters": ["NVreg_NvLinkDisable=1"]}]
    }


def test_the_nvidia_rule_loads_modules_for_classified_gpu_pools_only() -> None:
    gpu = {"instanceType": "u1.2xlarge", "gpus": [{"name": "nvidia.com/AD102GL_L40S"}]}
    classified = _machine_config(render_pool(pool(workerClassName="talos", **gpu)))
    names = [module["name"] for module in classified["machine"]["kernel"]["modules"]]
    assert names == ["nvidia", "nvidia_uvm", "nvidia_drm", "nvidia_modeset"]
    assert "kernel" not in _machine_config(render_pool(pool(**gpu)))["machine"]
    assert (
        "kernel" not in _machine_config(render_pool(pool(workerClassName="talos", kernelModules=[], **gpu)))["machine"]
    )


def test_factory_ca_is_a_configmap_only_the_cdi_import_references() -> None:
    objects = render_pool(pool(workerClassName="talos", talos={"imageFactoryCA": CA}))
    configmaps = [obj for obj in objects if obj["kind"] == "ConfigMap"]
    assert len(configmaps) == 1 and CA.strip() in json.dumps(configmaps[0]["data"]).replace("\\n", "\n")
    source = _vm(objects)["dataVolumeTemplates"][0]["spec"]["source"]
    assert source["http"]["url"] == factory_url()
    assert source["http"]["certConfigMap"] == configmaps[0]["metadata"]["name"]
    # Nothing else refers to the CA: trust for the CDI import, not global trust.
    for obj in objects:
        if obj["kind"] not in ("ConfigMap", "KubevirtMachineTemplate"):
            assert "CERTIFICATE" not in json.dumps(obj), obj["kind"]


def test_builtin_source_clones_the_golden_and_ignores_the_ca() -> None:
    objects = render_pool(
        pool(workerClassName="talos", talos={"imageFactoryCA": CA}, kubevirt={"osImage": {"builtin": {}}})
    )
    assert "ConfigMap" not in by_kind(objects)
    source = _vm(objects)["dataVolumeTemplates"][0]["spec"]["source"]
    assert source == {"pvc": {"namespace": "cozy-public", "name": f"talos-worker-{CHART_SCHEMATIC}-v1.13.6"}}
    install = _machine_config(objects)["machine"]["install"]["image"]
    assert install == f"factory.talos.dev/installer/{CHART_SCHEMATIC}:v1.13.6"


def test_factory_endpoint_is_the_disk_url() -> None:
    objects = render_pool(
        pool(workerClassName="talos", kubevirt={"osImage": {"factory": {"endpoint": "https://mirror.example/"}}})
    )
    source = _vm(objects)["dataVolumeTemplates"][0]["spec"]["source"]
    assert source == {"http": {"url": factory_url(endpoint="https://mirror.example")}}


def test_classless_pools_ignore_class_era_keys_as_the_chart_does() -> None:
    plain = render_pool(pool())
    stored = render_pool(
        pool(kernelModules=[{"name": "nvme_tcp"}], labels={"team": "a"}, kubevirt={"osImage": {"builtin": {}}})
    )
    assert stored == plain


# --------------------------------------------------------------------------- Kairos


def test_kairos_disk_is_a_container_disk_and_bootstraps_on_the_providers_kubeadm_path() -> None:
    fixed = worker_class(
        "kairos-fixed-r1", bootstrap="kairos", image={"kubernetesVersion": "v1.35.6", "reference": FIXED_REFERENCE}
    )
    objects = render_pool(
        pool(workerClassName="kairos-fixed-r1", sshKeys=[SSH_KEY]), fixed, kairos_path=KAIROS_PROVIDER_PATH
    )
    volumes = _vm(objects)["template"]["spec"]["volumes"]
    assert {"name": "system", "containerDisk": {"image": FIXED_REFERENCE}} in volumes
    spec = by_kind(objects)["KairosConfigTemplate"]["spec"]["template"]["spec"]
    assert spec == {
        "role": "worker",
        "distribution": "kubeadm",
        "kubernetesVersion": "v1.35.6",
        "userName": "kairos",
        "userGroups": ["admin"],
        "sshPublicKey": SSH_KEY,
    }
    kinds = {obj["kind"] for obj in objects}
    assert not {"Job", "TalosConfigTemplate", "CiliumNetworkPolicy"} & kinds


def test_kairos_without_a_key_renders_no_login_on_the_provider_path() -> None:
    objects = render_pool(pool(workerClassName="kairos"), kairos_path=KAIROS_PROVIDER_PATH)
    spec = by_kind(objects)["KairosConfigTemplate"]["spec"]["template"]["spec"]
    assert not {"sshPublicKey", "userName", "userGroups", "userPassword", "githubUser"} & set(spec)


# --------------------------------------------------------------------------- Proxmox


def test_proxmox_template_selected_by_the_final_tag_list() -> None:
    cls = worker_class("talos-proxmox-r1", bootstrap="talos", proxmox={"templateTags": ["talos-v1.13.6", "b"]})
    objects = by_kind(
        render_pool(
            pool(workerClassName="talos-proxmox-r1", instanceType="u1.xlarge", diskSize="40Gi"),
            cls,
            infrastructure="proxmox",
        )
    )
    spec = objects["ProxmoxMachineTemplate"]["spec"]["template"]["spec"]
    assert spec["templateSelector"] == {"matchTags": ["b", "talos-v1.13.6"]}
    assert (spec["numCores"], spec["memoryMiB"]) == (4, 16384)
    assert spec["disks"]["bootVolume"]["sizeGb"] == 40
    assert "TalosConfigTemplate" in objects and "KubevirtMachineTemplate" not in objects
    ref = objects["MachineDeployment"]["spec"]["template"]["spec"]["infrastructureRef"]
    assert (
        ref["kind"] == "ProxmoxMachineTemplate" and ref["name"] == objects["ProxmoxMachineTemplate"]["metadata"]["name"]
    )


def test_unrenderable_settings_raise_render_error() -> None:
    import dataclasses

    effective = effective_of(pool())
    for broken in (
        dataclasses.replace(effective, bootstrap="flatcar"),
        dataclasses.replace(effective, infrastructure="openstack"),
        dataclasses.replace(effective_of(pool(workerClassName="kairos")), infrastructure="proxmox"),
        dataclasses.replace(effective, values={"version": "v1.35"}),  # no cluster: the chart refuses
    ):
        with pytest.raises(RenderError):
            render(broken)


# --------------------------------------------------------------------------- what rolls


def _names(spec: dict[str, Any], *objects: dict[str, Any]) -> tuple[str, dict[str, Any], Any]:
    """(infrastructure template name, MachineDeployment machine template, TalosConfigTemplate spec)."""
    rendered = by_kind(render_pool(pool(**spec), *objects))
    kmt = rendered["KubevirtMachineTemplate"]["metadata"]["name"]
    return kmt, rendered["MachineDeployment"]["spec"]["template"], rendered["TalosConfigTemplate"]["spec"]


BASELINE: dict[str, Any] = {"workerClassName": "talos", "talos": {"imageFactoryCA": CA}}

#: A change of what the machines boot: a new infrastructure template name (the chart's hash).
ROLLING: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "talos-version": lambda s: {**s, "talos": {**s["talos"], "version": "v1.13.2"}},
    "schematic": lambda s: {
        **s,
        "talos": {**s["talos"], "schematicID": "376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba"},
    },
    "factory-url": lambda s: {**s, "talos": {**s["talos"], "imageFactoryURL": "https://factory.example"}},
    "instance-type": lambda s: {**s, "instanceType": "u1.large"},
    "resources": lambda s: {**s, "instanceType": "", "resources": {"cpu": "2", "memory": "4Gi"}},
    "disk-size": lambda s: {**s, "diskSize": "40Gi"},
    "storage-class": lambda s: {**s, "storageClass": "local"},
    "gpus": lambda s: {**s, "instanceType": "u1.2xlarge", "gpus": [{"name": "nvidia.com/AD102GL_L40S"}]},
    "roles": lambda s: {**s, "roles": ["storage"]},
    "serial-console": lambda s: {**s, "logSerialConsole": True},
    "ca-removed": lambda s: {**s, "talos": {}},
    "builtin-source": lambda s: {**s, "kubevirt": {"osImage": {"builtin": {}}}},
}


@pytest.mark.parametrize("name", sorted(ROLLING), ids=sorted(ROLLING))
def test_what_the_machines_boot_renames_the_infrastructure_template(name: str) -> None:
    assert _names(BASELINE)[0] != _names(ROLLING[name](BASELINE))[0]


#: A machine config the chart also renders for these values: the render is the chart's, the template
#: under its stable name (the controller names it by content where one of another content runs
#: there: render.talos_template; the Talos provider would refuse the change under the same name).
CHART_MACHINE_CONFIG: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "installer-repository": lambda s: {**s, "talos": {**s["talos"], "installerRepository": "mirror.example/i"}},
    "registry-mirrors": lambda s: {
        **s,
        "talos": {**s["talos"], "registryMirrors": {"docker.io": {"endpoints": ["https://m.example"]}}},
    },
    "kubelet": lambda s: {**s, "kubelet": {"systemReservedMemory": "512Mi"}},
}


@pytest.mark.parametrize("name", sorted(CHART_MACHINE_CONFIG), ids=sorted(CHART_MACHINE_CONFIG))
def test_machine_config_the_chart_renders_keeps_the_names_and_changes_the_talos_config(name: str) -> None:
    kmt, machine, tct = _names(BASELINE)
    kmt2, machine2, tct2 = _names(CHART_MACHINE_CONFIG[name](BASELINE))
    assert (kmt2, machine2) == (kmt, machine)
    assert tct2 != tct


def test_a_machine_config_the_class_era_adds_names_the_template_by_content() -> None:
    """Kernel modules (the chart at main renders none): the template is named by its content and the
    MachineDeployment follows it, so the change rolls the pool; the infrastructure template stays."""
    kmt, machine, tct = _names(BASELINE)
    kmt2, machine2, tct2 = _names({**BASELINE, "kernelModules": [{"name": "nvme_tcp"}]})
    assert kmt2 == kmt and tct2 != tct
    before = machine["spec"]["bootstrap"]["configRef"]["name"]
    after = machine2["spec"]["bootstrap"]["configRef"]["name"]
    assert before == "kubernetes-example-workers" and after.startswith("kubernetes-example-workers-")
    assert after != before


#: Applied in place: no new template name, the same machine template and machine config.
IN_PLACE: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "replicas": lambda s: {**s, "minReplicas": 1, "maxReplicas": 9},
    "health": lambda s: {**s, "maxUnhealthy": "1", "nodeStartupTimeout": "30m", "readyFalseTimeout": "2m"},
    "ca-rotated": lambda s: {**s, "talos": {"imageFactoryCA": CA.replace("example", "rotated")}},
    "class-name": lambda s: {**s, "workerClassName": "talos-example-r1"},
    "explicit-defaults": lambda s: {**s, "instanceType": "u1.medium", "diskSize": "20Gi"},
}


@pytest.mark.parametrize("name", sorted(IN_PLACE), ids=sorted(IN_PLACE))
def test_what_is_changed_in_place_keeps_every_template(name: str) -> None:
    other_class = worker_class("talos-example-r1", bootstrap="talos", talos={"version": "v1.13.6"})
    assert _names(BASELINE, other_class) == _names(IN_PLACE[name](BASELINE), other_class)


def test_kubernetes_patch_rolls_through_the_machine_deployment_version() -> None:
    _, machine, _ = _names({})
    _, machine2, _ = _names({"version": "v1.34"})
    assert machine["spec"]["version"] == "v1.35.6" and machine2["spec"]["version"] == "v1.34.9"


def test_ca_rotation_updates_the_configmap_under_a_stable_name() -> None:
    before = by_kind(render_pool(pool(**BASELINE)))["ConfigMap"]
    after = by_kind(render_pool(pool(**IN_PLACE["ca-rotated"](BASELINE))))["ConfigMap"]
    assert before["metadata"]["name"] == after["metadata"]["name"]
    assert before["data"] != after["data"]


# --------------------------------------------------------------------------- classless, fixed images


class _NoLookups(dict[str, Any]):
    """Stands in for ``State.classes``: any lookup fails the test."""

    def _refuse(self, *args: object, **kwargs: object) -> Any:
        raise AssertionError("a classless pool looked up a WorkerClass")

    __getitem__ = get = __contains__ = items = values = keys = __iter__ = _refuse


def test_classless_pools_render_without_any_worker_class_lookup() -> None:
    state = State.from_objects([parent(), pool()])
    object.__setattr__(state, "classes", _NoLookups())  # State is frozen: the probe goes past it
    record = state.pool("tenant-example/example-workers")
    assert record is not None and record.class_name is None
    effective, denials, _ = resolve_pool(state, record)
    assert effective is not None, denials
    assert effective.class_name is None
    assert "workerclass" not in json.dumps(render(effective))


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
    return manifests_yaml(render(effective, talos_config_template=True))


def test_platform_patch_change_leaves_a_fixed_kairos_image_byte_identical() -> None:
    before, after = _state_with_platform_patch("v1.35.6"), _state_with_platform_patch("v1.35.9")
    assert _rendered(before, "tenant-example/example-custom-kairos") == _rendered(
        after, "tenant-example/example-custom-kairos"
    )
    # A Talos pool renders the chart's own version map (files/versions.yaml), whatever the platform's says.
    talos_after = _rendered(after, "tenant-example/example-talos")
    assert "kubelet:v1.35.6" in talos_after


# --------------------------------------------------------------------------- purity and text


def test_render_and_ops_import_no_server_client_or_cli_library() -> None:
    code = (
        "import sys, workerclass.render, workerclass.ops.plan, workerclass.ops.restore;"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in"
        " {'kopf', 'aiohttp', 'lightkube', 'typer', 'rich', 'click'});"
        "print(','.join(bad))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == ""


def test_yaml_text_round_trips() -> None:
    manifests = render_pool(pool(workerClassName="talos", talos={"imageFactoryCA": CA}))
    text = manifests_yaml(manifests)
    assert list(yaml.safe_load_all(text)) == manifests
    assert text.index("apiVersion:") < text.index("kind:") < text.index("metadata:")


def test_a_compute_plane_group_renders_as_the_classless_pool_of_its_name() -> None:
    plane = {
        "apiVersion": "apps.cozystack.io/v1alpha1",
        "kind": "ComputePlane",
        "metadata": {"name": "plane", "namespace": "tenant-example"},
        "spec": {"nodeGroups": {"gpu": {"minReplicas": 1, "instanceType": "u1.2xlarge", "roles": ["ingress-nginx"]}}},
    }
    state = State.from_objects([plane])
    record = state.pool("tenant-example/plane-gpu")
    assert record is not None
    effective, denials, _ = resolve_pool(state, record)
    assert effective is not None, denials
    standalone = {
        "apiVersion": "apps.cozystack.io/v1alpha1",
        "kind": "KubernetesNodes",
        "metadata": {"name": "plane-gpu", "namespace": "tenant-example"},
        "spec": {"cluster": "plane", "minReplicas": 1, "instanceType": "u1.2xlarge", "roles": ["ingress-nginx"]},
    }
    pool_state = State.from_objects(
        [{**parent(), "metadata": {"name": "plane", "namespace": "tenant-example"}}, standalone]
    )
    pool_record = pool_state.pool("tenant-example/plane-gpu")
    assert pool_record is not None
    expected, denials, _ = resolve_pool(pool_state, pool_record)
    assert expected is not None, denials
    assert render(effective) == render(expected)
