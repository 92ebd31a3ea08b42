"""Bad input, readiness, metrics, slow clients and graceful shutdown of the real server."""

from __future__ import annotations

import json
import logging
import socket
import ssl
import threading
import time
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

from workerclass.adapters.tls import ReloadingContext
from workerclass.webhook import StaticSource
from workerclass.webhook.server import WebhookServer

from .cases import PRIVATE_KEY, pool, ssh_key, table_state, worker_class
from .conftest import fast_settings
from .helpers import CertFiles, Client, Running, raw_tls_socket, review

VALIDATE = "/validate/kubernetesnodes"
MUTATE = "/mutate/kubernetesnodes"
MIB = 1024 * 1024


def envelope(**request: Any) -> dict[str, Any]:
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


def error_of(reply: Any) -> str:
    data = reply.json()
    assert set(data) == {"error", "code"} and data["code"] == reply.status
    message: str = data["error"]
    return message


# --------------------------------------------------------------------------- not an AdmissionReview: plain 4xx


@pytest.mark.parametrize(
    ("body", "status", "fragment"),
    [
        (b"", 400, "not JSON"),
        (b"{", 400, "not JSON"),
        (b"\xff\xfe", 400, "not JSON"),
        (b"[1, 2]", 400, "not a JSON object"),
        (b"null", 400, "not a JSON object"),
        (b"[" * 100_000, 400, ""),
        (
            json.dumps(
                {"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview", "request": {"uid": "x"}}
            ).encode(),
            400,
            "expected apiVersion",
        ),
        (
            json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "Review", "request": {"uid": "x"}}).encode(),
            400,
            "kind",
        ),
        (json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}).encode(), 400, "no request"),
        (json.dumps(envelope(operation="CREATE")).encode(), 400, "request.uid"),
        (json.dumps(envelope(uid=7)).encode(), 400, "request.uid"),
    ],
    ids=[
        "empty",
        "truncated",
        "not-utf8",
        "array",
        "null",
        "deep",
        "v1beta1",
        "wrong-kind",
        "no-request",
        "no-uid",
        "uid-int",
    ],
)
def test_not_an_admission_review(client: Client, body: bytes, status: int, fragment: str) -> None:
    reply = client.request("POST", VALIDATE, body)
    assert reply.status == status
    assert fragment in error_of(reply)


def test_body_over_3_mib_is_413(client: Client) -> None:
    reply = client.request("POST", VALIDATE, b" " * (3 * MIB + 1))
    assert reply.status == 413


def test_chunked_body_over_3_mib_is_413(served: Running, certs: CertFiles) -> None:
    import http.client

    connection = http.client.HTTPSConnection("127.0.0.1", served.port, context=certs.client_context(), timeout=10)
    chunks = (b"x" * 65536 for _ in range(3 * 16 + 1))
    connection.request("POST", VALIDATE, body=chunks, headers={"Content-Type": "application/json"}, encode_chunked=True)
    assert connection.getresponse().status == 413
    connection.close()


@pytest.mark.parametrize(("extra", "status"), [(0, 200), (1, 413)])
def test_whole_chunked_body_is_held_to_the_limit(certs: CertFiles, extra: int, status: int) -> None:
    """A chunked body (no Content-Length to refuse early) that arrives whole with its headers is
    taken from the buffer, and still held to ``max_body`` to the byte."""
    limit = 8192
    body = json.dumps(review(pool(workerClassName="talos"))).encode()
    body += b" " * (limit - len(body) + extra)  # JSON allows trailing whitespace
    running = Running(
        WebhookServer(
            StaticSource(table_state()),
            tls=ReloadingContext(certs.cert, certs.key),
            settings=fast_settings(max_body=limit),
        )
    )
    try:
        with raw_tls_socket(running.port, certs.client_context()) as sock:
            sock.sendall(
                b"POST /validate/kubernetesnodes HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n" + f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n"
            )
            answer = read_all(sock, 1.0)
    finally:
        running.close()
    assert answer.startswith(f"HTTP/1.1 {status}".encode()), answer[:100]


def test_body_of_3_mib_is_read(client: Client) -> None:
    obj = pool(labels={"padding": "x" * (3 * MIB - 4096)})
    body = json.dumps(review(obj)).encode()
    assert len(body) <= 3 * MIB
    reply = client.request("POST", VALIDATE, body)
    assert reply.status == 200 and reply.response["allowed"] in (True, False)


