"""Read a Helm chart, a folder or a packaged archive (``.tgz``), into the mapping the core identifies.

Owns :func:`read_chart` (a path: a chart folder, or a ``.tgz`` / ``.tar.gz`` archive as ``helm
package`` or Flux's source-controller writes it) and :func:`chart_archive_files` (the bytes of such
an archive, e.g. an artifact downloaded from Flux). Both give ``{path: bytes}`` with paths relative
to the chart's root, ``/``-separated: what :func:`workerclass.chart.identity.identify` and
:func:`~workerclass.chart.identity.chart_digest` take.

- A folder is read whole (symlinks followed, as Helm's loader follows them; each real folder once);
  which files count towards the digest is the core's business (``.helmignore``).
- An archive holds one top folder (the chart's name), as Helm writes it; its entries are taken
  relative to it. Links, devices, absolute paths and ``..`` are refused, and so are archives that
  would expand beyond :data:`MAX_CHART_BYTES`.
- A subchart packed as ``charts/<name>-<version>.tgz`` is expanded into ``charts/<name>/``, as
  Helm loads it and as ``helm package`` writes it back.

Errors are :class:`ChartReadError` with the path and what is wrong, never a stack trace.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import os
import tarfile
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from ..chart.identity import chart_metadata, known_identities
from ..chart.source import ChartSource
from ..chart.values import version_map
from .helm import HelmEngine, helm_engine, probe_gate

__all__ = [
    "MAX_CHART_BYTES",
    "ChartReadError",
    "UnknownChart",
    "archive_digest",
    "chart_archive_files",
    "read_chart",
    "read_chart_source",
    "with_engine",
]

#: Larger than any worker-pool chart by far (Cozystack's is ~200 KB), small enough to refuse a bomb.
MAX_CHART_BYTES = 64 * 1024 * 1024


class ChartReadError(Exception):
    """The chart could not be read: the message names the path and the problem."""


class UnknownChart(Exception):
    """A chart the port was not proved against, and no Helm engine to render it: the message names it."""


def read_chart_source(path: str | os.PathLike[str]) -> ChartSource:
    """The chart at ``path`` as the chart in effect: known by its digest, or rendered by Helm's engine
    (the ``helm`` extra), else :class:`UnknownChart` naming it."""
    location = Path(path)
    files = read_chart(location)
    artifacts = frozenset() if location.is_dir() else frozenset({archive_digest(location.read_bytes())})
    source = ChartSource.from_files(files, origin=f"--chart {path}", artifacts=artifacts)
    if source.known:
        return source
    engine = helm_engine(files)
    if engine is not None:
        return with_engine(source, engine)
    known = ", ".join(identity.name for identity in known_identities())
    raise UnknownChart(
        f"{path} ({source.digest}, version {source.version or '?'}) is not a chart workerclass was proved "
        f"against ({known}); to render it through Helm's own engine install the optional extra: "
        "pip install 'workerclass[helm]'"
    )


def with_engine(source: ChartSource, engine: HelmEngine) -> ChartSource:
    """``source`` (a chart of no known identity) rendered by Helm's ``engine``, and whether that
    engine leaves a pool that names a class alone (:func:`~.helm.probe_gate`: what ``ChartNotGated``
    needs of a chart no digest vouches for)."""
    minors = sorted(version_map(source.upstream), key=_minor_key)
    gate = probe_gate(engine, minors[-1]) if minors else None
    return dataclasses.replace(source, engine=engine.render, probed_gate=gate)


def _minor_key(minor: str) -> tuple[int, ...]:
    return tuple(int(part) for part in minor.lstrip("v").split(".") if part.isdigit())


def read_chart(path: str | os.PathLike[str]) -> dict[str, bytes]:
    """The chart at ``path`` (a folder or a ``.tgz`` / ``.tar.gz`` archive) as ``{path: bytes}``."""
    location = Path(path)
    if location.is_dir():
        if not (location / "Chart.yaml").is_file():
            raise ChartReadError(f"{location}: not a Helm chart (no Chart.yaml in the folder)")
        return _expand_subchart_archives(_read_folder(location), str(location))
    if location.is_file():
        try:
            data = location.read_bytes()
        except OSError as error:
            raise ChartReadError(f"{location}: {error.strerror or error}") from None
        return chart_archive_files(data, origin=str(location))
    raise ChartReadError(f"{location}: no such chart folder or archive")


def _read_folder(root: Path) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    total = 0
    seen: set[tuple[int, int]] = set()
    for folder, names, filenames in os.walk(root, followlinks=True):
        stat = os.stat(folder)
        if (stat.st_dev, stat.st_ino) in seen:
            names[:] = []
            continue
        seen.add((stat.st_dev, stat.st_ino))
        names.sort()
        for name in sorted(filenames):
            full = Path(folder) / name
            if not full.is_file():
                continue
            try:
                content = full.read_bytes()
            except OSError as error:
                raise ChartReadError(f"{full}: {error.strerror or error}") from None
            total += len(content)
            if total > MAX_CHART_BYTES:
                raise ChartReadError(f"{root}: larger than {MAX_CHART_BYTES // (1024 * 1024)} MiB, not a chart")
            files[full.relative_to(root).as_posix()] = content
    return files


def archive_digest(data: bytes) -> str:
    """``sha256:<hex>`` of an archive's bytes: how Flux's source-controller names an artifact's digest."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def chart_archive_files(data: bytes, *, origin: str = "the archive") -> dict[str, bytes]:
    """A packaged chart (gzip'd tar with one top folder) as ``{path: bytes}`` relative to that folder."""
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as archive:
            files, tops = _archive_members(archive, origin)
    except (tarfile.TarError, OSError, EOFError) as error:
        raise ChartReadError(f"{origin}: not a chart folder or a .tgz chart archive ({error})") from None
    if len(tops) > 1:
        raise ChartReadError(f"{origin}: holds several top folders ({', '.join(sorted(tops))}), not one chart")
    if "Chart.yaml" not in files:
        raise ChartReadError(f"{origin}: not a Helm chart (no Chart.yaml in its top folder)")
    return _expand_subchart_archives(files, origin)


