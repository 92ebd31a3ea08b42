"""No answer, log line, metric or readiness text carries a request value that could be a secret.

Each path gets a marker secret (``MARK``, inside the shapes secrets take: a ``user:password@`` URL,
a PEM private key, free text with a newline) and the answers, the captured logs (DEBUG and up)
and ``/metrics`` are searched for it. The one deliberate exception is ``response.uid``: the
AdmissionReview protocol requires the request's uid back verbatim, to the client that sent it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from workerclass.adapters.kube import ClusterCache, short_error
from workerclass.adapters.tls import ReloadingContext
from workerclass.webhook import StaticSource
from workerclass.webhook.server import WebhookServer

from .cases import pool, table_state
from .conftest import fast_settings
from .helpers import CertFiles, Client, Running, raw_tls_socket, review

MARK = "s3cr3tMARK"
URL_SECRET = f"https://admin:{MARK}@registry.example.com/v2/"
PEM_SECRET = f"-----BEGIN PRIVATE KEY-----\nMIIE{MARK}AgEAAoIBAQ\n-----END PRIVATE KEY-----\n"
TEXT_SECRET = f"token {MARK}\nFORGED log line"
SECRETS = [URL_SECRET, PEM_SECRET, TEXT_SECRET]
VALIDATE = "/validate/kubernetesnodes"
MUTATE = "/mutate/kubernetesnodes"


def envelope(**request: Any) -> dict[str, Any]:
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


def without_uid(body: bytes) -> str:
    """The answer's text, its echoed uid taken out (the protocol requires it back)."""
    try:
        data = json.loads(body)
    except ValueError:
        return body.decode("utf-8", "replace")
    if isinstance(data, dict) and isinstance(data.get("response"), dict):
        data["response"].pop("uid", None)
    return json.dumps(data)


def assert_clean(text: str, where: str) -> None:
    assert MARK not in text, f"{where} quotes the marker: {text[:400]}"


def assert_log_clean(caplog: pytest.LogCaptureFixture) -> None:
    for record in caplog.records:
        line = record.getMessage()
        assert MARK not in line, f"log line quotes the marker: {line[:300]}"
        assert "\n" not in line, f"log line holds a raw newline: {line[:300]!r}"
        if record.exc_text:
            assert MARK not in record.exc_text