@pytest.mark.parametrize(
    "headers",
    [
        {"Content-Type": "text/plain"},
        {"Content-Type": "application/x-www-form-urlencoded"},
        {"Content-Encoding": "gzip"},
    ],
    ids=["text", "form", "gzip"],
)
def test_other_media_types_are_415(client: Client, headers: dict[str, str]) -> None:
    reply = client.request("POST", VALIDATE, json.dumps(review(pool())).encode(), headers)
    assert reply.status == 415


def test_json_with_parameters_is_accepted(client: Client) -> None:
    reply = client.request(
        "POST", VALIDATE, json.dumps(review(pool())).encode(), {"Content-Type": "application/json; charset=utf-8"}
    )
    assert reply.status == 200


def test_wrong_method_and_path(client: Client) -> None:
    assert client.request("GET", VALIDATE).status == 405
    assert client.request("POST", "/validate/pods", b"{}").status == 404
    assert client.request("GET", "/").status == 404


# --------------------------------------------------------------------------- readable but not decidable: a 400 denial


@pytest.mark.parametrize(
    ("request_fields", "fragment"),
    [
        ({"operation": "PATCH", "object": pool()}, "request.operation is not one of CREATE, UPDATE, DELETE"),
        ({"operation": "CONNECT", "object": pool()}, "request.operation is not one of"),
        ({"operation": None, "object": pool()}, "request.operation is not one of"),
        ({"operation": "CREATE"}, "request.object is required for CREATE"),
        ({"operation": "CREATE", "object": "pool"}, "request.object is not an object"),
        ({"operation": "UPDATE", "object": pool()}, "request.oldObject is required for UPDATE"),
        ({"operation": "DELETE"}, "request.oldObject is required for DELETE"),
        ({"operation": "CREATE", "object": pool(), "dryRun": "yes"}, "dryRun"),
        (
            {"operation": "CREATE", "object": worker_class("x", bootstrap="talos")},
            "request.object.kind is 'WorkerClass'",
        ),
        (
            {"operation": "CREATE", "object": pool(), "kind": {"group": "", "version": "v1", "kind": "Pod"}},
            "the request is for kind 'Pod' in group ''",
        ),
        ({"operation": "CREATE", "object": {**pool(), "apiVersion": "v1"}}, "apiVersion 'v1'"),
        ({"operation": "CREATE", "object": {**pool(), "metadata": []}}, "metadata is not an object"),
    ],
    ids=[
        "unknown-operation",
        "connect",
        "null-operation",
        "no-object",
        "object-not-object",
        "update-no-old",
        "delete-no-old",
        "dryrun-not-bool",
        "kind-for-other-path",
        "request-kind-other",
        "wrong-group",
        "metadata-list",
    ],
)
def test_undecidable_request_is_a_400_denial(client: Client, request_fields: dict[str, Any], fragment: str) -> None:
    reply = client.post_review(VALIDATE, envelope(uid="the-uid", **request_fields))
    assert reply.status == 200
    response = reply.response
    assert response["uid"] == "the-uid"
    assert response["allowed"] is False
    assert response["status"]["code"] == 400
    assert response["status"]["reason"] == "BadRequest"
    assert fragment in response["status"]["message"]


def test_object_without_kind_and_namespace_is_filled_from_the_request(client: Client) -> None:
    obj = pool()
    sent = review(obj)
    bare = {"metadata": {"name": obj["metadata"]["name"]}, "spec": obj["spec"]}
    sent["request"]["object"] = bare
    response = client.post_review(MUTATE, sent).response
    assert response["allowed"] is True and response["patchType"] == "JSONPatch"
    response = client.post_review(VALIDATE, sent).response
    # Allowed only if read as a KubernetesNodes in tenant-example: in the "default" namespace its
    # parent cluster would not be found.
    assert response["allowed"] is True, response


# --------------------------------------------------------------------------- health, readiness, metrics


def test_health_and_readiness(client: Client) -> None:
    assert client.request("GET", "/healthz").status == 200
    reply = client.request("GET", "/readyz")
    assert reply.status == 200 and reply.body == b"ok\n"