def _archive_members(archive: tarfile.TarFile, origin: str) -> tuple[dict[str, bytes], set[str]]:
    files: dict[str, bytes] = {}
    total = 0
    tops: set[str] = set()
    for member in archive.getmembers():
        name = PurePosixPath(member.name)
        if name.is_absolute() or ".." in name.parts:
            raise ChartReadError(f"{origin}: the entry {member.name!r} leaves the archive's folder")
        if member.isdir():
            continue
        if not member.isfile():
            raise ChartReadError(f"{origin}: the entry {member.name!r} is a link or a device, not a file")
        parts = [part for part in name.parts if part != "."]
        if len(parts) < 2:
            raise ChartReadError(f"{origin}: the entry {member.name!r} is outside the chart's top folder")
        tops.add(parts[0])
        total += member.size
        if total > MAX_CHART_BYTES:
            raise ChartReadError(f"{origin}: expands beyond {MAX_CHART_BYTES // (1024 * 1024)} MiB, not a chart")
        extracted = archive.extractfile(member)
        if extracted is not None:  # regular files always extract
            files["/".join(parts[1:])] = extracted.read()
    return files, tops


def _expand_subchart_archives(files: Mapping[str, bytes], origin: str) -> dict[str, bytes]:
    """``charts/<x>.tgz`` -> ``charts/<name>/...`` (recursively), as Helm loads and packages subcharts."""
    out: dict[str, bytes] = {}
    for path, content in files.items():
        parts = path.split("/")
        at_a_chart_root = len(parts) % 2 == 0 and all(part == "charts" for part in parts[0:-1:2])
        if not at_a_chart_root or not parts[-1].endswith((".tgz", ".tar.gz")):
            out[path] = content
            continue
        inner = chart_archive_files(content, origin=f"{origin}: {path}")
        name = str(_subchart_name(inner) or parts[-1].removesuffix(".tgz").removesuffix(".tar.gz"))
        prefix = "/".join([*parts[:-1], name])
        for inner_path, inner_content in inner.items():
            out[f"{prefix}/{inner_path}"] = inner_content
    return out


def _subchart_name(files: Mapping[str, bytes]) -> str | None:
    name = chart_metadata(files.get("Chart.yaml", b"")).get("name")
    return str(name) if name else None
