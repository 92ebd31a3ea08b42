"""Certificate rotation: files replaced while clients send reviews; no request fails."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from workerclass.adapters.tls import ReloadingContext, TLSFileError
from workerclass.webhook import StaticSource
from workerclass.webhook.server import WebhookServer

from .cases import pool, table_state
from .conftest import fast_settings
from .helpers import CertFiles, Client, Running, raw_tls_socket, review


@pytest.fixture
def rotating(tmp_certs: CertFiles) -> Iterator[Running]:
    tls = ReloadingContext(tmp_certs.cert, tmp_certs.key)
    server = WebhookServer(StaticSource(table_state()), tls=tls, settings=fast_settings(tls_reload_interval=0.05))
    running = Running(server)
    yield running
    running.close()


def served_serial(running: Running, certs: CertFiles) -> int:
    with raw_tls_socket(running.port, certs.client_context()) as sock:
        peer = sock.getpeercert()
    assert peer is not None
    return int(str(peer["serialNumber"]), 16)


def wait_for_serial(running: Running, certs: CertFiles, serial: int, limit: float = 5.0) -> None:
    deadline = time.monotonic() + limit
    while served_serial(running, certs) != serial:
        assert time.monotonic() < deadline, "the rotated certificate was not taken into use"
        time.sleep(0.02)


def test_rotation_under_load_drops_nothing(rotating: Running, tmp_certs: CertFiles) -> None:
    stop = threading.Event()
    failures: list[str] = []
    counts = [0] * 4
    body = review(pool(workerClassName="talos"))

    def send(index: int, keep_alive: bool) -> None:
        client = Client(rotating.port, tmp_certs.client_context())
        while not stop.is_set():
            try:
                reply = client.post_review("/validate/kubernetesnodes", body)
                if reply.status != 200 or reply.response["allowed"] is not True:
                    failures.append(f"status {reply.status}")
                counts[index] += 1
            except Exception as error:  # any failure at all is what this test is about
                failures.append(repr(error))
            if not keep_alive:
                client.close()  # a fresh TLS handshake for every request
        client.close()

    tls = rotating.server.tls
    assert tls is not None
    threads = [threading.Thread(target=send, args=(index, index % 2 == 0)) for index in range(4)]
    for thread in threads:
        thread.start()
    try:
        serials = []
        for round_ in range(6):
            time.sleep(0.15)
            if round_ == 3:
                # the racy way: the new certificate lands first, its key a moment later; the
                # server must keep serving the old pair in between, not a broken one
                cert, key, serial = tmp_certs.authority.issue()
                refused_before = tls.failures
                tmp_certs.cert.write_bytes(cert)
                deadline = time.monotonic() + 10
                while tls.failures == refused_before:  # the poller has seen (and refused) the mismatched pair
                    assert time.monotonic() < deadline
                    time.sleep(0.01)
                tmp_certs.key.write_bytes(key)
            else:
                serial = tmp_certs.rotate()
            serials.append(serial)
            wait_for_serial(rotating, tmp_certs, serial)
    finally:
        stop.set()
        for thread in threads:
            thread.join(10)
    assert failures == []
    assert all(count > 5 for count in counts), counts
    # at least one swap per rotation; a poll that read the files mid-rotation may add one more
    assert tls.reloads >= len(serials)
    assert tls.failures >= 1  # the half-written pair was seen and refused


def test_kept_connection_survives_rotation(rotating: Running, tmp_certs: CertFiles) -> None:
    client = Client(rotating.port, tmp_certs.client_context())
    assert client.post_review("/validate/kubernetesnodes", review(pool())).status == 200
    connection = client.connection
    serial = tmp_certs.rotate()
    wait_for_serial(rotating, tmp_certs, serial)
    assert client.post_review("/validate/kubernetesnodes", review(pool())).status == 200
    assert client.connection is connection  # the same TLS session carried on
    client.close()


def test_unloadable_files_keep_the_previous_pair(tmp_certs: CertFiles) -> None:
    tls = ReloadingContext(tmp_certs.cert, tmp_certs.key)
    assert tls.reload() is False  # unchanged
    tmp_certs.key.write_bytes(b"not a key")
    with pytest.raises(TLSFileError) as raised:
        tls.reload()
    assert "not a key" not in str(raised.value)
    assert tls.current is tls.context and tls.failures == 1
    tmp_certs.rotate()
    assert tls.reload() is True and tls.current is not tls.context


def test_missing_files_are_a_clear_error(tmp_certs: CertFiles) -> None:
    with pytest.raises(TLSFileError, match=r"no such file|cannot read"):
        ReloadingContext(tmp_certs.directory / "absent.crt", tmp_certs.key)
    with pytest.raises(TLSFileError, match="cannot load"):
        ReloadingContext(tmp_certs.ca, tmp_certs.key)  # a certificate that is not the key's
