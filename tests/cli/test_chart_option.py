"""``--chart DIR|TGZ`` on the command line: which chart the commands follow, and what needs its text.

Without ``--chart``, ``check`` and ``resolve`` work from the shipped facts (``make demo``), while
``render``, ``plan`` and ``restore`` of Talos pools say that the chart's text is needed and how to
give it (exit 2, no output on stdout). A known chart (a folder or its packaged archive) renders; a
copy with one character of a template changed is unknown: refused, its digest named, without Helm's
engine (the ``helm`` extra), and rendered by that engine where it is installed.
"""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.shared import chart_path, writable_copy
from workerclass.adapters import chart as chart_adapter
from workerclass.cli.main import _register, app

_register()

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = str(ROOT / "examples")


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    assert "Traceback" not in result.stdout + result.stderr
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("command", ["check", "resolve"])
def test_admission_and_resolution_need_no_chart(command: str) -> None:
    code, stdout, _ = run(command, EXAMPLES)
    assert code == 0 and stdout


@pytest.mark.parametrize(
    "args",
    [["render", EXAMPLES], ["plan", EXAMPLES, "--to", EXAMPLES], ["restore", EXAMPLES]],
    ids=["render", "plan", "restore"],
)
def test_outputs_that_need_the_charts_text_say_how_to_give_it(args: list[str]) -> None:
    code, stdout, stderr = run(*args)
    assert code == 2 and stdout == ""
    assert "needs the chart's own text" in stderr and "--chart DIR|TGZ" in stderr


def _writable_copy(into: Path) -> Path:
    return writable_copy(chart_path("main+gate"), into)


def test_a_known_chart_renders_from_its_folder_and_its_archive(tmp_path: Path) -> None:
    folder = _writable_copy(tmp_path)
    archive = tmp_path / "kubernetes-nodes-1.2.3.tgz"
    with tarfile.open(archive, "w:gz") as packed:
        packed.add(folder, arcname="kubernetes-nodes")
    from_folder = run("render", EXAMPLES, "--chart", str(folder))
    from_archive = run("render", EXAMPLES, "--chart", str(archive))
    assert from_folder[0] == 0 and from_folder[1].count("kind: Job") == 2
    assert from_archive == from_folder


def _one_character_changed(tmp_path: Path, template: str = "nodegroup.yaml") -> Path:
    folder = _writable_copy(tmp_path)
    path = folder / "templates" / template
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("kubernetes", "Kubernetes", 1), encoding="utf-8")
    return folder


def test_a_chart_with_one_changed_character_is_refused_as_unknown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(chart_adapter, "helm_engine", lambda files: None)  # the helm extra is not installed
    folder = _one_character_changed(tmp_path)
    code, stdout, stderr = run("check", EXAMPLES, "--chart", str(folder))
    assert code == 2 and stdout == ""
    assert "is not a chart workerclass was proved against" in stderr and "sha256:" in stderr
    assert "workerclass[helm]" in stderr


@pytest.mark.parametrize("path", ["missing", "."], ids=["missing", "not-a-chart"])
def test_an_unreadable_chart_is_named(path: str, tmp_path: Path) -> None:
    code, _, stderr = run("check", EXAMPLES, "--chart", str(tmp_path / path))
    assert code == 2 and stderr.startswith("error: --chart: ")


def test_an_unknown_chart_renders_through_helms_engine(tmp_path: Path) -> None:
    pytest.importorskip("helm_python", reason="Helm's engine is the optional helm extra")
    state = tmp_path / "state"
    state.mkdir()
    (state / "pool.yaml").write_text(
        "apiVersion: apps.cozystack.io/v1alpha1\nkind: Kubernetes\nmetadata: {name: example, namespace: tenant-x}\n"
        "spec: {version: v1.35}\n---\napiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\n"
        "metadata: {name: kubernetes-nodes-example-md1, namespace: tenant-x, labels: "
        "{apps.cozystack.io/application.kind: KubernetesNodes}}\nspec: {values: {cluster: example}}\n"
    )
    # a comment of the Job's template changed: another chart by its digest, the same objects
    folder = _one_character_changed(tmp_path, "talos-reconcile-job.yaml")
    known = run("render", str(state), "--chart", str(chart_path("main+gate")), "-o", "json")
    unknown = run("render", str(state), "--chart", str(folder), "-o", "json")
    assert known[0] == 0 and unknown[0] == 0, unknown[2]
    assert unknown[1] == known[1]
