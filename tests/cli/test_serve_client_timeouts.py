"""``serve webhook`` and ``serve controller`` make their cluster client with a read timeout that fits the cache.

lightkube's default read timeout (10 s) is shorter than the cluster cache's list deadline (30 s):
a client made with it would cut a slow list page the cache means to wait for. Both commands make
theirs with :func:`workerclass.adapters.kube.client_timeout`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lightkube
import pytest
from typer.testing import CliRunner

import workerclass.adapters.kube as kube
import workerclass.adapters.tls as tls_module
import workerclass.webhook.server as server_module
from workerclass.cli.main import _register, app

_register()
#: the deadlines both commands make their cache with (the defaults)
READ_TIMEOUT = kube.ClusterCache(object()).read_timeout


class RecordingClient:
    made: list[dict[str, Any]] = []

    def __init__(self, **kwargs: Any) -> None:
        RecordingClient.made.append(kwargs)

    async def close(self) -> None:
        return None


def kubeconfig() -> lightkube.KubeConfig:
    return lightkube.KubeConfig.from_dict(
        {
            "clusters": [{"name": "c", "cluster": {"server": "https://10.0.0.1:6443"}}],
            "users": [{"name": "u", "user": {"token": "t"}}],
            "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
            "current-context": "c",
        }
    )


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    RecordingClient.made = []
    monkeypatch.setattr(lightkube.KubeConfig, "from_file", staticmethod(lambda path: kubeconfig()))
    monkeypatch.setattr(lightkube, "AsyncClient", RecordingClient)
    return RecordingClient.made


def fits_the_cache(kwargs: dict[str, Any]) -> bool:
    timeout = kwargs.get("timeout")
    return timeout is not None and timeout.read is not None and timeout.read >= READ_TIMEOUT


def test_serve_webhook(recorded: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    class FakeServer:
        def __init__(self, source: Any, *, tls: Any, settings: Any) -> None:
            self.source = source

        async def serve(self) -> None:
            return None

    monkeypatch.setattr(tls_module, "ReloadingContext", lambda cert, key: object())
    monkeypatch.setattr(server_module, "WebhookServer", FakeServer)
    args = ["serve", "webhook", "--tls-cert", "c", "--tls-key", "k", "--kubeconfig", str(tmp_path / "kc")]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert len(recorded) == 1 and recorded[0]["field_manager"] == "workerclass-webhook"
    assert fits_the_cache(recorded[0]), recorded[0]


def test_the_cluster_client_of_both_commands(recorded: list[dict[str, Any]]) -> None:
    """``_cache_client``: what ``serve webhook`` and ``serve controller`` make their cluster client with."""
    from workerclass.adapters.transport import AiohttpTransport
    from workerclass.cli.commands_serve import _cache_client

    config = kubeconfig()
    client = _cache_client(config, "workerclass-controller")
    assert isinstance(client, RecordingClient) and recorded[0]["config"] is config
    assert recorded[0]["field_manager"] == "workerclass-controller"
    assert fits_the_cache(recorded[0]), recorded[0]
    assert isinstance(recorded[0]["transport"], AiohttpTransport)  # its requests go through aiohttp
