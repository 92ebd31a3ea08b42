"""``restore``: legacy-layout values of classified Talos pools, proved on the chart's real names.

Written from the design page's "Existing pools and rollback prerequisites", API.md sections 2 and
4 and the README's ``restore -o json`` shape. The proof is checked twice: by :func:`prove` itself
and, independently, by storing the restored values as a classless pool of a fresh State and
rendering that. Pools change in each way the chart can change them: the infrastructure template's
name (disk, sizing), the MachineDeployment (version), the TalosConfigTemplate content (installer,
mirrors, kernel modules); and the class-era settings the legacy chart cannot express make a pool
not restorable without a rollout, naming the setting.
"""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from workerclass.adapters.folder import load_state
from workerclass.cli.main import _register, app
from workerclass.ops.restore import (
    CLASSLESS,
    GUIDANCE,
    KAIROS,
    Restore,
    RestoreRow,
    prove,
    restore,
    restore_values,
)
from workerclass.render import HASH_VERSION, render, template_hash
from workerclass.resolve import resolve, resolve_pool
from workerclass.state import State

#: these tests render the talos-reconcile Job, the chart's own text: the mirror's chart is given
pytestmark = pytest.mark.usefixtures("chart_text")

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
_register()

NAMESPACE = "tenant-a"
SCHEMATIC_A = "376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba"  # platform default
SCHEMATIC_B = "0f" * 32  # has a golden at v1.13.6
FACTORY_URL = "https://factory.example"
CERTIFICATE = (
    "-----BEGIN CERTIFICATE-----\n"
    "MIIBszCCAVmgAwIBAgIUQexampleexampleexampleexampleexampleAQIDAgMEBQYHCAkKCwwNDg8QERITFBUWFxgZGhscHR4f\n"
    "-----END CERTIFICATE-----\n"
)
MIRRORS = {"docker.io": {"endpoints": ["https://mirror.example"]}}
POOL_MIRRORS = {"ghcr.io": {"endpoints": ["https://ghcr-mirror.example"]}}
NVIDIA_GPU = {"name": "nvidia.com/AD102GL_L40S"}


# --------------------------------------------------------------------------- builders


def make_platform(**talos: Any) -> dict[str, Any]:
    return {
        "apiVersion": "cozystack.io/v1alpha1",
        "kind": "WorkerPlatform",
        "metadata": {"name": "default"},
        "spec": {
            "defaultWorkerClass": "talos",
            "kubernetesVersions": {"v1.34": {"patch": "v1.34.9"}, "v1.35": {"patch": "v1.35.6"}},
            "talos": {
                "version": "v1.13.6",
                "schematicID": SCHEMATIC_A,
                "imageFactoryURL": FACTORY_URL,
                "installerRepository": "factory.example/installer",
                "goldens": [
                    {"version": "v1.13.6", "schematicID": SCHEMATIC_A},
                    {"version": "v1.13.6", "schematicID": SCHEMATIC_B},
                ],
                "supportMatrix": {"v1.13": {"min": "v1.31", "max": "v1.36"}},
                **talos,
            },
            "kairos": {
                "images": {
                    "v1.35": {
                        "reference": "ghcr.io/cozystack/cozystack/kairos-worker@sha256:" + "2" * 64,
                        "kubernetesVersion": "v1.35.6",
                    }
                }
            },
            "clusterValues": {"cluster-domain": "cozy.local"},
        },
    }


def make_cluster(name: str = "example", infrastructure: str = "kubevirt") -> dict[str, Any]:
    return {
        "apiVersion": "apps.cozystack.io/v1alpha1",
        "kind": "Kubernetes",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"version": "v1.35", "infrastructure": infrastructure},
    }


def make_class(name: str, bootstrap: str = "talos", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "cozystack.io/v1alpha1",
        "kind": "WorkerClass",
        "metadata": {"name": name},
        "spec": {"bootstrap": bootstrap, **spec},
    }


