"""Load the admission webhook over HTTPS on loopback, beside a baseline server of the same stack.

    .venv/bin/python bench/webhook_bench.py [--connections 16] [--duration 10] [--client wrk|python]
        [--baseline noop|echo] [--loop asyncio|uvloop]
    .venv/bin/python bench/webhook_bench.py --memory asyncio:loop,asyncio:guard,uvloop:loop,uvloop:guard
        [--idle 1000] [--trickled 300]

Both servers are the same stack: aiohttp on one event loop, the same TLS context (TLS 1.2+,
ECDSA P-256 certificate made here with ``cryptography``), the same settings. The baseline is, by
default, the webhook itself with the core's decision replaced by "allowed" (``noop``: decode, the
envelope checks, encode, metrics: the honest floor, issue 10); ``--baseline echo`` is issue 4's
server that sends the body back unread. The webhook decodes the AdmissionReview, decides with the
core against the ``examples/`` state (plus the objects the admission tests add) and encodes the
answer. Each server runs in its own process pinned to CPU 0; the load generator is pinned to CPU 1
(on a 2-core machine, one core each). The request mix is what the API server sends for
KubernetesNodes writes, one mutating and one validating call each (see :func:`workload`).

The load generator is wrk (Debian's package: installed with apt-get when missing and running as
root; ``--client python`` uses an aiohttp client instead). Targets: at least 2,000 reviews/s with
16 connections, p99 under 25 ms (issue 4), throughput at least 70% of the no-op server's (issue 10).

``--memory`` measures instead the server's resident memory per connection: ``--idle`` plain TCP
connections that never start TLS, then as many TLS connections that finish the handshake and send
nothing (and ``--trickled`` ones that promise a 3 MB body and stall after 200 KiB), all closed, then
the same again; for each event loop, with the event loop's own TLS transport (``loop``: aiohttp's
``TCPSite``) or the webhook's connection guard (``guard``). ``uvloop`` is no dependency of the
project: ``--loop uvloop`` needs ``.venv/bin/pip install uvloop`` first. Never run as a timed test.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import re
import shutil
import signal
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the tests' case builders and certificate helper
sys.path.insert(0, str(ROOT / "src"))

SERVER_CPU = 0
CLIENT_CPU = 1


# --------------------------------------------------------------------------- workload


def workload() -> list[tuple[str, bytes]]:
    """``(path, body)`` of the reviews the load rotates over.

    What the API server sends for KubernetesNodes writes: each write is one mutating and one
    validating call. A CREATE without a class (defaulted, then allowed) and an UPDATE that omits
    the class and switches the pool to Kairos (the stored class restored by the mutation, then the
    family change denied when the tenant sets kairos explicitly).
    """
    from tests.webhook.cases import pool, stored
    from tests.webhook.helpers import review

    created = pool("bench-pool")
    old = stored("KubernetesNodes:tenant-example/example-talos")
    restored = json.loads(json.dumps(old))
    del restored["spec"]["workerClassName"]
    restored["spec"]["maxReplicas"] = 4
    switched = json.loads(json.dumps(old))
    switched["spec"].update(workerClassName="kairos", talos={}, kernelModules=[])
    return [
        ("/mutate/kubernetesnodes", json.dumps(review(created, uid="bench-create-mutate")).encode()),
        (
            "/validate/kubernetesnodes",
            json.dumps(review(pool("bench-pool", workerClassName="talos"), uid="bench-create-validate")).encode(),
        ),
        (
            "/mutate/kubernetesnodes",
            json.dumps(review(restored, operation="UPDATE", old=old, uid="bench-update-mutate")).encode(),
        ),
        (
            "/validate/kubernetesnodes",
            json.dumps(review(switched, operation="UPDATE", old=old, uid="bench-update-validate")).encode(),
        ),
    ]


# --------------------------------------------------------------------------- servers (child processes)


def pin(cpu: int) -> None:
    if hasattr(os, "sched_setaffinity") and (os.cpu_count() or 1) > cpu:
        os.sched_setaffinity(0, {cpu})


#: ``--diagnostic`` variants of the webhook server (calibration; the default run measures the real one)
DIAGNOSTICS = {
    "noop-decision": "the real handler with the core's decision replaced by 'allowed, no patch'",
    "constant": "the WebhookServer route wrapper (in-flight count, metrics) around: read the body, "
    "answer a constant small AdmissionReview",
    "constant-raw": "a plain aiohttp handler: read the body, answer a constant small AdmissionReview",
    "parse": "the WebhookServer route wrapper around: read the body, orjson.loads it, answer 'allowed' "
    "with its uid (JSON in and out, nothing checked or decided)",
}


async def run_server(
    kind: str,
    cert: Path,
    key: Path,
    port_file: Path,
    variant: str | None = None,
    *,
    tls_mode: str = "guard",
    max_connections: int | None = None,
) -> None:
    from aiohttp import web
    from tests.webhook.cases import table_state

    from workerclass.adapters.tls import ReloadingContext
    from workerclass.webhook.server import Settings, WebhookServer
    from workerclass.webhook.sources import StaticSource

    tls = ReloadingContext(cert, key)
    settings = Settings(host="127.0.0.1", port=0, **({"max_connections": max_connections} if max_connections else {}))
    server = WebhookServer(StaticSource(table_state()), tls=tls, settings=settings)
    if kind == "webhook" and variant is not None:
        diagnostic_variant(server, variant)
    if kind == "noop":
        diagnostic_variant(server, "noop-decision")
    if kind == "echo":
        # Same application object and runner settings; the routes answer with the body they read.
        async def echo(request: web.Request) -> web.Response:
            return web.Response(body=await request.read(), content_type="application/json")

        server.app = web.Application(client_max_size=settings.max_body)
        for path in ("/mutate/kubernetesnodes", "/validate/kubernetesnodes"):
            server.app.router.add_post(path, echo)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    if tls_mode == "loop":
        # the event loop's own TLS transport (asyncio's or uvloop's) as aiohttp sets it up: no
        # connection guard, for the per-connection memory comparison only
        runner = web.AppRunner(server.app, handle_signals=False, keepalive_timeout=settings.keepalive_timeout)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=tls.context, backlog=4096)
        await site.start()
        assert site._server is not None
        port_file.write_text(str(site._server.sockets[0].getsockname()[1]))  # type: ignore[union-attr]
        await stop.wait()
        await runner.cleanup()
        return
    await server.start()
    port_file.write_text(str(server.port))
    await stop.wait()
    await server.stop()


def diagnostic_variant(server: Any, variant: str) -> None:
    """Swap part of the webhook's path for a stand-in (``--diagnostic``): what the rest costs."""
    from aiohttp import web

    from workerclass.admission.decision import Decision
    from workerclass.webhook import review as wire
    from workerclass.webhook.routes import ROUTES

    if variant == "noop-decision":

        def allow(state: Any, operation: str, obj: Any, old: Any) -> Decision:
            return Decision(allowed=True, operation=operation)

        server._deciders = {"mutate": allow, "validate": allow}
        return
    constant = wire.encode({"uid": "bench", "allowed": True})
    if variant == "constant":

        async def answer(request: web.Request, route: Any) -> tuple[str, web.StreamResponse]:
            await request.read()
            return "allowed", web.Response(body=constant, content_type="application/json")

        server._answer = answer
        return
    if variant == "parse":
        import orjson

        async def parse(request: web.Request, route: Any) -> tuple[str, web.StreamResponse]:
            uid = orjson.loads(await request.read())["request"]["uid"]
            body = wire.encode({"uid": uid, "allowed": True})
            return "allowed", web.Response(body=body, content_type="application/json")

        server._answer = parse
        return
    if variant == "constant-raw":

        async def handle(request: web.Request) -> web.Response:
            await request.read()
            return web.Response(body=constant, content_type="application/json")

        server.app = web.Application(client_max_size=server.settings.max_body)
        for route in ROUTES:
            server.app.router.add_post(route.path, handle)
        return
    raise SystemExit(f"unknown diagnostic variant {variant!r}")


