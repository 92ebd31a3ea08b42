"""Reading STATE: suffixes in any case, several paths, stdin, symlinks, foreign documents, YAML traps."""

from __future__ import annotations

import io
import json
import os
import re
from pathlib import Path

import pytest

from tests.chart.oracle import oracle_read
from workerclass.adapters.folder import LoadError, parse_documents, read_folder, read_paths
from workerclass.state import State

POOL = """apiVersion: apps.cozystack.io/v1alpha1
kind: KubernetesNodes
metadata:
  name: {name}
  namespace: tenant-x
spec:
  cluster: example
"""


def names(documents: list) -> list[str]:  # type: ignore[type-arg]
    return [document.obj["metadata"]["name"] for document in documents]


def test_every_manifest_suffix_in_any_case(tmp_path: Path) -> None:
    (tmp_path / "a.YAML").write_text(POOL.format(name="example-a"))
    (tmp_path / "b.Yml").write_text(POOL.format(name="example-b"))
    obj = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [{"kind": "KubernetesNodes", "metadata": {"name": "example-c"}}],
    }
    (tmp_path / "c.JSON").write_text(json.dumps(obj))
    (tmp_path / "notes.txt").write_text("not: read\n")
    documents = read_folder(tmp_path)
    assert names(documents) == ["example-a", "example-b", "example-c"]
    assert documents[2].origin.endswith("c.JSON#1.1")


def test_json_the_yaml_reader_refuses_is_read_by_the_json_parser(tmp_path: Path) -> None:
    (tmp_path / "tabs.json").write_text('{\t"kind": "Kubernetes",\t"metadata": {"name": "a\\/b"}}')
    (document,) = read_folder(tmp_path)
    assert document.obj["metadata"]["name"] == "a/b"


def test_json_duplicate_keys_are_refused(tmp_path: Path) -> None:
    (tmp_path / "dup.json").write_text('{"kind": "Kubernetes",\n "kind": "Kubernetes"}')
    with pytest.raises(LoadError, match=r"dup.json:2: duplicate key 'kind'"):
        read_folder(tmp_path)