def make_pool(name: str = "pool", *, cluster: str = "example", **spec: Any) -> dict[str, Any]:
    """A KubernetesNodes ``<cluster>-<name>``; ``workerClassName=None`` leaves the class out (classless)."""
    body: dict[str, Any] = {
        "cluster": cluster,
        "workerClassName": "talos",
        "version": "v1.35",
        "minReplicas": 1,
        "maxReplicas": 3,
        **spec,
    }
    if body["workerClassName"] is None:
        del body["workerClassName"]
    return {
        "apiVersion": "apps.cozystack.io/v1alpha1",
        "kind": "KubernetesNodes",
        "metadata": {"name": f"{cluster}-{name}", "namespace": NAMESPACE},
        "spec": body,
    }


def make_release(name: str = "release", **values: Any) -> dict[str, Any]:
    return {
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {
            "name": f"kubernetes-nodes-example-{name}",
            "namespace": NAMESPACE,
            "labels": {"apps.cozystack.io/application.kind": "KubernetesNodes"},
        },
        "spec": {"values": {"cluster": "example", "version": "v1.35", **values}},
    }


def make_state(*objects: Mapping[str, Any], platform: Mapping[str, Any] | None = None) -> State:
    base = [platform or make_platform(), make_cluster(), make_cluster("pve", "proxmox")]
    return State.from_objects([*base, *objects])


def rows(result: Restore) -> dict[str, RestoreRow]:
    return {row.pool: row for row in result.rows}


def only(state: State, name: str = "example-pool") -> RestoreRow:
    return rows(restore(state))[f"{NAMESPACE}/{name}"]


def classless_render(state: State, row: RestoreRow) -> list[dict[str, Any]]:
    """Independent proof: the restored values stored as a classless pool of a fresh State, rendered."""
    assert row.values is not None
    assert "workerClassName" not in row.values
    namespace, name = row.pool.split("/", 1)
    stored = state.find(row.kind, namespace, name)
    assert stored is not None
    obj = copy.deepcopy(dict(stored.obj))
    if row.kind == "HelmRelease":
        obj["spec"]["values"] = copy.deepcopy(dict(row.values))
    else:
        obj["spec"] = copy.deepcopy(dict(row.values))
    others = [record.obj for record in state.objects if (record.namespace, record.name) != (namespace, name)]
    restored_state = State.from_objects([*others, obj], origin="restored")
    record = restored_state.pool(row.pool)
    assert record is not None and record.class_name is None
    return render(resolve(restored_state, record), talos_config_template=True)


def current_render(state: State, row: RestoreRow) -> list[dict[str, Any]]:
    record = state.pool(row.pool)
    assert record is not None
    return render(resolve(state, record), talos_config_template=True)


def assert_same_machines(state: State, row: RestoreRow) -> None:
    """The proof on the real names, checked from outside :func:`prove`."""
    current, restored = current_render(state, row), classless_render(state, row)

    def pick(objects: list[dict[str, Any]], kind: str) -> dict[str, Any]:
        (found,) = [obj for obj in objects if obj["kind"] == kind]
        return found

    assert pick(current, "MachineDeployment") == pick(restored, "MachineDeployment")
    infrastructure = (
        "ProxmoxMachineTemplate" if row.pool.split("/")[1].startswith("pve-") else "KubevirtMachineTemplate"
    )
    assert pick(current, infrastructure)["metadata"]["name"] == pick(restored, infrastructure)["metadata"]["name"]
    assert pick(current, "TalosConfigTemplate")["spec"] == pick(restored, "TalosConfigTemplate")["spec"]
    assert row.hash_current == row.hash_restored == pick(restored, infrastructure)["metadata"]["name"].rsplit("-")[-1]


def run(*args: str) -> Any:
    result = CliRunner().invoke(app, list(args))
    assert "Traceback" not in result.stdout + result.stderr
    return result


