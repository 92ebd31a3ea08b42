"""``workerclass serve`` as a process (cli.commands_serve): ``serve webhook`` serves a STATE folder
over HTTPS and stops cleanly on SIGTERM; bad options and a missing cluster are one line, no traceback.
"""

from __future__ import annotations

import json
import re
import signal
import ssl
import subprocess
import sys
import time
from pathlib import Path

from tests.webhook.cases import pool
from tests.webhook.helpers import EXAMPLES, CertFiles, Client, patched, raw_tls_socket, review


def serve(*args: str) -> subprocess.Popen[str]:
    entry = "from workerclass.cli.main import main; main()"
    command = [sys.executable, "-c", entry, "serve", "webhook", *args]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_serve_webhook_with_a_state_folder(tmp_certs: CertFiles) -> None:
    process = serve(
        "--tls-cert", str(tmp_certs.cert), "--tls-key", str(tmp_certs.key),
        "--host", "127.0.0.1", "--port", "0", "--state", str(EXAMPLES),
    )  # fmt: skip
    try:
        assert process.stderr is not None
        port = None
        deadline = time.monotonic() + 30
        while port is None and time.monotonic() < deadline:
            line = process.stderr.readline()
            assert line, "the server exited before listening"
            found = re.search(r"webhook listening on 127\.0\.0\.1:(\d+)", line)
            port = int(found.group(1)) if found else None
        assert port is not None
        client = Client(port, tmp_certs.client_context())
        assert client.request("GET", "/readyz").status == 200
        obj = pool()
        response = client.post_review("/mutate/kubernetesnodes", review(obj)).response
        assert patched(obj, response)["spec"]["workerClassName"] == "talos"
        client.close()
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert "webhook stopped" in err
    assert "Traceback" not in err


def test_unreadable_certificate_is_one_line(tmp_path: Path) -> None:
    process = serve("--tls-cert", str(tmp_path / "absent.crt"), "--tls-key", str(tmp_path / "absent.key"))
    _, err = process.communicate(timeout=30)
    assert process.returncode == 2
    assert "absent.crt" in err and "Traceback" not in err


def _run_serve(*args: str) -> subprocess.CompletedProcess[str]:
    entry = "from workerclass.cli.main import main; main()"
    return subprocess.run(
        [sys.executable, "-c", entry, "serve", *args], capture_output=True, text=True, timeout=60, check=False
    )


def test_bad_port_host_and_intervals_are_refused_without_a_traceback(tmp_certs: CertFiles) -> None:
    tls = ("--tls-cert", str(tmp_certs.cert), "--tls-key", str(tmp_certs.key), "--state", str(EXAMPLES))
    for extra in (("--port", "99999"), ("--port", "-5"), ("--state-interval", "-1"), ("--shutdown-timeout", "-1")):
        result = _run_serve("webhook", *tls, *extra)
        assert result.returncode == 2, (extra, result.stderr)
        assert "Traceback" not in result.stderr
    result = _run_serve("webhook", *tls, "--host", "bad..host", "--port", "0")
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr and "cannot listen on bad..host" in result.stderr


def test_serve_controller_without_a_cluster_is_one_line(tmp_path: Path) -> None:
    result = _run_serve("controller", "--kubeconfig", str(tmp_path / "missing"))
    assert result.returncode == 2
    assert result.stderr.startswith("error: no Kubernetes configuration")
    assert "Traceback" not in result.stderr


def _listening(process: subprocess.Popen[str]) -> int:
    assert process.stderr is not None
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        assert line, "the server exited before listening"
        found = re.search(r"webhook listening on 127\.0\.0\.1:(\d+)", line)
        if found:
            return int(found.group(1))
    raise AssertionError("the server did not listen")


def _post(sock: ssl.SSLSocket, body: bytes) -> bytes:
    """One review on a kept-alive connection; the head of the answer (b"" when the server closed it)."""
    sock.sendall(
        b"POST /validate/kubernetesnodes HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    answer = b""
    try:
        while b"\r\n\r\n" not in answer:
            chunk = sock.recv(65536)
            if not chunk:
                return b""
            answer += chunk
        head, _, rest = answer.partition(b"\r\n\r\n")
        length = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))  # type: ignore[union-attr]
        while len(rest) < length:
            chunk = sock.recv(65536)
            if not chunk:
                return b""
            rest += chunk
    except (ConnectionResetError, ssl.SSLError):
        return b""
    return head


def test_sigterm_by_default_answers_requests_on_kept_alive_connections(tmp_certs: CertFiles) -> None:
    """Without --shutdown-delay, a SIGTERM must not drop a request the API server sends on a
    connection it keeps alive (it counts each as a failed call): the server keeps answering,
    each answer closing its connection, until the endpoints have let go of the pod."""
    process = serve(
        "--tls-cert", str(tmp_certs.cert), "--tls-key", str(tmp_certs.key),
        "--host", "127.0.0.1", "--port", "0", "--state", str(EXAMPLES),
    )  # fmt: skip
    body = json.dumps(review(pool(workerClassName="talos"))).encode()
    sockets = []
    try:
        port = _listening(process)
        for _ in range(4):
            sock = raw_tls_socket(port, tmp_certs.client_context(), timeout=10)
            assert _post(sock, body).startswith(b"HTTP/1.1 200")  # the connection is kept alive
            sockets.append(sock)
        process.send_signal(signal.SIGTERM)
        time.sleep(0.5)
        for sock in sockets:
            head = _post(sock, body)
            assert head.startswith(b"HTTP/1.1 200"), "a request on a kept-alive connection was dropped"
            assert b"connection: close" in head.lower()  # the client reconnects, to a replica that stays
        fresh = Client(port, tmp_certs.client_context())  # endpoints not yet updated: still accepted
        assert fresh.post_review("/validate/kubernetesnodes", review(pool(workerClassName="talos"))).status == 200
        fresh.close()
    finally:
        for sock in sockets:
            sock.close()
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert "Traceback" not in err


def test_sighup_is_logged_and_never_kills(tmp_certs: CertFiles) -> None:
    process = serve(
        "--tls-cert", str(tmp_certs.cert), "--tls-key", str(tmp_certs.key),
        "--host", "127.0.0.1", "--port", "0", "--state", str(EXAMPLES), "--shutdown-delay", "0",
    )  # fmt: skip
    try:
        port = _listening(process)
        process.send_signal(signal.SIGHUP)
        time.sleep(0.5)
        assert process.poll() is None, "SIGHUP ended the server"
        client = Client(port, tmp_certs.client_context())
        assert client.request("GET", "/readyz").status == 200
        client.close()
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert "SIGHUP" in err, err