def start_server(
    kind: str,
    cert: Path,
    key: Path,
    workdir: Path,
    variant: str | None = None,
    *,
    event_loop: str = "asyncio",
    tls_mode: str = "guard",
    max_connections: int | None = None,
) -> tuple[subprocess.Popen[bytes], int]:
    port_file = workdir / f"{kind}.port"
    port_file.unlink(missing_ok=True)
    process = subprocess.Popen(
        [
            sys.executable,
            __file__,
            "--serve",
            kind,
            "--cert",
            str(cert),
            "--key",
            str(key),
            "--port-file",
            str(port_file),
            "--loop",
            event_loop,
            "--tls-mode",
            tls_mode,
            *(["--variant", variant] if variant else []),
            *(["--max-connections", str(max_connections)] if max_connections else []),
        ],
        stdout=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while not port_file.exists() or not port_file.read_text():
        if process.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"the {kind} server did not start")
        time.sleep(0.05)
    return process, int(port_file.read_text())


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def memory_run(args: argparse.Namespace) -> None:
    """Per-connection memory: idle plain TCP connections (no TLS handshake), then idle TLS ones
    (handshake done, no request), for each event loop and TLS transport; RSS of the server before,
    with them open, and after they closed (twice, to see whether freed memory is reused)."""
    import resource
    import socket

    from tests.webhook.helpers import CertFiles, Client

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 4 * args.idle + 256)), hard))
    combos = [combo.split(":") for combo in args.memory.split(",")]
    rows = []
    with tempfile.TemporaryDirectory(prefix="webhook-memory-") as temporary:
        workdir = Path(temporary)
        certs = CertFiles.create(workdir / "certs")
        context = certs.client_context()
        body = workload()[1][1]
        for event_loop, tls_mode in combos:
            process, port = start_server(
                "webhook",
                certs.cert,
                certs.key,
                workdir,
                event_loop=event_loop,
                tls_mode=tls_mode,
                max_connections=4 * args.idle + 64,
            )
            try:
                probe = Client(port, context)
                for _ in range(200):
                    assert probe.request("POST", "/validate/kubernetesnodes", body).status == 200
                probe.close()
                time.sleep(0.5)
                row: dict[str, Any] = {"loop": event_loop, "tls": tls_mode, "base": rss_mib(process.pid)}
                for round_ in (1, 2):
                    plain = [socket.create_connection(("127.0.0.1", port)) for _ in range(args.idle)]
                    time.sleep(1.0)
                    row[f"tcp{round_}"] = rss_mib(process.pid)
                    tls = []
                    for _ in range(args.idle):
                        sock = socket.create_connection(("127.0.0.1", port))
                        tls.append(context.wrap_socket(sock, server_hostname="127.0.0.1"))
                    time.sleep(1.0)
                    row[f"tls{round_}"] = rss_mib(process.pid)
                    slow = []
                    if args.trickled:
                        # worst case: a large body promised, 200 KiB of it sent, then nothing
                        head = (
                            b"POST /validate/kubernetesnodes HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                            b"Content-Length: 3000000\r\n\r\n"
                        )
                        for _ in range(args.trickled):
                            sock = context.wrap_socket(
                                socket.create_connection(("127.0.0.1", port)), server_hostname="127.0.0.1"
                            )
                            sock.setblocking(False)
                            with contextlib.suppress(BlockingIOError, ssl.SSLWantWriteError):
                                sock.send(head + b" " * (200 * 1024))
                            slow.append(sock)
                        time.sleep(1.0)
                        row[f"body{round_}"] = rss_mib(process.pid)
                    probe = Client(port, context)
                    row[f"probe{round_}"] = probe.request("POST", "/validate/kubernetesnodes", body).status
                    probe.close()
                    for sock in [*plain, *tls, *slow]:
                        sock.close()
                    time.sleep(2.0)
                    row[f"after{round_}"] = rss_mib(process.pid)
                rows.append(row)
            finally:
                stop_server(process)
    n = args.idle
    print(f"{n} idle plain TCP connections, then {n} idle TLS connections (handshake done, no request); RSS MiB")
    print(
        f"{'loop':<8} {'tls':<6} {'base':>6} {'+tcp':>6} {'+tls':>6} {'closed':>7} {'again':>6} {'closed':>7} "
        f"{'KB/tcp':>7} {'KB/tls':>7} probe"
    )
    for row in rows:
        per_tcp = (row["tcp1"] - row["base"]) * 1024 / n
        per_tls = (row["tls1"] - row["tcp1"]) * 1024 / n
        if args.trickled:
            per_body = (row["body1"] - row["tls1"]) * 1024 / args.trickled
            print(f"{row['loop']} {row['tls']}: {args.trickled} trickled bodies: {per_body:.1f} KB each")
        print(
            f"{row['loop']:<8} {row['tls']:<6} {row['base']:>6.1f} {row['tcp1']:>6.1f} {row['tls1']:>6.1f} "
            f"{row['after1']:>7.1f} {row['tls2']:>6.1f} {row['after2']:>7.1f} {per_tcp:>7.1f} {per_tls:>7.1f} "
            f"{row['probe1']},{row['probe2']}"
        )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