def test_metrics_count_requests_by_webhook_and_result(client: Client) -> None:
    client.post_review(VALIDATE, review(pool(workerClassName="no-such-class")))
    client.post_review(MUTATE, review(pool()))
    client.request("POST", VALIDATE, b"nope")
    reply = client.request("GET", "/metrics")
    assert reply.status == 200
    assert reply.headers["content-type"].startswith("text/plain")
    text = reply.body.decode()
    assert 'workerclass_webhook_requests_total{result="denied",webhook="validate-kubernetesnodes"}' in text
    assert 'workerclass_webhook_requests_total{result="patched",webhook="mutate-kubernetesnodes"}' in text
    assert 'workerclass_webhook_requests_total{result="rejected",webhook="validate-kubernetesnodes"}' in text
    assert (
        'workerclass_webhook_request_duration_seconds_bucket{le="0.025",result="denied",webhook="validate-kubernetesnodes"}'
        in text
    )
    assert "workerclass_webhook_ready 1.0" in text
    assert "workerclass_webhook_certificate_expiry_timestamp_seconds" in text


@pytest.fixture
def unready(certs: CertFiles) -> Iterator[Running]:
    source = StaticSource(None, reason="waiting for the first list of workerclasses.cozystack.io")
    running = Running(WebhookServer(source, tls=ReloadingContext(certs.cert, certs.key), settings=fast_settings()))
    yield running
    running.close()


def test_not_synced_fails_closed_and_says_why(unready: Running, certs: CertFiles) -> None:
    client = Client(unready.port, certs.client_context())
    reply = client.request("GET", "/readyz")
    assert reply.status == 503 and b"waiting for the first list" in reply.body
    assert client.request("GET", "/healthz").status == 200
    for path in (MUTATE, VALIDATE, "/validate/workerclasses"):
        obj = pool() if "nodes" in path else worker_class("x", bootstrap="talos")
        sent = review(obj)
        response = client.post_review(path, sent).response
        assert response["uid"] == sent["request"]["uid"]
        assert response["allowed"] is False
        assert response["status"]["code"] == 503
        assert "not ready" in response["status"]["message"]
        assert "waiting for the first list" in response["status"]["message"]
        assert "patch" not in response
    assert "workerclass_webhook_ready 0.0" in client.request("GET", "/metrics").body.decode()
    client.close()


def test_core_failure_is_a_500_denial_without_the_message(certs: CertFiles, caplog: pytest.LogCaptureFixture) -> None:
    def broken(*args: Any) -> Any:
        raise ValueError("s3cr3t value from the object")

    server = WebhookServer(
        StaticSource(table_state()),
        tls=ReloadingContext(certs.cert, certs.key),
        settings=fast_settings(),
        deciders={"mutate": broken, "validate": broken},
    )
    running = Running(server)
    try:
        client = Client(running.port, certs.client_context())
        with caplog.at_level(logging.INFO, logger="workerclass"):
            reply = client.post_review(VALIDATE, review(pool()))
        assert reply.status == 200
        response = reply.response
        assert response["allowed"] is False and response["status"]["code"] == 500
        assert response["status"]["reason"] == "InternalError"
        assert "s3cr3t" not in reply.body.decode()
        assert "s3cr3t" not in caplog.text and "ValueError" in caplog.text
        client.close()
    finally:
        running.close()


def test_logs_carry_codes_not_values(client: Client, caplog: pytest.LogCaptureFixture) -> None:
    key = ssh_key("alice@laptop")
    with caplog.at_level(logging.DEBUG):
        client.post_review(VALIDATE, review(pool(workerClassName="kairos", sshKeys=[PRIVATE_KEY])))
        client.post_review(VALIDATE, review(pool(workerClassName="talos", sshKeys=[key])))
        client.post_review(
            "/validate/workerclasses",
            review(worker_class("leak", bootstrap="talos", talos={"imageFactoryCA": PRIVATE_KEY})),
        )
    assert "PrivateKeyMaterial" in caplog.text and "SSHKeysOnTalos" in caplog.text
    assert "PRIVATE KEY" not in caplog.text and "b3BlbnNzaC1rZXktdjEAAAAA" not in caplog.text
    assert key.split()[1] not in caplog.text and "alice@laptop" not in caplog.text


