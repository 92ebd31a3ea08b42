"""``/metrics`` on a port of its own (``Settings.metrics_port``, ``serve webhook --metrics-port``):
plain HTTP there, so a NetworkPolicy can admit the scraper to that port only; the HTTPS port,
which the API server reaches from anywhere, then answers 404 for it."""

from __future__ import annotations

import socket
import urllib.error
import urllib.request

import pytest

from workerclass.adapters.tls import ReloadingContext
from workerclass.webhook import StaticSource
from workerclass.webhook.server import WebhookServer

from .cases import pool, table_state
from .conftest import fast_settings
from .helpers import CertFiles, Client, Running, review


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_metrics_move_to_their_own_port(certs: CertFiles) -> None:
    metrics_port = _free_port()
    running = Running(
        WebhookServer(
            StaticSource(table_state()),
            tls=ReloadingContext(certs.cert, certs.key),
            settings=fast_settings(metrics_port=metrics_port),
        )
    )
    try:
        client = Client(running.port, certs.client_context())
        assert client.post_review("/validate/kubernetesnodes", review(pool(workerClassName="talos"))).status == 200
        assert client.request("GET", "/metrics").status == 404
        assert client.request("GET", "/readyz").status == 200
        client.close()
        with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5) as answer:
            text = answer.read().decode()
        assert "workerclass_webhook_requests_total" in text or "workerclass_webhook" in text
        for path in ("/validate/kubernetesnodes", "/readyz", "/"):
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}{path}", timeout=5)
            assert refused.value.code in (404, 405)
    finally:
        running.close()
    with pytest.raises(OSError):  # stopped with the server
        socket.create_connection(("127.0.0.1", metrics_port), timeout=1).close()
