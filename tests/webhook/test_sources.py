"""``--state DIR``: the server decides against a STATE folder and follows its changes."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

from workerclass.adapters.tls import ReloadingContext
from workerclass.webhook import FolderSource, StaticSource
from workerclass.webhook.server import WebhookServer

from .cases import pool, worker_class
from .conftest import fast_settings
from .helpers import EXAMPLES, CertFiles, Client, Running, review


def eventually(check: Callable[[], bool], limit: float = 5.0) -> None:
    deadline = time.monotonic() + limit
    while not check():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.02)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    target = tmp_path / "state"
    shutil.copytree(EXAMPLES, target)
    return target


@pytest.fixture
def from_folder(folder: Path, certs: CertFiles) -> Iterator[tuple[Running, Client, FolderSource]]:
    source = FolderSource(folder, interval=0.05)
    running = Running(WebhookServer(source, tls=ReloadingContext(certs.cert, certs.key), settings=fast_settings()))
    client = Client(running.port, certs.client_context())
    yield running, client, source
    client.close()
    running.close()


def class_allowed(client: Client, name: str) -> bool:
    response = client.post_review("/validate/kubernetesnodes", review(pool(workerClassName=name))).response
    return bool(response["allowed"])


def test_folder_changes_are_followed(folder: Path, from_folder: tuple[Running, Client, FolderSource]) -> None:
    _, client, source = from_folder
    assert client.request("GET", "/readyz").status == 200
    assert not class_allowed(client, "talos-r2")

    (folder / "classes" / "talos-r2.yaml").write_text(yaml.safe_dump(worker_class("talos-r2", bootstrap="talos")))
    eventually(lambda: class_allowed(client, "talos-r2"))

    # a half-saved file keeps the last good state for answers (never half applied), but the
    # replica is not ready and says why until the files load again
    (folder / "classes" / "broken.yaml").write_text("kind: WorkerClass\nmetadata: [unclosed\n")
    eventually(lambda: source.failures >= 1)
    reply = client.request("GET", "/readyz")
    assert reply.status == 503
    assert b"failed to reload" in reply.body and b"broken.yaml:3: invalid YAML" in reply.body
    assert class_allowed(client, "talos-r2")
    metrics = client.request("GET", "/metrics").body.decode()
    assert 'workerclass_webhook_source_sync_failures_total{source="folder"} 1.0' in metrics
    assert "workerclass_webhook_ready 0.0" in metrics

    (folder / "classes" / "broken.yaml").unlink()
    (folder / "classes" / "talos-r2.yaml").unlink()
    eventually(lambda: not class_allowed(client, "talos-r2"))
    assert client.request("GET", "/readyz").status == 200  # loaded again: ready again


def test_unloadable_folder_is_not_ready_until_fixed(tmp_path: Path, certs: CertFiles) -> None:
    folder = tmp_path / "state"
    folder.mkdir()
    (folder / "bad.yaml").write_text("a: [\n")
    source = FolderSource(folder, interval=0.05)
    running = Running(WebhookServer(source, tls=ReloadingContext(certs.cert, certs.key), settings=fast_settings()))
    client = Client(running.port, certs.client_context())
    try:
        reply = client.request("GET", "/readyz")
        assert reply.status == 503 and b"invalid YAML" in reply.body
        response = client.post_review("/mutate/kubernetesnodes", review(pool())).response
        assert response["allowed"] is False and response["status"]["code"] == 503
        assert "invalid YAML" in response["status"]["message"]

        (folder / "bad.yaml").unlink()
        shutil.copytree(EXAMPLES, folder, dirs_exist_ok=True)
        eventually(lambda: client.request("GET", "/readyz").status == 200)
        response = client.post_review("/mutate/kubernetesnodes", review(pool())).response
        assert response["allowed"] is True and response["patchType"] == "JSONPatch"
    finally:
        client.close()
        running.close()


def test_missing_folder_is_not_ready(tmp_path: Path, certs: CertFiles) -> None:
    source = FolderSource(tmp_path / "absent", interval=0.05)
    running = Running(WebhookServer(source, tls=ReloadingContext(certs.cert, certs.key), settings=fast_settings()))
    client = Client(running.port, certs.client_context())
    try:
        reply = client.request("GET", "/readyz")
        assert reply.status == 503 and b"no such file or folder" in reply.body
    finally:
        client.close()
        running.close()


class NotedSource(StaticSource):
    """A fixed state whose source says that no chart is known (as the cluster cache does)."""

    notes = ("no chart known: the shipped facts' chart stands in",)


def test_readyz_says_what_the_source_notes(certs: CertFiles) -> None:
    from .cases import table_state

    server = WebhookServer(
        NotedSource(table_state()), tls=ReloadingContext(certs.cert, certs.key), settings=fast_settings()
    )
    running = Running(server)
    client = Client(running.port, certs.client_context())
    try:
        reply = client.request("GET", "/readyz")
        assert reply.status == 200
        assert reply.body.decode() == "ok\nnote: no chart known: the shipped facts' chart stands in\n"
    finally:
        client.close()
        running.close()
