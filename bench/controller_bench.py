"""Cold start and restart of the worker controller on the e2e test bed (issue: controller at scale).

``.venv/bin/python bench/controller_bench.py [--pools 2000] [--resync 10]``: a real kube-apiserver on
etcd (``make testbed``), the bundle's CRDs and RBAC (no webhook registered), Cluster API's and the
providers' CRDs (no Cluster API manager: nothing but the API server and etcd competes with the
controller), the namespace ``tenant-example`` with its parent Kubernetes ``example`` and Cluster,
and ``--pools`` classified KubernetesNodes with their HelmReleases created directly as admin
(``--tenants K`` spreads them round-robin over ``K`` tenant namespaces, each with its own parent
``example``: the RBAC the chart renders for a pool is a Role and a RoleBinding in the pool's
namespace, and the API server's escalation check of a Role or RoleBinding written by a subject
without ``escalate`` and ``bind`` reads every RoleBinding of that namespace, so thousands of pools
in one namespace cost the API server more per pool than the same pools in many). Then:

1. cold start: one ``serve controller --no-leader-elect`` process (as the controller
   ServiceAccount) and the seconds until every pool's MachineDeployment exists (pools/s), and the
   controller's write requests per pool from the audit log (by verb and resource);
2. baseline, same run: the objects the controller made, read back, stripped to what was applied,
   and server-side applied from this process (16 threads: the controller's own apply
   concurrency), twice, and the ratio controller / baseline for each:
   - as admin, on the same API server, into baseline namespaces (one beside each tenant
     namespace): ``system:masters``, which the API server's RBAC and its escalation check let
     through at once;
   - as the controller's ServiceAccount, on a second test bed prepared the same way and holding
     nothing else, into the same namespaces: the API server's cost of the controller's own
     requests, which grows with the bindings already there (every request of a subject other than
     ``system:masters`` is authorized by reading the ClusterRoleBindings, and the chart renders one
     for each pool), so this floor starts from as few as the cold start did;
3. restart: the controller stopped once settled, started again, and every write it sends over
   ``2 * resync + 5`` seconds counted (target 0);
4. per change (``--changes K``): a third controller (resync an hour away, so no full pass runs
   while it is measured) over the settled pools; after a warm-up change (applied early in its
   first pass) and once the process is quiet (its first pass over: :func:`wait_quiet`), ``K``
   pools' ``maxReplicas`` changed one at a time as Cozystack's API writes them (the
   KubernetesNodes, then its HelmRelease): the seconds from the write to the MachineDeployment's
   max-size annotation showing it (median and worst), and the controller's CPU per change (its
   process's user and system time from ``/proc`` over the changes, less its idle rate measured
   just before). Run with ``PYTHONPATH`` set to another tree's ``src`` to measure that tree's
   controller with the same harness (the before/after pairs of ``bench/README.md``), or pass
   ``--changes-also SRC``: the same phase again, on other pools of the same settled cluster, for
   the controller of the tree whose ``src`` is SRC. With ``--worker-class NAME`` every pool selects
   a custom class of that name (the built-in ``talos`` otherwise), whose status the class
   controller beside the worker controller writes on every State, so its pass is in the figure.
   ``--no-baseline`` goes from the settled cold start straight to this phase.

``--seed-as-admin`` (with ``--no-baseline``): the cold-start controller runs under an admin identity
(``system:masters``), so the API server's RBAC, whose cost per request grows with the bindings
already there, does not bound it; the objects are the controller's own render under its own field
manager, so the per-change controller (the ServiceAccount, as always) finds them settled and writes
nothing on its first pass. For the per-change phase at a size whose cold start under the account
takes over an hour on this machine; its cold-start figure is not the account's.

Run on demand, never in the test suite.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import copy
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.e2e.conftest import (  # noqa: E402
    ACCOUNT_GROUPS,
    APPLICATION_CRDS,
    CILIUM_CRDS,
    CONTROLLER_USER,
    NAMESPACE,
    TENANT,
    capi_crds,
    example_objects,
    helm_release_crds,
    install_crds,
    manifests,
    read_crds,
)
from tests.e2e.kube import Kube, KubeError  # noqa: E402
from tests.e2e.testbed import (  # noqa: E402
    ApiServer,
    CertAuthority,
    Process,
    chart_option,
    crd_module,
    find_binaries,
    wait_until,
    workerclass_command,
)

#: the admin baseline's namespace beside the e2e tier's tenant (``-NNN`` beside ``tenant-bench-NNN``)
BASELINE = "tenant-bench-baseline"
#: the controller's pool label, and the key of its annotation naming the pool's release
POOL_LABEL = "workerclass.cozystack.io/pool"
SPEC = {
    "cluster": "example", "workerClassName": "talos", "version": "v1.35",
    "minReplicas": 1, "maxReplicas": 3, "instanceType": "", "resources": {"cpu": "2", "memory": "4Gi"},
}  # fmt: skip
META_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
WRITES = ("create", "update", "patch", "delete", "deletecollection")


MAX_SIZE = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size"


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of process ``pid`` so far (``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


#: the per-change controller's first pass is over once its CPU stays this low (a share of one core) ...
QUIET_BELOW = 0.05
#: ... for this many seconds in a row (sampled each second)
QUIET_FOR = 3.0


def wait_quiet(pid: int, *, timeout: float) -> float:
    """Wait until process ``pid`` has used at most :data:`QUIET_BELOW` of a core in each second of
    :data:`QUIET_FOR` seconds in a row; the seconds waited (its quiet seconds included)."""
    started = time.monotonic()
    calm = 0
    cpu = cpu_seconds(pid)
    while calm < QUIET_FOR:
        if time.monotonic() - started > timeout:
            raise SystemExit(f"the controller (pid {pid}) was not quiet within {timeout:.0f} s")
        time.sleep(1.0)
        now = cpu_seconds(pid)
        calm = calm + 1 if now - cpu <= QUIET_BELOW else 0
        cpu = now
    return time.monotonic() - started


def per_change(kube: Kube, process: Process, names: list[tuple[str, str]], changes: int, *, turn: int = 0) -> None:
    """Phase 4: ``changes`` pools changed one at a time; latency to the applied MachineDeployment, CPU each."""
    assert process.popen is not None
    pid = process.popen.pid

    def change(pool: tuple[str, str], replicas: int, timeout: float) -> float:
        namespace, name = pool
        started = time.monotonic()
        for obj in pool_objects(namespace, name, {**SPEC, "maxReplicas": replicas}):
            kube.apply(obj, manager="cozystack-api")
        wait_until(
            lambda: (
                (kube.find("cluster.x-k8s.io/v1beta1", "MachineDeployment", f"kubernetes-{name}", namespace) or {})
                .get("metadata", {})
                .get("annotations", {})
                .get(MAX_SIZE)
                == str(replicas)
            ),
            timeout=timeout,
            interval=0.01,
            what=f"the change of {name} applied:\n" + process.tail(),
        )
        return time.monotonic() - started

    warm = change(names[0], 9 + turn, 1800)  # the first pass of the new process runs first
    print(f"per change: warm-up change applied after {warm:.2f} s (the process's first pass included)")
    # The warm-up pool is among the first the pass applies; the rest of the pass goes on after it.
    quiet = wait_quiet(pid, timeout=3600)
    print(
        f"per change: the process quiet {quiet:.1f} s after that (its first pass over: at most "
        f"{QUIET_BELOW:.0%} of a core in each of {QUIET_FOR:.0f} s in a row)"
    )
    idle_start, idle_cpu = time.monotonic(), cpu_seconds(pid)
    time.sleep(5)
    idle_rate = (cpu_seconds(pid) - idle_cpu) / (time.monotonic() - idle_start)
    latencies: list[float] = []
    profiler = None
    if os.environ.get("BENCH_PROFILE_CHANGES"):  # py-spy's collapsed stacks of the changes (not a dependency)
        import subprocess

        profiler = subprocess.Popen(
            ["py-spy", "record", "--pid", str(pid), "--format", "raw", "--rate", "100",
             "--output", os.environ["BENCH_PROFILE_CHANGES"] + (f".{turn}" if turn else ""), "--nonblocking"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        time.sleep(1)
    start, cpu = time.monotonic(), cpu_seconds(pid)
    step = max(1, len(names) // changes)
    for index in range(changes):
        pool = names[(1 + turn + index * step) % len(names)]  # each turn its own pools: a change to make
        latencies.append(change(pool, 4 + index % 3, 60))
        time.sleep(0.3)  # what the change set off (its Event, the watch's echo) settles before the next
    elapsed, used = time.monotonic() - start, cpu_seconds(pid) - cpu
    if profiler is not None:
        import signal

        profiler.send_signal(signal.SIGINT)
        profiler.wait(30)
    each = (used - idle_rate * elapsed) / changes
    latencies.sort()
    print(
        f"per change ({changes} changes, {len(names)} pools settled): applied after median "
        f"{latencies[len(latencies) // 2]:.3f} s, worst {latencies[-1]:.3f} s (write to MachineDeployment, "
        f"time.monotonic); controller CPU {each * 1000:.1f} ms per change (idle {idle_rate * 1000:.1f} ms/s "
        f"subtracted; /proc utime+stime)"
    )


def pool_objects(namespace: str, name: str, spec: dict[str, Any] = SPEC) -> list[dict[str, Any]]:
    """The pool's KubernetesNodes and HelmRelease (the e2e tier's) in ``namespace``."""
    from tests.e2e.test_workers import pool_objects as objects

    out = objects(name, spec)
    for obj in out:
        obj["metadata"]["namespace"] = namespace
    return out


def tenant_namespaces(count: int) -> list[str]:
    """The e2e tier's tenant namespace, then ``tenant-bench-NNN`` up to ``count`` in all."""
    return [TENANT, *(f"tenant-bench-{index:03d}" for index in range(1, count))]