def write(folder: Path, objects: Iterable[Mapping[str, Any]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "state.yaml").write_text(yaml.safe_dump_all([dict(obj) for obj in objects]))
    return folder


# --------------------------------------------------------------------------- the examples


def test_examples_talos_with_kernel_modules_needs_a_rollout_kairos_not_legacy_needs_nothing() -> None:
    state = load_state(EXAMPLES)
    result = rows(restore(state))
    talos = result["tenant-example/example-talos"]
    # The example loads nvme_tcp: the main chart has no kernelModules, so a restore would change
    # the machine config of new machines. Not restorable without a rollout, and the row says why.
    assert (talos.status, talos.restorable, talos.class_name, talos.bootstrap) == (
        "rollout",
        False,
        "talos-example-r1",
        "talos",
    )
    assert "kernelModules (nvme_tcp)" in talos.reasons[0]
    assert any("machine.kernel" in reason for reason in talos.reasons[1:]), talos.reasons
    assert talos.values is not None and "kernelModules" not in talos.values and "workerClassName" not in talos.values
    for name in ("example-kairos", "example-custom-kairos"):
        row = result[f"tenant-example/{name}"]
        assert (row.status, row.restorable, row.bootstrap, row.values) == ("kairos", False, "kairos", None)
        assert row.reasons == (KAIROS,)
        assert "Do not leave Kairos pools for an older chart to interpret as Talos".lower() in KAIROS.lower()
    legacy = result["tenant-example/example-legacy"]
    assert (legacy.status, legacy.restorable, legacy.class_name, legacy.values) == ("classless", True, None, None)
    assert legacy.reasons == (CLASSLESS,)
    assert legacy.hash_restored is None and legacy.hash_current is not None
    assert {row.pool for row in restore(state).blocked} == {
        "tenant-example/example-kairos",
        "tenant-example/example-custom-kairos",
        "tenant-example/example-talos",
    }


def test_cli_examples_json_shape_and_exit_1() -> None:
    result = run("restore", str(EXAMPLES), "-o", "json")
    assert result.exit_code == 1, result.stderr
    data = json.loads(result.stdout)
    assert list(data) == ["chart", "pools"]
    assert [row["pool"] for row in data["pools"]] == [
        "tenant-example/example-custom-kairos",
        "tenant-example/example-kairos",
        "tenant-example/example-legacy",
        "tenant-example/example-talos",
    ]
    for row in data["pools"]:
        assert list(row) == ["pool", "class", "bootstrap", "restorable", "values", "templateHash", "reasons"]
        assert list(row["templateHash"]) == ["current", "restored", "version"]
        assert row["templateHash"]["version"] == HASH_VERSION
        assert row["bootstrap"] in ("talos", "kairos")
        assert isinstance(row["restorable"], bool) and all(isinstance(reason, str) for reason in row["reasons"])
    assert data["pools"][2]["class"] is None and data["pools"][2]["values"] is None


def _restorable_examples(tmp_path: Path) -> Path:
    """The examples with example-talos's kernel module list removed: a restorable classified pool."""
    state = tmp_path / "state"
    shutil.copytree(EXAMPLES, state)
    pools = state / "tenant-example" / "pools.yaml"
    documents = list(yaml.safe_load_all(pools.read_text()))
    for obj in documents:
        obj["spec"].pop("kernelModules", None)
    pools.write_text(yaml.safe_dump_all(documents))
    return state


def test_cli_table_prints_values_and_guidance_once(tmp_path: Path) -> None:
    folder = _restorable_examples(tmp_path)
    before = sorted((path, path.stat().st_mtime_ns) for path in folder.rglob("*"))
    result = run("restore", str(folder))
    assert result.exit_code == 1
    out = result.stdout
    for header in ("POOL", "CLASS", "RESULT", "DETAILS"):
        assert header in out
    assert "no restore needed" in out and "not restorable" in out and "restorable" in out
    assert "legacy layout:" in out and "installerRepository: factory.talos.dev/installer" in out
    assert "workerClassName" not in out.split("legacy layout:", 1)[1].split("Before reverting", 1)[0]
    assert out.count("remaining Talos is not proof of no rollout") == 1
    assert "hoster authorization" in out
    assert "4 pools: 1 restorable, 1 already classless, 2 cannot be restored" in out
    assert sorted((path, path.stat().st_mtime_ns) for path in folder.rglob("*")) == before  # writes nothing


def test_cli_only_classified_talos_pools_exit_0(tmp_path: Path) -> None:
    state = _restorable_examples(tmp_path)
    pools = state / "tenant-example" / "pools.yaml"
    kept = [obj for obj in yaml.safe_load_all(pools.read_text()) if obj["metadata"]["name"] == "example-talos"]
    pools.write_text(yaml.safe_dump_all(kept))
    result = run("restore", str(state), "-o", "json")
    assert result.exit_code == 0, result.stdout
    data = json.loads(result.stdout)["pools"]
    assert [row["restorable"] for row in data] == [True, True]
    talos = data[1]
    assert talos["templateHash"]["current"] == talos["templateHash"]["restored"]


def test_cli_pool_option_selects_one_row() -> None:
    result = run("restore", str(EXAMPLES), "--pool", "tenant-example/example-legacy", "-o", "json")
    assert result.exit_code == 0
    assert [row["pool"] for row in json.loads(result.stdout)["pools"]] == ["tenant-example/example-legacy"]
    result = run("restore", str(EXAMPLES), "--pool", "tenant-example/example-kairos", "-o", "json")
    assert result.exit_code == 1


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(("restore", "{missing}"), id="unreadable-state"),
        pytest.param(("restore", str(EXAMPLES), "--pool", "tenant-example/nope"), id="unknown-pool"),
    ],
)
def test_cli_usage_errors_exit_2(tmp_path: Path, args: tuple[str, ...]) -> None:
    result = run(*(arg.replace("{missing}", str(tmp_path / "missing")) for arg in args))
    assert result.exit_code == 2
    assert result.stdout == ""


