"""Chart identity: which files a chart's digest counts, and which known chart a set of files is.

The first tests use a small chart written here (our own text, not Cozystack's): what Helm packages
counts, ``.helmignore`` as Helm reads it, ``Chart.yaml`` by its metadata (comments, key order and
``version`` aside), one byte of a template changes the digest. The others read the real charts
where the mirror has them (``$WORKERCLASS_SHARED`` or ``../shared``): each known chart, and each with
our gate applied, is identified; an archive written by Helm's own ``package`` (the oracle's
helm-python-sdk) has the folder's digest; a copy with one character of a template changed is unknown;
the generated facts are what ``scripts/sync-upstream.py`` writes from the mirror today.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from workerclass.adapters.chart import read_chart
from workerclass.chart.identity import (
    ChartIdentity,
    ChartRules,
    by_name,
    chart_digest,
    counted_files,
    default_identity,
    identify,
    known_identities,
)

from ..shared import ROOT, chart_path, require, writable_copy

CHART_YAML = b"apiVersion: v2\nname: sample\nversion: 0.0.0 # stamped by the build\nappVersion: 1.0.0\n"


def _sample(**extra: bytes) -> dict[str, bytes]:
    files = {
        "Chart.yaml": CHART_YAML,
        "values.yaml": b"size: 1\n",
        "templates/thing.yaml": b"kind: Thing\nsize: {{ .Values.size }}\n",
        "charts/lib/Chart.yaml": b"apiVersion: v2\nname: lib\nversion: 0.0.0\ntype: library\n",
        "charts/lib/templates/_lib.tpl": b'{{- define "lib.name" -}}lib{{- end -}}\n',
    }
    files.update(extra)
    return files


def _identity(files: dict[str, bytes], name: str = "sample") -> ChartIdentity:
    return ChartIdentity(name, name, "written in this test", "0.0.0", chart_digest(files), False, ChartRules())


# ------------------------------------------------------------------ which files count


@pytest.mark.parametrize(
    ("ignore", "kept"),
    [
        (b"", {"Makefile", "logos/icon.svg", "images/tag", "images/x/y", "templates/.hidden", ".helmignore"}),
        (b"/logos\n/Makefile\n", {"images/tag", "images/x/y", ".helmignore"}),
        (b".helmignore\n/images/*/*\n", {"Makefile", "logos/icon.svg", "images/tag"}),
        (b"# a comment\n*.svg\n", {"Makefile", "images/tag", "images/x/y", ".helmignore"}),
        (b"images/\n", {"Makefile", "logos/icon.svg", ".helmignore"}),
        (b"tag/\n", {"Makefile", "logos/icon.svg", "images/tag", "images/x/y", ".helmignore"}),
        (b"!Makefile\n", {"Makefile"}),
    ],
    ids=[
        "nothing",
        "rooted",
        "itself-and-nested",
        "basename-glob",
        "folder",
        "folder-only-rule-spares-a-file",
        "negation",
    ],
)
def test_helmignore_decides_which_files_count(ignore: bytes, kept: set[str]) -> None:
    files = _sample(
        **{
            ".helmignore": ignore,
            "Makefile": b"all:\n",
            "logos/icon.svg": b"<svg/>",
            "images/tag": b"example/image:1\n",
            "images/x/y": b"deep\n",
            "templates/.hidden": b"never\n",
        }
    )
    base = set(_sample())
    counted = set(counted_files(files))
    assert counted - base == kept - {"templates/.hidden"}  # Helm's own rule drops hidden template files
    assert base - counted == (set() if ignore != b"!Makefile\n" else base)  # Helm: a lone negation ignores the rest


def test_the_digest_counts_bytes_of_templates_values_and_files() -> None:
    digest = chart_digest(_sample())
    assert digest.startswith("sha256:") and len(digest) == len("sha256:") + 64
    assert chart_digest(_sample()) == digest
    changed = _sample(**{"templates/thing.yaml": b"kind: Thing\nsize: {{ .Values.size }} \n"})
    assert chart_digest(changed) != digest
    assert chart_digest(_sample(**{"values.yaml": b"size: 2\n"})) != digest
    assert chart_digest(_sample(**{"charts/lib/templates/_lib.tpl": b"{{- /* */ -}}\n"})) != digest
    renamed = _sample()
    renamed["templates/other.yaml"] = renamed.pop("templates/thing.yaml")
    assert chart_digest(renamed) != digest


@pytest.mark.parametrize(
    "chart_yaml",
    [
        b"name: sample\nappVersion: 1.0.0\napiVersion: v2\nversion: 0.0.0\n",
        b"apiVersion: v2\nname: sample\nversion: 1.2.3\nappVersion: 1.0.0\n",
        b"apiVersion: v2\nname: sample\nversion: 0.0.0\nappVersion: 1.0.0\nunknownField: x\n",
        b"# a comment\napiVersion: v2\nname: sample\nversion: 0.0.0\nappVersion: 1.0.0\ndescription:\n",
    ],
    ids=["key-order", "stamped-version", "field-helm-drops", "comment-and-empty-field"],
)
def test_chart_yaml_counts_by_the_metadata_helm_writes_back(chart_yaml: bytes) -> None:
    assert chart_digest(_sample(**{"Chart.yaml": chart_yaml})) == chart_digest(_sample())


@pytest.mark.parametrize(
    "chart_yaml",
    [
        b"apiVersion: v2\nname: sample\nversion: 0.0.0\nappVersion: 1.0.1\n",
        b"apiVersion: v2\nname: other\nversion: 0.0.0\n",
    ],
    ids=["app-version", "name"],
)
def test_chart_yaml_fields_other_than_version_count(chart_yaml: bytes) -> None:
    assert chart_digest(_sample(**{"Chart.yaml": chart_yaml})) != chart_digest(_sample())


def test_identify_gives_the_known_identity_with_the_files_version() -> None:
    known = [_identity(_sample())]
    assert identify(_sample(), known=known) == known[0]
    stamped = identify(_sample(**{"Chart.yaml": CHART_YAML.replace(b"0.0.0", b"2.5.0")}), known=known)
    assert stamped is not None and stamped.version == "2.5.0" and stamped.digest == known[0].digest
    assert identify(_sample(**{"values.yaml": b"size: 3\n"}), known=known) is None


def test_the_shipped_identities() -> None:
    names = [identity.name for identity in known_identities()]
    assert names == ["main", "main+gate", "pr3315", "pr3315+gate"]
    assert default_identity() == by_name("main")
    assert len({identity.digest for identity in known_identities()}) == len(names)
    for identity in known_identities():
        assert identity.gated == identity.name.endswith("+gate")
        assert identity.upstream == identity.name.removesuffix("+gate")
        assert ChartIdentity.from_dict(identity.as_dict()) == identity
    assert by_name("main").rules == ChartRules()
    assert by_name("pr3315").rules == ChartRules(("cluster", "storageClass"), True, True, True)
    assert by_name("pr3315+gate").rules == by_name("pr3315").rules


def test_describe_names_the_chart_for_people() -> None:
    text = by_name("main+gate").describe()
    assert text.startswith(
        "main+gate (cozystack main 3c780acd4, with the workerclass chart gate), version 0.0.0, sha256:"
    )


# ------------------------------------------------------------------ the real charts


UPSTREAM = {"main": "kubernetes-nodes", "pr3315": "kubernetes-nodes-pr3315"}


@pytest.mark.parametrize("name", UPSTREAM, ids=list(UPSTREAM))
def test_the_mirrors_charts_are_known(name: str) -> None:
    folder = chart_path(name)
    found = identify(read_chart(folder))
    assert found == by_name(name)


@pytest.mark.parametrize("name", UPSTREAM, ids=list(UPSTREAM))
def test_the_gated_charts_are_known(name: str, tmp_path: Path) -> None:
    folder = chart_path(name)
    if shutil.which("patch") is None:
        pytest.skip("patch is not installed")
    copy = writable_copy(folder, tmp_path)
    patch = ROOT / "deploy" / "chart-gate" / f"kubernetes-nodes-{name}.patch"
    subprocess.run(["patch", "-p1", "--fuzz=0", "--quiet", "-i", str(patch)], cwd=copy, check=True)
    assert identify(read_chart(copy)) == by_name(f"{name}+gate")


@pytest.mark.parametrize("template", ["nodegroup.yaml", "talos-reconcile-job.yaml", "_helpers.tpl"])
def test_one_changed_character_of_a_template_makes_the_chart_unknown(template: str, tmp_path: Path) -> None:
    copy = writable_copy(chart_path("main"), tmp_path)
    path = copy / "templates" / template
    text = path.read_text(encoding="utf-8")
    index = text.index("kubernetes")
    path.write_text(text[:index] + "K" + text[index + 1 :], encoding="utf-8")
    assert identify(read_chart(copy)) is None


def test_an_archive_helm_packages_has_the_folders_identity(tmp_path: Path) -> None:
    folder = chart_path("main")
    from .oracle import helm_interpreter

    python, env = helm_interpreter()
    script = (
        "import sys\nfrom helm_python import chart\n"
        "print(chart.package(sys.argv[1], destination=sys.argv[2], version=sys.argv[3]))\n"
    )
    done = subprocess.run(
        [python, "-c", script, str(folder), str(tmp_path), "1.4.2"], capture_output=True, text=True, env=env, check=True
    )
    archive = Path(done.stdout.strip().splitlines()[-1])
    found = identify(read_chart(archive))
    assert found is not None and found.name == "main" and found.version == "1.4.2"
    assert found.digest == by_name("main").digest


def test_the_facts_are_what_the_sync_script_writes_from_the_mirror() -> None:
    shared = require("upstream-cozystack").parent
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "sync-upstream.py"), "--check", "--shared", str(shared)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