def baseline_namespace(tenant: str) -> str:
    """Where the admin baseline puts the objects of ``tenant``'s pools."""
    return BASELINE if tenant == TENANT else f"{BASELINE}-{tenant.removeprefix('tenant-bench-')}"


def parallel(kube_of: Any, work: list[Any], fn: Any, threads: int = 16) -> None:
    local = threading.local()

    def one(item: Any) -> None:
        if not hasattr(local, "kube"):
            local.kube = kube_of()
        fn(local.kube, item)

    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        for future in [pool.submit(one, item) for item in work]:
            future.result()


def count_names(kube: Kube, path: str) -> int:
    """Objects at ``path`` (metadata only, paged: a full list of thousands is megabytes)."""
    total, token = 0, ""
    while True:
        params = {"limit": "5000", **({"continue": token} if token else {})}
        answer = kube.http.get(path, params=params, headers={"Accept": META_LIST})
        answer.raise_for_status()
        data = answer.json()
        total += len(data.get("items", []))
        token = (data.get("metadata") or {}).get("continue") or ""
        if not token:
            return total


#: the admin identity of the cold start under ``--seed-as-admin``
SEEDER = "workerclass-bench-seeder"


def writes_since(cluster: ApiServer, mark: int, user: str = CONTROLLER_USER) -> list[dict[str, Any]]:
    """``user``'s writes from audit line ``mark`` on, each kept as its verb and object reference
    (the request bodies of 280,000 writes would hold gigabytes in this process)."""
    return [
        {"verb": event["verb"], "objectRef": event.get("objectRef") or {}}
        for event in cluster.iter_requests_by(user, since=mark, verbs=WRITES)
    ]


