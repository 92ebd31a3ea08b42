"""``workerclass preflight --live / --kubeconfig FILE / --context NAME``: the install read from the
API server (kmock, through lightkube's real client), the same table and JSON as from STATE, and
one-line errors (exit 2) that never print a server's message, its URL or a credential."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import kmock
import pytest
import yaml
from click.testing import Result
from typer.testing import CliRunner

pytest.importorskip("lightkube")

from tests.adapters.live_cluster import (
    NAMESPACE,
    TOKEN,
    find,
    healthy_install,
    kubeconfig,
    refuse,
    seed,
    write_kubeconfig,
)
from workerclass.adapters import kubeconfig as connecting
from workerclass.cli.main import _register, app

_register()


def run(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


async def run_live(*args: str) -> Result:
    """The command in a thread: the emulator answers on this test's event loop."""
    return await asyncio.to_thread(run, *args)


def one_line_error(result: Result) -> str:
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.stderr
    return lines[0].removeprefix("error: ")


@pytest.fixture
def config_file(tmp_path: Path, kmock: kmock.KubernetesEmulator) -> Path:
    return write_kubeconfig(tmp_path / "kubeconfig", str(kmock.url))


# ---------------------------------------------------------------------- the verdict, live


@pytest.mark.asyncio
async def test_kubeconfig_reads_the_cluster_and_prints_the_table(
    kmock: kmock.KubernetesEmulator, config_file: Path
) -> None:
    seed(kmock, healthy_install())
    result = await run_live("preflight", "--kubeconfig", str(config_file))
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["CHECK", "VERDICT", "OBJECT", "FIELD", "MESSAGE"]
    assert lines[-1] == "safe: no check failed (2 warnings)"  # the outage caveat, and no --chart given
    assert any(line.startswith("readiness") and f"Deployment {NAMESPACE}/workerclass-webhook" in line for line in lines)


@pytest.mark.asyncio
async def test_json_keeps_the_contract_shape(kmock: kmock.KubernetesEmulator, config_file: Path) -> None:
    seed(kmock, healthy_install(ready=0))
    result = await run_live("preflight", "--kubeconfig", str(config_file), "-o", "json")
    assert result.exit_code == 1, result.stderr
    data = json.loads(result.stdout)
    assert set(data) == {"safe", "checks"} and data["safe"] is False
    assert all(set(check) == {"check", "verdict", "object", "field", "message"} for check in data["checks"])
    assert {
        "check": "readiness",
        "verdict": "fail",
        "object": f"Deployment {NAMESPACE}/workerclass-webhook",
    }.items() <= (next(c for c in data["checks"] if c["check"] == "readiness" and c["verdict"] == "fail").items())


@pytest.mark.asyncio
async def test_the_same_install_from_state_and_live_gives_the_same_json(
    kmock: kmock.KubernetesEmulator, config_file: Path, tmp_path: Path
) -> None:
    objects = [obj for obj in healthy_install() if obj["kind"] != "Namespace"]
    seed(kmock, objects)
    folder = tmp_path / "state"
    folder.mkdir()
    (folder / "install.yaml").write_text(yaml.safe_dump_all(objects))
    from_state = json.loads(run("preflight", str(folder), "-o", "json").stdout)
    from_cluster = json.loads((await run_live("preflight", "--kubeconfig", str(config_file), "-o", "json")).stdout)
    # one wording differs: a folder may rely on cert-manager's injection, the cluster must have its result
    assert [c for c in from_cluster["checks"] if c["check"] == "caBundle"] == [
        {
            "check": "caBundle",
            "verdict": "ok",
            "object": None,
            "field": None,
            "message": "all 5 workerclass webhooks have a caBundle that holds the CA of the serving certificate",
        }
    ]
    from_state["checks"] = [c for c in from_state["checks"] if c["check"] != "caBundle"]
    from_cluster["checks"] = [c for c in from_cluster["checks"] if c["check"] != "caBundle"]
    assert from_cluster == from_state


