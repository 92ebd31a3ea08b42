"""The offline CLI: check, admit, resolve — exit codes, JSON shapes of API.md section 4, errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from workerclass.cli.main import _register, app

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
_register()


@pytest.fixture
def state(tmp_path: Path) -> Path:
    """A writable copy of the bundled examples."""
    target = tmp_path / "state"
    shutil.copytree(EXAMPLES, target)
    return target


def run(*args: str, input: str | None = None) -> Any:
    result = CliRunner().invoke(app, list(args), input=input)
    assert "Traceback" not in result.stdout + result.stderr
    return result


def write(path: Path, *objects: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump_all(objects))
    return path


def pool(name: str = "example-new", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps.cozystack.io/v1alpha1",
        "kind": "KubernetesNodes",
        "metadata": {"name": name, "namespace": "tenant-example"},
        "spec": {"cluster": "example", "version": "v1.35", **spec},
    }


# ------------------------------------------------------------------ check


def test_check_examples_all_allowed_json() -> None:
    result = run("check", str(EXAMPLES), "-o", "json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["allowed"] is True
    kinds = [item["kind"] for item in data["objects"]]
    # dependency order: platform, classes, parent cluster, pools
    assert kinds == [
        "WorkerPlatform",
        "WorkerClass",
        "WorkerClass",
        "Kubernetes",
        "KubernetesNodes",
        "KubernetesNodes",
        "KubernetesNodes",
        "KubernetesNodes",
        "HelmRelease",
    ]
    assert all(item["allowed"] for item in data["objects"])


def test_check_table_for_people(state: Path) -> None:
    result = run("check", str(state))
    assert result.exit_code == 0
    assert "9 objects, 0 denied" in result.stdout
    assert "\x1b[" not in result.stdout  # no colour codes outside a terminal


def test_check_denied_object_exits_one(state: Path) -> None:
    write(state / "bad.yaml", pool("example-bad", workerClassName="talos", sshKeys=["ssh-ed25519 AAAA x"]))
    result = run("check", str(state), "-o", "json")
    assert result.exit_code == 1
    denied = [item for item in json.loads(result.stdout)["objects"] if not item["allowed"]]
    assert [d["name"] for d in denied] == ["example-bad"]
    assert denied[0]["denials"][0]["code"] == "SSHKeysOnTalos"


def test_check_defaults_the_platform_class_on_create(state: Path) -> None:
    write(state / "classless.yaml", pool("example-classless"))
    data = json.loads(run("check", str(state), "-o", "json").stdout)
    (item,) = [item for item in data["objects"] if item["name"] == "example-classless"]
    assert item["patch"] == [{"op": "add", "path": "/spec/workerClassName", "value": "talos"}]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("kind: [unclosed\n", "bad.yaml:2: invalid YAML"),
        ("a: 1\na: 2\n", "bad.yaml:2: duplicate key 'a'"),
    ],
    ids=["yaml-syntax", "duplicate-key"],
)
def test_check_unreadable_file_exits_two_with_one_line(state: Path, content: str, expected: str) -> None:
    (state / "bad.yaml").write_text(content)
    result = run("check", str(state))
    assert result.exit_code == 2
    assert expected in result.stderr


def test_check_duplicate_identity_exits_two(state: Path) -> None:
    write(state / "again.yaml", pool("example-talos", workerClassName="talos"))
    result = run("check", str(state))
    assert result.exit_code == 2
    assert "duplicate KubernetesNodes tenant-example/example-talos" in result.stderr
    assert "pools.yaml" in result.stderr


def test_check_warns_of_every_skipped_kind_and_document(state: Path) -> None:
    write(state / "cm.yaml", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}})
    write(state / "notes.yaml", {"title": "not an object"})
    write(state / "typo.yaml", {**pool("example-typo"), "kind": "KubernetesNode"})
    result = run("check", str(state))
    assert result.exit_code == 0
    assert f"skipped 1 ConfigMap object (first at {state / 'cm.yaml'}:1): workerclass does not read" in result.stderr
    assert f"{state / 'notes.yaml'}#1: a mapping without kind, not a Kubernetes object: skipped" in result.stderr
    assert "did you mean KubernetesNodes?" in result.stderr


def test_one_unparsable_file_is_reported_and_the_rest_checked(state: Path) -> None:
    (state / "broken.yaml").write_text("apiVersion: v1\nkind: [unclosed\n")
    write(state / "bad.yaml", pool("example-bad", workerClassName="talos", sshKeys=["ssh-ed25519 AAAA x"]))
    for output in ("table", "json", "junit"):
        result = run("check", str(state), "-o", output)
        assert result.exit_code == 2, output  # an error wins over a denial
        assert f"error: {state / 'broken.yaml'}:3: invalid YAML" in result.stderr, result.stderr
        assert "example-talos" in result.stdout and "example-bad" in result.stdout, output
    table = run("check", str(state)).stdout.splitlines()
    assert table[-1].endswith("; 1 part of STATE could not be read"), table[-1]
    assert run("resolve", str(state), "--pool", "tenant-example/example-talos").exit_code == 2


def test_exclude_is_repeatable_and_skips_what_it_matches(state: Path) -> None:
    (state / "vendor").mkdir()
    (state / "vendor" / "broken.yaml").write_text("kind: [unclosed\n")
    write(state / "bad.enc.yaml", pool("example-bad", workerClassName="talos", sshKeys=["ssh-ed25519 AAAA x"]))
    assert run("check", str(state)).exit_code == 2
    result = run("check", str(state), "--exclude", "vendor", "--exclude", "*.enc.yaml")
    assert result.exit_code == 0, result.stderr
    assert "example-bad" not in result.stdout


def test_an_empty_state_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    write(tmp_path / "other" / "cm.yaml", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}})
    for folder in ("empty", "other"):
        for command in ("check", "resolve", "render"):
            result = run(command, str(tmp_path / folder))
            assert result.exit_code == 2, (command, folder)
            assert "no object workerclass reads" in result.stderr, result.stderr


def test_table_json_and_junit_name_the_file_and_line_of_each_object(state: Path) -> None:
    pools_file = state / "tenant-example" / "pools.yaml"
    lines = pools_file.read_text().splitlines()
    talos_line = next(i for i, line in enumerate(lines) if "name: example-talos" in line)
    start = max(i for i in range(talos_line) if lines[i].startswith("apiVersion")) + 1
    where = f"{pools_file}:{start}"
    data = json.loads(run("check", str(state), "-o", "json").stdout)
    (talos,) = [item for item in data["objects"] if item["name"] == "example-talos"]
    assert (talos["file"], talos["line"]) == (str(pools_file), start)
    table = run("check", str(state)).stdout.splitlines()
    assert table[0].split() == ["OBJECT", "FILE", "RESULT", "DETAILS"]
    (row,) = [line for line in table if line.startswith("KubernetesNodes tenant-example/example-talos ")]
    assert where in row
    cls = state / "classes" / "talos-example-r1.yaml"
    cls.write_text(cls.read_text().replace("bootstrap: talos", "bootstrap: talos\n  someField: 1"))
    junit = run("check", str(state), "-o", "junit").stdout
    assert where in junit
    assert f"at {cls}:1" in junit


def test_check_missing_folder_exits_two(tmp_path: Path) -> None:
    result = run("check", str(tmp_path / "nope"))
    assert result.exit_code == 2
    assert "no such file or folder" in result.stderr


# ------------------------------------------------------------------ admit

ADMIT_KEYS = {"kind", "namespace", "name", "allowed", "operation", "patch", "warnings", "denials"}


def test_admit_create_json_shape_and_default_patch(state: Path, tmp_path: Path) -> None:
    request = write(tmp_path / "req.yaml", pool(workerClassName=""))
    result = run("admit", str(state), "-f", str(request), "-o", "json")
    assert result.exit_code == 0, result.stdout
    data = json.loads(result.stdout)
    assert set(data) == ADMIT_KEYS
    assert data["operation"] == "CREATE"
    assert data["patch"] == [{"op": "add", "path": "/spec/workerClassName", "value": "talos"}]
    assert "object" not in data  # the request is named, never printed whole (its values may hold a secret)
    assert data["denials"] == []


def test_admit_update_restores_stored_class(state: Path, tmp_path: Path) -> None:
    replaced = pool("example-talos")  # a full replace that drops workerClassName
    request = write(tmp_path / "req.yaml", replaced)
    data = json.loads(run("admit", str(state), "-f", str(request), "--operation", "UPDATE", "-o", "json").stdout)
    assert data["patch"] == [{"op": "add", "path": "/spec/workerClassName", "value": "talos-example-r1"}]
    assert data["allowed"] is True


def test_admit_update_family_change_denied(state: Path, tmp_path: Path) -> None:
    request = write(tmp_path / "req.yaml", pool("example-talos", workerClassName="kairos"))
    result = run("admit", str(state), "-f", str(request), "--operation", "update", "-o", "json")
    assert result.exit_code == 1
    codes = [d["code"] for d in json.loads(result.stdout)["denials"]]
    assert codes == ["BootstrapFamilyChange"]


def test_admit_update_without_old_object_exits_two(state: Path, tmp_path: Path) -> None:
    request = write(tmp_path / "req.yaml", pool("not-stored"))
    result = run("admit", str(state), "-f", str(request), "--operation", "UPDATE")
    assert result.exit_code == 2
    assert "needs the old object" in result.stderr


def test_admit_delete_class_in_use(state: Path, tmp_path: Path) -> None:
    klass = {"apiVersion": "cozystack.io/v1alpha1", "kind": "WorkerClass", "metadata": {"name": "talos-example-r1"}}
    request = write(tmp_path / "req.yaml", klass)
    result = run("admit", str(state), "-f", str(request), "--operation", "DELETE", "-o", "json")
    assert result.exit_code == 1
    (denial,) = json.loads(result.stdout)["denials"]
    assert denial["code"] == "ClassInUse"
    assert denial["message"].startswith("1 live pool(s) in 1 namespace(s) select WorkerClass talos-example-r1")


def test_admit_update_and_delete_of_a_builtin_class(state: Path, tmp_path: Path) -> None:
    """API.md: built-in classes apply unless the folder overrides them, so they are old objects too."""
    changed = {
        "apiVersion": "cozystack.io/v1alpha1",
        "kind": "WorkerClass",
        "metadata": {"name": "talos"},
        "spec": {"bootstrap": "talos", "talos": {"version": "v1.12.4"}},
    }
    request = write(tmp_path / "update.yaml", changed)
    result = run("admit", str(state), "-f", str(request), "--operation", "UPDATE", "-o", "json")
    assert result.exit_code == 1, result.stderr
    assert [d["code"] for d in json.loads(result.stdout)["denials"]] == ["ClassImmutable"]
    # examples/ holds a pool selecting the built-in kairos class
    klass = {"apiVersion": "cozystack.io/v1alpha1", "kind": "WorkerClass", "metadata": {"name": "kairos"}}
    request = write(tmp_path / "delete.yaml", klass)
    result = run("admit", str(state), "-f", str(request), "--operation", "DELETE", "-o", "json")
    assert result.exit_code == 1, result.stderr
    assert [d["code"] for d in json.loads(result.stdout)["denials"]] == ["ClassInUse"]


def test_admit_update_of_the_embedded_platform(state: Path, tmp_path: Path) -> None:
    for path in state.rglob("*.yaml"):  # leave the embedded platform as the only one
        if "WorkerPlatform" in path.read_text():
            path.unlink()
    platform = {
        "apiVersion": "cozystack.io/v1alpha1",
        "kind": "WorkerPlatform",
        "metadata": {"name": "default"},
        "spec": {"defaultWorkerClass": "nope"},
    }
    request = write(tmp_path / "platform.yaml", platform)
    result = run("admit", str(state), "-f", str(request), "--operation", "UPDATE", "-o", "json")
    assert result.exit_code == 1, result.stderr
    assert "ClassNotFound" in [d["code"] for d in json.loads(result.stdout)["denials"]]


def test_admit_reads_stdin_and_prints_a_table(state: Path) -> None:
    result = run("admit", str(state), "-f", "-", input=json.dumps(pool(workerClassName="kairos", sshKeys=["a", "b"])))
    assert result.exit_code == 1
    assert "TooManySSHKeys" in result.stdout
    assert "spec.sshKeys" in result.stdout


def test_admit_rejects_several_objects(state: Path, tmp_path: Path) -> None:
    request = write(tmp_path / "req.yaml", pool("a"), pool("b"))
    result = run("admit", str(state), "-f", str(request))
    assert result.exit_code == 2
    assert "expected exactly one object" in result.stderr


def test_admit_rejects_unknown_operation(state: Path, tmp_path: Path) -> None:
    request = write(tmp_path / "req.yaml", pool())
    result = run("admit", str(state), "-f", str(request), "--operation", "PATCH")
    assert result.exit_code == 2


# ------------------------------------------------------------------ resolve

POOL_KEYS = {
    "pool",
    "class",
    "bootstrap",
    "kubernetesVersion",
    "talos",
    "kernelModules",
    "image",
    "installerImage",
    "templateHash",
    "denials",
    "warnings",
    "why",
}


def test_resolve_json_shape() -> None:
    result = run("resolve", str(EXAMPLES), "-o", "json")
    assert result.exit_code == 0, result.stderr
    pools = {row["pool"]: row for row in json.loads(result.stdout)["pools"]}
    assert set(pools) == {
        "tenant-example/example-custom-kairos",
        "tenant-example/example-kairos",
        "tenant-example/example-legacy",
        "tenant-example/example-talos",
    }
    for row in pools.values():
        assert set(row) == POOL_KEYS
        assert set(row["image"]) == {"source", "reference", "version", "schematicID", "templateTags"}
    talos = pools["tenant-example/example-talos"]
    assert set(talos["talos"]) == {
        "version",
        "schematicID",
        "imageFactoryURL",
        "imageFactoryCA",
        "installerRepository",
        "registryMirrors",
    }
    assert talos["kernelModules"] == [{"name": "nvme_tcp", "parameters": []}]
    assert talos["image"]["source"] == "factory"
    assert talos["installerImage"].endswith(":v1.13.6")
    custom = pools["tenant-example/example-custom-kairos"]
    assert custom["talos"] is None and custom["installerImage"] is None
    assert (custom["image"]["source"], custom["kubernetesVersion"]) == ("fixed", "v1.35.6")
    assert pools["tenant-example/example-kairos"]["image"]["source"] == "platform"
    assert pools["tenant-example/example-legacy"]["class"] is None


def test_resolve_one_pool_table_says_why(state: Path) -> None:
    result = run("resolve", str(state), "--pool", "tenant-example/example-talos")
    assert result.exit_code == 0
    assert "talos.version" in result.stdout and "pool" in result.stdout
    assert "example-kairos" not in result.stdout


def test_resolve_unknown_pool_exits_two() -> None:
    result = run("resolve", str(EXAMPLES), "--pool", "tenant-example/nope")
    assert result.exit_code == 2


def test_resolve_denied_pool_exits_one_with_denials_on_stderr(state: Path) -> None:
    write(state / "bad.yaml", pool("example-bad", workerClassName="kairos", version="v1.34"))
    result = run("resolve", str(state), "-o", "json")
    assert result.exit_code == 1
    rows = {row["pool"]: row for row in json.loads(result.stdout)["pools"]}
    bad = rows["tenant-example/example-bad"]  # every pool has a row; a denied one carries its denials
    assert set(bad) == {"pool", "class", "denials", "warnings"}
    assert bad["class"] == "kairos"
    assert [d["code"] for d in bad["denials"]] == ["UnsupportedVersion"]
    assert bad["denials"][0]["field"] == "spec.version"
    assert rows["tenant-example/example-talos"]["denials"] == []
    assert "tenant-example/example-bad: UnsupportedVersion spec.version" in result.stderr


@pytest.mark.parametrize("command", ["check", "admit", "resolve"])
def test_help_explains_each_command(command: str) -> None:
    result = run(command, "--help")
    assert result.exit_code == 0
    assert "STATE" in result.stdout


def test_resolve_prints_denials_with_tenant_text_escaped(state: Path) -> None:
    write(state / "bad.yaml", pool("example-bad", workerClassName="talos", labels={"[/x]": "v"}))
    result = run("resolve", str(state))
    assert result.exit_code == 1
    # One plain line per denial, NS/NAME: CODE field: message (tenant text is never markup)
    (line,) = [line for line in result.stderr.splitlines() if "Invalid" in line]
    assert line.startswith("tenant-example/example-bad: Invalid spec.labels")


@pytest.mark.parametrize("module", ["workerclass", "workerclass.cli.main"])
def test_python_dash_m_runs_the_same_cli(module: str) -> None:
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-m", module, "check", str(EXAMPLES), "-o", "json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["allowed"] is True


def test_admit_refuses_a_file_that_is_not_an_object(state: Path, tmp_path: Path) -> None:
    request = tmp_path / "nokind.yaml"
    request.write_text("foo: bar\n")
    result = run("admit", str(state), "-f", str(request))
    assert result.exit_code == 2
    assert "not a Kubernetes object" in result.stderr


@pytest.mark.parametrize("name", ["x[/b]", "mk[/red]", "[bold]y"])
def test_paths_that_look_like_markup_are_shown_as_they_are(tmp_path: Path, name: str) -> None:
    missing = tmp_path / name
    result = run("check", str(missing))
    assert result.exit_code == 2
    assert name in result.stderr
    result = run("resolve", str(EXAMPLES), "--pool", f"a/{name}")
    assert result.exit_code == 2
    assert name in result.stderr


def test_piped_tables_keep_long_values_on_one_line() -> None:
    result = run("resolve", str(EXAMPLES), "--pool", "tenant-example/example-talos")
    assert result.exit_code == 0
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("image.reference")]
    url = line.split()[1]
    assert url.startswith("https://") and url.endswith("/openstack-amd64.raw.xz"), line


@pytest.mark.parametrize("command", ["resolve", "render", "restore"])
def test_pool_option_says_its_form(command: str) -> None:
    result = run(command, str(EXAMPLES), "--pool", "bogus")
    assert result.exit_code == 2
    assert "--pool takes NS/NAME" in result.stderr
    result = run(command, str(EXAMPLES), "--pool", "tenant-example/nope")
    assert result.exit_code == 2
    assert "no pool tenant-example/nope" in result.stderr


def test_resolve_json_shows_the_mirror_map_as_written(state: Path) -> None:
    mirrors = {"docker.io": {"endpoints": ["https://mirror.example.com"], "skipFallback": True, "overridePath": True}}
    talos_class = state / "classes" / "talos-example-r1.yaml"
    document = yaml.safe_load(talos_class.read_text())
    document["spec"]["talos"]["registryMirrors"] = mirrors
    talos_class.write_text(yaml.safe_dump(document))
    result = run("resolve", str(state), "--pool", "tenant-example/example-talos", "-o", "json")
    assert result.exit_code == 0, result.stderr
    (row,) = json.loads(result.stdout)["pools"]
    assert row["talos"]["registryMirrors"] == mirrors


# ------------------------------------------------------------------ --pool of a direct HelmRelease (audit #13)


@pytest.mark.usefixtures("chart_text")
def test_pool_option_finds_a_direct_helm_release_by_either_spelling(state: Path) -> None:
    release = {
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {
            "name": "kubernetes-nodes-example-hr",
            "namespace": "tenant-example",
            "labels": {"apps.cozystack.io/application.kind": "KubernetesNodes"},
        },
        "spec": {
            "chart": {"spec": {"chart": "kubernetes-nodes"}},
            "values": {"cluster": "example", "version": "v1.35"},
        },
    }
    write(state / "hr.yaml", release)
    own = "tenant-example/kubernetes-nodes-example-hr"
    for spelling in (own, "tenant-example/example-hr"):
        for command in ("resolve", "render"):
            result = run(command, str(state), "--pool", spelling, "-o", "json")
            assert result.exit_code == 0, (command, spelling, result.stderr)
            assert [row["pool"] for row in json.loads(result.stdout)["pools"]] == [own]
    assert run("resolve", str(state), "--pool", "tenant-example/example-zz").exit_code == 2


def test_check_json_reads_a_date_as_the_text_kubectl_reads(state: Path) -> None:
    """``nodeStartupTimeout: 2001-12-14`` is text for kubectl (go-yaml v2), never a date object."""
    (state / "dated.yaml").write_text(
        "apiVersion: apps.cozystack.io/v1alpha1\nkind: KubernetesNodes\n"
        "metadata: {name: example-dated, namespace: tenant-example}\n"
        "spec: {cluster: example, version: v1.35, nodeStartupTimeout: 2001-12-14}\n"
    )
    result = run("check", str(state), "-o", "json")
    data = json.loads(result.stdout)
    (dated,) = [item for item in data["objects"] if item["name"] == "example-dated"]
    assert dated["allowed"] is True, dated


# ------------------------------------------------------------------ check --stored: classes and the platform


def _class(name: str, spec: Any) -> dict[str, Any]:
    return {"apiVersion": "cozystack.io/v1alpha1", "kind": "WorkerClass", "metadata": {"name": name}, "spec": spec}


@pytest.mark.parametrize(
    ("obj", "code", "field"),
    [
        (_class("bad-null", None), "Invalid", "spec.bootstrap"),
        (_class("bad-unknown", {"bootstrap": "talos", "someField": 1}), "Invalid", "spec.someField"),
        (
            _class("bad-unpinned", {"bootstrap": "kairos", "image": {"reference": "ghcr.io/x/kairos-worker:v1"}}),
            None,
            "spec.image.reference",
        ),
    ],
    ids=["spec-null", "unknown-field", "unpinned-image"],
)
def test_check_stored_judges_a_stored_class_as_the_webhook_and_says_the_create_rules(
    state: Path, obj: dict[str, Any], code: str | None, field: str
) -> None:
    """As stored, a class is decided as the webhook decides an UPDATE that leaves its spec alone
    (allowed); what a CREATE of that spec is refused for is said as warnings."""
    write(state / "classes" / "bad.yaml", obj)
    created = {o["name"]: o for o in json.loads(run("check", str(state), "-o", "json").stdout)["objects"]}
    result = run("check", str(state), "--stored", "-o", "json")
    assert result.exit_code == 0, result.stdout
    stored = {o["name"]: o for o in json.loads(result.stdout)["objects"]}
    name = obj["metadata"]["name"]
    assert stored[name]["allowed"] is True and stored[name]["denials"] == []
    assert stored[name]["operation"] == "UPDATE"  # read as stored
    for denial in created[name]["denials"]:
        assert any(w.startswith(f"{denial['code']} {denial['field']}:") for w in stored[name]["warnings"])
    assert any(d["field"] == field and (code is None or d["code"] == code) for d in created[name]["denials"])


def test_check_stored_judges_the_stored_platform(state: Path) -> None:
    platform = state / "platform" / "workerplatform.yaml"
    platform.write_text(platform.read_text().replace("defaultWorkerClass: talos", "defaultWorkerClass: missing"))
    result = run("check", str(state), "--stored", "-o", "json")
    assert result.exit_code == 1
    (item,) = [o for o in json.loads(result.stdout)["objects"] if o["kind"] == "WorkerPlatform"]
    assert [(d["code"], d["field"]) for d in item["denials"]] == [("ClassNotFound", "spec.defaultWorkerClass")]


# ------------------------------------------------------------------ no output echoes a value that may be a secret

PRIVATE_KEY_TEXT = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----"
)
AWS_KEY_ID = "AKIAIOSFODNN7EXAMPLE"


def test_check_and_admit_json_print_no_whole_object(state: Path, tmp_path: Path) -> None:
    """A private key pasted in sshKeys (or anywhere in an object) must not land in a CI artifact:
    the JSON names each object and its decision, never its contents."""
    leaky = pool("example-leaky", workerClassName="kairos", sshKeys=[PRIVATE_KEY_TEXT])
    write(state / "leaky.yaml", leaky)
    for output in ("json", "junit", "table"):
        result = run("check", str(state), "-o", output)
        assert "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ" not in result.stdout + result.stderr, output
    data = json.loads(run("check", str(state), "-o", "json").stdout)
    assert all("object" not in item for item in data["objects"])
    request = write(tmp_path / "req.yaml", pool("example-new", workerClassName="", sshKeys=[PRIVATE_KEY_TEXT]))
    for operation in ("CREATE",):
        result = run("admit", str(state), "-f", str(request), "--operation", operation, "-o", "json")
        assert "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ" not in result.stdout + result.stderr
        document = json.loads(result.stdout)
        assert "object" not in document
        assert (document["kind"], document["namespace"], document["name"]) == (
            "KubernetesNodes",
            "tenant-example",
            "example-new",
        )


def test_no_output_quotes_a_map_key_shaped_like_a_token(state: Path, tmp_path: Path) -> None:
    write(state / "leaky.yaml", pool("example-leaky", workerClassName="talos", **{AWS_KEY_ID: True}))
    for output in ("json", "junit", "table"):
        result = run("check", str(state), "-o", output)
        assert result.exit_code == 0, output  # a key nothing reads is a warning (the chart ignores it)
        assert AWS_KEY_ID not in result.stdout + result.stderr, output
    (leaky,) = [
        o for o in json.loads(run("check", str(state), "-o", "json").stdout)["objects"] if o["name"] == "example-leaky"
    ]
    assert any("unknown field" in warning for warning in leaky["warnings"]), leaky
    for command in ("resolve", "render"):
        result = run(command, str(state), "--pool", "tenant-example/example-leaky")
        assert AWS_KEY_ID not in result.stdout + result.stderr, command
