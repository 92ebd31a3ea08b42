"""``serve`` and ``manifests`` options: limits wired to the server and cache, errors without URLs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lightkube
import pytest
import yaml
from typer.testing import CliRunner

import workerclass.adapters.tls as tls_module
import workerclass.webhook.server as server_module
from tests.cli.test_serve_client_timeouts import kubeconfig
from workerclass.cli.main import _register, app

_register()
SECRET_URL = "https://admin:hunter2secret@k8s.example:6443"


class FakeServer:
    seen: dict[str, Any] = {}

    def __init__(self, source: Any, *, tls: Any, settings: Any) -> None:
        FakeServer.seen = {"source": source, "settings": settings}

    async def serve(self) -> None:
        return None


def _tls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tls_module, "ReloadingContext", lambda cert, key: object())
    monkeypatch.setattr(server_module, "WebhookServer", FakeServer)


def test_serve_webhook_limits_reach_the_server_and_the_cluster_cache(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _tls(monkeypatch)
    monkeypatch.setattr(lightkube.KubeConfig, "from_file", staticmethod(lambda path: kubeconfig()))
    monkeypatch.setattr(lightkube, "AsyncClient", lambda **kwargs: object())
    args = ["serve", "webhook", "--tls-cert", "c", "--tls-key", "k", "--kubeconfig", str(tmp_path / "kc")]
    result = CliRunner().invoke(app, [*args, "--max-connections", "7", "--header-timeout", "2.5", "--stale-after", "9"])
    assert result.exit_code == 0, result.output
    settings = FakeServer.seen["settings"]
    assert (settings.max_connections, settings.header_timeout) == (7, 2.5)
    assert FakeServer.seen["source"].stale_after == 9.0


@pytest.mark.parametrize(
    "command", [["serve", "webhook", "--tls-cert", "c", "--tls-key", "k"], ["serve", "controller"]]
)
def test_a_kubeconfig_error_never_prints_the_server_url(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, command: list[str]
) -> None:
    _tls(monkeypatch)

    def broken(path: Any) -> Any:
        raise lightkube.ConfigError(f"cannot reach {SECRET_URL}: bad cluster")

    monkeypatch.setattr(lightkube.KubeConfig, "from_file", staticmethod(broken))
    result = CliRunner().invoke(app, [*command, "--kubeconfig", str(tmp_path / "kc")])
    assert result.exit_code == 2
    assert "no Kubernetes configuration: ConfigError" in result.output
    assert "hunter2secret" not in result.output and "k8s.example" not in result.output


@pytest.mark.parametrize(
    ("policy", "kinds"),
    [("kubernetes", {"NetworkPolicy"}), ("cilium", {"CiliumNetworkPolicy"}), ("none", set())],
)
def test_manifests_network_policy(policy: str, kinds: set[str]) -> None:
    result = CliRunner().invoke(app, ["manifests", "--network-policy", policy])
    assert result.exit_code == 0, result.output
    found = {doc["kind"] for doc in yaml.safe_load_all(result.stdout) if doc}
    assert found & {"NetworkPolicy", "CiliumNetworkPolicy"} == kinds


@pytest.mark.parametrize(
    "command",
    [["serve", "webhook", "--tls-cert", "c", "--tls-key", "k"], ["serve", "controller"]],
    ids=["webhook", "controller"],
)
def test_the_hoster_names_the_chart_source(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, command: list[str]) -> None:
    """``--chart-source KIND/NAMESPACE/NAME`` reaches the chart follower; a bad value, or one beside
    ``--chart``, is one line and exit 2."""
    import workerclass.cli.commands_serve as serve

    _tls(monkeypatch)
    seen: list[Any] = []

    def follower(client: Any, chart: Any, interval: float, source: Any = None) -> None:
        seen.append(source)
        raise SystemExit(0)  # stop before anything runs

    monkeypatch.setattr(serve, "_follower", follower)
    monkeypatch.setattr(lightkube.KubeConfig, "from_file", staticmethod(lambda path: kubeconfig()))
    monkeypatch.setattr(lightkube, "AsyncClient", lambda **kwargs: object())
    base = [*command, "--kubeconfig", str(tmp_path / "kc")]
    result = CliRunner().invoke(app, [*base, "--chart-source", "ExternalArtifact/cozy-system/kubernetes-nodes"])
    assert result.exit_code == 0, result.output
    assert [(ref.kind, ref.namespace, ref.name) for ref in seen] == [
        ("ExternalArtifact", "cozy-system", "kubernetes-nodes")
    ]
    bad = CliRunner().invoke(app, [*base, "--chart-source", "GitRepository/cozy-system/x"])
    assert bad.exit_code == 2 and "Traceback" not in bad.output
    assert "ExternalArtifact, HelmChart or OCIRepository" in bad.output
    both = CliRunner().invoke(app, [*base, "--chart-source", "HelmChart/a/b", "--chart", str(tmp_path)])
    assert both.exit_code == 2 and "not both" in both.output


def test_manifests_carry_the_chart_source() -> None:
    result = CliRunner().invoke(app, ["manifests", "--chart-source", "HelmChart/cozy-public/kubernetes-nodes"])
    assert result.exit_code == 0, result.output
    deployments = [doc for doc in yaml.safe_load_all(result.stdout) if doc and doc["kind"] == "Deployment"]
    assert len(deployments) == 2
    for deployment in deployments:
        args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        assert args[args.index("--chart-source") + 1] == "HelmChart/cozy-public/kubernetes-nodes"
    plain = CliRunner().invoke(app, ["manifests"])
    assert "--chart-source" not in plain.stdout
    bad = CliRunner().invoke(app, ["manifests", "--chart-source", "nope"])
    assert bad.exit_code == 2 and "KIND/NAMESPACE/NAME" in bad.output