@pytest.mark.asyncio
async def test_a_refused_list_is_a_failed_check_naming_it(kmock: kmock.KubernetesEmulator, config_file: Path) -> None:
    seed(kmock, healthy_install())
    refuse(kmock, "PodDisruptionBudget")
    result = await run_live("preflight", "--kubeconfig", str(config_file), "-o", "json")
    assert result.exit_code == 1
    (check,) = [c for c in json.loads(result.stdout)["checks"] if c["verdict"] == "fail"]
    assert check["check"] == "disruptionBudget"
    assert check["message"].endswith(f"cannot list poddisruptionbudgets.policy in namespace {NAMESPACE}: 403 Forbidden")
    assert "secret-user" not in result.stdout + result.stderr


@pytest.mark.asyncio
async def test_live_reads_kubeconfig_from_the_environment_and_context_picks(
    kmock: kmock.KubernetesEmulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed(kmock, healthy_install())
    monkeypatch.setattr(connecting, "SERVICE_ACCOUNT", str(tmp_path / "no-service-account"))
    config = kubeconfig("https://127.0.0.1:9")  # the current context: nothing listens there
    good = kubeconfig(str(kmock.url), context="emulator")
    config["clusters"] += good["clusters"]
    config["contexts"] += good["contexts"]
    (tmp_path / "config").write_text(yaml.safe_dump(config))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "config"))
    assert (await run_live("preflight", "--live", "--context", "emulator")).exit_code == 0
    assert (await run_live("preflight", "--context", "emulator", "-q")).exit_code == 0  # --context implies --live
    message = one_line_error(await run_live("preflight", "--live"))
    assert message.startswith("context kmock: cannot reach the API server (")


# ---------------------------------------------------------------------- errors: one line, exit 2


def test_state_is_required_unless_reading_live() -> None:
    message = one_line_error(run("preflight"))
    assert message.startswith("missing STATE:") and "--live" in message and "--kubeconfig FILE" in message


def test_state_and_a_live_reading_are_exclusive(tmp_path: Path) -> None:
    message = one_line_error(run("preflight", str(tmp_path), "--live"))
    assert message == "give STATE or a live reading (--live, --kubeconfig, --context), not both"


def test_a_missing_kubeconfig_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "absent"
    assert one_line_error(run("preflight", "--kubeconfig", str(path))) == f"{path}: no such kubeconfig file"


def test_an_unknown_context_is_one_line(tmp_path: Path) -> None:
    path = write_kubeconfig(tmp_path / "config", "https://127.0.0.1:9")
    message = one_line_error(run("preflight", "--kubeconfig", str(path), "--context", "prod"))
    assert message == f"no context 'prod' in {path} (it has: kmock)"


def test_an_unreachable_server_never_prints_its_url_or_credentials(tmp_path: Path) -> None:
    path = write_kubeconfig(tmp_path / "config", "https://admin:hunter2@127.0.0.1:9/k8s")
    message = one_line_error(run("preflight", "--kubeconfig", str(path)))
    assert message.startswith("context kmock: cannot reach the API server (")
    for secret in ("hunter2", "admin", "127.0.0.1", "/k8s", TOKEN):
        assert secret not in message


@pytest.mark.asyncio
async def test_unauthorized_is_one_line_without_the_server_message(
    kmock: kmock.KubernetesEmulator, config_file: Path
) -> None:
    seed(kmock, healthy_install())
    refuse(kmock, "MutatingWebhookConfiguration", 401, "Unauthorized")
    message = one_line_error(await run_live("preflight", "--kubeconfig", str(config_file)))
    assert message == "context kmock: the API server refused the credentials (401 Unauthorized)"
    assert str(kmock.url.port) not in message


def test_the_folder_reading_is_unchanged(tmp_path: Path) -> None:
    objects = healthy_install()
    (tmp_path / "install.yaml").write_text(yaml.safe_dump_all(objects))
    result = run("preflight", str(tmp_path))
    assert result.exit_code == 0, result.stdout
    assert result.stdout.splitlines()[-1] == "safe: no check failed (2 warnings)"  # outage caveat, no --chart
    find(objects, "Deployment")["status"]["readyReplicas"] = 0
    (tmp_path / "install.yaml").write_text(yaml.safe_dump_all(objects))
    assert run("preflight", str(tmp_path)).exit_code == 1
