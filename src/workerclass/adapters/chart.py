"""Read a Helm chart, a folder or a packaged archive (``.tgz``), into the mapping the core identifies.

Owns :func:`read_chart` (a path: a chart folder, or a ``.tgz`` / ``.tar.gz`` archive as ``helm
package`` or Flux's source-controller writes it) and :func:`chart_archive_files` (the bytes of such
an archive, e.g. an artifact downloaded from Flux). Both give ``{path: bytes}`` with paths relative
to the chart's root, ``/``-separated: what :func:`workerclass.chart.identity.identify` and
:func:`~workerclass.chart.identity.chart_digest` take.

- A folder is read whole (symlinks followed, as Helm's loader follows them; each real folder once);
  which files count towards the digest is the core's business (``.helmignore``).
- An archive holds one top folder (the chart's name), as Helm writes it; its entries are taken
  relative to it. Links (symbolic and hard), devices, FIFOs, absolute paths and ``..`` are refused.
- A subchart packed as ``charts/<name>-<version>.tgz`` is expanded into ``charts/<name>/``, as
  Helm loads it and as ``helm package`` writes it back; ``<name>`` (its ``Chart.yaml``'s) must be a
  chart name, one path segment, so nothing lands outside ``charts/``.
- One bound for the whole read, subcharts' archives (at any depth) counted with the chart that holds
  them: at most :data:`MAX_CHART_ENTRIES` entries and :data:`MAX_CHART_BYTES` bytes expanded, so a
  chart of many small subcharts cannot add up to what none of them could alone.

Errors are :class:`ChartReadError` with the path and what is wrong, never a stack trace.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import os
import re
import tarfile
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from ..chart.identity import chart_metadata, known_identities
from ..chart.source import ChartSource
from ..chart.values import version_map
from .helm import HelmEngine, helm_engine, probe_gate

__all__ = [
    "MAX_CHART_BYTES",
    "MAX_CHART_ENTRIES",
    "ChartReadError",
    "UnknownChart",
    "archive_digest",
    "chart_archive_files",
    "read_chart",
    "read_chart_source",
    "with_engine",
]

#: Bytes a chart expands to, its subcharts' archives and their contents counted in: larger than any
#: worker-pool chart by far (Cozystack's is ~200 KB with cozy-lib), small enough to refuse a bomb.
MAX_CHART_BYTES = 64 * 1024 * 1024
#: Entries (files and folders) a chart holds, its subcharts' counted in: Cozystack's has about 40
#: with cozy-lib; each entry costs a header parse and a mapping key, so a flood of empty ones is
#: refused long before it costs memory or time.
MAX_CHART_ENTRIES = 10_000
#: a subchart's name: one path segment (Helm's chart names), never ``.``, ``..`` or a separator
_CHART_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,252}")


@dataclasses.dataclass(slots=True)
class _Budget:
    """What one read of a chart has taken so far, across every archive in it (the bounds above)."""

    entries: int = 0
    size: int = 0

    def entry(self, origin: str) -> None:
        self.entries += 1
        if self.entries > MAX_CHART_ENTRIES:
            raise ChartReadError(
                f"{origin}: holds more than {MAX_CHART_ENTRIES} entries (its subcharts' counted in), not a chart"
            )

    def take(self, size: int, origin: str) -> None:
        self.size += size
        if self.size > MAX_CHART_BYTES:
            raise ChartReadError(
                f"{origin}: expands beyond {MAX_CHART_BYTES // (1024 * 1024)} MiB (its subcharts' counted in), "
                "not a chart"
            )


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
        budget = _Budget()
        return _expand_subchart_archives(_read_folder(location, budget), str(location), budget)
    if location.is_file():
        try:
            data = location.read_bytes()
        except OSError as error:
            raise ChartReadError(f"{location}: {error.strerror or error}") from None
        return chart_archive_files(data, origin=str(location))
    raise ChartReadError(f"{location}: no such chart folder or archive")


def _read_folder(root: Path, budget: _Budget) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
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
            budget.entry(str(root))
            budget.take(len(content), str(root))
            files[full.relative_to(root).as_posix()] = content
    return files


def archive_digest(data: bytes) -> str:
    """``sha256:<hex>`` of an archive's bytes: how Flux's source-controller names an artifact's digest."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def chart_archive_files(data: bytes, *, origin: str = "the archive") -> dict[str, bytes]:
    """A packaged chart (gzip'd tar with one top folder) as ``{path: bytes}`` relative to that folder."""
    return _archive_files(data, origin, _Budget())


def _archive_files(data: bytes, origin: str, budget: _Budget) -> dict[str, bytes]:
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as archive:
            files, tops = _archive_members(archive, origin, budget)
    except (tarfile.TarError, OSError, EOFError) as error:
        raise ChartReadError(f"{origin}: not a chart folder or a .tgz chart archive ({error})") from None
    if len(tops) > 1:
        raise ChartReadError(f"{origin}: holds several top folders ({', '.join(sorted(tops))}), not one chart")
    if "Chart.yaml" not in files:
        raise ChartReadError(f"{origin}: not a Helm chart (no Chart.yaml in its top folder)")
    return _expand_subchart_archives(files, origin, budget)


def _archive_members(archive: tarfile.TarFile, origin: str, budget: _Budget) -> tuple[dict[str, bytes], set[str]]:
    files: dict[str, bytes] = {}
    tops: set[str] = set()
    for member in archive:  # one header at a time: the bound stops a flood before it is all parsed
        budget.entry(origin)
        name = PurePosixPath(member.name)
        if name.is_absolute() or ".." in name.parts:
            raise ChartReadError(f"{origin}: the entry {member.name!r} leaves the archive's folder")
        if member.isdir():
            continue
        if not member.isreg():
            raise ChartReadError(f"{origin}: the entry {member.name!r} is a link or a device, not a file")
        parts = [part for part in name.parts if part != "."]
        if len(parts) < 2:
            raise ChartReadError(f"{origin}: the entry {member.name!r} is outside the chart's top folder")
        tops.add(parts[0])
        budget.take(member.size, origin)
        extracted = archive.extractfile(member)
        if extracted is not None:  # regular files always extract
            files["/".join(parts[1:])] = extracted.read()
    return files, tops


def _expand_subchart_archives(files: Mapping[str, bytes], origin: str, budget: _Budget) -> dict[str, bytes]:
    """``charts/<x>.tgz`` -> ``charts/<name>/...`` (recursively), as Helm loads and packages subcharts;
    every archive's entries and bytes taken from the one ``budget`` of the read."""
    out: dict[str, bytes] = {}
    for path, content in files.items():
        parts = path.split("/")
        at_a_chart_root = len(parts) % 2 == 0 and all(part == "charts" for part in parts[0:-1:2])
        if not at_a_chart_root or not parts[-1].endswith((".tgz", ".tar.gz")):
            out[path] = content
            continue
        where = f"{origin}: {path}"
        inner = _archive_files(content, where, budget)
        name = str(_subchart_name(inner) or parts[-1].removesuffix(".tgz").removesuffix(".tar.gz"))
        if not _CHART_NAME.fullmatch(name):
            raise ChartReadError(
                f"{where}: {name[:64]!r} is not a chart name (letters, digits, '.', '_' and '-', one path segment), "
                "so its files would land outside charts/"
            )
        prefix = "/".join([*parts[:-1], name])
        for inner_path, inner_content in inner.items():
            out[f"{prefix}/{inner_path}"] = inner_content
    return out


def _subchart_name(files: Mapping[str, bytes]) -> str | None:
    name = chart_metadata(files.get("Chart.yaml", b"")).get("name")
    return str(name) if name else None