def test_cli_empty_state_is_an_error(tmp_path: Path) -> None:
    """An empty STATE (a wrong path, everything excluded) is an error, never a success over nothing."""
    folder = tmp_path / "empty"
    folder.mkdir()
    result = run("restore", str(folder), "-o", "json")
    assert result.exit_code == 2
    assert result.stdout == "" and "no object workerclass reads" in result.stderr


def test_cli_prints_values_verbatim(tmp_path: Path) -> None:
    """Values meant to be applied are not folded, and tenant text is not read as markup or emoji."""
    long_host = "x" * 60 + "." + "y" * 60 + ".example"  # longer than any terminal
    mirrors = {long_host: {"endpoints": ["https://mirror.example/:smile:/[b]bold[/b]"]}}
    pool = make_pool(talos={"registryMirrors": mirrors})
    result = run("restore", str(write(tmp_path / "state", [make_platform(), make_cluster(), pool])))
    assert result.exit_code == 0, result.stdout
    assert "https://mirror.example/:smile:/[b]bold[/b]" in result.stdout
    assert f"{long_host}:\n" in result.stdout


def test_help_documents_json_and_authorization() -> None:
    out = run("restore", "--help").stdout
    assert '"templateHash"' in out and "hoster" in out and "authorization" in out


# --------------------------------------------------------------------------- restorable: settings written out

RICH_CLASS = make_class(
    "rich",
    talos={
        "version": "v1.13.6",
        "schematicID": SCHEMATIC_B,
        "installerRepository": "registry.example/talos/installer",
        "registryMirrors": MIRRORS,
    },
)