def by_verb_resource(events: list[dict[str, Any]]) -> dict[str, int]:
    counts: collections.Counter[str] = collections.Counter(
        f"{event['verb']} {event['objectRef'].get('resource')}" for event in events
    )
    return dict(sorted(counts.items()))


def applied(client_of: Any, bodies: list[dict[str, Any]]) -> float:
    """Seconds to server-side apply ``bodies``, 16 at a time, the bindings after the roles (the
    escalation check of a binding written without ``bind`` reads the role it names, which the
    controller's own order provides)."""
    started = time.monotonic()
    for wave in (False, True):
        work = [obj for obj in bodies if (obj["kind"] in ("RoleBinding", "ClusterRoleBinding")) is wave]
        parallel(client_of, work, lambda client, obj: client.apply(obj, manager="bench-baseline"))
    return time.monotonic() - started


def stripped(obj: dict[str, Any], *, moved: bool) -> dict[str, Any]:
    """A live object back to an apply body (no owner: that pool is not there), ``moved`` to the
    admin baseline's namespace (and name, when cluster-scoped) or where it was."""
    meta = obj["metadata"]
    out = {key: copy.deepcopy(value) for key, value in obj.items() if key not in ("metadata", "status")}
    new_meta: dict[str, Any] = {"name": meta["name"]}
    for key in ("labels", "annotations"):
        # the same metadata but the controller's pool label and annotation: a copy carrying them is an
        # object of a pool that is not there, which the restarted controller rightly deletes
        kept = {name: value for name, value in (meta.get(key) or {}).items() if name != POOL_LABEL}
        if kept:
            new_meta[key] = kept
    if meta.get("namespace"):
        new_meta["namespace"] = baseline_namespace(meta["namespace"]) if moved else meta["namespace"]
    elif moved:
        new_meta["name"] = f"{meta['name']}-baseline"
    out["metadata"] = new_meta
    if out.get("kind") == "Job":  # what the Job controller added: its selector and the pods' labels for it
        spec = out.get("spec") or {}
        spec.pop("selector", None)
        labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
        for key in ("controller-uid", "batch.kubernetes.io/controller-uid", "job-name", "batch.kubernetes.io/job-name"):
            labels.pop(key, None)
    if out.get("kind") in ("RoleBinding", "ClusterRoleBinding"):
        for subject in out.get("subjects") or []:
            if moved and subject.get("namespace") == meta.get("namespace"):
                subject["namespace"] = baseline_namespace(subject["namespace"])
    return out


