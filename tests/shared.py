"""Where the tests find Cozystack's material, and what they do without it.

Two sources, never copied into the repository:

- the upstream mirror (Cozystack's charts with their helm-unittest suites, the instance types it
  ships, the upstream CRDs), ``$WORKERCLASS_SHARED`` or else ``../shared`` beside the repository
  (where CI has it);
- a checkout of the public Cozystack repository, ``$WORKERCLASS_COZYSTACK`` (a clone of
  https://github.com/cozystack/cozystack, bare or not, holding the commits of :data:`COMMITS`):
  the chart folders (``packages/apps/kubernetes-nodes`` with ``packages/library/cozy-lib`` as its
  ``charts/cozy-lib``), the instance types and the WorkloadMonitor CRD are read from it at those
  commits with ``git``, into a cache keyed by commit, so one checkout serves every pinned commit
  whatever it has checked out.

The e2e tier's one CRD that neither holds for a user is Kairos's KairosConfigTemplate: the mirror's,
else a checkout of kairos-io/cluster-api-provider-kairos, ``$WORKERCLASS_KAIROS_PROVIDER``, at
:data:`KAIROS_PROVIDER_COMMIT`; without both only the tests that apply a Kairos template skip.

A test that needs the material calls :func:`chart_path`, :func:`require` or :func:`unavailable`:
without it the test skips with a reason that names the setting to give, and under ``CI=true`` it
fails instead, so CI cannot pass by skipping.
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
#: the environment variable that points the tests at a checkout of cozystack/cozystack
COZYSTACK_ENV = "WORKERCLASS_COZYSTACK"
#: the commits of cozystack/cozystack the tests compare with: main's snapshot and two pull requests'
#: heads (a plain clone has main; ``git fetch origin pull/3315/head pull/3571/head`` brings the others)
COMMITS = {
    "main": "3c780acd417f086f8f18d040d0d7020ff55d3ba3",
    "pr3315": "a00421aa1717a47a9a985402541ccdfdaf8a54d3",
    "pr3571": "63f64855555f8a3d7be187254450bf5b5e8745ba",
}
#: where each commit is found, for the reason of a missing one
COMMIT_REFS = {"main": "main", "pr3315": "pull/3315/head", "pr3571": "pull/3571/head"}
#: the environment variable that points the tests at a checkout of kairos-io/cluster-api-provider-kairos
KAIROS_PROVIDER_ENV = "WORKERCLASS_KAIROS_PROVIDER"
#: the commit of cluster-api-provider-kairos whose KairosConfigTemplate CRD the e2e tier serves
KAIROS_PROVIDER_COMMIT = "c3002363daa39343396b7101d0bad9e009360c3e"
CHART_IN_REPO = "packages/apps/kubernetes-nodes"
LIBRARY_IN_REPO = "packages/library/cozy-lib"
INSTANCETYPES_IN_REPO = "packages/system/kubevirt-instancetypes"


def shared_dir() -> Path:
    """``$WORKERCLASS_SHARED``, else ``../shared`` beside the repository (it may not exist)."""
    configured = os.environ.get(SHARED_ENV)
    return Path(configured) if configured else ROOT.parent / "shared"


def unavailable(reason: str, *, module: bool = False) -> None:
    """Skip with ``reason`` (the whole module when ``module``); under ``CI=true`` fail instead."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI=true: what the tests compare with must be there)", pytrace=False)
    pytest.skip(reason, allow_module_level=module)


def require(*parts: str, module: bool = False) -> Path:
    """``shared_dir()/parts...``, or skip (fail under ``CI=true``) with a reason naming the setting."""
    path = shared_dir().joinpath(*parts)
    if not path.exists():
        unavailable(
            f"the upstream mirror is absent: {path} (set {SHARED_ENV} to a folder with upstream-cozystack/ "
            "and upstream-crds/)",
            module=module,
        )
    return path


#: The charts the tests render, by name, as the mirror's folders; ``<name>+gate`` is the
#: same chart with our gate patch (``deploy/chart-gate/``) applied, in a scratch copy.
UPSTREAM_CHARTS = {"main": "kubernetes-nodes", "pr3315": "kubernetes-nodes-pr3315", "pr3571": "kubernetes-nodes-pr3571"}


def writable_copy(source: Path, into: Path) -> Path:
    """A copy of the chart folder ``source`` under ``into`` that tests may change (the sources stay as read)."""
    copy = into / source.name
    shutil.copytree(source, copy)
    for path in [copy, *copy.rglob("*")]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)
    return copy


