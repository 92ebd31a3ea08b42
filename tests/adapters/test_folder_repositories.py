"""Reading STATE as real GitOps repositories hold it: a file that cannot be read among good ones,
excluded paths, Helm chart folders, and the file and line of every object."""

from __future__ import annotations

from pathlib import Path

import pytest

from workerclass.adapters.folder import LoadError, load_state, parse_documents, read_paths

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


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("kind: [unclosed\n", "bad.yaml:2: invalid YAML"),
        ("a: 1\na: 2\n", "bad.yaml:2: duplicate key 'a'"),
        ("metadata:\n  name: yes\nkind: X\n", "bad.yaml:2: metadata.name 'yes'"),
    ],
    ids=["yaml-syntax", "duplicate-key", "unquoted-name"],
)
def test_a_file_that_cannot_be_read_is_an_error_line_and_the_rest_is_read(
    tmp_path: Path, content: str, expected: str
) -> None:
    (tmp_path / "a.yaml").write_text(POOL.format(name="example-a"))
    (tmp_path / "bad.yaml").write_text(content)
    (tmp_path / "c.yaml").write_text(POOL.format(name="example-c"))
    errors: list[str] = []
    documents = read_paths([str(tmp_path)], errors=errors)
    assert names(documents) == ["example-a", "example-c"]
    assert len(errors) == 1 and expected in errors[0], errors
    assert str(tmp_path / "bad.yaml") in errors[0]
    with pytest.raises(LoadError, match=r"bad\.yaml"):  # without an errors list: raised, as before
        read_paths([str(tmp_path)])


def test_a_missing_path_among_others_is_an_error_line(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(POOL.format(name="example-a"))
    errors: list[str] = []
    documents = read_paths([str(tmp_path / "nope"), str(tmp_path)], errors=errors)
    assert names(documents) == ["example-a"]
    assert errors == [f"{tmp_path / 'nope'}: no such file or folder"]


def test_exclude_globs_skip_files_and_folders(tmp_path: Path) -> None:
    for relative in ("keep/a.yaml", "vendor/b.yaml", "keep/secret.enc.yaml", "deep/x/vendor/c.yaml", "d.yaml"):
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(POOL.format(name=f"example-{path.stem.replace('.', '-')}"))
    documents = read_paths([str(tmp_path)], exclude=["vendor", "*.enc.yaml"])
    assert names(documents) == ["example-d", "example-a"]
    only = read_paths([str(tmp_path)], exclude=["keep/*", "deep/**", "vendor/b.yaml"])
    assert names(only) == ["example-d"]


def test_helm_chart_folders_are_skipped_with_a_warning(tmp_path: Path) -> None:
    chart = tmp_path / "charts" / "app"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: app\nversion: 0.1.0\n")
    (chart / "values.yaml").write_text("replicas: 1\n")
    (chart / "templates" / "pool.yaml").write_text(POOL.format(name="{{ .Values.name }}"))
    not_a_chart = tmp_path / "lookalike"
    not_a_chart.mkdir()
    (not_a_chart / "Chart.yaml").write_text("apiVersion: v2\nname: x\nversion: 0.1.0\n")  # no templates/ beside it
    (tmp_path / "a.yaml").write_text(POOL.format(name="example-a"))
    warnings: list[str] = []
    errors: list[str] = []
    documents = read_paths([str(tmp_path)], warnings=warnings, errors=errors)
    assert names(documents) == ["example-a"]
    assert errors == []
    assert [w for w in warnings if "Helm chart" in w] == [
        f"{chart}: a Helm chart (Chart.yaml beside templates/): skipped; render it (helm template) to check "
        "what it makes"
    ]
    assert any("lookalike/Chart.yaml#1" in w for w in warnings)  # read, and skipped as a kindless mapping


def test_every_document_knows_its_line() -> None:
    text = (
        "# a comment\n"
        + POOL.format(name="example-a")
        + "---\n\n"
        + POOL.format(name="example-b")
        + "---\napiVersion: v1\nkind: List\nitems:\n"
        + "- apiVersion: apps.cozystack.io/v1alpha1\n  kind: KubernetesNodes\n  metadata: {name: example-c}\n"
        + "- apiVersion: apps.cozystack.io/v1alpha1\n  kind: KubernetesNodes\n  metadata: {name: example-d}\n"
    )
    documents = parse_documents(text, "all.yaml")
    assert [(d.obj["metadata"]["name"], d.line) for d in documents] == [
        ("example-a", 2),
        ("example-b", 11),
        ("example-c", 22),
        ("example-d", 25),
    ]
    lines = text.splitlines()
    for document in documents:
        assert lines[document.line - 1].lstrip("- ").startswith(("apiVersion", "kind")), document


def test_load_state_collects_errors_and_records_know_their_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("\n\n" + POOL.format(name="example-a"))
    (tmp_path / "b.yaml").write_text(POOL.format(name="example-a"))  # the same identity again
    (tmp_path / "c.yaml").write_text("kind: [\n")
    errors: list[str] = []
    state = load_state(tmp_path, errors=errors)
    (record,) = state.objects
    assert (record.file, record.line) == (str(tmp_path / "a.yaml"), 3)
    assert len(errors) == 2  # what could not be read first, then what could not be indexed
    assert errors[0].startswith(f"{tmp_path / 'c.yaml'}:")
    assert errors[1].startswith(f"{tmp_path / 'b.yaml'}:1: duplicate KubernetesNodes tenant-x/example-a")
    assert f"{tmp_path / 'a.yaml'}:3" in errors[1]
