"""Where the tests find the upstream mirror, and what they do without it.

The mirror (Cozystack's charts, their helm-unittest suites, the upstream CRDs, the oracle) is
never copied into the repository: tests read it where it lives, ``$WORKERCLASS_SHARED`` or else
``../shared`` beside the repository (where CI has it). A test that needs it calls :func:`require`
(or :func:`unavailable` with its own reason): without the mirror it skips with a reason that says
to set ``WORKERCLASS_SHARED``, and under ``CI=true`` it fails instead, so CI cannot pass by skipping.
"""

from __future__ import annotations

import atexit
import functools
import io
import os
import shutil
import stat
import subprocess
import tarfile
import tempfile
from pathlib import Path

import pytest

from workerclass.adapters.chart import read_chart
from workerclass.chart.source import ChartSource

ROOT = Path(__file__).resolve().parents[1]
#: the environment variable that points the tests at a mirror elsewhere
SHARED_ENV = "WORKERCLASS_SHARED"


def shared_dir() -> Path:
    """``$WORKERCLASS_SHARED``, else ``../shared`` beside the repository (it may not exist)."""
    configured = os.environ.get(SHARED_ENV)
    return Path(configured) if configured else ROOT.parent / "shared"


def unavailable(reason: str, *, module: bool = False) -> None:
    """Skip with ``reason`` (the whole module when ``module``); under ``CI=true`` fail instead."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI=true: the upstream mirror must be there)", pytrace=False)
    pytest.skip(reason, allow_module_level=module)


def require(*parts: str, module: bool = False) -> Path:
    """``shared_dir()/parts...``, or skip (fail under ``CI=true``) with a reason naming the setting."""
    path = shared_dir().joinpath(*parts)
    if not path.exists():
        unavailable(
            f"the upstream mirror is absent: {path} (set {SHARED_ENV} to a folder with upstream-cozystack/, "
            "upstream-crds/ and tools/)",
            module=module,
        )
    return path


#: The charts of the mirror the tests render, by the oracle's name for them; ``<name>+gate`` is the
#: same chart with our gate patch (``deploy/chart-gate/``) applied, in a scratch copy.
UPSTREAM_CHARTS = {"main": "kubernetes-nodes", "pr3315": "kubernetes-nodes-pr3315", "pr3571": "kubernetes-nodes-pr3571"}


def writable_copy(source: Path, into: Path) -> Path:
    """A copy of the chart folder ``source`` under ``into`` that tests may change (the mirror is read-only)."""
    copy = into / source.name
    shutil.copytree(source, copy)
    for path in [copy, *copy.rglob("*")]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)
    return copy


@functools.cache
def _gated(name: str) -> Path:
    """A scratch copy of the mirror's chart ``name`` with our gate applied (removed at exit)."""
    scratch = Path(tempfile.mkdtemp(prefix="workerclass-gated-"))
    atexit.register(shutil.rmtree, scratch, True)
    copy = writable_copy(shared_dir() / "upstream-cozystack" / UPSTREAM_CHARTS[name], scratch)
    patch = ROOT / "deploy" / "chart-gate" / f"kubernetes-nodes-{name}.patch"
    subprocess.run(["patch", "-p1", "--fuzz=0", "--quiet", "-i", str(patch)], cwd=copy, check=True)
    return copy


def chart_path(name: str = "main", *, module: bool = False) -> Path:
    """The folder of the mirror's chart ``name`` (``main``, ``pr3315``, ``pr3571``, or one of the first
    two with ``+gate``): skip, or fail under ``CI=true``, without the mirror."""
    upstream = name.removesuffix("+gate")
    path = require("upstream-cozystack", UPSTREAM_CHARTS[upstream], module=module)
    return _gated(upstream) if name.endswith("+gate") else path


@functools.cache
def _chart(name: str) -> ChartSource:
    path = chart_path(name)
    return ChartSource.from_files(read_chart(path), origin=f"--chart {path}")


def given_chart(name: str = "main", *, module: bool = False) -> ChartSource:
    """The mirror's chart ``name`` as ``--chart`` gives it (read once; skip or fail without the mirror)."""
    chart_path(name, module=module)
    return _chart(name)


def package_chart(chart: Path, name: str = "kubernetes-nodes") -> bytes:
    """The chart folder as a gzip'd tar with one top folder, as ``helm package`` and Flux's
    source-controller write an artifact."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for path in sorted(chart.rglob("*")):
            if path.is_file():
                archive.add(path, arcname=f"{name}/{path.relative_to(chart).as_posix()}")
    return buffer.getvalue()
