"""Connection floods, slow clients and signals against a server in a process of its own (real HTTPS on loopback)."""

from __future__ import annotations

import json
import os
import resource
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from workerclass.deploy import WEBHOOK_MEMORY_LIMIT_MIB
from workerclass.webhook.settings import Settings

from .cases import pool
from .helpers import ROOT, CertFiles, Client, raw_tls_socket, review

VALIDATE = "/validate/kubernetesnodes"


class Child:
    """``tests.webhook.server_child`` started with some settings; its port, RSS and metrics."""

    def __init__(self, certs: CertFiles, directory: Path, **settings: Any) -> None:
        port_file = directory / "port"
        port_file.unlink(missing_ok=True)
        self.stderr = directory / "stderr.log"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.webhook.server_child",
                str(certs.cert),
                str(certs.key),
                str(port_file),
                json.dumps(settings),
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=self.stderr.open("wb"),
        )
        deadline = time.monotonic() + 30
        while not port_file.exists() or not port_file.read_text():
            assert self.process.poll() is None, self.stderr.read_text()
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.05)
        self.port = int(port_file.read_text())
        self.context = certs.client_context()

    def rss_mib(self) -> float:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        raise AssertionError("no VmRSS")

    def metrics(self) -> dict[str, float]:
        client = Client(self.port, self.context)
        try:
            text = client.request("GET", "/metrics").body.decode()
        finally:
            client.close()
        out: dict[str, float] = {}
        for line in text.splitlines():
            if line.startswith("workerclass_webhook_connections"):
                name, value = line.rsplit(" ", 1)
                out[name] = float(value)
        return out

    def probe(self) -> None:
        """One fresh connection, one review: a well-formed allowed answer."""
        client = Client(self.port, self.context, timeout=10)
        try:
            reply = client.post_review(VALIDATE, review(pool(workerClassName="talos")))
        finally:
            client.close()
        assert reply.status == 200
        assert reply.response["allowed"] is True

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        return self.process.returncode