def flood_run(args: argparse.Namespace) -> None:
    """Probes under a connection flood: the server at its default settings, a thread opening
    ``--flood TCP,TLS`` connections (plain TCP ones that never start TLS, then TLS ones that finish
    the handshake and send nothing) and holding them, while this thread sends one review at a time,
    each on a fresh connection and never retried, until the flood is open and a second after. A
    probe is answered (200, allowed) or counted with why it failed; the server's RSS is read after
    each probe. ``--repeat`` runs it again on a fresh server."""
    import resource
    import socket
    import threading

    from tests.webhook.helpers import CertFiles, Client

    tcp_count, tls_count = (int(part) for part in args.flood.split(","))
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, tcp_count + tls_count + 512)), hard))
    body = workload()[1][1]
    request = (
        b"POST /validate/kubernetesnodes HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
        + body
    )
    with tempfile.TemporaryDirectory(prefix="webhook-flood-") as temporary:
        workdir = Path(temporary)
        certs = CertFiles.create(workdir / "certs")
        context = certs.client_context()

        def probe(port: int) -> str:
            try:
                with (
                    socket.create_connection(("127.0.0.1", port), timeout=10) as raw,
                    context.wrap_socket(raw, server_hostname="127.0.0.1") as sock,
                ):
                    sock.sendall(request)
                    answer = b""
                    while True:
                        chunk = sock.recv(65536)
                        if not chunk:
                            break
                        answer += chunk
            except (OSError, ssl.SSLError) as error:
                return type(error).__name__
            head = answer.partition(b"\r\n")[0]
            return "ok" if head.startswith(b"HTTP/1.1 200") and b'"allowed":true' in answer else head.decode()

        for run in range(args.repeat):
            process, port = start_server(
                "webhook", certs.cert, certs.key, workdir, max_connections=args.max_connections
            )
            held: list[socket.socket] = []
            done = threading.Event()

            def flood(port: int, held: list[socket.socket], done: threading.Event) -> None:
                try:
                    for index in range(tcp_count + tls_count):
                        try:
                            sock = socket.create_connection(("127.0.0.1", port), timeout=10)
                            if index >= tcp_count:
                                sock = context.wrap_socket(sock, server_hostname="127.0.0.1")
                        except (OSError, ssl.SSLError):
                            continue
                        held.append(sock)
                finally:
                    done.set()

            try:
                for _ in range(20):
                    assert probe(port) == "ok"
                base = peak = rss_mib(process.pid)
                outcomes: dict[str, int] = {}
                flooder = threading.Thread(target=flood, args=(port, held, done))
                started = time.monotonic()
                flooder.start()
                after: float | None = None
                while after is None or time.monotonic() < after:
                    outcome = probe(port)
                    outcomes[outcome] = outcomes.get(outcome, 0) + 1
                    peak = max(peak, rss_mib(process.pid))
                    if after is None and done.is_set():
                        after = time.monotonic() + 1.0
                    time.sleep(args.probe_interval)
                flooder.join()
                took = time.monotonic() - started
                peak = max(peak, rss_mib(process.pid))
                metrics = Client(port, context)
                counters = {
                    line.split('"')[1]: int(float(line.rsplit(" ", 1)[1]))
                    for line in metrics.request("GET", "/metrics").body.decode().splitlines()
                    if line.startswith("workerclass_webhook_connections_closed_total{")
                }
                metrics.close()
                failed = sum(count for outcome, count in outcomes.items() if outcome != "ok")
                print(
                    f"run {run + 1}: {tcp_count} TCP + {tls_count} TLS opened in {took:.1f} s ({len(held)} held), "
                    f"base {base:.1f} MiB, peak {peak:.1f} MiB, probes {sum(outcomes.values())}, "
                    f"failed {failed} {dict(sorted(outcomes.items()))}, closed {counters}"
                )
            finally:
                for sock in held:
                    sock.close()
                stop_server(process)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def stop_server(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(15)
    except subprocess.TimeoutExpired:
        process.kill()


# --------------------------------------------------------------------------- load generators


def ensure_wrk() -> str | None:
    found = shutil.which("wrk")
    if found or os.geteuid() != 0 or not shutil.which("apt-get"):
        return found
    print("installing wrk from Debian's packages ...", file=sys.stderr)
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    if subprocess.run(["apt-get", "install", "-y", "-q", "wrk"], **quiet, check=False).returncode != 0:  # type: ignore[call-overload]
        subprocess.run(["apt-get", "update", "-q"], **quiet, check=False)  # type: ignore[call-overload]
        subprocess.run(["apt-get", "install", "-y", "-q", "wrk"], **quiet, check=False)  # type: ignore[call-overload]
    return shutil.which("wrk")


HEADERS = '{["Host"] = "127.0.0.1", ["Content-Type"] = "application/json"}'


def lua_script(requests: list[tuple[str, bytes]]) -> str:
    lines = ["local requests = {}"]
    for path, body in requests:
        lines.append(f'table.insert(requests, wrk.format("POST", "{path}", {HEADERS}, [==[{body.decode()}]==]))')
    lines += [
        "local i = 0",
        "request = function()",
        "  i = i % #requests + 1",
        "  return requests[i]",
        "end",
        "done = function(summary, latency, requests)",
        '  io.write(string.format("JSON {\\"requests\\": %d, \\"errors\\": %d, \\"non2xx\\": 0, '
        '\\"p50\\": %d, \\"p99\\": %d, \\"mean\\": %f}\\n", summary.requests, '
        "summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.status "
        "+ summary.errors.timeout, latency:percentile(50), latency:percentile(99), latency.mean))",
        "end",
    ]
    return "\n".join(lines) + "\n"


def run_wrk(wrk: str, port: int, connections: int, duration: int, script: Path) -> dict[str, Any]:
    command = [
        wrk,
        "-t1",
        f"-c{connections}",
        f"-d{duration}s",
        "--latency",
        "-s",
        str(script),
        f"https://127.0.0.1:{port}",
    ]
    if shutil.which("taskset") and (os.cpu_count() or 1) > CLIENT_CPU:
        command = ["taskset", "-c", str(CLIENT_CPU), *command]
    output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    found = re.search(r"^JSON (\{.*\})$", output, re.MULTILINE)
    rate = re.search(r"Requests/sec:\s+([\d.]+)", output)
    if found is None or rate is None:
        raise SystemExit("wrk printed no result:\n" + output)
    data = json.loads(found.group(1))
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    return {
        "requests": data["requests"],
        "errors": data["errors"] + (int(non2xx.group(1)) if non2xx else 0),
        "rps": float(rate.group(1)),
        "p50_ms": data["p50"] / 1000,
        "p99_ms": data["p99"] / 1000,
        "mean_ms": data["mean"] / 1000,
    }


async def python_load(
    port: int, connections: int, duration: float, requests: list[tuple[str, bytes]]
) -> dict[str, Any]:
    import aiohttp

    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    latencies: list[float] = []
    errors = 0
    deadline = time.perf_counter() + duration
    connector = aiohttp.TCPConnector(limit=connections, ssl=context)
    async with aiohttp.ClientSession(f"https://127.0.0.1:{port}", connector=connector) as session:

        async def worker(offset: int) -> None:
            nonlocal errors
            index = offset
            while time.perf_counter() < deadline:
                path, body = requests[index % len(requests)]
                index += 1
                started = time.perf_counter()
                try:
                    async with session.post(path, data=body, headers={"Content-Type": "application/json"}) as reply:
                        await reply.read()
                        if reply.status != 200:
                            errors += 1
                except aiohttp.ClientError:
                    errors += 1
                latencies.append(time.perf_counter() - started)

        began = time.perf_counter()
        await asyncio.gather(*(worker(index) for index in range(connections)))
        elapsed = time.perf_counter() - began
    latencies.sort()
    return {
        "requests": len(latencies),
        "errors": errors,
        "rps": len(latencies) / elapsed,
        "p50_ms": latencies[len(latencies) // 2] * 1000,
        "p99_ms": latencies[int(len(latencies) * 0.99)] * 1000,
        "mean_ms": statistics.fmean(latencies) * 1000,
    }


def run_python(port: int, connections: int, duration: int, workdir: Path) -> dict[str, Any]:
    out = workdir / "python-load.json"
    subprocess.run(
        [sys.executable, __file__, "--load", str(port), "--connections", str(connections), "--duration", str(duration),
         "--result", str(out)],
        check=True,
    )  # fmt: skip
    data: dict[str, Any] = json.loads(out.read_text())
    return data


# --------------------------------------------------------------------------- the run


def check_answers(port: int, context: ssl.SSLContext) -> None:
    """The webhook answers the workload as the admission tests expect (so the load measures the real path)."""
    from tests.webhook.helpers import Client

    client = Client(port, context)
    expected = [
        ("allowed", True, "patch"),
        ("allowed", True, None),
        ("allowed", True, "patch"),
        ("allowed", False, None),
    ]
    for (path, body), (_, allowed, patch) in zip(workload(), expected, strict=True):
        response = client.request("POST", path, body).response
        assert response["allowed"] is allowed, response
        assert ("patch" in response) == (patch is not None), response
    client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--duration", type=int, default=10, help="seconds per measured run")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved runs per server (medians reported)")
    parser.add_argument("--warmup", type=int, default=2, help="seconds of unmeasured load before each run")
    parser.add_argument("--client", choices=["wrk", "python", "auto"], default="auto")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument(
        "--baseline",
        choices=["noop", "echo"],
        default="noop",
        help="noop (default): the same webhook with a no-op decision (decode, envelope, encode: the honest "
        "floor, issue 10); echo: a server sending the body back unread (issue 4's baseline)",
    )
    # child-process modes
    parser.add_argument("--serve", choices=["webhook", "echo", "noop"], help=argparse.SUPPRESS)
    parser.add_argument("--cert", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--key", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--port-file", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--variant", choices=sorted(DIAGNOSTICS), help=argparse.SUPPRESS)
    parser.add_argument("--tls-mode", choices=["guard", "loop"], default="guard", help=argparse.SUPPRESS)
    parser.add_argument("--max-connections", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--loop", choices=["asyncio", "uvloop"], default="asyncio", help="event loop of both servers")
    parser.add_argument(
        "--memory",
        metavar="LOOP:TLS,...",
        help="instead of load: per-connection memory, e.g. asyncio:loop,asyncio:guard,uvloop:loop,uvloop:guard "
        "(TLS 'loop': the event loop's own transport; 'guard': the webhook's connection guard)",
    )
    parser.add_argument(
        "--flood", help="instead of load: probes while TCP,TLS connections are opened and held, e.g. 1500,500"
    )
    parser.add_argument("--probe-interval", type=float, default=0.05, help="--flood: seconds between probes")
    parser.add_argument("--repeat", type=int, default=1, help="--flood: runs, each on a fresh server")
    parser.add_argument("--idle", type=int, default=1000, help="connections of each kind for --memory")
    parser.add_argument(
        "--trickled", type=int, default=0, help="--memory: also this many TLS connections stalled mid-body"
    )
    # calibration: run a stand-in in place of the webhook (the figures then describe the stand-in)
    parser.add_argument("--diagnostic", choices=sorted(DIAGNOSTICS), help=argparse.SUPPRESS)
    parser.add_argument("--load", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.serve:
        pin(SERVER_CPU)
        if args.loop == "uvloop":
            import uvloop

            asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
        asyncio.run(
            run_server(
                args.serve,
                args.cert,
                args.key,
                args.port_file,
                args.variant,
                tls_mode=args.tls_mode,
                max_connections=args.max_connections,
            )
        )
        return
    if args.memory:
        memory_run(args)
        return
    if args.flood:
        flood_run(args)
        return
    if args.load:
        pin(CLIENT_CPU)
        result = asyncio.run(python_load(args.load, args.connections, args.duration, workload()))
        args.result.write_text(json.dumps(result))
        return

    from tests.webhook.helpers import CertFiles

    wrk = ensure_wrk() if args.client in ("wrk", "auto") else None
    if args.client == "wrk" and wrk is None:
        raise SystemExit("wrk is not installed and could not be installed")
    client = "wrk" if wrk else "python"

    base = args.baseline
    kinds = (base, "webhook")
    rounds: dict[str, list[dict[str, Any]]] = {kind: [] for kind in kinds}
    with tempfile.TemporaryDirectory(prefix="webhook-bench-") as temporary:
        workdir = Path(temporary)
        certs = CertFiles.create(workdir / "certs")
        script = workdir / "reviews.lua"
        script.write_text(lua_script(workload()))
        servers = {
            kind: start_server(
                kind,
                certs.cert,
                certs.key,
                workdir,
                args.diagnostic if kind == "webhook" else None,
                event_loop=args.loop,
            )
            for kind in kinds
        }
        try:
            if args.diagnostic is None:
                check_answers(servers["webhook"][1], certs.client_context())
            else:
                print(f"DIAGNOSTIC: the 'webhook' row is {DIAGNOSTICS[args.diagnostic]}")

            def load(port: int, seconds: int) -> dict[str, Any]:
                if wrk:
                    return run_wrk(wrk, port, args.connections, seconds, script)
                return run_python(port, args.connections, seconds, workdir)

            for kind in kinds:
                if args.warmup:
                    load(servers[kind][1], args.warmup)
            # Interleaved rounds, medians reported: a shared machine's noise hits both servers alike.
            for _ in range(args.rounds):
                for kind in kinds:
                    process, port = servers[kind]
                    before = cpu_seconds(process.pid)
                    run = load(port, args.duration)
                    # CPU the server spent per answered review: what throughput would be on a core of
                    # its own, robust to other work stealing the core during the run
                    run["cpu_us"] = (cpu_seconds(process.pid) - before) / max(run["requests"], 1) * 1e6
                    rounds[kind].append(run)
        finally:
            for process, _ in servers.values():
                stop_server(process)

    def median_of(kind: str) -> dict[str, Any]:
        runs = sorted(rounds[kind], key=lambda run: run["rps"])
        middle = dict(runs[len(runs) // 2])
        middle["p99_ms"] = statistics.median(run["p99_ms"] for run in runs)
        middle["p50_ms"] = statistics.median(run["p50_ms"] for run in runs)
        middle["errors"] = sum(run["errors"] for run in runs)
        middle["cpu_us"] = statistics.median(run["cpu_us"] for run in runs)
        return middle

    results = {kind: median_of(kind) for kind in rounds}
    webhook, echo = results["webhook"], results[base]
    ratio = webhook["rps"] / echo["rps"] if echo["rps"] else 0.0
    print(
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"client {client}, {args.connections} connections, {args.rounds} x {args.duration}s per server, medians, "
        f"event loop {args.loop}, baseline {base}"
    )
    print(
        f"{'server':<8} {'reviews/s':>10} {'p50 ms':>8} {'p99 ms':>8} {'mean ms':>8} {'CPU µs/req':>10} {'errors':>7}"
    )
    for kind in kinds:
        row = results[kind]
        print(
            f"{kind:<8} {row['rps']:>10.0f} {row['p50_ms']:>8.2f} {row['p99_ms']:>8.2f} {row['mean_ms']:>8.2f} "
            f"{row['cpu_us']:>10.0f} {row['errors']:>7}"
        )
    checks = {
        "throughput >= 2000/s": webhook["rps"] >= 2000,
        "p99 < 25 ms": webhook["p99_ms"] < 25,
        f"throughput >= 70% of {base}": ratio >= 0.70,
        "no errors": webhook["errors"] == 0 and echo["errors"] == 0,
    }
    ratios = [w["rps"] / e["rps"] for w, e in zip(rounds["webhook"], rounds[base], strict=True)]
    print(f"webhook/{base} throughput: {ratio:.2f} (rounds: {', '.join(f'{r:.2f}' for r in ratios)})")
    cpu_ratio = echo["cpu_us"] / webhook["cpu_us"] if webhook["cpu_us"] else 0.0
    print(f"{base}/webhook server CPU per review: {cpu_ratio:.2f} (the throughput ratio on an otherwise idle core)")
    for name, passed in checks.items():
        print(f"  {'met' if passed else 'NOT MET'}: {name}")
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "client": client,
                    "connections": args.connections,
                    "results": results,
                    "rounds": rounds,
                    "ratio": ratio,
                    "cpu_ratio": cpu_ratio,
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
