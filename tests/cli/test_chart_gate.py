"""``workerclass chart-gate DIR|TGZ``: the gate of exactly the chart given, verified, or a refusal.

On the mirror's charts (skipped without the mirror): main's and PR 3315's folders are gated in place
to their known gated identities (what ``patch`` makes of them), ``--check`` says 1 before and 0 after,
and a second run says the chart is already gated. ``--out`` writes a new folder or archive and leaves
the input alone; a packaged ``.tgz`` is gated too. A chart nobody proved (a modified copy, PR 3315's
chart with main's patch forced onto it) is refused with exit 2, naming the known charts, and nothing
is written. A failure at any step leaves the input as it was and no temporary file behind; and
``preflight`` never says ``ok`` for such a chart.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import tarfile
from pathlib import Path

import pytest

from tests.cli.test_commands_core import run
from tests.shared import ROOT, chart_path, package_chart, writable_copy
from workerclass.adapters import chart_gate as writer
from workerclass.adapters.chart import read_chart
from workerclass.chart.identity import identify, known_identities

EXAMPLES = str(ROOT / "examples")


def _name(path: Path) -> str | None:
    found = identify(read_chart(path))
    return found.name if found is not None else None


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(path.relative_to(folder)): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


def _gate(*args: str) -> tuple[int, str, str]:
    result = run("chart-gate", *args)
    return result.exit_code, result.stdout, result.stderr


def test_help_says_what_it_does_and_its_exit_codes() -> None:
    text = " ".join(run("chart-gate", "--help").stdout.split())
    assert "DIR|TGZ" in text and "--check" in text and "--out" in text
    assert "identify it by its digest" in text and "never forced onto it" in text
    assert "Exit 0" in text and "1 --check: a known chart without the gate" in text and "2 a chart workerclass" in text


@pytest.mark.parametrize("name", ["main", "pr3315"])
def test_a_known_folder_is_gated_in_place_and_checks(name: str, tmp_path: Path) -> None:
    copy = writable_copy(chart_path(name), tmp_path)
    code, _, stderr = _gate(str(copy), "--check")
    assert code == 1 and f"{name} " in stderr and f"makes it {name}+gate" in stderr
    code, stdout, _ = _gate(str(copy))
    assert code == 0 and f"into {name}+gate" in stdout and "in place" in stdout
    assert _snapshot(copy) == _snapshot(chart_path(f"{name}+gate"))  # what patch makes of it
    assert sorted(path.name for path in tmp_path.iterdir()) == [copy.name]  # no temporary left
    code, stdout, _ = _gate(str(copy), "--check")
    assert code == 0 and "already gated" in stdout
    code, stdout, _ = _gate(str(copy))
    assert code == 0 and "already gated" in stdout and "nothing to do" in stdout


def test_out_writes_a_new_folder_or_archive_and_leaves_the_input(tmp_path: Path) -> None:
    source = chart_path("pr3315")
    before = _snapshot(source)
    code, stdout, _ = _gate(str(source), "--out", str(tmp_path / "gated"))
    assert code == 0 and "written to" in stdout and _name(tmp_path / "gated") == "pr3315+gate"
    code, _, _ = _gate(str(source), "--out", str(tmp_path / "gated.tgz"))
    assert code == 0 and _name(tmp_path / "gated.tgz") == "pr3315+gate"
    with tarfile.open(tmp_path / "gated.tgz") as archive:
        assert {name.split("/")[0] for name in archive.getnames()} == {"kubernetes-nodes"}
    assert _snapshot(source) == before
    code, _, stderr = _gate(str(source), "--out", str(tmp_path / "gated"))
    assert code == 2 and "already exists" in stderr


def test_a_packaged_archive_is_gated_in_place_and_to_a_folder(tmp_path: Path) -> None:
    archive = tmp_path / "kubernetes-nodes-0.0.0.tgz"
    archive.write_bytes(package_chart(chart_path("main")))
    code, _, _ = _gate(str(archive), "--out", str(tmp_path / "folder"))
    assert code == 0 and _name(tmp_path / "folder") == "main+gate" and _name(archive) == "main"
    code, stdout, _ = _gate(str(archive))
    assert code == 0 and "in place" in stdout and _name(archive) == "main+gate"
    with tarfile.open(archive) as gated, tarfile.open(fileobj=io.BytesIO(package_chart(chart_path("main")))) as old:
        assert gated.getnames() == old.getnames()  # every entry kept, in its order
    assert _gate(str(archive), "--check")[0] == 0
    assert sorted(path.name for path in tmp_path.iterdir()) == ["folder", archive.name]


def _unknown(tmp_path: Path) -> Path:
    copy = writable_copy(chart_path("main"), tmp_path)
    values = copy / "values.yaml"
    values.write_text(values.read_text() + "# a hoster's own line\n")
    return copy


def test_an_unknown_chart_is_refused_naming_the_known_ones(tmp_path: Path) -> None:
    copy = _unknown(tmp_path)
    before = _snapshot(copy)
    for args in ([str(copy)], [str(copy), "--check"], [str(copy), "--out", str(tmp_path / "out")]):
        code, stdout, stderr = _gate(*args)
        assert code == 2 and stdout == "" and "not a chart workerclass knows" in stderr
        assert all(identity.name in stderr for identity in known_identities())
    assert _snapshot(copy) == before and sorted(path.name for path in tmp_path.iterdir()) == [copy.name]


def test_the_other_versions_patch_forced_onto_a_chart_is_refused(tmp_path: Path) -> None:
    copy = writable_copy(chart_path("pr3315"), tmp_path)
    patch = ROOT / "deploy" / "chart-gate" / "kubernetes-nodes-main.patch"
    subprocess.run(["patch", "-p1", "--fuzz=0", "--quiet", "-i", str(patch)], cwd=copy, check=True)
    assert _gate(str(copy))[0] == 2
    report = json.loads(run("chart-gate", str(copy), "--check", "-o", "json").stdout)
    assert report["status"] == "unknown" and report["identity"] is None and report["gated"] is None
    checks = json.loads(run("preflight", EXAMPLES, "--chart", str(copy), "-o", "json").stdout)["checks"]
    (emulated, *_) = [check for check in checks if check["check"] == "chart"]
    assert emulated["verdict"] == "fail" and "chart-gate" in emulated["message"]


def test_the_json_report(tmp_path: Path) -> None:
    copy = writable_copy(chart_path("main"), tmp_path)
    report = json.loads(run("chart-gate", str(copy), "-o", "json").stdout)
    assert report == {
        "chart": str(copy),
        "status": "applied",
        "identity": "main",
        "digest": report["digest"],
        "gated": "main+gate",
        "written": str(copy),
        "message": report["message"],
    }


def test_unreadable_input_and_usage_errors_exit_two(tmp_path: Path) -> None:
    assert _gate(str(tmp_path / "absent"))[0] == 2
    assert _gate(str(tmp_path), "--check", "--out", str(tmp_path / "x"))[0] == 2


# ------------------------------------------------------------------ whole or not at all


def test_a_result_that_does_not_verify_is_not_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy = writable_copy(chart_path("main"), tmp_path)
    before = _snapshot(copy)

    def refuse(written: Path, expected: object) -> None:
        raise writer.GateWriteError("the written chart is not main+gate (unknown)")

    monkeypatch.setattr(writer, "_verify", refuse)
    code, _, stderr = _gate(str(copy))
    assert code == 2 and "nothing was written" in stderr
    assert _snapshot(copy) == before and sorted(path.name for path in tmp_path.iterdir()) == [copy.name]


def test_a_write_that_fails_midway_leaves_the_input(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy = writable_copy(chart_path("pr3315"), tmp_path)
    before = _snapshot(copy)
    real = Path.write_bytes
    calls: list[Path] = []

    def second_write_fails(self: Path, data: bytes) -> int:
        calls.append(self)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return real(self, data)

    monkeypatch.setattr(Path, "write_bytes", second_write_fails)
    code, _, stderr = _gate(str(copy))
    monkeypatch.undo()
    assert code == 2 and "No space left on device" in stderr and len(calls) == 2
    assert _snapshot(copy) == before and sorted(path.name for path in tmp_path.iterdir()) == [copy.name]


def test_a_failed_swap_puts_the_old_folder_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy = writable_copy(chart_path("main"), tmp_path)
    before = _snapshot(copy)
    real = os.rename
    calls: list[tuple[str, str]] = []

    def second_rename_fails(first: object, second: object) -> None:
        calls.append((str(first), str(second)))
        if len(calls) == 2:
            raise OSError(18, "Invalid cross-device link")
        real(first, second)  # type: ignore[arg-type]

    monkeypatch.setattr(writer, "_exchange", lambda first, second: False)
    monkeypatch.setattr(writer.os, "rename", second_rename_fails)
    code, _, _ = _gate(str(copy))
    monkeypatch.undo()
    assert code == 2 and len(calls) == 3  # away, (in: fails), back
    assert _snapshot(copy) == before and sorted(path.name for path in tmp_path.iterdir()) == [copy.name]


def test_the_swap_without_renameat2_still_gates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy = writable_copy(chart_path("main"), tmp_path)
    monkeypatch.setattr(writer, "_exchange", lambda first, second: False)
    assert _gate(str(copy))[0] == 0 and _name(copy) == "main+gate"
    assert sorted(path.name for path in tmp_path.iterdir()) == [copy.name]


def test_a_write_protected_chart_is_never_rewritten_in_place(tmp_path: Path) -> None:
    copy = writable_copy(chart_path("main"), tmp_path)
    copy.chmod(0o555)
    try:
        code, _, stderr = _gate(str(copy))
        assert code == 2 and "write-protected" in stderr and "--out PATH" in stderr and _name(copy) == "main"
        assert _gate(str(copy), "--out", str(tmp_path / "gated"))[0] == 0 and _name(tmp_path / "gated") == "main+gate"
    finally:
        copy.chmod(0o755)