def test_tls_1_1_is_refused(served: Running, certs: CertFiles) -> None:
    context = certs.client_context()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        context.minimum_version = ssl.TLSVersion.MINIMUM_SUPPORTED
        context.maximum_version = ssl.TLSVersion.TLSv1_1
    with pytest.raises(ssl.SSLError):
        raw_tls_socket(served.port, context).close()
    context = certs.client_context()
    context.maximum_version = ssl.TLSVersion.TLSv1_2
    with raw_tls_socket(served.port, context) as sock:
        assert sock.version() == "TLSv1.2"


# --------------------------------------------------------------------------- slow clients and shutdown


@pytest.fixture
def impatient(certs: CertFiles) -> Iterator[Running]:
    settings = fast_settings(
        body_timeout=0.5, keepalive_timeout=0.5, handshake_timeout=0.5, lingering_time=0.5, header_timeout=0.5
    )
    running = Running(
        WebhookServer(StaticSource(table_state()), tls=ReloadingContext(certs.cert, certs.key), settings=settings)
    )
    yield running
    running.close()


def wait_until(check: Any, limit: float = 10.0) -> None:
    deadline = time.monotonic() + limit
    while not check():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.01)


def read_all(sock: socket.socket, limit: float = 5.0) -> bytes:
    sock.settimeout(limit)
    chunks = []
    while True:
        try:
            chunk = sock.recv(65536)
        except (TimeoutError, ConnectionResetError, ssl.SSLError):
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def test_slow_body_gets_408(impatient: Running, certs: CertFiles) -> None:
    with raw_tls_socket(impatient.port, certs.client_context()) as sock:
        sock.sendall(
            b"POST /validate/kubernetesnodes HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b'Content-Length: 1000\r\n\r\n{"apiVersion"'
        )
        started = time.monotonic()
        answer = read_all(sock)
        assert answer.startswith(b"HTTP/1.1 408"), answer[:100]
        assert time.monotonic() - started < 4


def test_slow_headers_are_cut_off(impatient: Running, certs: CertFiles) -> None:
    with raw_tls_socket(impatient.port, certs.client_context()) as sock:
        sock.sendall(b"POST /validate/kubernetesnodes HTTP/1.1\r\nHost: x\r\n")
        started = time.monotonic()
        assert read_all(sock) == b""  # closed without an answer
        assert time.monotonic() - started < 4


def test_silent_tls_client_is_cut_off(impatient: Running) -> None:
    with socket.create_connection(("127.0.0.1", impatient.port), timeout=5) as sock:
        started = time.monotonic()
        assert read_all(sock) == b""
        assert time.monotonic() - started < 4


def test_server_survives_bad_clients(impatient: Running, certs: CertFiles) -> None:
    for garbage in (b"\x16\x03\x01\x00\x05hello", b"GET / HTTP/1.1\r\n\r\n", b"\x00" * 1000):
        with socket.create_connection(("127.0.0.1", impatient.port), timeout=5) as sock:
            sock.sendall(garbage)
            read_all(sock, 1.0)
    with raw_tls_socket(impatient.port, certs.client_context()) as sock:
        sock.sendall(b"NONSENSE\r\n\r\n")
        assert read_all(sock).split(b"\r\n", 1)[0].endswith(b" 400 Bad Request")
    client = Client(impatient.port, certs.client_context())
    assert client.post_review(VALIDATE, review(pool(workerClassName="talos"))).response["allowed"] is True
    client.close()


def test_graceful_shutdown_drains_in_flight_requests(certs: CertFiles) -> None:
    running = Running(
        WebhookServer(
            StaticSource(table_state()), tls=ReloadingContext(certs.cert, certs.key), settings=fast_settings()
        )
    )
    body = json.dumps(review(pool(workerClassName="talos"))).encode()
    sock = raw_tls_socket(running.port, certs.client_context())
    sock.sendall(
        b"POST /validate/kubernetesnodes HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body[:10]
    )
    wait_until(lambda: running.server._in_flight == 1)  # headers read, body incomplete: in flight
    stopping = threading.Thread(target=running.close)
    stopping.start()
    wait_until(lambda: not running.server.ready)  # draining: readiness says so

    def refused() -> bool:
        try:
            socket.create_connection(("127.0.0.1", running.port), timeout=1).close()
        except OSError:
            return True
        return False

    wait_until(refused)  # no longer accepting
    sock.sendall(body[10:])
    answer = read_all(sock)
    sock.close()
    stopping.join(10)
    assert not stopping.is_alive()
    head, _, payload = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), head
    assert json.loads(payload)["response"]["allowed"] is True