@pytest.mark.parametrize(
    ("overrides", "expected_mirrors"),
    [
        pytest.param({}, MIRRORS, id="class-baseline"),
        pytest.param({"talos": {"registryMirrors": POOL_MIRRORS}}, POOL_MIRRORS, id="pool-replaces-mirrors"),
        pytest.param({"talos": {"registryMirrors": {}}}, {}, id="pool-clears-mirrors"),
    ],
)
def test_class_talos_settings_are_written_out_and_proved(
    overrides: dict[str, Any], expected_mirrors: dict[str, Any]
) -> None:
    state = make_state(RICH_CLASS, make_pool(workerClassName="rich", labels={"tier": "db"}, **overrides))
    row = only(state)
    assert row.status == "restorable", row.reasons
    assert row.values is not None
    assert row.values["talos"] == {
        "version": "v1.13.6",
        "schematicID": SCHEMATIC_B,
        "imageFactoryURL": FACTORY_URL,
        "installerRepository": "registry.example/talos/installer",
        "registryMirrors": expected_mirrors,
    }
    assert row.values["minReplicas"] == 1  # pool settings kept
    assert "labels" not in row.values  # a class-era key the legacy chart renders nothing for
    assert any("left out" in reason and "labels" in reason for reason in row.reasons)
    assert_same_machines(state, row)


def test_a_class_resolving_to_the_chart_defaults_restores_to_the_chart_defaults() -> None:
    state = State.from_objects([make_cluster(), make_pool()])  # the embedded platform: Cozystack's defaults
    row = only(state)
    assert row.status == "restorable", row.reasons
    assert row.values is not None and row.values["talos"]["schematicID"].startswith("ce4c9805")
    assert_same_machines(state, row)


def test_the_nvidia_rule_switched_off_by_an_empty_module_list_is_restorable() -> None:
    no_modules = make_class("no-modules", kernelModules=[])
    state = make_state(
        no_modules, make_pool(workerClassName="no-modules", instanceType="u1.2xlarge", gpus=[NVIDIA_GPU])
    )
    row = only(state)
    assert row.restorable, row.reasons
    assert row.values is not None and "kernelModules" not in row.values
    assert_same_machines(state, row)


def test_proxmox_parent_keeps_its_template_tags() -> None:
    tagged = make_class("pve-talos", proxmox={"templateTags": ["talos-v1.13.6", "gold"]})
    state = make_state(tagged, make_pool(cluster="pve", workerClassName="pve-talos"))
    row = only(state, "pve-pool")
    assert row.restorable, row.reasons
    assert row.values is not None
    assert row.values["proxmox"] == {"templateTags": ["talos-v1.13.6", "gold"]}
    assert "kubevirt" not in row.values
    assert_same_machines(state, row)


def test_helm_release_with_a_class_restores_its_values() -> None:
    state = make_state(make_class("b", talos={"schematicID": SCHEMATIC_B}), make_release(workerClassName="b"))
    row = only(state, "kubernetes-nodes-example-release")
    assert (row.kind, row.field, row.restorable) == ("HelmRelease", "spec.values", True)
    assert row.values is not None and row.values["talos"]["schematicID"] == SCHEMATIC_B
    assert_same_machines(state, row)


def test_classless_pools_and_compute_plane_need_nothing() -> None:
    plane = {
        "apiVersion": "apps.cozystack.io/v1alpha1",
        "kind": "ComputePlane",
        "metadata": {"name": "plane", "namespace": NAMESPACE},
        "spec": {"nodeGroups": {"md0": {"minReplicas": 1, "maxReplicas": 2, "roles": ["ingress-nginx"]}}},
    }
    state = make_state(make_pool(workerClassName=None), make_release(), plane)
    result = restore(state)
    assert [(row.pool, row.status, row.restorable, row.values) for row in result.rows] == [
        ("tenant-a/example-pool", "classless", True, None),
        ("tenant-a/kubernetes-nodes-example-release", "classless", True, None),
        ("tenant-a/plane-md0", "classless", True, None),
    ]
    assert not result.blocked


