#!/usr/bin/env python3
"""Build the e2e test bed from Go modules: kube-apiserver, etcd and the Cluster API manager.

Nothing is downloaded prebuilt and nothing upstream lands in the repository: each component is
built by the machine's Go from the module proxy, in a wrapper module this script writes into the
cache, and the binaries are cached outside the repository under a folder keyed by the component's
version and the Go version (rebuilt only when either changes).

    python3 scripts/testbed.py build     # build what is missing (progress on stderr)
    python3 scripts/testbed.py path      # print the cache folder (tests read it the same way)
    python3 scripts/testbed.py status    # what is built, what is missing, and why

The cache is ``$WORKERCLASS_TESTBED`` or ``~/.cache/workerclass/testbed``. After a build,
``<cache>/build-stats.json`` records each component's wall and CPU time and peak memory (the
machine's used memory sampled every 0.5 s) and the whole build's wall time, the figures
bench/README.md quotes. Two lanes build at once (:data:`LANES`).

A cold build (nothing cached: no binary, no compiled package, no downloaded module) is measured by
pointing both caches at empty folders; the Go build cache follows the test bed's unless ``GOCACHE``
is set:

    WORKERCLASS_TESTBED=/tmp/cold GOMODCACHE=/tmp/cold-mod python3 scripts/testbed.py build

Versions (change one and only that component is rebuilt):

- kube-apiserver from ``k8s.io/kubernetes`` v1.37.2, the newest 1.3x the module proxy serves that
  builds with Go 1.26 (its go.mod says ``go 1.26.0``). ``go install`` of the module is refused,
  because its staging modules are ``replace`` d to folders of the repository; the wrapper module
  requires ``k8s.io/kubernetes`` and replaces each staging module by its published v0.Y.Z
  (kubernetes/kubernetes#79384). The list of staging modules is read from the go.mod of the version
  picked, not written here.
- etcd v3.6.16 through a two-line ``main`` around ``go.etcd.io/etcd/server/v3/etcdmain``.
- the Cluster API core manager v1.10.1 (the version Cozystack ships), ``go install``ed as is.
- kube-controller-manager from the same ``k8s.io/kubernetes`` wrapper, run with its garbage
  collector only, so that owner references delete what they own on the test bed as in a cluster.
- kubectl from the same wrapper: the e2e tier runs the talos-reconcile Job's own script with it.
- the Talos bootstrap provider (CABPT) v0.6.12, the version Cozystack ships, through a wrapper
  module (its go.mod has a replace); its webhook refuses every change of a TalosConfigTemplate's spec.
- the KubeVirt infrastructure provider (CAPK) v0.1.10, the version Cozystack ships, through the same
  wrapper module; its webhook validates KubevirtMachineTemplates.
- ``crd-modules``: nothing built, the Go modules whose CRD files the e2e tier installs downloaded
  into the module cache (:data:`CRD_MODULES`, keyed by a digest of their versions).
- ``kairos-schema``: our program in ``tests/e2e/kairos_schema`` against kairos-sdk v0.0.21, which
  validates Kairos cloud-configs with Kairos's own schema code (not a server).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

KUBERNETES = "v1.37.2"
ETCD = "v3.6.16"
CLUSTER_API = "v1.10.1"


def cache_root() -> Path:
    configured = os.environ.get("WORKERCLASS_TESTBED")
    if configured:
        return Path(configured).expanduser()
    return Path.home() / ".cache" / "workerclass" / "testbed"


def say(message: str) -> None:
    print(f"testbed: {message}", file=sys.stderr, flush=True)


#: where Go's own installer puts it, for an environment whose PATH leaves it out (a CI shell)
GO_LOCATIONS = ("/usr/local/go/bin/go",)


def find_go() -> str | None:
    """The ``go`` command: on PATH, else ``$GOROOT/bin/go`` or the standard location, whose folder
    is then put on this process's PATH, so the builds (and the tests' ``go mod download``) find it."""
    go = shutil.which("go")
    if go is not None:
        return go
    goroot = os.environ.get("GOROOT")
    for candidate in ([f"{goroot}/bin/go"] if goroot else []) + list(GO_LOCATIONS):
        if os.access(candidate, os.X_OK):
            os.environ["PATH"] = os.path.dirname(candidate) + os.pathsep + os.environ.get("PATH", "")
            return candidate
    return None


def go_version() -> str | None:
    go = find_go()
    if go is None:
        return None
    out = subprocess.run([go, "env", "GOVERSION"], capture_output=True, text=True, check=False)
    return out.stdout.strip() or None


def component_dir(name: str, version: str, gover: str) -> Path:
    return cache_root() / f"{name}-{version}-{gover}"


class MemorySampler:
    """Peak used memory of the machine (MemTotal - MemAvailable) while a build runs."""

    def __init__(self) -> None:
        self.baseline = self._used()
        self.peak = self.baseline
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @staticmethod
    def _used() -> int:
        fields: dict[str, int] = {}
        with open("/proc/meminfo") as f:
            for line in f:
                key, _, rest = line.partition(":")
                fields[key] = int(rest.split()[0]) * 1024
        return fields["MemTotal"] - fields["MemAvailable"]

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            self.peak = max(self.peak, self._used())

    def __enter__(self) -> MemorySampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


#: the CPU seconds of the commands a build thread ran (each lane builds one component at a time)
_CPU = threading.local()


def run(cmd: list[str], cwd: Path, env: dict[str, str]) -> None:
    say("$ " + " ".join(cmd))
    proc = subprocess.Popen(cmd, cwd=cwd, env=env)
    _, status, usage = os.wait4(proc.pid, 0)  # the command's CPU with that of the compilers it ran
    proc.returncode = os.waitstatus_to_exitcode(status)
    _CPU.seconds = getattr(_CPU, "seconds", 0.0) + usage.ru_utime + usage.ru_stime
    if proc.returncode != 0:
        raise SystemExit(f"testbed: {' '.join(cmd[:3])} failed with exit code {proc.returncode}")


def go_env(workdir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("GOFLAGS", "-buildvcs=false")
    env["GOWORK"] = "off"
    env["CGO_ENABLED"] = env.get("CGO_ENABLED", "0")
    env.setdefault("GOCACHE", str(cache_root() / "go-build-cache"))
    return env


def staging_modules(version: str, workdir: Path, env: dict[str, str]) -> list[str]:
    """The staging modules of k8s.io/kubernetes at VERSION: the go.mod's `=> ./staging/...` replaces."""
    out = subprocess.run(
        ["go", "mod", "download", "-json", f"k8s.io/kubernetes@{version}"],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise SystemExit(f"testbed: cannot download k8s.io/kubernetes@{version}: {out.stderr.strip()}")
    gomod = Path(json.loads(out.stdout)["GoMod"]).read_text()
    return sorted(set(re.findall(r"^\s*(k8s\.io/[\w.-]+)\s+=>\s+\./staging/", gomod, flags=re.M)))


def build_kube_apiserver(dest: Path, gover: str) -> None:
    _build_kubernetes(dest, "kube-apiserver")


def build_kube_controller_manager(dest: Path, gover: str) -> None:
    """Only for its garbage collector: owner references are honoured on the test bed as in a cluster."""
    _build_kubernetes(dest, "kube-controller-manager")


def _build_kubernetes(dest: Path, command: str) -> None:
    work = dest / "src"
    work.mkdir(parents=True, exist_ok=True)
    env = go_env(work)
    (work / "go.mod").write_text(f"module workerclass.test/{command}\n\ngo 1.26.0\n")
    staging = staging_modules(KUBERNETES, work, env)
    say(f"k8s.io/kubernetes {KUBERNETES}: {len(staging)} staging modules replaced by their v0 releases")
    minor = KUBERNETES.lstrip("v").split(".", 1)[1]  # "37.2"
    lines = [
        f"module workerclass.test/{command}",
        "",
        "go 1.26.0",
        "",
        f"require k8s.io/kubernetes {KUBERNETES}",
        "",
    ]
    lines.append("replace (")
    lines += [f"\t{m} => {m} v0.{minor}" for m in staging]
    lines += [")", ""]
    (work / "go.mod").write_text("\n".join(lines))
    run(["go", "get", f"k8s.io/kubernetes/cmd/{command}@{KUBERNETES}"], work, env)
    major, kminor = KUBERNETES.lstrip("v").split(".")[:2]
    ldflags = " ".join(
        [
            f"-X k8s.io/component-base/version.gitVersion={KUBERNETES}",
            f"-X k8s.io/component-base/version.gitMajor={major}",
            f"-X k8s.io/component-base/version.gitMinor={kminor}",
            "-X k8s.io/component-base/version.gitTreeState=clean",
            "-s -w",
        ]
    )
    run(
        [
            "go",
            "build",
            "-ldflags",
            ldflags,
            "-o",
            str(dest / command),
            f"k8s.io/kubernetes/cmd/{command}",
        ],
        work,
        env,
    )


def build_etcd(dest: Path, gover: str) -> None:
    work = dest / "src"
    work.mkdir(parents=True, exist_ok=True)
    env = go_env(work)
    (work / "go.mod").write_text("module workerclass.test/etcd\n\ngo 1.26.0\n")
    (work / "main.go").write_text(
        "// A wrapper main: the etcd server module's own main has relative replaces.\n"
        "package main\n\n"
        'import (\n\t"os"\n\n\t"go.etcd.io/etcd/server/v3/etcdmain"\n)\n\n'
        "func main() { etcdmain.Main(os.Args) }\n"
    )
    run(["go", "get", f"go.etcd.io/etcd/server/v3@{ETCD}"], work, env)
    run(["go", "mod", "tidy"], work, env)
    run(["go", "build", "-ldflags", "-s -w", "-o", str(dest / "etcd"), "."], work, env)


def build_cluster_api(dest: Path, gover: str) -> None:
    work = dest
    env = go_env(work)
    env["GOBIN"] = str(dest)
    run(["go", "install", "-ldflags", "-s -w", f"sigs.k8s.io/cluster-api@{CLUSTER_API}"], work, env)
    built = dest / "cluster-api"
    if built.exists():
        built.rename(dest / "capi-manager")


def build_kubectl(dest: Path, gover: str) -> None:
    """kubectl from the same wrapper module: the e2e tier runs the talos-reconcile Job's script with it."""
    _build_kubernetes(dest, "kubectl")


# --------------------------------------------------------------------------- the Talos bootstrap provider
# CABPT, the version Cozystack ships. Its go.mod has a replace (cel-go), so ``go install`` of the
# module is refused: a wrapper module requires it, repeats that replace (read from the module's own
# go.mod, not written here) and builds its main package.

CABPT = "v0.6.12"
CABPT_MODULE = "github.com/siderolabs/cluster-api-bootstrap-provider-talos"


def build_cabpt(dest: Path, gover: str) -> None:
    _build_wrapped(dest, CABPT_MODULE, CABPT, "cabpt-manager")


def _build_wrapped(dest: Path, module: str, version: str, binary: str) -> None:
    """MODULE's main package built through a wrapper module that requires it and repeats its
    ``replace`` lines (read from the module's own go.mod, not written here): ``go install`` of a
    module with replaces is refused, and ``go install`` at a version asks the proxy for the module's
    version list, which it may refuse."""
    work = dest / "src"
    work.mkdir(parents=True, exist_ok=True)
    env = go_env(work)
    out = subprocess.run(
        ["go", "mod", "download", "-json", f"{module}@{version}"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise SystemExit(f"testbed: cannot download {module}@{version}: {out.stderr.strip()}")
    gomod = Path(json.loads(out.stdout)["GoMod"]).read_text()
    go_line = re.search(r"^go (\S+)", gomod, flags=re.M)
    replaces = re.findall(r"^replace (\S+ => \S+ \S+)", gomod, flags=re.M)
    name = binary.removesuffix("-manager")
    lines = [
        f"module workerclass.test/{name}",
        "",
        f"go {go_line.group(1) if go_line else '1.26.0'}",
        "",
        f"require {module} {version}",
        "",
        *(f"replace {line}" for line in replaces),
        "",
    ]
    (work / "go.mod").write_text("\n".join(lines))
    (work / "tools.go").write_text(f'//go:build tools\n\npackage tools\n\nimport _ "{module}"\n')
    run(["go", "mod", "tidy"], work, env)
    run(["go", "build", "-ldflags", "-s -w", "-o", str(dest / binary), module], work, env)


# --------------------------------------------------------------------------- Kairos's schema
# Not a server: a small Go program of ours (tests/e2e/kairos_schema) that judges the cloud-configs
# workerclass renders for Kairos pools with Kairos's own code (kairos-sdk's schema package), built
# against the module proxy's kairos-sdk. Keyed by the SDK's version and a digest of our source, so
# an edit of the program rebuilds it.

KAIROS_SDK = "v0.0.21"
KAIROS_SCHEMA_SOURCE = Path(__file__).resolve().parent.parent / "tests" / "e2e" / "kairos_schema"


def kairos_schema_version() -> str:
    import hashlib

    digest = hashlib.sha256()
    for name in ("go.mod", "main.go"):
        digest.update((KAIROS_SCHEMA_SOURCE / name).read_bytes())
    return f"{KAIROS_SDK}-{digest.hexdigest()[:8]}"


def build_kairos_schema(dest: Path, gover: str) -> None:
    work = dest / "src"
    work.mkdir(parents=True, exist_ok=True)
    env = go_env(work)
    for name in ("go.mod", "main.go"):
        shutil.copyfile(KAIROS_SCHEMA_SOURCE / name, work / name)
    run(["go", "get", f"github.com/kairos-io/kairos-sdk@{KAIROS_SDK}"], work, env)
    run(["go", "mod", "tidy"], work, env)
    run(["go", "build", "-ldflags", "-s -w", "-o", str(dest / "kairos-schema"), "."], work, env)


# --------------------------------------------------------------------------- the KubeVirt provider
# CAPK, the version Cozystack main ships (packages/system/capi-providers-infraprovider: the
# InfrastructureProvider ``kubevirt`` at ``v0.1.10-infraprovider``, image capk-manager:v0.1.10), and
# the version the module proxy serves; through the same wrapper as CABPT (the proxy refuses the
# module's version list, which ``go install MODULE@VERSION`` reads).
# Its webhook validates every KubevirtMachineTemplate (a spec change under the same name is refused).

CAPK = "v0.1.10"
CAPK_MODULE = "sigs.k8s.io/cluster-api-provider-kubevirt"


def build_capk(dest: Path, gover: str) -> None:
    _build_wrapped(dest, CAPK_MODULE, CAPK, "capk-manager")


# --------------------------------------------------------------------------- the CRDs' modules
# The e2e tier installs the CRDs of Cluster API, its providers, Cilium and Flux from the files their
# Go modules publish (``config/crd/bases`` and the like), read in the module cache. Each version is
# the one Cozystack main installs where the proxy serves it (main at 3c780acd):
#
# - Cluster API v1.10.1 (capi-providers-core ``v1.10.1-core``), CABPT v0.6.12, CAPK v0.1.10: the
#   managers above; their template CRDs equal the copies Cozystack ships, but for the conversion
#   stanza (the test bed serves one version) and the labels its kustomizations add.
# - Cilium v1.19.5 (packages/system/cilium, chart 1.19.5): CiliumNetworkPolicy.
# - Flux v2.8.0 (packages/core/flux-aio): source-controller v1.8.0 (ExternalArtifact, HelmChart...),
#   helm-controller v1.5.0. The proxy refuses helm-controller v1.5.0 (and v1.4.4, v1.5.1); v1.4.3
#   is the newest it serves. Its HelmRelease v2 lacks five fields of v1.5.0 (spec.waitStrategy,
#   spec.healthCheckExprs, spec.{install,upgrade,rollback}.serverSideApply; status.inventory and
#   status.history[].action), none of which the chart, the bundle or the tests write, and still
#   serves v2beta2, which v1.5.0 dropped.
#
# Not from a module (none is served): Kairos's KairosConfigTemplate (kairos-io/cluster-api-provider-
# kairos: the proxy refuses it), Cozystack's WorkloadMonitor (github.com/cozystack/cozystack is not
# served); both stay read from the mirror. KamajiControlPlane is a stand-in CRD of the tests.

CRD_MODULES = {
    "cluster-api": ("sigs.k8s.io/cluster-api", CLUSTER_API),
    "cabpt": (CABPT_MODULE, CABPT),
    "capk": (CAPK_MODULE, CAPK),
    "cilium": ("github.com/cilium/cilium", "v1.19.5"),
    "source-controller": ("github.com/fluxcd/source-controller", "v1.8.0"),
    "helm-controller": ("github.com/fluxcd/helm-controller", "v1.4.3"),
}


def crd_modules_version() -> str:
    import hashlib

    listed = ",".join(f"{module}@{version}" for module, version in sorted(CRD_MODULES.values()))
    return hashlib.sha256(listed.encode()).hexdigest()[:8]


def build_crd_modules(dest: Path, gover: str) -> None:
    """Download every module of :data:`CRD_MODULES` into the module cache (nothing is built): the
    e2e tier then reads their CRD files offline; ``crd-modules.json`` records where each one is."""
    env = go_env(dest)
    env["GOFLAGS"] = "-mod=mod"
    where = {}
    for name, (module, version) in CRD_MODULES.items():
        say(f"$ go mod download -json {module}@{version}")
        out = subprocess.run(
            ["go", "mod", "download", "-json", f"{module}@{version}"],
            cwd=dest,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if out.returncode != 0:
            raise SystemExit(f"testbed: cannot download {module}@{version}: {out.stdout.strip()} {out.stderr.strip()}")
        where[name] = json.loads(out.stdout)["Dir"]
    (dest / "crd-modules.json").write_text(json.dumps(where, indent=2) + "\n")


COMPONENTS = [
    ("kube-apiserver", KUBERNETES, "kube-apiserver", build_kube_apiserver),
    ("etcd", ETCD, "etcd", build_etcd),
    ("cluster-api", CLUSTER_API, "capi-manager", build_cluster_api),
    ("kube-controller-manager", KUBERNETES, "kube-controller-manager", build_kube_controller_manager),
    ("kairos-schema", kairos_schema_version(), "kairos-schema", build_kairos_schema),
    ("kubectl", KUBERNETES, "kubectl", build_kubectl),
    ("cabpt", CABPT, "cabpt-manager", build_cabpt),
    ("capk", CAPK, "capk-manager", build_capk),
    ("crd-modules", crd_modules_version(), "crd-modules.json", build_crd_modules),
]


def binaries(gover: str) -> dict[str, Path]:
    return {name: component_dir(name, version, gover) / binary for name, version, binary, _ in COMPONENTS}


def cmd_build(for_tests: bool = False) -> int:
    """Build what is missing. ``for_tests`` (``make test``): without Go, say once that the e2e tier
    is skipped and why, and let the other tiers run (exit 0), except under ``CI=true``, where the
    tier is required and a missing Go or a failed build fails."""
    required = os.environ.get("CI") == "true"
    gover = go_version()
    if gover is None:
        if for_tests:
            say("e2e tier skipped: Go is not installed (no 'go' on PATH), so the test bed cannot be built.")
            say("Install Go 1.26 or newer to run it; 'make testbed' builds it alone.")
            return 1 if required else 0
        say("Go is not installed (no 'go' on PATH): the test bed cannot be built, so the e2e tier will skip.")
        say("Install Go 1.26 or newer and run 'make testbed' again.")
        return 3
    if for_tests and not required:
        try:
            return _build_all(gover)
        except SystemExit as failure:
            say(f"{failure}")
            say("e2e tier skipped: the test bed did not build (see above); 'make testbed' retries it.")
            return 0
    return _build_all(gover)


#: the components built one after another in each of two lanes that run at once: the Kubernetes
#: commands share one module and its compiled packages (the second and third reuse the first's), so
#: they take one lane; the others, each its own module graph, the other. On two cores one lane's
#: downloads and links overlap the other's compiles.
LANES = (
    ("kube-apiserver", "kube-controller-manager", "kubectl"),
    ("etcd", "cluster-api", "kairos-schema", "cabpt", "capk", "crd-modules"),
)


def _build_all(gover: str) -> int:
    import concurrent.futures

    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    stats_path = root / "build-stats.json"
    stats = json.loads(stats_path.read_text()) if stats_path.exists() else {}
    lock = threading.Lock()
    by_name = {entry[0]: entry for entry in COMPONENTS}
    lanes = [[by_name[name] for name in lane] for lane in LANES]
    lanes += [[entry] for entry in COMPONENTS if not any(entry in lane for lane in lanes)]
    started = time.monotonic()

    def build_one(name: str, version: str, binary: str, build: Any) -> None:
        dest = component_dir(name, version, gover)
        if (dest / binary).exists():
            say(f"{name} {version} ({gover}): cached at {dest}")
            return
        say(f"{name} {version}: building with {gover} (cold builds take minutes; kube-apiserver ~10+)")
        tmp = dest.with_name(dest.name + ".partial")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        start = time.monotonic()
        _CPU.seconds = 0.0
        with MemorySampler() as mem:
            build(tmp, gover)
        elapsed = time.monotonic() - start
        shutil.rmtree(dest, ignore_errors=True)
        tmp.rename(dest)
        with lock:
            stats[f"{name}-{version}-{gover}"] = {
                "wall_s": round(elapsed, 1),
                "cpu_s": round(_CPU.seconds, 1),
                # the machine's used memory: the other lane's build counts in it too
                "peak_used_mib": round((mem.peak - mem.baseline) / 2**20),
                "cores": os.cpu_count(),
            }
            stats_path.write_text(json.dumps(stats, indent=2) + "\n")
        say(f"{name} {version}: built in {elapsed:.0f} s -> {dest / binary}")

    def build_lane(lane: list[Any]) -> None:
        for entry in lane:
            build_one(*entry)

    built_any = not all((component_dir(n, v, gover) / b).exists() for n, v, b, _ in COMPONENTS)
    with concurrent.futures.ThreadPoolExecutor(len(lanes)) as pool:
        futures = [pool.submit(build_lane, lane) for lane in lanes]
        failures = [future.exception() for future in futures]  # every lane ends before the first failure is told
    for failure in failures:
        if failure is not None:
            raise failure
    if built_any:
        with lock:
            stats["last-build"] = {
                "wall_s": round(time.monotonic() - started, 1),
                "lanes": [list(lane) for lane in LANES],
            }
            stats_path.write_text(json.dumps(stats, indent=2) + "\n")
        say(f"test bed built in {time.monotonic() - started:.0f} s")
    return 0


def cmd_status() -> int:
    gover = go_version()
    if gover is None:
        print("Go is not installed: the test bed cannot be built")
        return 3
    missing = 0
    for name, path in binaries(gover).items():
        state = "built" if path.exists() else "missing"
        missing += not path.exists()
        print(f"{name:23} {state:8} {path}")
    return 1 if missing else 0


def main(argv: list[str]) -> int:
    command = argv[1] if len(argv) > 1 else "build"
    if command == "build":
        return cmd_build(for_tests="--for-tests" in argv[2:])
    if command == "path":
        print(cache_root())
        return 0
    if command == "status":
        return cmd_status()
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