def cache_dir() -> Path:
    """Where material read from a Cozystack checkout is kept, by commit (``$XDG_CACHE_HOME`` or ``~/.cache``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "workerclass" / "cozystack"


def _git(checkout: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", "-C", str(checkout), *args], capture_output=True, check=False)


def _has_commit(checkout: Path, commit: str) -> bool:
    return _git(checkout, "cat-file", "-e", f"{commit}^{{commit}}").returncode == 0


@functools.cache
def _extract(checkout: Path, commit: str) -> Path:
    """The chart folder and the instance-type chart of ``commit``, read with ``git archive`` into the
    cache (once per commit); the chart's ``charts/cozy-lib`` symlink becomes the library folder, as
    Helm loads a dependency (and as the mirror has it)."""
    done = cache_dir() / commit
    if (done / ".complete").is_file():
        return done
    done.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f"{commit[:12]}-", dir=done.parent))
    try:
        paths = [CHART_IN_REPO, LIBRARY_IN_REPO, INSTANCETYPES_IN_REPO]
        present = [path for path in paths if _git(checkout, "cat-file", "-e", f"{commit}:{path}").returncode == 0]
        archive = _git(checkout, "archive", "--format=tar", commit, *present)
        if archive.returncode != 0:
            raise RuntimeError(f"git archive {commit} in {checkout}: {archive.stderr.decode(errors='replace')}")
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            if hasattr(tarfile, "tar_filter"):
                tar.extractall(scratch, filter="tar")
            else:  # Python before 3.11.4: git's own archive of the commit asked for
                tar.extractall(scratch)
        chart = scratch / CHART_IN_REPO
        library = chart / "charts" / "cozy-lib"
        if library.is_symlink():
            library.unlink()
            shutil.copytree(scratch / LIBRARY_IN_REPO, library)
        (scratch / ".complete").write_text(f"{commit}\n")
        try:
            scratch.rename(done)
        except OSError:  # another session extracted it first
            shutil.rmtree(scratch, ignore_errors=True)
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    return done


def _from_checkout(name: str, what: str) -> tuple[Path | None, str]:
    """``what`` (a path in the repository) at the commit of ``name`` in ``$WORKERCLASS_COZYSTACK``,
    or None with the reason it is not there."""
    configured = os.environ.get(COZYSTACK_ENV)
    commit = COMMITS[name]
    if not configured:
        return None, f"{COZYSTACK_ENV} is not set"
    checkout = Path(configured)
    if _git(checkout, "rev-parse", "--git-dir").returncode != 0:
        return None, f"{COZYSTACK_ENV}={checkout} is not a git checkout of cozystack/cozystack"
    if not _has_commit(checkout, commit):
        return None, (
            f"{COZYSTACK_ENV}={checkout} lacks commit {commit} ({name}: "
            f"git -C {checkout} fetch https://github.com/cozystack/cozystack {COMMIT_REFS[name]})"
        )
    path = _extract(checkout.resolve(), commit) / what
    if not path.exists():
        return None, f"{what} is not in cozystack/cozystack at {commit}"
    return path, ""


def upstream_missing(name: str) -> str | None:
    """Why Cozystack's chart ``name`` is not here (neither in the mirror nor in the checkout), or None."""
    mirror = shared_dir() / "upstream-cozystack" / UPSTREAM_CHARTS[name]
    if mirror.is_dir():
        return None
    path, why = _from_checkout(name, CHART_IN_REPO)
    if path is not None:
        return None
    return (
        f"Cozystack's chart {name} (cozystack/cozystack {COMMITS[name][:9]}, {CHART_IN_REPO}) is not here: "
        f"no upstream mirror at {mirror.parent} ({SHARED_ENV}) and {why} (README: 'The upstream material')"
    )


def upstream_chart(name: str, *, module: bool = False) -> Path:
    """Cozystack's chart ``name`` (``main``, ``pr3315``, ``pr3571``) as a folder: the mirror's, else
    the checkout's at the pinned commit; skip (fail under ``CI=true``) with both reasons without either."""
    mirror = shared_dir() / "upstream-cozystack" / UPSTREAM_CHARTS[name]
    if mirror.is_dir():
        return mirror
    path, _ = _from_checkout(name, CHART_IN_REPO)
    if path is None:
        reason = upstream_missing(name)
        assert reason is not None
        unavailable(reason, module=module)
    assert path is not None
    return path