def test_restore_values_do_not_touch_the_stored_pool() -> None:
    state = make_state(RICH_CLASS, make_pool(workerClassName="rich", talos={"version": "v1.13.6"}))
    record = state.pool("tenant-a/example-pool")
    assert record is not None
    before = copy.deepcopy(dict(record.values))
    restore_values(resolve(state, record))
    assert record.values == before


# --------------------------------------------------------------------------- not restorable without a rollout


@pytest.mark.parametrize(
    ("objects", "setting", "changes"),
    [
        pytest.param(
            [make_pool(kernelModules=[{"name": "nvme_tcp"}, {"name": "drbd", "parameters": ["usermode_helper=x"]}])],
            "kernelModules (nvme_tcp, drbd)",
            "TalosConfigTemplate spec.template.spec.data.machine.kernel",
            id="kernel-modules",
        ),
        pytest.param(
            [make_pool(instanceType="u1.2xlarge", gpus=[NVIDIA_GPU])],
            "kernelModules (nvidia, nvidia_uvm, nvidia_drm, nvidia_modeset)",
            "TalosConfigTemplate spec.template.spec.data.machine.kernel",
            id="nvidia-rule",
        ),
        pytest.param(
            [make_class("gold", kubevirt={"osImage": {"builtin": {}}}), make_pool(workerClassName="gold")],
            "kubevirt.osImage.builtin (golden cozy-public/talos-worker-",
            "infrastructure template name hash",
            id="builtin-source",
        ),
        pytest.param(
            [make_pool(kubevirt={"osImage": {"factory": {"endpoint": "https://mirror.example"}}})],
            "kubevirt.osImage.factory (https://mirror.example/image/",
            "infrastructure template name hash",
            id="factory-endpoint",
        ),
        pytest.param(
            [make_class("ca", talos={"imageFactoryCA": CERTIFICATE}), make_pool(workerClassName="ca")],
            "talos.imageFactoryCA",
            "infrastructure template name hash",
            id="image-factory-ca",
        ),
    ],
)
def test_class_era_settings_need_a_rollout_and_are_named(
    objects: list[dict[str, Any]], setting: str, changes: str
) -> None:
    row = only(make_state(*objects))
    assert (row.status, row.restorable) == ("rollout", False), row.reasons
    assert row.reasons[0].startswith("not restorable without a rollout: the legacy chart cannot express ")
    assert setting in row.reasons[0]
    assert any(changes in reason for reason in row.reasons[1:]), row.reasons
    assert row.values is not None and "workerClassName" not in row.values
    assert row.hash_current is not None and row.hash_restored is not None


@pytest.mark.parametrize(
    ("pool", "code"),
    [
        pytest.param(make_pool(workerClassName="missing"), "ClassNotFound", id="class-not-found"),
        pytest.param(make_pool(cluster="gone"), "ClusterNotFound", id="cluster-not-found"),
        pytest.param(make_pool(gpus=[{**NVIDIA_GPU, "vgpu": True}]), "TalosVGPU", id="talos-vgpu"),
    ],
)
def test_denied_pool_is_not_restorable(pool: dict[str, Any], code: str) -> None:
    row = only(make_state(pool), pool["metadata"]["name"])
    assert (row.status, row.restorable, row.values, row.hash_current) == ("denied", False, None, None)
    assert any(reason.startswith(f"denied: {code} ") for reason in row.reasons)
    assert row.as_dict()["templateHash"] == {"current": None, "restored": None, "version": HASH_VERSION}


def test_denied_kairos_pool_shows_both_reasons() -> None:
    row = only(make_state(make_pool(workerClassName="kairos", sshKeys=["not a key"])))
    assert (row.status, row.restorable, row.bootstrap) == ("kairos", False, "kairos")
    assert row.reasons[0] == KAIROS and any("InvalidSSHKey" in reason for reason in row.reasons[1:])


# --------------------------------------------------------------------------- the proof bites


