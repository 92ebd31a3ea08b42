"""``restore``: legacy-layout values of classified Talos pools, proved by the classless render's hash.

Written from the design page's "Existing pools and rollback prerequisites" and API.md section 4.
The proof is checked twice: by :func:`prove` itself and, independently, by putting the restored
values into a State as a classless pool and resolving and hashing that.
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

from workerclass.cli.main import _register, app
from workerclass.ops.restore import CLASSLESS, GUIDANCE, KAIROS, Restore, RestoreRow, legacy_values, prove, restore
from workerclass.render import HASH_VERSION, template_hash
from workerclass.resolve import resolve, resolve_pool
from workerclass.state import State

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
_register()

NAMESPACE = "tenant"
SCHEMATIC_A = "376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba"  # platform default
SCHEMATIC_B = "0f" * 32  # has a golden at v1.13.6
FACTORY_URL = "https://factory.example"
CERTIFICATE = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQ\n-----END CERTIFICATE-----\n"
MIRRORS = {"docker.io": {"endpoints": ["https://mirror.example"]}}
POOL_MIRRORS = {"ghcr.io": {"endpoints": ["https://ghcr-mirror.example"]}}
NVIDIA_GPU = {"name": "nvidia.com/AD102GL_L40S", "vgpu": False}


# --------------------------------------------------------------------------- builders


def make_platform(**talos: Any) -> dict[str, Any]:
    return {
        "apiVersion": "cozystack.io/v1alpha1",
        "kind": "WorkerPlatform",
        "metadata": {"name": "default"},
        "spec": {
            "defaultWorkerClass": "talos",
            "kubernetesVersions": {"v1.34": {"patch": "v1.34.5"}, "v1.35": {"patch": "v1.35.6"}},
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


def make_pool(name: str = "pool", **spec: Any) -> dict[str, Any]:
    """A KubernetesNodes pool; ``workerClassName=None`` leaves the class out (classless)."""
    body: dict[str, Any] = {
        "cluster": "example",
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
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": body,
    }


def make_release(name: str = "release", **values: Any) -> dict[str, Any]:
    return {
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {
            "name": name,
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


def only(state: State, name: str = "pool") -> RestoreRow:
    return rows(restore(state))[f"{NAMESPACE}/{name}"]


def classless_hash(state: State, row: RestoreRow) -> str:
    """Independent proof: the restored values stored as a classless pool of the same State."""
    assert row.values is not None
    assert "workerClassName" not in row.values
    namespace, name = row.pool.split("/", 1)
    if row.kind == "HelmRelease":
        obj = make_release(name)
        obj["spec"]["values"] = copy.deepcopy(dict(row.values))
    else:
        obj = make_pool(name)
        obj["spec"] = copy.deepcopy(dict(row.values))
    obj["metadata"]["namespace"] = namespace
    others = [record.obj for record in state.objects if (record.namespace, record.name) != (namespace, name)]
    restored_state = State.from_objects([*others, obj], origin="restored")
    record = restored_state.pool(row.pool)
    assert record is not None and record.class_name is None
    return template_hash(resolve(restored_state, record))


def run(*args: str) -> Any:
    result = CliRunner().invoke(app, list(args))
    assert "Traceback" not in result.stdout + result.stderr
    return result


def write(folder: Path, objects: Iterable[Mapping[str, Any]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "state.yaml").write_text(yaml.safe_dump_all([dict(obj) for obj in objects]))
    return folder


# --------------------------------------------------------------------------- the examples


def test_examples_talos_restorable_kairos_not_legacy_needs_nothing() -> None:
    state = State.load(EXAMPLES)
    result = rows(restore(state))
    talos = result["tenant-example/example-talos"]
    assert (talos.status, talos.restorable, talos.class_name, talos.bootstrap) == (
        "restorable",
        True,
        "talos-example-r1",
        "talos",
    )
    assert talos.hash_current is not None and talos.hash_current == talos.hash_restored
    assert talos.values == {
        "cluster": "example",
        "version": "v1.35",
        "talos": {
            "version": "v1.13.6",
            "schematicID": SCHEMATIC_A,
            "imageFactoryURL": "https://factory.talos.dev",
            "installerRepository": "factory.talos.dev/installer",
            "registryMirrors": {},
        },
        "kernelModules": [{"name": "nvme_tcp", "parameters": []}],
    }
    assert classless_hash(state, talos) == talos.hash_current
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
    }


def test_cli_examples_json_shape_and_exit_1_because_of_kairos() -> None:
    result = run("restore", str(EXAMPLES), "-o", "json")
    assert result.exit_code == 1, result.stderr
    data = json.loads(result.stdout)
    assert list(data) == ["pools"]
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
    talos = data["pools"][3]
    assert talos["restorable"] is True and "workerClassName" not in talos["values"]
    assert talos["templateHash"]["current"] == talos["templateHash"]["restored"]
    assert data["pools"][2]["class"] is None and data["pools"][2]["values"] is None


def test_cli_table_prints_values_and_guidance_once() -> None:
    before = sorted((path, path.stat().st_mtime_ns) for path in EXAMPLES.rglob("*"))
    result = run("restore", str(EXAMPLES))
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
    assert sorted((path, path.stat().st_mtime_ns) for path in EXAMPLES.rglob("*")) == before  # writes nothing


def test_cli_only_classified_talos_pools_exit_0(tmp_path: Path) -> None:
    state = tmp_path / "state"
    shutil.copytree(EXAMPLES, state)
    pools = state / "tenant-example" / "pools.yaml"
    kept = [obj for obj in yaml.safe_load_all(pools.read_text()) if obj["metadata"]["name"] == "example-talos"]
    pools.write_text(yaml.safe_dump_all(kept))
    result = run("restore", str(state), "-o", "json")
    assert result.exit_code == 0, result.stdout
    assert [row["restorable"] for row in json.loads(result.stdout)["pools"]] == [True, True]


def test_cli_pool_option_selects_one_row() -> None:
    result = run("restore", str(EXAMPLES), "--pool", "tenant-example/example-talos", "-o", "json")
    assert result.exit_code == 0
    assert [row["pool"] for row in json.loads(result.stdout)["pools"]] == ["tenant-example/example-talos"]
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


def test_cli_empty_state_exit_0(tmp_path: Path) -> None:
    folder = tmp_path / "empty"
    folder.mkdir()
    result = run("restore", str(folder), "-o", "json")
    assert result.exit_code == 0
    assert json.loads(result.stdout) == {"pools": []}
    assert "nothing to restore" in run("restore", str(folder)).stdout


def test_cli_prints_values_verbatim(tmp_path: Path) -> None:
    """Values meant to be applied are not folded, and tenant text is not read as markup or emoji."""
    long_key = "x" * 120 + "." + "y" * 100 + ".example/name"  # a valid label key, longer than any terminal
    ca = "-----BEGIN CERTIFICATE-----\n:smile: [b]bold[/b]\n-----END CERTIFICATE-----\n"
    pool = make_pool(labels={long_key: "v"}, talos={"version": "v1.13.6", "imageFactoryCA": ca})
    objects = [make_platform(), make_cluster(), pool]
    result = run("restore", str(write(tmp_path / "state", objects)))
    assert result.exit_code == 0, result.stdout
    assert "    :smile: [b]bold[/b]\n" in result.stdout
    assert f"  {long_key}: v\n" in result.stdout


def test_help_documents_json_and_authorization() -> None:
    out = run("restore", "--help").stdout
    assert '"templateHash"' in out and "hoster" in out and "authorization" in out


# --------------------------------------------------------------------------- effective settings written out

RICH_CLASS = make_class(
    "rich",
    talos={
        "version": "v1.13.6",
        "schematicID": SCHEMATIC_B,
        "imageFactoryCA": CERTIFICATE,
        "installerRepository": "registry.example/talos/installer",
        "registryMirrors": MIRRORS,
    },
    kernelModules=[{"name": "nvme_tcp"}, {"name": "drbd", "parameters": ["usermode_helper=disabled"]}],
    kubevirt={"osImage": {"builtin": {}}},
)


@pytest.mark.parametrize(
    ("overrides", "expected_talos", "expected_modules"),
    [
        pytest.param(
            {},
            {"registryMirrors": MIRRORS, "imageFactoryCA": CERTIFICATE},
            [{"name": "nvme_tcp", "parameters": []}, {"name": "drbd", "parameters": ["usermode_helper=disabled"]}],
            id="class-baseline",
        ),
        pytest.param(
            {"talos": {"registryMirrors": POOL_MIRRORS}, "kernelModules": [{"name": "dm_thin_pool"}]},
            {"registryMirrors": POOL_MIRRORS, "imageFactoryCA": CERTIFICATE},
            [{"name": "dm_thin_pool", "parameters": []}],
            id="pool-replaces-mirrors-and-modules",
        ),
        pytest.param(
            {"talos": {"registryMirrors": {}, "imageFactoryCA": ""}, "kernelModules": []},
            {"registryMirrors": {}},
            [],
            id="pool-clears-mirrors-ca-and-modules",
        ),
    ],
)
def test_builtin_class_with_mirrors_modules_and_pool_overrides(
    overrides: dict[str, Any], expected_talos: dict[str, Any], expected_modules: list[dict[str, Any]]
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
        **expected_talos,
    }
    assert row.values["kernelModules"] == expected_modules
    assert row.values["kubevirt"] == {"osImage": {"builtin": {"version": "v1.13.6", "schematicID": SCHEMATIC_B}}}
    assert row.values["labels"] == {"tier": "db"} and row.values["minReplicas"] == 1  # pool settings kept
    assert row.hash_current == row.hash_restored == classless_hash(state, row)


def test_pool_builtin_override_of_a_factory_class() -> None:
    talos_class = make_class("b", talos={"schematicID": SCHEMATIC_B})
    state = make_state(talos_class, make_pool(workerClassName="b", kubevirt={"osImage": {"builtin": {}}}))
    row = only(state)
    assert row.restorable and row.values is not None
    assert row.values["kubevirt"]["osImage"] == {"builtin": {"version": "v1.13.6", "schematicID": SCHEMATIC_B}}
    assert row.hash_restored == classless_hash(state, row)


def test_factory_class_endpoint_written_when_it_differs() -> None:
    factory_class = make_class(
        "mirror-factory", kubevirt={"osImage": {"factory": {"endpoint": "https://factory.mirror.example"}}}
    )
    state = make_state(factory_class, make_pool(workerClassName="mirror-factory"))
    row = only(state)
    assert row.restorable, row.reasons
    assert row.values is not None
    assert row.values["kubevirt"] == {
        "osImage": {
            "factory": {"endpoint": "https://factory.mirror.example", "version": "v1.13.6", "schematicID": SCHEMATIC_A}
        }
    }
    assert row.hash_restored == classless_hash(state, row)


def test_default_factory_path_leaves_os_image_out() -> None:
    state = make_state(make_pool(kubevirt={"osImage": {}}))
    row = only(state)
    assert row.restorable and row.values is not None
    assert "kubevirt" not in row.values


def test_class_empty_module_list_is_kept_against_the_nvidia_rule() -> None:
    no_modules = make_class("no-modules", kernelModules=[])
    state = make_state(no_modules, make_pool(workerClassName="no-modules", gpus=[NVIDIA_GPU]))
    row = only(state)
    assert row.restorable, row.reasons
    assert row.values is not None and row.values["kernelModules"] == []  # absent would switch the NVIDIA rule on
    assert row.hash_restored == classless_hash(state, row)


def test_proxmox_parent_with_class_template_tags() -> None:
    tagged = make_class("pve-talos", proxmox={"templateTags": ["talos-v1.13.6", "gold"]})
    state = make_state(tagged, make_pool(cluster="pve", workerClassName="pve-talos"))
    row = only(state)
    assert row.restorable, row.reasons
    assert row.values is not None
    assert row.values["proxmox"] == {"templateTags": ["talos-v1.13.6", "gold"]}
    assert "kubevirt" not in row.values
    assert row.hash_restored == classless_hash(state, row)


def test_helm_release_with_a_class_restores_its_values() -> None:
    state = make_state(make_class("b", talos={"schematicID": SCHEMATIC_B}), make_release(workerClassName="b"))
    row = only(state, "release")
    assert (row.kind, row.field, row.restorable) == ("HelmRelease", "spec.values", True)
    assert row.values is not None and row.values["talos"]["schematicID"] == SCHEMATIC_B
    assert row.hash_restored == classless_hash(state, row)


def test_classless_pools_and_compute_plane_need_nothing() -> None:
    plane = {
        "apiVersion": "apps.cozystack.io/v1alpha1",
        "kind": "ComputePlane",
        "metadata": {"name": "plane", "namespace": NAMESPACE},
        "spec": {"version": "v1.35", "nodeGroups": {"md0": {"minReplicas": 1, "maxReplicas": 2}}},
    }
    state = make_state(make_pool(workerClassName=None), make_release(), plane)
    result = restore(state)
    assert [(row.pool, row.status, row.restorable, row.values) for row in result.rows] == [
        ("tenant/plane-md0", "classless", True, None),
        ("tenant/pool", "classless", True, None),
        ("tenant/release", "classless", True, None),
    ]
    assert not result.blocked


def test_legacy_values_do_not_touch_the_stored_pool() -> None:
    state = make_state(RICH_CLASS, make_pool(workerClassName="rich", talos={"version": "v1.13.6"}))
    record = state.pool("tenant/pool")
    assert record is not None
    before = copy.deepcopy(dict(record.values))
    legacy_values(state, record, resolve(state, record))
    assert record.values == before


# --------------------------------------------------------------------------- not restorable


@pytest.mark.parametrize(
    ("pool", "code"),
    [
        pytest.param(make_pool(workerClassName="missing"), "ClassNotFound", id="class-not-found"),
        pytest.param(make_pool(cluster="gone"), "ClusterNotFound", id="cluster-not-found"),
        pytest.param(make_pool(gpus=[{**NVIDIA_GPU, "vgpu": True}]), "TalosVGPU", id="talos-vgpu"),
    ],
)
def test_denied_pool_is_not_restorable(pool: dict[str, Any], code: str) -> None:
    row = only(make_state(pool))
    assert (row.status, row.restorable, row.values, row.hash_current) == ("denied", False, None, None)
    assert any(reason.startswith(f"denied: {code} ") for reason in row.reasons)
    assert row.as_dict()["templateHash"] == {"current": None, "restored": None, "version": HASH_VERSION}


def test_denied_kairos_pool_shows_both_reasons() -> None:
    row = only(make_state(make_pool(workerClassName="kairos", sshKeys=["not a key"])))
    assert (row.status, row.restorable, row.bootstrap) == ("kairos", False, "kairos")
    assert row.reasons[0] == KAIROS and any("InvalidSSHKey" in reason for reason in row.reasons[1:])


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
        pytest.param(_tampered(("talos", "registryMirrors"), None), "talos.registryMirrors", id="mirrors-dropped"),
        pytest.param(_tampered(("kernelModules",), None), "kernelModules", id="modules-dropped"),
        pytest.param(_tampered(("kubevirt",), None), "image.source", id="builtin-source-dropped"),
        pytest.param(_tampered(("talos", "installerRepository"), None), "installerImage", id="installer-dropped"),
    ],
)
def test_proof_catches_a_dropped_class_setting(edit: Any, named: str) -> None:
    state = make_state(RICH_CLASS, make_pool(workerClassName="rich"))
    record = state.pool("tenant/pool")
    assert record is not None
    effective, _, _ = resolve_pool(state, record)
    assert effective is not None
    values = legacy_values(state, record, effective)
    assert prove(state, record, effective, values).equal
    tampered = copy.deepcopy(values)
    edit(tampered)
    proof = prove(state, record, effective, tampered)
    assert not proof.equal
    assert any(difference.startswith(named) for difference in proof.differences), proof.differences


CERTIFICATE_2 = "-----BEGIN CERTIFICATE-----\nMIIBtDCCAVqgAwIBAgIUR\n-----END CERTIFICATE-----\n"


@pytest.mark.parametrize(
    ("ca", "named"),
    [
        pytest.param(None, "imageFactoryCA", id="ca-dropped"),
        # The CA text is left out of the hash on purpose; the rendered ConfigMap still tells.
        pytest.param(CERTIFICATE_2, "rendered objects differ: ConfigMap", id="ca-text-changed"),
    ],
)
def test_proof_catches_a_lost_factory_ca(ca: str | None, named: str) -> None:
    ca_class = make_class("ca", talos={"imageFactoryCA": CERTIFICATE})
    state = make_state(ca_class, make_pool(workerClassName="ca"))
    record = state.pool("tenant/pool")
    assert record is not None
    effective = resolve(state, record)
    values = legacy_values(state, record, effective)
    assert values["talos"]["imageFactoryCA"] == CERTIFICATE
    assert prove(state, record, effective, values).equal
    _tampered(("talos", "imageFactoryCA"), ca)(values)
    proof = prove(state, record, effective, values)
    assert not proof.equal
    assert any(difference.startswith(named) for difference in proof.differences), proof.differences


def test_proof_refuses_values_that_still_select_a_class() -> None:
    state = make_state(make_pool())
    record = state.pool("tenant/pool")
    assert record is not None
    effective = resolve(state, record)
    proof = prove(state, record, effective, {**legacy_values(state, record, effective), "workerClassName": "talos"})
    assert not proof.equal and "still select class talos" in proof.differences[0]


def test_mismatch_row_is_not_restorable(monkeypatch: pytest.MonkeyPatch) -> None:
    """If the legacy layout ever lost a setting, the row says so instead of offering the values."""
    import workerclass.ops.restore as module

    original = module.legacy_values

    def lossy(state: State, record: Any, effective: Any) -> dict[str, Any]:
        values = original(state, record, effective)
        del values["talos"]["registryMirrors"]
        return values

    monkeypatch.setattr(module, "legacy_values", lossy)
    row = only(make_state(RICH_CLASS, make_pool(workerClassName="rich")))
    assert (row.status, row.restorable) == ("mismatch", False)
    assert row.hash_current != row.hash_restored
    assert any(reason.startswith("talos.registryMirrors") for reason in row.reasons)


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
