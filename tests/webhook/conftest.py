"""Fixtures: test certificates and a real webhook server on 127.0.0.1 over HTTPS."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from workerclass.adapters.tls import ReloadingContext
from workerclass.webhook import StaticSource
from workerclass.webhook.server import Settings, WebhookServer

from .cases import table_state
from .helpers import CertFiles, Client, Running


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> CertFiles:
    return CertFiles.create(tmp_path_factory.mktemp("certs"))


def fast_settings(**overrides: float) -> Settings:
    """Loopback, any free port, and short waits (a fuzzed Content-Length that promises more body
    than is sent costs the test 2 s, not 10)."""
    values: dict[str, object] = {
        "host": "127.0.0.1",
        "port": 0,
        "shutdown_timeout": 5.0,
        "shutdown_delay": 0.0,
        "body_timeout": 2.0,
    }
    values.update(overrides)
    return Settings(**values)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def source() -> StaticSource:
    return StaticSource(table_state())


@pytest.fixture(scope="module")
def served(certs: CertFiles, source: StaticSource) -> Iterator[Running]:
    server = WebhookServer(source, tls=ReloadingContext(certs.cert, certs.key), settings=fast_settings())
    running = Running(server)
    yield running
    running.close()


@pytest.fixture
def client(served: Running, certs: CertFiles) -> Iterator[Client]:
    client = Client(served.port, certs.client_context())
    yield client
    client.close()


@pytest.fixture
def tmp_certs(tmp_path: Path) -> CertFiles:
    return CertFiles.create(tmp_path / "certs")