def controller(
    cluster: ApiServer, folder: Path, name: str, resync: float, *, admin: bool = False, src: str | None = None
) -> Process:
    """``serve controller`` as the controller's ServiceAccount (``admin``: as ``system:masters``;
    ``src``: the package of another tree's ``src`` folder, first on ``PYTHONPATH``)."""
    if admin:
        identity = cluster.identity(SEEDER, ["system:masters"])
    else:
        identity = cluster.identity(CONTROLLER_USER, ACCOUNT_GROUPS)
    return Process(
        name,
        [
            *workerclass_command(), "serve", "controller",
            "--kubeconfig", str(identity.kubeconfig), "--no-leader-elect",
            "--liveness-port", "0", "--metrics-port", "0", "--resync-interval", str(resync),
            "--log-level", os.environ.get("BENCH_CONTROLLER_LOG_LEVEL", "warning"), *chart_option(),
        ],
        folder / f"{name}.log",
        env=None if src is None else {**os.environ, "PYTHONPATH": os.path.abspath(src)},
    ).start()  # fmt: skip


def prepare(kube: Kube, binaries: Any, folder: Path, tenants: list[str], namespaces: list[str]) -> None:
    """The bundle (CRDs, RBAC; no webhook registered), the application, Flux, Cilium and Cluster API
    CRDs, the install namespace, ``tenants`` and ``namespaces``, and in each tenant namespace the
    parent Kubernetes ``example`` with its Cluster: what the controller needs to apply a pool."""
    install_crds(kube, APPLICATION_CRDS)
    install_crds(kube, helm_release_crds())
    install_crds(kube, read_crds(crd_module("cilium") / CILIUM_CRDS, "ciliumnetworkpolicies.yaml"))
    install_crds(kube, capi_crds(binaries)[0])
    ca_file = folder / "ca.crt"
    ca_file.write_bytes(CertAuthority.create("bench-ca").pem)
    bundle = [obj for obj in manifests(ca_file) if not obj["kind"].endswith("WebhookConfiguration")]
    crds = [obj for obj in bundle if obj["kind"] == "CustomResourceDefinition"]
    install_crds(kube, crds)
    # the bundle creates no namespace (the install's own exists first, as cozy-system does)
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    for obj in bundle:
        if obj["kind"] != "CustomResourceDefinition":
            kube.apply(obj, manager="bench-install")
    for namespace in [*tenants, *namespaces]:
        kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    for tenant in tenants:
        for obj in example_objects("cluster.yaml"):
            obj["metadata"]["namespace"] = tenant
            kube.apply(obj, manager="cozystack-api")
        kube.apply(
            {
                "apiVersion": "cluster.x-k8s.io/v1beta1",
                "kind": "Cluster",
                "metadata": {"name": "kubernetes-example", "namespace": tenant},
                "spec": {},
            },
            manager="bench",
        )


