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


def _members(top: str, *members: tarfile.TarInfo, files: dict[str, bytes] | None = None) -> bytes:
    """An archive of ``files`` under ``top`` plus ``members`` as given (links, devices, folders)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, content in (files or {}).items():
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size = len(content)
            archive.addfile(info, io.BytesIO(content))
        for member in members:
            archive.addfile(member)
    return buffer.getvalue()


def _special(name: str, kind: bytes, linkname: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = linkname
    return info


@pytest.mark.parametrize(
    "member",
    [
        _special("sample/templates/hard.yaml", tarfile.LNKTYPE, "sample/values.yaml"),
        _special("sample/templates/tty", tarfile.CHRTYPE),
        _special("sample/templates/disk", tarfile.BLKTYPE),
        _special("sample/templates/pipe", tarfile.FIFOTYPE),
    ],
    ids=["hardlink", "character-device", "block-device", "fifo"],
)
def test_links_and_devices_are_refused(member: tarfile.TarInfo) -> None:
    with pytest.raises(ChartReadError, match="is a link or a device"):
        chart_archive_files(_members("sample", member, files=FILES))


def _with_subchart(outer_files: dict[str, bytes], inner_files: dict[str, bytes]) -> bytes:
    inner = {"Chart.yaml": b"apiVersion: v2\nname: lib\nversion: 0.0.0\n", **inner_files}
    return _archive({**outer_files, "charts/lib-0.0.0.tgz": _archive(inner, top="lib")})


def test_the_entries_of_subcharts_count_with_the_charts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each archive under the bound, together over it: refused (a chart of many small subcharts)."""
    monkeypatch.setattr(chart_adapter, "MAX_CHART_ENTRIES", 10)
    few = {f"templates/{n}.yaml": b"a: 1\n" for n in range(4)}
    chart_archive_files(_with_subchart({"Chart.yaml": FILES["Chart.yaml"], **few}, {}))  # 6 + 1 + 1 entries
    with pytest.raises(ChartReadError, match="more than 10 entries"):
        chart_archive_files(_with_subchart({"Chart.yaml": FILES["Chart.yaml"], **few}, few))


def test_folders_count_as_entries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chart_adapter, "MAX_CHART_ENTRIES", 10)
    folders = []
    for n in range(20):
        info = tarfile.TarInfo(f"sample/empty-{n}")
        info.type = tarfile.DIRTYPE
        folders.append(info)
    with pytest.raises(ChartReadError, match="more than 10 entries"):
        chart_archive_files(_members("sample", *folders, files={"Chart.yaml": FILES["Chart.yaml"]}))


def test_the_bytes_of_subcharts_count_with_the_charts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each archive under the byte bound, their expansion together over it: refused."""
    monkeypatch.setattr(chart_adapter, "MAX_CHART_BYTES", 4096)
    blob = {"files/blob": b"\0" * 1500}
    chart_archive_files(_with_subchart({"Chart.yaml": FILES["Chart.yaml"]}, blob))
    with pytest.raises(ChartReadError, match="expands beyond"):
        chart_archive_files(
            _with_subchart({"Chart.yaml": FILES["Chart.yaml"], **blob}, {**blob, "files/b2": blob["files/blob"]})
        )


def test_subcharts_nested_deep_share_one_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chart_adapter, "MAX_CHART_ENTRIES", 12)
    inner = _archive({"Chart.yaml": b"apiVersion: v2\nname: n0\nversion: 0.0.0\n"}, top="n0")
    for depth in range(1, 8):
        inner = _archive(
            {
                "Chart.yaml": f"apiVersion: v2\nname: n{depth}\nversion: 0.0.0\n".encode(),
                f"charts/n{depth - 1}.tgz": inner,
            },
            top=f"n{depth}",
        )
    with pytest.raises(ChartReadError, match="more than 12 entries"):
        chart_archive_files(_archive({"Chart.yaml": FILES["Chart.yaml"], "charts/n7.tgz": inner}))


@pytest.mark.parametrize(
    "name",
    ["../../escape", "..", "a/b", ".", "lib\\..\\x"],
    ids=["dot-dot-path", "dot-dot", "slash", "dot", "backslash"],
)
def test_a_subchart_named_outside_its_folder_is_refused(name: str) -> None:
    inner = _archive({"Chart.yaml": f"apiVersion: v2\nname: {name!r}\nversion: 0.0.0\n".encode()}, top="lib")
    with pytest.raises(ChartReadError, match="not a chart name"):
        chart_archive_files(_archive({**FILES, "charts/lib-0.0.0.tgz": inner}))


def test_the_bounds_have_their_reasons() -> None:
    assert chart_adapter.MAX_CHART_ENTRIES >= 1000 and chart_adapter.MAX_CHART_BYTES >= 16 * 1024 * 1024
