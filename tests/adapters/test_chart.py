"""Reading a chart folder or a packaged archive into ``{path: bytes}``.

A small chart written here (our own text): a folder and an archive of it give the same mapping
(and so the same digest); a subchart packed as ``charts/<x>.tgz`` comes out as ``charts/<name>/``;
archives that hold links, leave their folder, hold several charts or no ``Chart.yaml`` are refused
with the path in the message and no stack trace.
"""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from workerclass.adapters import chart as chart_adapter
from workerclass.adapters.chart import ChartReadError, chart_archive_files, read_chart
from workerclass.chart.identity import chart_digest

FILES = {
    "Chart.yaml": b"apiVersion: v2\nname: sample\nversion: 0.1.0\n",
    "values.yaml": b"size: 1\n",
    "templates/thing.yaml": b"kind: Thing\n",
    "charts/lib/Chart.yaml": b"apiVersion: v2\nname: lib\nversion: 0.0.0\ntype: library\n",
    "charts/lib/templates/_lib.tpl": b"{{/* nothing */}}\n",
}


def _folder(root: Path, files: dict[str, bytes]) -> Path:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
    return root


def _archive(files: dict[str, bytes], top: str = "sample", **links: str) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, content in files.items():
            info = tarfile.TarInfo(f"{top}/{name}" if top else name)
            info.size = len(content)
            archive.addfile(info, io.BytesIO(content))
        for name, target in links.items():
            info = tarfile.TarInfo(f"{top}/{name}")
            info.type = tarfile.SYMTYPE
            info.linkname = target
            archive.addfile(info)
    return buffer.getvalue()


def test_a_folder_and_its_archive_read_alike(tmp_path: Path) -> None:
    folder = _folder(tmp_path / "sample", FILES)
    archive = tmp_path / "sample-0.1.0.tgz"
    archive.write_bytes(_archive(FILES))
    assert read_chart(folder) == FILES
    assert read_chart(archive) == FILES
    assert chart_digest(read_chart(folder)) == chart_digest(read_chart(archive))


def test_a_packed_subchart_is_expanded_under_its_name(tmp_path: Path) -> None:
    lib = {
        name.removeprefix("charts/lib/"): content for name, content in FILES.items() if name.startswith("charts/lib/")
    }
    outer = {name: content for name, content in FILES.items() if not name.startswith("charts/")}
    outer["charts/lib-0.0.0.tgz"] = _archive(lib, top="lib")
    folder = _folder(tmp_path / "sample", outer)
    assert read_chart(folder) == FILES
    tgz = tmp_path / "sample.tgz"
    tgz.write_bytes(_archive(outer))
    assert read_chart(tgz) == FILES


def test_a_symlinked_folder_is_followed_once(tmp_path: Path) -> None:
    folder = _folder(tmp_path / "sample", FILES)
    (folder / "templates" / "loop").symlink_to(folder / "templates", target_is_directory=True)
    files = read_chart(folder)
    assert files["templates/thing.yaml"] == FILES["templates/thing.yaml"]
    assert not any(name.startswith("templates/loop/loop") for name in files)


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b"not an archive at all", "not a chart folder or a .tgz chart archive"),
        (_archive(FILES, top=""), "outside the chart's top folder"),
        (_archive({"values.yaml": b"a: 1\n"}), "no Chart.yaml"),
        (_archive({**FILES, "../escape": b"x"}), "leaves the archive's folder"),
        (_archive(FILES, **{"templates/link.yaml": "/etc/passwd"}), "is a link or a device"),
    ],
    ids=["not-an-archive", "no-top-folder", "no-chart-yaml", "dot-dot", "symlink"],
)
def test_bad_archives_are_refused_with_the_reason(data: bytes, words: str) -> None:
    with pytest.raises(ChartReadError, match="^the archive: .*" + words.replace(".", r"\.")):
        chart_archive_files(data)


def test_an_archive_of_two_charts_is_refused() -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for top in ("one", "two"):
            info = tarfile.TarInfo(f"{top}/Chart.yaml")
            info.size = len(FILES["Chart.yaml"])
            archive.addfile(info, io.BytesIO(FILES["Chart.yaml"]))
    with pytest.raises(ChartReadError, match="several top folders"):
        chart_archive_files(buffer.getvalue())


def test_an_archive_that_expands_too_far_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chart_adapter, "MAX_CHART_BYTES", 1024)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        info = tarfile.TarInfo("sample/big")
        info.size = 1025
        archive.addfile(info, io.BytesIO(b"\0" * info.size))
    with pytest.raises(ChartReadError, match="expands beyond"):
        chart_archive_files(buffer.getvalue())


@pytest.mark.parametrize("make", ["missing", "folder-without-chart"], ids=["missing", "folder-without-chart"])
def test_paths_that_are_no_chart_are_named(make: str, tmp_path: Path) -> None:
    path = tmp_path / "nothing"
    if make == "folder-without-chart":
        _folder(path, {"values.yaml": b"a: 1\n"})
    with pytest.raises(ChartReadError) as raised:
        read_chart(path)
    assert str(raised.value).startswith(str(path))