def test_several_paths_and_stdin_in_order_each_file_once(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two.yaml"
    one.mkdir()
    (one / "p.yaml").write_text(POOL.format(name="example-one"))
    two.write_text(POOL.format(name="example-two"))
    stdin = io.StringIO(POOL.format(name="example-stdin"))
    documents = read_paths([str(two), str(one), "-", str(one / "p.yaml")], stdin=stdin)
    assert names(documents) == ["example-two", "example-one", "example-stdin"]
    assert documents[2].origin == "<stdin>#1"


def test_symlinked_folders_are_followed_and_loops_end(tmp_path: Path) -> None:
    real = tmp_path / "real"
    (real / "deep").mkdir(parents=True)
    (real / "deep" / "p.yaml").write_text(POOL.format(name="example-linked"))
    root = tmp_path / "state"
    root.mkdir()
    os.symlink(real, root / "link")
    os.symlink(root, real / "deep" / "back")  # a loop: state/link/deep/back -> state
    warnings: list[str] = []
    documents = read_paths([str(root)], warnings=warnings)
    assert names(documents) == ["example-linked"]
    assert any("symbolic link loop" in warning for warning in warnings), warnings


def test_foreign_documents_are_skipped_with_one_warning_each() -> None:
    text = "- hosts: all\n  tasks: []\n---\njust a string\n---\n" + POOL.format(name="example-a")
    warnings: list[str] = []
    documents = parse_documents(text, "site.yml", warnings=warnings)
    assert names(documents) == ["example-a"]
    assert warnings == [
        "site.yml#1: a list, not a Kubernetes object: skipped",
        "site.yml#2: a string, not a Kubernetes object: skipped",
    ]


def test_duplicate_keys_are_refused_with_file_and_line() -> None:
    text = "kind: KubernetesNodes\nmetadata:\n  name: a\n  labels: {}\n  name: b\n"
    with pytest.raises(LoadError) as caught:
        parse_documents(text, "pools.yaml")
    assert str(caught.value).startswith("pools.yaml:5: duplicate key 'name' (first at line 3)")


def test_merge_keys_are_not_duplicates() -> None:
    (document,) = parse_documents("base: &b {x: 1}\nkind: A\nother:\n  <<: *b\n  x: 2\n", "m.yaml")
    assert document.obj["other"] == {"x": 2}


@pytest.mark.parametrize(
    ("value", "what"),
    [("yes", "a boolean"), ("0123", "a number"), ("1e3", "a number"), ("y", "a boolean"), ("null", "null")],
)
def test_names_yaml_reads_as_other_types_say_to_quote_them(value: str, what: str) -> None:
    text = f"kind: KubernetesNodes\nmetadata:\n  name: {value}\n"
    with pytest.raises(LoadError) as caught:
        parse_documents(text, "p.yaml")
    message = str(caught.value)
    assert message.startswith(f"p.yaml:3: metadata.name {value!r} is read by YAML as {what}")
    assert f'quote it (name: "{value}")' in message


def test_quoted_names_and_other_keys_named_name_are_fine() -> None:
    text = 'kind: A\nmetadata:\n  name: "yes"\n  namespace: tenant-x\nspec:\n  ports: [{name: 80}]\n'
    (document,) = parse_documents(text, "p.yaml")
    assert document.obj["metadata"]["name"] == "yes"


def test_missing_path_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(LoadError, match="no such file or folder"):
        read_paths([str(tmp_path / "nope")])


def test_objects_of_kinds_not_read_are_skipped_silently_and_kindless_mappings_warned() -> None:
    text = (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n---\n"
        "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Namespace, metadata: {name: ns1}}\n- 3\n---\n"
        "foo: bar\n---\n" + POOL.format(name="example-a")
    )
    warnings: list[str] = []
    documents = parse_documents(text, "all.yaml", warnings=warnings)
    state = State.from_documents(documents)
    assert warnings == [
        "all.yaml#2.2: a number, not a Kubernetes object: skipped",
        "all.yaml#3: a mapping without kind, not a Kubernetes object: skipped",
    ]
    assert state.warnings == ()
    assert [record.name for record in state.pools.values()] == ["example-a"]


#: Spec lines whose plain scalars kubectl (go-yaml v2, then JSON) and PyYAML's YAML 1.1 read apart:
#: YAML 1.1 booleans beyond true/false, numbers without a dot, sexagesimal and leading-zero
#: numbers, dates, Go's integer syntax, non-string keys, merge keys, explicit tags.
KUBECTL_SPELLINGS = {
    "y-boolean": "logSerialConsole: y",
    "N-boolean": "logSerialConsole: N",
    "on-key": "labels: {on: a, 1: b, 1.5: c}",
    "exponent": "maxReplicas: 1e2",
    "sexagesimal": "maxReplicas: 1:30",
    "leading-zero": "maxReplicas: 08",
    "octal": "minReplicas: 010",
    "go-octal": "minReplicas: 0o17",
    "underscores": "maxReplicas: 1_000",
    "whole-float": "maxReplicas: 3.0",
    "date": "nodeStartupTimeout: 2001-12-14",
    "timestamp": "nodeStartupTimeout: 2001-12-14 21:59:43.10 -5",
    "list-boolean": "roles: [x, y]",
    "float-mirror": "talos: {registryMirrors: {a.io: {endpoints: [https://m], x: 1e20}}}",
    "merge": "base: &b {cpu: 2}\n  resources:\n    <<: *b\n    memory: 4Gi",
    "explicit-float": "maxReplicas: !!float 3",
}


@pytest.mark.parametrize("line", KUBECTL_SPELLINGS.values(), ids=KUBECTL_SPELLINGS.keys())
def test_state_files_are_read_as_kubectl_reads_them(line: str) -> None:
    text = POOL.format(name="example-a") + "  " + line + "\n"
    documents = parse_documents(text, "pool.yaml")
    assert [document.obj for document in documents] == oracle_read(text)
    assert json.loads(json.dumps([document.obj for document in documents])) == oracle_read(text)


def test_an_explicit_timestamp_keeps_its_text_as_go_yaml_decodes_it() -> None:
    """go-yaml v2 decodes a timestamp into ``interface{}`` as its text; JSON can hold nothing else."""
    text = POOL.format(name="example-a") + "  nodeStartupTimeout: !!timestamp 2001-12-14\n"
    (document,) = parse_documents(text, "pool.yaml")
    assert type(document.obj["spec"]["nodeStartupTimeout"]) is str


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("maxReplicas: !!int 1:30", "cannot decode '1:30' as a !!int"),
        ("nodeStartupTimeout: !duration 20m", "could not determine a constructor for the tag '!duration'"),
        ("roles: !!set {a: null}", "could not determine a constructor for the tag 'tag:yaml.org,2002:set'"),
    ],
    ids=["int-tag-not-an-integer", "unknown-tag", "set-tag"],
)
def test_tags_kubectl_does_not_read_are_refused_with_their_line(line: str, problem: str) -> None:
    text = POOL.format(name="example-a") + "  " + line + "\n"
    with pytest.raises(LoadError, match=f"^pool.yaml:8: invalid YAML: {re.escape(problem)}"):
        parse_documents(text, "pool.yaml")