def _tampered(path: tuple[str, ...], value: Any) -> Any:
    def edit(values: dict[str, Any]) -> None:
        target = values
        for key in path[:-1]:
            target = target[key]
        if value is None:
            del target[path[-1]]
        else:
            target[path[-1]] = value

    return edit


@pytest.mark.parametrize(
    ("edit", "named"),
    [
        # the TalosConfigTemplate content (new machines' config), under its stable name
        pytest.param(
            _tampered(("talos", "registryMirrors"), None),
            "TalosConfigTemplate spec.template.spec.data.machine.registries",
            id="mirrors-dropped",
        ),
        pytest.param(
            _tampered(("talos", "installerRepository"), None),
            "TalosConfigTemplate spec.template.spec.data.machine.install.image",
            id="installer-dropped",
        ),
        # the infrastructure template's name: the disk
        pytest.param(
            _tampered(("talos", "schematicID"), None), "infrastructure template name hash", id="schematic-dropped"
        ),
        pytest.param(_tampered(("diskSize",), "40Gi"), "infrastructure template name hash", id="disk-size"),
        # the MachineDeployment itself
        pytest.param(
            _tampered(("version",), "v1.34"), "MachineDeployment spec.template.spec.version", id="kubernetes-version"
        ),
        pytest.param(
            _tampered(("maxReplicas",), 9),
            "MachineDeployment metadata.annotations.cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size",
            id="replicas",
        ),
    ],
)
def test_proof_names_what_a_lossy_restore_would_change(edit: Any, named: str) -> None:
    state = make_state(RICH_CLASS, make_pool(workerClassName="rich"))
    record = state.pool("tenant-a/example-pool")
    assert record is not None
    effective, _, _ = resolve_pool(state, record)
    assert effective is not None
    values = restore_values(effective)
    assert prove(state, record, effective, values).equal
    tampered = copy.deepcopy(values)
    edit(tampered)
    proof = prove(state, record, effective, tampered)
    assert not proof.equal
    assert any(difference.startswith(named) for difference in proof.differences), proof.differences


def test_proof_refuses_values_that_still_select_a_class() -> None:
    state = make_state(make_pool())
    record = state.pool("tenant-a/example-pool")
    assert record is not None
    effective = resolve(state, record)
    proof = prove(state, record, effective, {**restore_values(effective), "workerClassName": "talos"})
    assert not proof.equal and "still select class talos" in proof.differences[0]


def test_mismatch_row_is_not_restorable(monkeypatch: pytest.MonkeyPatch) -> None:
    """If the legacy layout ever lost a setting, the row says so instead of offering the values."""
    import workerclass.ops.restore as module

    original = module.restore_values

    def lossy(effective: Any) -> dict[str, Any]:
        values = original(effective)
        del values["talos"]["schematicID"]
        return values

    monkeypatch.setattr(module, "restore_values", lossy)
    row = only(make_state(RICH_CLASS, make_pool(workerClassName="rich")))
    assert (row.status, row.restorable) == ("mismatch", False)
    assert row.hash_current != row.hash_restored
    assert any(reason.startswith("infrastructure template name hash") for reason in row.reasons)


def test_restored_hash_is_the_template_hash_of_the_classless_pool() -> None:
    state = make_state(RICH_CLASS, make_pool(workerClassName="rich"))
    row = only(state)
    record = state.pool(row.pool)
    assert record is not None
    assert row.hash_current == template_hash(resolve(state, record))


def test_guidance_covers_the_rollback_prerequisites() -> None:
    text = " ".join(GUIDANCE)
    for phrase in (
        "hoster authorization",
        "remaining Talos is not proof of no rollout",
        "Retain custom classes and the worker controller",
        "re-upgrade",
        "Kairos",
    ):
        assert phrase in text


def test_restore_module_imports_no_cli_or_http() -> None:
    probe = (
        "import json, sys; import workerclass.ops.restore; "
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('typer', 'click', 'rich', 'aiohttp', 'kopf', 'lightkube'))))"
    )
    out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True).stdout
    assert json.loads(out) == []