@pytest.fixture
def logged(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    caplog.set_level(logging.DEBUG, logger="workerclass")
    yield caplog


@pytest.fixture
def answered(certs: CertFiles) -> Iterator[tuple[Running, Client]]:
    running = Running(
        WebhookServer(
            StaticSource(table_state()),
            tls=ReloadingContext(certs.cert, certs.key),
            settings=fast_settings(access_log=True),
        )
    )
    client = Client(running.port, certs.client_context())
    yield running, client
    client.close()
    running.close()


def post(client: Client, path: str, body: dict[str, Any]) -> str:
    reply = client.post_review(path, body)
    assert reply.status < 500, reply.body[:200]
    return without_uid(reply.body)


@pytest.mark.parametrize("secret", SECRETS, ids=["url", "pem", "text"])
def test_request_envelope_fields(
    answered: tuple[Running, Client], logged: pytest.LogCaptureFixture, secret: str
) -> None:
    _, client = answered
    obj = pool(workerClassName="talos")
    cases: dict[str, dict[str, Any]] = {
        "uid": review(obj, uid=secret),
        "operation": envelope(uid="u1", operation=secret, object=obj),
        "request.kind": envelope(uid="u2", operation="CREATE", object=obj, kind={"group": secret, "kind": secret}),
        "object.kind": envelope(uid="u3", operation="CREATE", object={**obj, "kind": secret}),
        "object.apiVersion": envelope(uid="u4", operation="CREATE", object={**obj, "apiVersion": secret}),
        "name": {**review(obj), "request": {**review(obj)["request"], "name": secret, "namespace": secret}},
        "metadata.name": review({**obj, "metadata": {"name": secret, "namespace": "tenant-example"}}),
    }
    for field, body in cases.items():
        for path in (MUTATE, VALIDATE):
            assert_clean(post(client, path, body), f"the answer for a secret in {field}")
    reply = client.request(
        "POST", VALIDATE, json.dumps({"apiVersion": secret, "kind": secret, "request": {"uid": "x"}}).encode()
    )
    assert reply.status == 400
    assert_clean(reply.body.decode(), "the 400 for a secret apiVersion")
    assert_clean(client.request("GET", "/metrics").body.decode(), "/metrics")
    assert_log_clean(logged)


def test_request_line_and_headers(
    answered: tuple[Running, Client], certs: CertFiles, logged: pytest.LogCaptureFixture
) -> None:
    running, client = answered
    query = URL_SECRET.replace("/", "%2F")
    reply = client.request("POST", f"/validate/kubernetesnodes?token={query}", json.dumps(review(pool())).encode())
    assert reply.status == 200
    assert client.request("GET", f"/{MARK}").status == 404  # the access log names no unknown path
    reply = client.request("POST", VALIDATE, b"{}", headers={"Content-Type": f"text/{MARK}", "X-Token": MARK})
    assert reply.status == 415
    assert_clean(reply.body.decode(), "the 415")
    with raw_tls_socket(running.port, certs.client_context()) as sock:  # a malformed request line
        sock.sendall(f"GET /{MARK} HTTP/1.1 {MARK}\r\n\r\n".encode())
        sock.settimeout(5)
        answer = b""
        try:
            while chunk := sock.recv(65536):
                answer += chunk
        except (TimeoutError, ConnectionResetError, OSError):
            pass
    assert_clean(answer.decode("latin-1"), "the answer to a malformed request line")
    assert_log_clean(logged)


def test_object_values(answered: tuple[Running, Client], logged: pytest.LogCaptureFixture) -> None:
    """Secrets in the pool's own fields: the denials name the field and the rule, never the value."""
    _, client = answered
    for secret in SECRETS:
        objects = [
            pool(workerClassName=secret),
            pool(workerClassName="talos", version=secret),
            pool(workerClassName="talos", cluster=secret),
            pool(workerClassName="talos", labels={"team": secret}),
            pool(workerClassName="talos", labels={secret: "x"}),
            pool(workerClassName="talos", taints=[{"key": "k", "value": secret, "effect": "NoSchedule"}]),
            pool(workerClassName="talos", instanceType=secret),
            pool(workerClassName="talos", kernelModules=[{"name": secret}]),
            pool(workerClassName="talos", talos={"schematicID": secret, "version": secret}),
            pool(workerClassName="talos", registryMirrors={"docker.io": [secret]}),
            pool(workerClassName="talos", sshKeys=[secret]),
            pool(workerClassName="talos", roles=[secret]),
            pool(workerClassName="talos", kubevirt={"osImage": {"reference": secret}}),
            pool(workerClassName="talos", unknownField=secret),
        ]
        for obj in objects:
            for path in (MUTATE, VALIDATE):
                assert_clean(post(client, path, review(obj)), f"the answer for {json.dumps(obj['spec'])[:120]}")
    assert_clean(client.request("GET", "/metrics").body.decode(), "/metrics")
    assert_log_clean(logged)


#: map keys shaped like credentials: an AWS access key id, a GitHub token, a JWT (its dots split it
#: into what a field path would show as three segments), each carrying the marker where it can
TOKEN_KEYS = [
    "AKIAIOSFODNN7EXAMPLE",
    f"ghp_{MARK}16C7e42F292c6912E7710c838347Ae178B4a",
    f"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ{MARK}IxIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
]


@pytest.mark.parametrize("key", TOKEN_KEYS, ids=["aws-key-id", "github-token", "jwt"])
def test_map_keys_shaped_like_tokens_are_not_quoted(
    answered: tuple[Running, Client], logged: pytest.LogCaptureFixture, key: str
) -> None:
    """A credential pasted as a map key (under spec, or as a registry mirror's host) is named by
    where it is, never quoted: in answers (message, fields, warnings) and in logs."""
    _, client = answered
    logged.set_level(logging.DEBUG, logger="workerclass")
    objects = [
        pool(workerClassName="talos", **{key: True}),
        pool(workerClassName="talos", talos={"registryMirrors": {key: {"endpoints": ["https://m.example"]}}}),
        pool(workerClassName="talos", registryMirrors={key: ["https://m.example"]}),
        pool(workerClassName="talos", labels={key: "x"}),
    ]
    secret = key.replace(MARK, "") if MARK in key else key
    for obj in objects:
        for path in (MUTATE, VALIDATE):
            answer = post(client, path, review(obj))
            for part in {secret[:20], secret[-20:]} - {""}:
                assert part not in answer, f"the answer quotes the key: {answer[:400]}"
            assert_clean(answer, "the answer")
    for record in logged.records:
        line = record.getMessage()
        assert secret[:20] not in line and secret[-20:] not in line, f"a log line quotes the key: {line[:300]}"


def test_core_failure_message(certs: CertFiles, logged: pytest.LogCaptureFixture) -> None:
    def explode(*args: Any) -> Any:
        raise ValueError(f"cannot parse {URL_SECRET}")

    server = WebhookServer(
        StaticSource(table_state()),
        tls=ReloadingContext(certs.cert, certs.key),
        settings=fast_settings(),
        deciders={"mutate": explode, "validate": explode},
    )
    running = Running(server)
    client = Client(running.port, certs.client_context())
    try:
        text = post(client, VALIDATE, review(pool(workerClassName="talos")))
        assert '"code":500' in text.replace(" ", "")
        assert_clean(text, "the 500 denial")
    finally:
        client.close()
        running.close()
    assert_log_clean(logged)


class FakeStatus:
    def __init__(self, code: int, reason: str, message: str) -> None:
        self.code, self.reason, self.message = code, reason, message


class LeakyApiError(Exception):
    """Shaped like lightkube's ApiError: a Status whose reason and message are the server's text."""

    def __init__(self) -> None:
        super().__init__(f"denied: {URL_SECRET}")
        self.status = FakeStatus(500, f"Reason {MARK}", f"object quoted: {PEM_SECRET}")


class ErrorClient:
    """A Kubernetes client whose every list fails with ``error``."""

    def __init__(self, error: BaseException) -> None:
        self.error = error

    def list(self, resource: Any, **scope: Any) -> Any:
        raise self.error

    async def close(self) -> None:
        return None


def test_client_errors_are_status_and_reason_only() -> None:
    import httpx2
    from lightkube.core.exceptions import ApiError

    request = httpx2.Request("GET", f"https://webhook:{MARK}@10.0.0.1:6443/apis")
    response = httpx2.Response(
        403, json={"kind": "Status", "code": 403, "reason": MARK, "message": PEM_SECRET}, request=request
    )
    errors: list[BaseException] = [
        ApiError(request=request, response=response),
        LeakyApiError(),
        httpx2.ConnectError(f"cannot connect to https://webhook:{MARK}@10.0.0.1:6443", request=request),
        httpx2.HTTPStatusError(f"bad {URL_SECRET}", request=request, response=response),
        RuntimeError(URL_SECRET),
        OSError(111, f"refused {URL_SECRET}"),
    ]
    for error in errors:
        assert_clean(short_error(error), f"short_error({type(error).__name__})")
    assert short_error(errors[0]) == "403 Forbidden"
    assert short_error(errors[1]) == "500 Internal Server Error"
    assert short_error(errors[2]) == "ConnectError"


@pytest.mark.asyncio
async def test_kubeconfig_credentials_never_reach_readiness_denials_or_logs(
    tmp_certs: CertFiles, logged: pytest.LogCaptureFixture
) -> None:
    """A real lightkube client against a kubeconfig server URL with credentials in it, on a port
    nothing listens on, and clients whose errors quote secrets: /readyz, the not-ready denial,
    /metrics and the logs show status codes and error types only."""
    from lightkube import AsyncClient, KubeConfig

    with socket.socket() as probe:  # a free port, closed again: connections are refused
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = KubeConfig.from_dict(
        {
            "clusters": [{"name": "c", "cluster": {"server": f"https://webhook:{MARK}@127.0.0.1:{port}"}}],
            "users": [{"name": "u", "user": {"token": MARK}}],
            "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
            "current-context": "c",
        }
    )
    real = AsyncClient(config=config, trust_env=False)
    for client in (real, ErrorClient(LeakyApiError()), ErrorClient(RuntimeError(URL_SECRET))):
        cache = ClusterCache(client, retry_delay=0.05, max_retry_delay=0.1)
        server = WebhookServer(cache, tls=ReloadingContext(tmp_certs.cert, tmp_certs.key), settings=fast_settings())
        await server.start()
        https = Client(server.port, tmp_certs.client_context())
        try:
            async with asyncio.timeout(10):
                while not cache._errors:
                    await asyncio.sleep(0.02)
            await asyncio.sleep(0.2)
            ready = await asyncio.to_thread(https.request, "GET", "/readyz")
            assert ready.status == 503
            assert_clean(ready.body.decode(), "/readyz")
            answer = await asyncio.to_thread(https.post_review, VALIDATE, review(pool(workerClassName="talos")))
            assert answer.response["status"]["code"] == 503
            assert_clean(without_uid(answer.body), "the not-ready denial")
            metrics = await asyncio.to_thread(https.request, "GET", "/metrics")
            assert_clean(metrics.body.decode(), "/metrics")
        finally:
            await asyncio.to_thread(https.close)
            await server.stop()
    await real.close()
    assert_log_clean(logged)


# --------------------------------------------------------------------------- deep and wide values

PLACEHOLDER = "__VALUE__"
DEEP = 1000
VALUES = {
    # JSON text: Python's json cannot write (nor read) 1,000 levels, orjson not past 255
    "deep-list": "[" * DEEP + json.dumps(PEM_SECRET) + "]" * DEEP,
    "deep-map": '{"a":' * DEEP + json.dumps(PEM_SECRET) + "}" * DEEP,
    "deep-mixed": '[{"a":' * (DEEP // 2) + json.dumps(URL_SECRET) + "}]" * (DEEP // 2),
    "wide-list": json.dumps([URL_SECRET] * 50_000),
    "wide-map": json.dumps({f"k{index}": index for index in range(50_000)}),
}


@pytest.mark.parametrize("field", sorted(VALUES))
def test_deep_and_wide_values_get_a_well_formed_answer(
    answered: tuple[Running, Client], logged: pytest.LogCaptureFixture, field: str
) -> None:
    """A value nested 1,000 deep (orjson reads up to 1,024 levels) or 50,000 wide, in fields the
    core walks (labels, Talos settings, the private-key scan of every string): a well-formed
    answer, never a 500 or a crash."""
    _, client = answered
    for obj in (
        pool(workerClassName="talos", labels={"team": PLACEHOLDER}),
        pool(workerClassName="talos", talos={"extra": PLACEHOLDER}),
        pool(workerClassName="talos", unknown=PLACEHOLDER),
    ):
        body = json.dumps(review(obj)).replace(json.dumps(PLACEHOLDER), VALUES[field]).encode()
        for path in (MUTATE, VALIDATE):
            reply = client.request("POST", path, body)
            assert reply.status == 200, reply.body[:200]
            response = reply.response
            assert isinstance(response["allowed"], bool)
            if not response["allowed"]:
                assert response["status"]["code"] != 500, response["status"]
            assert_clean(without_uid(reply.body), f"the answer for a {field} value")
    assert_log_clean(logged)


def test_values_quoted_by_a_rule_are_hidden_at_the_edge(
    answered: tuple[Running, Client], logged: pytest.LogCaptureFixture
) -> None:
    """Found by ``bench/fuzz_bench.py``: a pool moved from a parent cluster whose stored name is a
    secret got it quoted back in the rule's message. The webhook hides every request value that
    is not strictly shaped wherever an answer's message or warning quotes it, and anything
    credential-shaped left over, whatever the rule wrote."""
    _, client = answered
    for secret in SECRETS:
        old = pool("moved", cluster="example", workerClassName="talos")
        old["spec"]["cluster"] = secret
        new = pool("moved", cluster="example", workerClassName="talos")
        for path in (MUTATE, VALIDATE):
            text = post(client, path, review(new, operation="UPDATE", old=old))
            assert_clean(text, "the answer for an UPDATE from a secret cluster name")
    assert_log_clean(logged)
