"""``workerclass serve`` as a process (cli.commands_serve): ``serve webhook`` serves a STATE folder
over HTTPS and stops cleanly on SIGTERM; bad options and a missing cluster are one line, no traceback.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.webhook.cases import pool
from tests.webhook.helpers import EXAMPLES, CertFiles, Client, patched, review


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
