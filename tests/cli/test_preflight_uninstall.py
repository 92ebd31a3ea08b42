"""``preflight --uninstall`` on STATE folders: Kairos pools an old chart would render as Talos, custom
classes held by the finalizer, and the objects the controller owns or pinned, in preflight's
output shape, with its exit codes."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import yaml
from typer.testing import CliRunner

from workerclass.api import FINALIZER
from workerclass.cli.main import _register, app
from workerclass.ops.workers import PINNED_ANNOTATION, POOL_ANNOTATION, POOL_LABEL, pool_key

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
_register()


def run(*args: str) -> Any:
    result = CliRunner().invoke(app, list(args))
    assert "Traceback" not in result.stdout + result.stderr
    return result


def verdict(*args: str) -> tuple[int, dict[str, Any]]:
    result = run("preflight", "--uninstall", *args, "-o", "json")
    return result.exit_code, json.loads(result.stdout)


def of(data: dict[str, Any], name: str) -> list[dict[str, Any]]:
    return [check for check in data["checks"] if check["check"] == name]


def write(folder: Path, name: str, *objects: dict[str, Any]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(yaml.safe_dump_all(list(objects)))


def examples(tmp_path: Path) -> Path:
    folder = tmp_path / "state"
    shutil.copytree(EXAMPLES, folder)
    return folder


def test_nothing_classified_nothing_owned_is_safe(tmp_path: Path) -> None:
    folder = tmp_path / "state"
    shutil.copytree(EXAMPLES / "platform", folder / "platform")
    shutil.copy(EXAMPLES / "tenant-example" / "legacy-pool.yaml", folder)
    shutil.copy(EXAMPLES / "tenant-example" / "cluster.yaml", folder)
    code, data = verdict(str(folder))
    assert code == 0 and data["safe"] is True
    assert [c["check"] for c in data["checks"]] == [
        "uninstall-kairos-pools",
        "uninstall-finalizers",
        "uninstall-owned-objects",
    ]
    assert {c["verdict"] for c in data["checks"]} == {"ok"}
    assert set(data["checks"][0]) == {"check", "verdict", "object", "field", "message"}


def test_kairos_pools_fail_and_talos_pools_warn(tmp_path: Path) -> None:
    code, data = verdict(str(examples(tmp_path)))
    assert code == 1 and data["safe"] is False
    pools = {c["object"]: c for c in of(data, "uninstall-kairos-pools")}
    kairos = pools["KubernetesNodes tenant-example/example-kairos"]
    assert kairos["verdict"] == "fail" and "would become Talos machines: migrate first" in kairos["message"]
    assert pools["KubernetesNodes tenant-example/example-custom-kairos"]["verdict"] == "fail"
    talos = pools["KubernetesNodes tenant-example/example-talos"]
    assert talos["verdict"] == "warn" and "workerclass restore" in talos["message"]
    assert talos["field"] == "spec.workerClassName"
    assert "KubernetesNodes tenant-example/example-legacy" not in pools  # classless: an old chart keeps it


def test_a_custom_class_held_by_the_finalizer_fails_with_how_to_release_it(tmp_path: Path) -> None:
    folder = examples(tmp_path)
    path = folder / "classes" / "talos-example-r1.yaml"
    (obj,) = [doc for doc in yaml.safe_load_all(path.read_text()) if doc]
    obj["metadata"]["finalizers"] = ["other.example/keep", FINALIZER]
    path.write_text(yaml.safe_dump(obj))
    _, data = verdict(str(folder))
    (check,) = of(data, "uninstall-finalizers")
    assert check["verdict"] == "fail" and check["object"] == "WorkerClass talos-example-r1"
    assert "stays Terminating" in check["message"]
    assert "pools select it: tenant-example/example-talos" in check["message"]
    assert '"path":"/metadata/finalizers/1"' in check["message"]


def test_a_builtin_class_with_the_finalizer_is_not_reported(tmp_path: Path) -> None:
    folder = tmp_path / "state"
    write(
        folder,
        "kairos.yaml",
        {
            "apiVersion": "cozystack.io/v1alpha1",
            "kind": "WorkerClass",
            "metadata": {"name": "kairos", "finalizers": [FINALIZER]},
            "spec": {"bootstrap": "kairos"},
        },
    )
    _, data = verdict(str(folder))
    assert [c["verdict"] for c in of(data, "uninstall-finalizers")] == ["ok"]


def test_owned_objects_are_counted_per_pool_and_pinned_ones_warn(tmp_path: Path) -> None:
    folder = tmp_path / "state"
    key = pool_key("tenant-example", "kubernetes-nodes-example-kairos")
    marks = {
        "labels": {POOL_LABEL: key},
        "annotations": {POOL_ANNOTATION: "tenant-example/kubernetes-nodes-example-kairos"},
    }
    deployment = {
        "apiVersion": "cluster.x-k8s.io/v1beta1",
        "kind": "MachineDeployment",
        "metadata": {"name": "example-kairos-md", "namespace": "tenant-example", **copy.deepcopy(marks)},
    }
    template = {
        "apiVersion": "bootstrap.cluster.x-k8s.io/v1beta2",
        "kind": "KairosConfigTemplate",
        "metadata": {"name": "example-kairos-a1b2", "namespace": "tenant-example", **copy.deepcopy(marks)},
    }
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "example-kairos-reconcile", **copy.deepcopy(marks)},
    }
    pinned = {
        "apiVersion": "cluster.x-k8s.io/v1beta1",
        "kind": "MachineDeployment",
        "metadata": {
            "name": "example-legacy-md",
            "namespace": "tenant-example",
            "annotations": {
                PINNED_ANNOTATION: "handoff",
                "helm.sh/resource-policy": "keep",
                "meta.helm.sh/release-name": "kubernetes-nodes-example-legacy",
                "meta.helm.sh/release-namespace": "tenant-example",
            },
        },
    }
    unrelated = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "x", "namespace": "tenant-example"}}
    write(folder, "owned.yaml", deployment, template, role, pinned, unrelated)
    code, data = verdict(str(folder))
    assert code == 1
    owned = of(data, "uninstall-owned-objects")
    assert [(c["verdict"], c["object"]) for c in owned] == [
        ("fail", "pool tenant-example/kubernetes-nodes-example-kairos"),
        ("warn", "release tenant-example/kubernetes-nodes-example-legacy"),
    ]
    assert "1 ClusterRole, 1 KairosConfigTemplate, 1 MachineDeployment" in owned[0]["message"]
    assert "MachineDeployment: tenant-example/example-kairos-md" in owned[0]["message"]
    assert "ClusterRole: example-kairos-reconcile" in owned[0]["message"]
    assert "tenant-example/example-legacy-md" in owned[1]["message"]
    assert "ServiceAccount" not in json.dumps(data)


def test_the_table_says_not_safe_and_nothing_is_applied(tmp_path: Path) -> None:
    folder = examples(tmp_path)
    before = sorted((p.relative_to(folder), p.read_bytes()) for p in folder.rglob("*") if p.is_file())
    result = run("preflight", "--uninstall", str(folder))
    assert result.exit_code == 1
    assert "uninstall-kairos-pools" in result.stdout and "not safe" in result.stdout
    after = sorted((p.relative_to(folder), p.read_bytes()) for p in folder.rglob("*") if p.is_file())
    assert before == after


def test_an_unreadable_state_exits_two(tmp_path: Path) -> None:
    result = run("preflight", "--uninstall", str(tmp_path / "missing"))
    assert result.exit_code == 2