@pytest.fixture
def many_files() -> Iterator[None]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 2000 * 2 + 512
    if hard < wanted:
        pytest.skip(f"the file descriptor limit ({hard}) is below {wanted}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, wanted), hard))
    yield
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_connection_flood_keeps_memory_bounded_and_answers_flowing(
    tmp_certs: CertFiles, tmp_path: Path, many_files: None
) -> None:
    """2,000 idle connections (1,000 plain TCP that never start TLS, 1,000 that finish the handshake
    and send nothing) against the default cap (256): the server stays under the install's memory
    limit, a probe client gets answers throughout, and the cap holds by closing the oldest idle ones."""
    cap = Settings().max_connections
    child = Child(tmp_certs, tmp_path, max_connections=cap, header_timeout=120.0, handshake_timeout=60.0)
    held: list[socket.socket] = []
    peak = child.rss_mib()
    try:
        child.probe()
        for batch in range(20):
            for _ in range(100):
                sock = socket.create_connection(("127.0.0.1", child.port), timeout=10)
                if batch >= 10:  # the second half finish their TLS handshake, then stay silent
                    try:
                        sock = child.context.wrap_socket(sock, server_hostname="127.0.0.1")
                    except (ssl.SSLError, OSError):  # evicted while handshaking: counted below
                        sock.close()
                        continue
                held.append(sock)
            child.probe()
            peak = max(peak, child.rss_mib())
            assert peak < WEBHOOK_MEMORY_LIMIT_MIB, f"RSS {peak:.0f} MiB after {len(held)} connections"
        figures = child.metrics()
        assert figures["workerclass_webhook_connections"] <= cap
        assert figures["workerclass_webhook_connections_limit"] == cap
        assert figures['workerclass_webhook_connections_closed_total{reason="evicted"}'] >= 2000 - cap
        assert figures['workerclass_webhook_connections_closed_total{reason="refused"}'] == 0
        print(f"peak RSS {peak:.1f} MiB with {figures['workerclass_webhook_connections']:.0f} open")
    finally:
        for sock in held:
            sock.close()
        assert child.stop() == 0


def ask(sock: socket.socket) -> bytes:
    """One review on an open connection (kept alive): the answer's status line and body."""
    body = json.dumps(review(pool(workerClassName="talos"))).encode()
    sock.sendall(
        f"POST {VALIDATE} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n".encode()
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    answer = b""
    while b"\r\n\r\n" not in answer:
        chunk = sock.recv(65536)
        assert chunk, "the server closed the connection"
        answer += chunk
    head, _, payload = answer.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")
    )
    while len(payload) < length:
        chunk = sock.recv(65536)
        assert chunk, "the server closed the connection mid-answer"
        payload += chunk
    return head.split(b"\r\n")[0] + b" " + payload


def fresh_probe(child: Child) -> str:
    """A review on a fresh connection, never retried: ``ok`` or why it failed."""
    try:
        with raw_tls_socket(child.port, child.context, timeout=10) as sock:
            answer = ask(sock)
    except (OSError, AssertionError) as error:  # ssl.SSLError is an OSError
        return type(error).__name__
    return "ok" if answer.startswith(b"HTTP/1.1 200") and b'"allowed":true' in answer else answer[:40].decode()


def test_a_client_that_spoke_keeps_its_slot_against_silent_sockets(tmp_certs: CertFiles, tmp_path: Path) -> None:
    """At the cap, sockets that never sent a byte make room before a connection that has spoken
    (here: its TLS handshake done, its request not sent yet, as a client between the two)."""
    child = Child(tmp_certs, tmp_path, max_connections=4, header_timeout=60.0)
    spoke = raw_tls_socket(child.port, child.context, timeout=10)
    silent = [socket.create_connection(("127.0.0.1", child.port), timeout=5) for _ in range(4)]
    try:
        time.sleep(0.5)  # all accepted, one over the cap: the oldest silent one made room
        assert b"200" in ask(spoke).split(b" ")[1]
        assert silent[0].recv(1) == b""  # closed by the server
        spoke.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        text = b""
        while b"workerclass_webhook_connections_limit" not in text:
            chunk = spoke.recv(65536)
            assert chunk
            text += chunk
        assert b'workerclass_webhook_connections_closed_total{reason="evicted"} 1.0' in text
        assert b'workerclass_webhook_connections_closed_total{reason="refused"} 0.0' in text
    finally:
        spoke.close()
        for sock in silent:
            sock.close()
        assert child.stop() == 0


def test_idle_connections_cost_little_memory_each(tmp_certs: CertFiles, tmp_path: Path, many_files: None) -> None:
    """The server's resident memory per idle connection, plain TCP that never starts TLS and TLS
    that finished its handshake and sends nothing, under a cap above their number: a few tens of KB
    (asyncio's own TLS protocol holds a 256 KiB receive buffer for each, ~300 KB with the rest)."""
    count = 500
    child = Child(tmp_certs, tmp_path, max_connections=4 * count, header_timeout=120.0, handshake_timeout=60.0)
    held: list[socket.socket] = []
    try:
        for _ in range(20):  # the server's own first-use allocations out of the way
            assert fresh_probe(child) == "ok"
        base = child.rss_mib()
        held += [socket.create_connection(("127.0.0.1", child.port), timeout=10) for _ in range(count)]
        assert fresh_probe(child) == "ok"  # accepted after them: they are accepted
        plain = child.rss_mib()
        for _ in range(count):
            held.append(raw_tls_socket(child.port, child.context, timeout=10))
        secure = child.rss_mib()
        per_tcp = (plain - base) * 1024 / count
        per_tls = (secure - plain) * 1024 / count
        print(f"base {base:.1f} MiB, {per_tcp:.1f} KB per idle TCP, {per_tls:.1f} KB per idle TLS connection")
        assert figures_open(child) >= 2 * count
        assert per_tcp < 32, f"{per_tcp:.0f} KB per idle TCP connection"
        assert per_tls < 64, f"{per_tls:.0f} KB per idle TLS connection"
    finally:
        for sock in held:
            sock.close()
        assert child.stop() == 0


def figures_open(child: Child) -> float:
    return child.metrics()["workerclass_webhook_connections"]


def test_probes_are_answered_during_a_flood(tmp_certs: CertFiles, tmp_path: Path, many_files: None) -> None:
    """1,500 plain TCP connections and 500 TLS ones opened as fast as they go and held, at the
    default settings, while a probe sends a review on a fresh connection after another, never
    retried: every probe is answered, and the server's memory grows by a few MiB, not by the
    flood's size (the cap and the burst allowance times a few tens of KB)."""
    child = Child(tmp_certs, tmp_path)
    held: list[socket.socket] = []
    done = threading.Event()

    def flood() -> None:
        try:
            for index in range(2000):
                try:
                    sock = socket.create_connection(("127.0.0.1", child.port), timeout=10)
                    if index >= 1500:
                        sock = child.context.wrap_socket(sock, server_hostname="127.0.0.1")
                except OSError:
                    continue
                held.append(sock)
        finally:
            done.set()

    flooder = threading.Thread(target=flood)
    try:
        for _ in range(20):
            assert fresh_probe(child) == "ok"
        base = peak = child.rss_mib()
        outcomes: list[str] = []
        flooder.start()
        while not done.is_set() or len(outcomes) < 10:
            outcomes.append(fresh_probe(child))
            peak = max(peak, child.rss_mib())
        flooder.join()
        failed = [outcome for outcome in outcomes if outcome != "ok"]
        print(f"{len(outcomes)} probes, {len(held)} held, peak {peak:.1f} MiB (base {base:.1f})")
        assert not failed, f"{len(failed)} of {len(outcomes)} probes failed: {failed}"
        assert peak - base < 48, f"RSS grew by {peak - base:.0f} MiB"
    finally:
        done.wait(60)
        for sock in held:
            sock.close()
        assert child.stop() == 0


def test_at_the_cap_a_silent_connection_makes_room(tmp_certs: CertFiles, tmp_path: Path) -> None:
    """At the cap, new clients take the slots of connections that never sent a request, oldest
    first, then of the longest idle; the clients that were answered keep being answered."""
    child = Child(tmp_certs, tmp_path, max_connections=4, header_timeout=60.0)
    silent = [socket.create_connection(("127.0.0.1", child.port), timeout=5) for _ in range(4)]
    clients = [Client(child.port, child.context) for _ in range(3)]
    try:
        time.sleep(0.2)  # accepted: the cap is full of silent connections
        for client in clients:  # each kept open afterwards (idle keep-alive)
            assert client.post_review(VALIDATE, review(pool(workerClassName="talos"))).response["allowed"] is True
        figures = child.metrics()  # a fourth client: the last silent connection makes room
        assert figures['workerclass_webhook_connections_closed_total{reason="evicted"}'] == 4
        assert figures['workerclass_webhook_connections_closed_total{reason="refused"}'] == 0
        assert figures["workerclass_webhook_connections"] <= 4
        for sock in silent:  # every silent connection was closed by the server
            sock.settimeout(5)
            assert sock.recv(1) == b""
        for client in clients:  # idle ones may have made room in turn: they reconnect and are answered
            assert client.post_review(VALIDATE, review(pool(workerClassName="talos"))).response["allowed"] is True
    finally:
        for client in clients:
            client.close()
        for sock in silent:
            sock.close()
        assert child.stop() == 0


def test_trickled_headers_are_cut_at_the_header_deadline(tmp_certs: CertFiles, tmp_path: Path) -> None:
    """A slowloris client sending a header byte every 0.1 s is closed at the deadline anyway."""
    child = Child(tmp_certs, tmp_path, header_timeout=1.0, keepalive_timeout=30.0)
    try:
        with raw_tls_socket(child.port, child.context, timeout=5) as sock:
            header = b"POST /validate/kubernetesnodes HTTP/1.1\r\nHost: x\r\n" + b"X-Slow: " + b"a" * 200
            closed = False
            for byte in header:  # ~25 s if never cut: bounded by the header length
                try:
                    sock.sendall(bytes([byte]))
                    time.sleep(0.1)
                except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
                    closed = True
                    break
            if not closed:
                sock.settimeout(2)
                try:
                    closed = sock.recv(1) == b""
                except (ConnectionResetError, ssl.SSLError):
                    closed = True
            assert closed, "the trickling client was never cut off"
        child.probe()
        assert child.metrics()['workerclass_webhook_connections_closed_total{reason="header_timeout"}'] >= 1
    finally:
        child.stop()


def test_second_sigterm_during_the_drain_drops_nothing(tmp_certs: CertFiles, tmp_path: Path) -> None:
    child = Child(tmp_certs, tmp_path, shutdown_delay=1.0, shutdown_timeout=15.0)
    body = json.dumps(review(pool(workerClassName="talos"))).encode()
    sock = raw_tls_socket(child.port, child.context, timeout=10)
    try:
        sock.sendall(
            b"POST /validate/kubernetesnodes HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body[:10]
        )
        time.sleep(0.3)  # the headers are in: the request is in flight
        child.process.send_signal(signal.SIGTERM)
        time.sleep(0.3)
        child.process.send_signal(signal.SIGTERM)  # a second one while draining
        time.sleep(1.5)  # past the shutdown delay: the listener is closed, the drain waits for us
        assert child.process.poll() is None, "the second signal ended the process"
        sock.sendall(body[10:])
        answer = b""
        while b"\r\n\r\n" not in answer or len(answer.partition(b"\r\n\r\n")[2]) < 20:
            chunk = sock.recv(65536)
            if not chunk:
                break
            answer += chunk
        head, _, payload = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200"), head
        assert json.loads(payload)["response"]["allowed"] is True
    finally:
        sock.close()
    assert child.process.wait(20) == 0  # drained and exited on its own
    assert "already shutting down" in child.stderr.read_text()