@functools.cache
def _gated(name: str) -> Path:
    """A scratch copy of Cozystack's chart ``name`` with our gate applied (removed at exit)."""
    scratch = Path(tempfile.mkdtemp(prefix="workerclass-gated-"))
    atexit.register(shutil.rmtree, scratch, True)
    copy = writable_copy(upstream_chart(name), scratch)
    patch = ROOT / "deploy" / "chart-gate" / f"kubernetes-nodes-{name}.patch"
    subprocess.run(["patch", "-p1", "--fuzz=0", "--quiet", "-i", str(patch)], cwd=copy, check=True)
    return copy


def chart_path(name: str = "main", *, module: bool = False) -> Path:
    """The folder of Cozystack's chart ``name`` (``main``, ``pr3315``, ``pr3571``, or one of the first
    two with ``+gate``): skip, or fail under ``CI=true``, without the mirror or a checkout."""
    upstream = name.removesuffix("+gate")
    path = upstream_chart(upstream, module=module)
    return _gated(upstream) if name.endswith("+gate") else path


def instancetypes_source(*, module: bool = False) -> tuple[Path, str]:
    """Where the instance types Cozystack ships are: ``("file", the mirror's instancetypes.yaml)``
    or ``("chart", the checkout's kubevirt-instancetypes chart at main)``, rendered by the caller."""
    mirror = shared_dir() / "upstream-cozystack" / "instancetypes.yaml"
    if mirror.is_file():
        return mirror, "file"
    path, why = _from_checkout("main", INSTANCETYPES_IN_REPO)
    if path is None:
        unavailable(
            f"the instance types Cozystack ships are not here: no upstream mirror at {mirror.parent} "
            f"({SHARED_ENV}) and {why}",
            module=module,
        )
    assert path is not None
    return path, "chart"


@functools.cache
def _chart(name: str) -> ChartSource:
    path = chart_path(name)
    return ChartSource.from_files(read_chart(path), origin=f"--chart {path}")


def given_chart(name: str = "main", *, module: bool = False) -> ChartSource:
    """Cozystack's chart ``name`` as ``--chart`` gives it (read once; skip or fail without a source)."""
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


#: the two CRDs no Go module serves: (the mirror's file, the repository, its environment
#: variable, the commit, the file in the repository)
UPSTREAM_CRDS = {
    "workloadmonitor": (
        "upstream-crds/cozystack-shipped/cozystack.io_workloadmonitors.yaml",
        "cozystack/cozystack",
        COZYSTACK_ENV,
        COMMITS["main"],
        "packages/system/cozystack-controller/definitions/cozystack.io_workloadmonitors.yaml",
    ),
    "kairosconfigtemplate": (
        "upstream-crds/bootstrap.cluster.x-k8s.io_kairosconfigtemplates.yaml",
        "kairos-io/cluster-api-provider-kairos",
        KAIROS_PROVIDER_ENV,
        KAIROS_PROVIDER_COMMIT,
        "config/crd/bases/bootstrap.cluster.x-k8s.io_kairosconfigtemplates.yaml",
    ),
}


def upstream_crd(which: str) -> tuple[str | None, str]:
    """The text of the CRD file ``which`` (a key of :data:`UPSTREAM_CRDS`): the mirror's, else the
    checkout's at the pinned commit (read with ``git show``); or None with the reason, naming both
    settings (and, for a checkout without the commit, the ``git fetch`` that brings it)."""
    mirrored, repository, env, commit, inside = UPSTREAM_CRDS[which]
    mirror = shared_dir() / mirrored
    if mirror.is_file():
        return mirror.read_text(), ""
    configured = os.environ.get(env)
    where = f"no upstream mirror at {mirror} ({SHARED_ENV})"
    if not configured:
        return None, f"{where} and {env} is not set (a clone of https://github.com/{repository})"
    checkout = Path(configured)
    if not _has_commit(checkout, commit):
        return None, (
            f"{where} and {env}={checkout} lacks commit {commit} "
            f"(git -C {checkout} fetch https://github.com/{repository} {commit})"
        )
    shown = _git(checkout, "show", f"{commit}:{inside}")
    if shown.returncode != 0:
        return None, f"{where} and {inside} is not in {repository} at {commit}"
    return shown.stdout.decode(), ""