def start(prefix: str) -> tuple[ApiServer, Path, Any] | None:
    """A running test bed in a new folder named ``prefix...``: the API server, the folder and the
    binaries; ``None`` (said on stderr) when the test bed is not built."""
    binaries, reason = find_binaries()
    if binaries is None:
        print(f"the test bed is not available: {reason}", file=sys.stderr)
        return None
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    cluster = ApiServer(folder, binaries)
    cluster.start()
    return cluster, folder, binaries


def finish(cluster: ApiServer, folder: Path, *, keep: bool) -> None:
    """Stop the test bed; remove its folder unless ``keep`` (then say where it is)."""
    cluster.stop()
    if keep:
        print(f"kept {folder}")
        return
    from tests.e2e.testbed import rmtree

    rmtree(folder)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pools", type=int, default=2000)
    parser.add_argument("--resync", type=float, default=10.0)
    parser.add_argument(
        "--tenants", type=int, default=1, help="spread the pools round-robin over this many tenant namespaces"
    )
    parser.add_argument("--keep", action="store_true", help="keep the test bed's folder")
    parser.add_argument(
        "--profile",
        metavar="FILE",
        help="attach py-spy (pip install py-spy; not a dependency) to the cold-start controller and write its "
        "collapsed stacks to FILE",
    )
    parser.add_argument("--cold-only", action="store_true", help="stop after the cold start (no baseline, no restart)")
    parser.add_argument("--changes", type=int, default=0, help="then change this many pools one at a time (phase 4)")
    parser.add_argument(
        "--no-baseline",
        action="store_true",
        help="once settled, skip the baseline and the restart (phases 2-3): the per-change phase at a size where "
        "a second copy of every object would not fit the run",
    )
    parser.add_argument(
        "--seed-as-admin",
        action="store_true",
        help="with --no-baseline: the cold start runs as system:masters (the controller's own objects and field "
        "manager), then the per-change controller runs as the ServiceAccount over them",
    )
    parser.add_argument(
        "--changes-also",
        metavar="SRC",
        action="append",
        default=[],
        help="after this tree's per-change phase, the same phase (other pools) for the controller of the tree "
        "whose src folder is SRC, on the same settled pools: a before/after pair in one run (repeatable)",
    )
    parser.add_argument(
        "--worker-class",
        metavar="NAME",
        help="every pool selects a custom WorkerClass of this name (created first, a Talos baseline), not the "
        "built-in talos class: the class controller then writes its status on every change too",
    )
    args = parser.parse_args()
    if args.worker_class:
        SPEC["workerClassName"] = args.worker_class  # pool_objects' default and every change read it
    if args.seed_as_admin and not args.no_baseline:
        parser.error("--seed-as-admin needs --no-baseline: its cold start is not the account's")
    user = SEEDER if args.seed_as_admin else CONTROLLER_USER
    started_bed = start("controller-bench-")
    if started_bed is None:
        return 2
    cluster, folder, binaries = started_bed
    processes: list[Process] = []
    try:
        kube = Kube(cluster.url, cluster.ssl_context(), timeout=120)

        context = cluster.ssl_context()  # one: ssl_context() writes the key files, racy across threads

        def admin() -> Kube:
            return Kube(cluster.url, context, timeout=120)

        tenants = tenant_namespaces(max(1, args.tenants))
        prepare(kube, binaries, folder, tenants, [] if args.no_baseline else [baseline_namespace(t) for t in tenants])
        names = [(tenants[index % len(tenants)], f"example-bench-{index:05d}") for index in range(args.pools)]
        if args.worker_class:
            kube.apply(
                {"apiVersion": "cozystack.io/v1alpha1", "kind": "WorkerClass", "metadata": {"name": args.worker_class},
                 "spec": {"bootstrap": "talos", "talos": {"version": "v1.13.6"}}},
                manager="workerclass-bench",
            )  # fmt: skip
        started = time.monotonic()
        parallel(
            admin,
            [obj for namespace, name in names for obj in pool_objects(namespace, name)],
            lambda client, obj: client.apply(obj, manager="cozystack-api"),
        )
        print(
            f"{args.pools} pools in {len(tenants)} tenant namespace(s) created as admin in "
            f"{time.monotonic() - started:.1f} s"
        )

        md_path = kube.resource("cluster.x-k8s.io/v1beta1", "MachineDeployment").path()
        mark = cluster.audit_mark()
        started = time.monotonic()
        first = controller(cluster, folder, "controller-cold", args.resync, admin=args.seed_as_admin)
        processes.append(first)
        profiler = None
        if args.profile:
            import subprocess

            assert first.popen is not None
            profiler = subprocess.Popen(
                ["py-spy", "record", "--pid", str(first.popen.pid), "--format", "raw", "--rate", "50",
                 "--output", args.profile, "--nonblocking"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
        wait_until(
            lambda: count_names(kube, md_path) >= args.pools,
            timeout=max(1800.0, 0.2 * args.pools),  # 20,000 pools took over 30 min on a shared machine
            interval=max(1.0, args.pools / 2000),  # a list of every MachineDeployment costs the API server too
            what="every MachineDeployment:\n" + first.tail(),
        )
        cold = time.monotonic() - started
        print(f"cold start: every MachineDeployment after {cold:.1f} s", flush=True)
        cold_writes = writes_since(cluster, mark, user)
        if profiler is not None:
            import signal

            profiler.send_signal(signal.SIGINT)
            profiler.wait(30)
        if args.cold_only:
            print(f"cold start: every MachineDeployment after {cold:.1f} s: {args.pools / cold:.1f} pools/s")
            print(f"writes until then: {len(cold_writes)} ({len(cold_writes) / args.pools:.2f}/pool)")
            print(f"  by verb and resource: {by_verb_resource(cold_writes)}")
            return 0

        unsettled: list[dict[str, Any]] = []
        for _ in range(3):  # settled: a resync and more without a write (at most three tries)
            before = cluster.audit_mark()
            time.sleep(args.resync + 2)
            unsettled = writes_since(cluster, before, user)
            if not unsettled:
                break
        all_writes = writes_since(cluster, mark, user)
        first.stop(timeout=30)
        if args.no_baseline:
            print(
                f"\npools: {args.pools}; cold start{' (as admin)' if args.seed_as_admin else ''}: "
                f"every MachineDeployment after {cold:.1f} s: "
                f"{args.pools / cold:.1f} pools/s; writes until settled: {len(all_writes)}"
                + ("" if not unsettled else f" (NOT settled: {len(unsettled)} in the last {args.resync + 2:.0f} s)")
            )
            for turn, tree in enumerate([None, *args.changes_also] if args.changes else []):
                if tree is not None:
                    print(f"per change, the controller of {tree}:")
                mark = cluster.audit_mark()
                third = controller(cluster, folder, f"controller-changes-{turn}", 3600, src=tree)
                processes.append(third)
                per_change(kube, third, names, args.changes, turn=turn)
                third.stop(timeout=30)
                writes = writes_since(cluster, mark)
                print(
                    f"the per-change controller's writes, its first pass and {args.changes + 1} changes: "
                    f"{len(writes)} {by_verb_resource(writes)}"
                )
            return 0

        # baseline: the same objects, plain SSA from here, same concurrency
        live: list[dict[str, Any]] = []
        kinds = sorted(
            {
                (
                    event["objectRef"].get("apiGroup") or "",
                    event["objectRef"]["apiVersion"],
                    event["objectRef"]["resource"],
                )
                for event in all_writes
                if event["verb"] == "patch" and event["objectRef"].get("resource") != "events"
            }
        )
        for group, version, resource in kinds:
            prefix = f"/apis/{group}/{version}" if group else f"/api/{version}"
            answer = kube.http.get(f"{prefix}/{resource}", params={"labelSelector": POOL_LABEL})
            answer.raise_for_status()
            data = answer.json()
            kind = data["kind"].removesuffix("List")
            for item in data["items"]:
                item.setdefault("apiVersion", f"{group}/{version}" if group else version)
                item.setdefault("kind", kind)
                live.append(item)
        baseline: dict[str, float] = {}
        bodies = [stripped(obj, moved=True) for obj in live]
        baseline["admin"] = applied(admin, bodies)
        fresh = start("controller-bench-floor-")
        assert fresh is not None
        floor, floor_folder, _ = fresh
        try:
            prepare(Kube(floor.url, floor.ssl_context(), timeout=120), binaries, floor_folder, tenants, [])
            account = floor.ssl_context(floor.identity(CONTROLLER_USER, ACCOUNT_GROUPS))
            bodies = [stripped(obj, moved=False) for obj in live]
            baseline["the controller's account (a second test bed)"] = applied(
                lambda: Kube(floor.url, account, timeout=120), bodies
            )
        finally:
            finish(floor, floor_folder, keep=False)

        # restart
        mark = cluster.audit_mark()
        started = time.monotonic()
        second = controller(cluster, folder, "controller-restart", args.resync)
        processes.append(second)
        time.sleep(2 * args.resync + 5)
        restart_writes = writes_since(cluster, mark)
        second.stop(timeout=30)

        applies = [e for e in cold_writes if e["verb"] == "patch" and e["objectRef"].get("resource") != "events"]
        print()
        print(
            f"pools: {args.pools}, objects the controller applied: {len(bodies)} ({len(bodies) / args.pools:.1f}/pool)"
        )
        print(f"cold start: every MachineDeployment after {cold:.1f} s: {args.pools / cold:.1f} pools/s")
        print(
            f"writes until then: {len(cold_writes)} ({len(cold_writes) / args.pools:.2f}/pool), "
            f"applies {len(applies)} ({len(applies) / args.pools:.2f}/pool)"
        )
        print(f"writes until settled: {len(all_writes)} ({len(all_writes) / args.pools:.2f}/pool)")
        if unsettled:
            print(
                f"  NOT settled: {len(unsettled)} write(s) in the last {args.resync + 2:.0f} s: "
                f"{by_verb_resource(unsettled)}"
            )
        print(f"  by verb and resource: {by_verb_resource(all_writes)}")
        for who, seconds in baseline.items():
            print(
                f"baseline as {who}: {len(bodies)} objects server-side applied from the bench in {seconds:.1f} s "
                f"({args.pools / seconds:.1f} pools/s); controller cold start = {cold / seconds:.2f} x baseline"
            )
        print(
            f"restart: {len(restart_writes)} write(s) in {2 * args.resync + 5:.0f} s: "
            f"{by_verb_resource(restart_writes)}"
        )
        if args.changes:
            third = controller(cluster, folder, "controller-changes", 3600)
            processes.append(third)
            per_change(kube, third, names, args.changes)
            third.stop(timeout=30)
        log = (folder / "controller-cold.log").read_text(errors="replace").splitlines()
        warnings = [line for line in log if " WARNING " in line or " ERROR " in line]
        print(f"controller warnings/errors logged (cold): {len(warnings)}")
        for line in warnings[:5]:
            print("  " + line[:200])
        return 0
    except KubeError as error:
        print(f"API error: {error}", file=sys.stderr)
        return 1
    finally:
        for process in processes:
            process.stop()
        finish(cluster, folder, keep=args.keep)


if __name__ == "__main__":
    import signal

    os.environ.setdefault("PYTHONHASHSEED", "0")
    # a TERM (``timeout``, ``kill``) unwinds like Ctrl-C: the test bed's processes are stopped and its
    # folder removed, rather than left running (an API server holds gigabytes at 20,000 pools)
    signal.signal(signal.SIGTERM, lambda number, frame: sys.exit(128 + number))
    raise SystemExit(main())
