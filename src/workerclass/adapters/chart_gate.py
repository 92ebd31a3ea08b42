"""Write a chart with our gate to disk, whole or not at all: what ``workerclass chart-gate`` writes.

Owns :func:`write_gated`: the gated files of :func:`workerclass.chart.gate.gate_chart` (or an
already gated chart as it is) written to a chart folder or a packaged ``.tgz``, the input's own form
or the other, in place or to a new path. The result is first written beside its destination (a
temporary folder or file in the same folder, so the last step is a rename on one filesystem), read
back and identified, and only when it is the known gated identity put in place; on any failure the
temporary copy is removed and the input and the destination are as they were. A write-protected
input (no owner write bit: a mirror, a release tree) is never rewritten in place, even by root.

- Folder to folder: a copy of the whole folder (symbolic links kept as links, modes kept), the gated
  templates written into it; in place the copy and the folder are swapped in one step where Linux's
  ``renameat2(RENAME_EXCHANGE)`` is there, else by two renames (the old folder back on a failure).
- Archive to archive: every entry copied as it is, the gated templates' bytes replaced.
- Folder to archive: what Helm packages (the files the digest counts) under one top folder named as
  the chart; archive to folder: the archive's files (subchart archives as Helm loads them, expanded).

Errors are :class:`GateWriteError`, naming the path and the problem.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import io
import os
import shutil
import stat
import tarfile
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from ..chart.identity import ChartIdentity, chart_metadata, counted_files, identify
from .chart import ChartReadError, read_chart

__all__ = ["GateWriteError", "is_archive_name", "write_gated"]


class GateWriteError(Exception):
    """The gated chart could not be written or did not read back as the gated identity."""


def is_archive_name(path: Path) -> bool:
    """Whether ``path`` names a packaged chart (``.tgz`` or ``.tar.gz``) rather than a folder."""
    return path.name.endswith((".tgz", ".tar.gz"))


def write_gated(source: Path, files: Mapping[str, bytes], changed: Mapping[str, bytes], dest: Path,
                expected: ChartIdentity) -> None:  # fmt: skip
    """Write the chart read from ``source`` (its files ``files``, the gate's new bytes ``changed``) to
    ``dest`` (``source`` itself: in place), verified to be ``expected``; :class:`GateWriteError` else."""
    in_place = dest.resolve() == source.resolve()
    if in_place and not source.stat().st_mode & stat.S_IWUSR:
        # a write-protected chart (a mirror, a release tree) is never rewritten, even by root
        raise GateWriteError(f"{source}: is write-protected; write a gated copy with --out PATH")
    if not in_place and (dest.exists() or dest.is_symlink()):
        raise GateWriteError(f"{dest}: already exists (name a new path, or gate the chart in place)")
    parent = dest.parent
    if not parent.is_dir():
        raise GateWriteError(f"{parent}: no such folder")
    to_archive = is_archive_name(dest) if not in_place else source.is_file()
    temporary = _temporary(parent, dest.name, archive=to_archive)
    try:
        if to_archive:
            if source.is_file():
                _rewrite_archive(source, changed, temporary)
            else:
                _package(files, changed, temporary)
        elif source.is_dir():
            _copy_folder(source, changed, temporary)
        else:
            _extract(files, changed, temporary)
        _verify(temporary, expected)
        if in_place and source.is_dir():
            _swap_folders(temporary, dest)
        elif in_place:
            os.replace(temporary, dest)
        else:
            _place_new(temporary, dest)
    except OSError as error:
        raise GateWriteError(f"{dest}: {error.strerror or error}") from None
    finally:
        _remove(temporary)


def _temporary(parent: Path, name: str, *, archive: bool) -> Path:
    try:
        if archive:
            handle, path = tempfile.mkstemp(prefix=f".{name}.chart-gate-", suffix=".tgz", dir=parent)
            os.close(handle)
            return Path(path)
        return Path(tempfile.mkdtemp(prefix=f".{name}.chart-gate-", dir=parent))
    except OSError as error:
        raise GateWriteError(f"{parent}: cannot write there ({error.strerror or error})") from None


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def _verify(written: Path, expected: ChartIdentity) -> None:
    try:
        found = identify(read_chart(written))
    except ChartReadError as error:
        raise GateWriteError(f"the written chart does not read back: {error}") from None
    if found is None or found.name != expected.name:
        raise GateWriteError(f"the written chart is not {expected.name} ({found.name if found else 'unknown'})")


def _copy_folder(source: Path, changed: Mapping[str, bytes], into: Path) -> None:
    into.rmdir()  # copytree makes it, with the source folder's mode
    shutil.copytree(source, into, symlinks=True)
    for path, content in changed.items():
        target = into.joinpath(*PurePosixPath(path).parts)
        folder = target.parent
        while folder != into:
            if folder.is_symlink():
                raise GateWriteError(f"{source / path}: its folder {folder.name} is a symbolic link; gate a copy")
            folder = folder.parent
        mode = target.stat().st_mode & 0o7777 if target.exists() else 0o644
        if target.is_symlink():
            target.unlink()  # the gated text goes in the folder, never through a link into another file
        target.write_bytes(content)
        target.chmod(mode)


def _extract(files: Mapping[str, bytes], changed: Mapping[str, bytes], into: Path) -> None:
    for path, content in {**files, **changed}.items():
        target = into.joinpath(*PurePosixPath(path).parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)


def _rewrite_archive(source: Path, changed: Mapping[str, bytes], into: Path) -> None:
    with tarfile.open(source, mode="r:*") as original, tarfile.open(into, mode="w:gz") as archive:
        for member in original:
            parts = [part for part in PurePosixPath(member.name).parts if part != "."]
            inside = "/".join(parts[1:])
            if member.isreg() and inside in changed:
                content = changed[inside]
                entry = tarfile.TarInfo(member.name)
                entry.mode, entry.mtime, entry.uid, entry.gid = member.mode, member.mtime, member.uid, member.gid
                entry.uname, entry.gname, entry.size = member.uname, member.gname, len(content)
                archive.addfile(entry, io.BytesIO(content))
            elif member.isreg():
                archive.addfile(member, original.extractfile(member))
            else:
                archive.addfile(member)


def _package(files: Mapping[str, bytes], changed: Mapping[str, bytes], into: Path) -> None:
    merged = {**files, **changed}
    top = str(chart_metadata(merged.get("Chart.yaml", b"")).get("name") or "chart")
    now = int(time.time())
    with tarfile.open(into, mode="w:gz") as archive:
        for path in counted_files(merged):
            entry = tarfile.TarInfo(f"{top}/{path}")
            entry.size, entry.mode, entry.mtime = len(merged[path]), 0o644, now
            archive.addfile(entry, io.BytesIO(merged[path]))


def _place_new(temporary: Path, dest: Path) -> None:
    if temporary.is_dir():
        os.rename(temporary, dest)  # a folder that appeared meanwhile makes this fail, never merges
    else:
        try:
            os.link(temporary, dest)  # never replaces a file that appeared meanwhile
        except FileExistsError:
            raise
        except OSError:  # a filesystem without hard links: the check above is all there is
            os.rename(temporary, dest)
        else:
            temporary.unlink()


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(first: Path, second: Path) -> bool:
    """Swap two paths in one step (Linux ``renameat2``); False where that is not available."""
    name = ctypes.util.find_library("c")
    if not name:
        return False
    try:
        renameat2 = ctypes.CDLL(name, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if renameat2(_AT_FDCWD, os.fsencode(first), _AT_FDCWD, os.fsencode(second), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in {38, 22, 95}:  # ENOSYS, EINVAL (the filesystem has no exchange), EOPNOTSUPP
        return False
    raise OSError(code, os.strerror(code), str(second))


def _swap_folders(temporary: Path, dest: Path) -> None:
    """Put the folder ``temporary`` at ``dest`` and the old ``dest`` at ``temporary`` (removed after)."""
    if _exchange(temporary, dest):
        return
    old = Path(tempfile.mkdtemp(prefix=f".{dest.name}.chart-gate-old-", dir=dest.parent))
    old.rmdir()
    os.rename(dest, old)
    try:
        os.rename(temporary, dest)
    except OSError:
        os.rename(old, dest)
        raise
    os.rename(old, temporary)  # the caller removes it
