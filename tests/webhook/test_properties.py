"""Property tests: arbitrary bodies, headers and objects never get a 5xx, a crash or a malformed answer."""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .cases import compute_plane, pool, stored, worker_class
from .helpers import CertFiles, Client, Reply, Running

PATHS = ["/mutate/kubernetesnodes", "/validate/kubernetesnodes", "/validate/workerclasses", "/validate/computeplanes"]
RESPONSE_KEYS = {"uid", "allowed", "status", "patch", "patchType", "warnings"}

# WORKERCLASS_FUZZ_EXAMPLES=5000 for a deeper run than the suite's quick one
FUZZ = settings(
    max_examples=int(os.environ.get("WORKERCLASS_FUZZ_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

#: secret-shaped values planted among the fuzzed ones: no answer may quote them back
MARK = "fuzzS3CRETmark"
SECRETS = [
    f"https://user:{MARK}@registry.example.com/",
    f"-----BEGIN OPENSSH PRIVATE KEY-----\nb3Bl{MARK}bnNz\n-----END OPENSSH PRIVATE KEY-----\n",
    f"user:{MARK}@host",
]

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
    | st.sampled_from(SECRETS)
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=20,
)


@pytest.fixture(scope="module")
def fuzz(served: Running, certs: CertFiles) -> Iterator[Client]:
    client = Client(served.port, certs.client_context())
    yield client
    client.close()


def check(reply: Reply, uid: Any = None) -> dict[str, Any] | None:
    """The answer is well formed and quotes no planted secret; returns the AdmissionReview response."""
    assert reply.status < 500, reply.body[:300]
    echoed = reply.body.replace(json.dumps(uid)[1:-1].encode(), b"") if isinstance(uid, str) else reply.body
    assert MARK.encode() not in echoed, reply.body[:400]  # the uid alone comes back, as the protocol wants
    if reply.status != 200:
        assert 400 <= reply.status < 500
        if reply.headers.get("content-type", "").startswith("application/json"):
            data = json.loads(reply.body)
            assert isinstance(data["error"], str) and data["code"] == reply.status
        return None
    response = reply.response
    assert set(response) <= RESPONSE_KEYS
    assert isinstance(response["uid"], str) and response["uid"]
    if uid is not None:
        assert response["uid"] == uid
    assert isinstance(response["allowed"], bool)
    if response["allowed"]:
        assert "status" not in response
    else:
        status = response["status"]
        assert isinstance(status["code"], int) and 400 <= status["code"] < 600
        assert isinstance(status["reason"], str) and status["reason"]
        assert isinstance(status["message"], str) and status["message"]
        assert "patch" not in response
    if "patch" in response:
        assert response["patchType"] == "JSONPatch"
        assert isinstance(json.loads(base64.b64decode(response["patch"], validate=True)), list)
    else:
        assert "patchType" not in response
    for warning in response.get("warnings", []):
        assert isinstance(warning, str)
    return response


@FUZZ
@given(path=st.sampled_from(PATHS), body=st.binary(max_size=2048))
def test_arbitrary_bytes(fuzz: Client, path: str, body: bytes) -> None:
    check(fuzz.request("POST", path, body))


@FUZZ
@given(path=st.sampled_from(PATHS), value=json_values)
def test_arbitrary_json(fuzz: Client, path: str, value: Any) -> None:
    check(fuzz.request("POST", path, json.dumps(value).encode()))


header_names = st.sampled_from(
    [
        "Content-Type",
        "Content-Encoding",
        "Content-Length",
        "Transfer-Encoding",
        "Expect",
        "Connection",
        "Accept",
        "X-Anything",
        "Authorization",
        "Cookie",
        "Range",
        "Upgrade",
    ]
)
header_values = st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=40)


@FUZZ
@given(
    path=st.sampled_from(PATHS),
    headers=st.dictionaries(header_names, header_values, max_size=4),
    body=st.sampled_from([b"", b"{}", json.dumps({"apiVersion": "admission.k8s.io/v1"}).encode()]),
)
def test_arbitrary_headers(fuzz: Client, path: str, headers: dict[str, str], body: bytes) -> None:
    try:
        reply = fuzz.request("POST", path, body, headers)
    except (ConnectionError, OSError):
        # a Content-Length or Transfer-Encoding that lies about the body may make the server
        # close the connection: a refusal, not a crash; the server must still answer afterwards
        fuzz.close()
    else:
        check(reply)
    check(fuzz.request("POST", path, b"{}"))


def base_objects() -> list[dict[str, Any]]:
    return [
        pool(),
        pool(workerClassName="kairos", sshKeys=[]),
        stored("KubernetesNodes:tenant-example/example-talos"),
        stored("WorkerClass:/talos-example-r1"),
        worker_class(
            "fresh", bootstrap="kairos", image={"kubernetesVersion": "v1.35.6", "reference": "r@sha256:" + "a" * 64}
        ),
        compute_plane(md0={"minReplicas": 1, "maxReplicas": 2}),
    ]


@st.composite
def mangled(draw: st.DrawFn) -> dict[str, Any]:
    """A real object with arbitrary JSON put at a few places in its spec (or its metadata)."""
    obj: dict[str, Any] = json.loads(json.dumps(draw(st.sampled_from(base_objects()))))
    for _ in range(draw(st.integers(1, 3))):
        where = draw(st.sampled_from(["spec", "metadata"]))
        target = obj.setdefault(where, {})
        if not isinstance(target, dict):
            break
        keys = [
            *target.keys(),
            "workerClassName",
            "talos",
            "kubevirt",
            "sshKeys",
            "version",
            "nodeGroups",
            "image",
            "bootstrap",
            "cluster",
            "gpus",
            "labels",
            "name",
            "namespace",
        ]
        key = draw(st.sampled_from(keys))
        target[key] = draw(json_values)
    if draw(st.booleans()):
        obj["spec"] = draw(json_values)
    return obj


@FUZZ
@given(
    path=st.sampled_from(PATHS),
    operation=st.sampled_from(["CREATE", "UPDATE", "DELETE", "CONNECT", "", "create"]),
    obj=mangled(),
    old=st.none() | mangled(),
    dry_run=st.sampled_from([True, False, None]),
    uid=st.text(min_size=1, max_size=40),
)
def test_arbitrary_objects_in_real_envelopes(
    fuzz: Client, path: str, operation: str, obj: dict[str, Any], old: dict[str, Any] | None, dry_run: Any, uid: str
) -> None:
    kind = obj.get("kind")
    request = {
        "uid": uid,
        "kind": {"group": obj["apiVersion"].rpartition("/")[0], "version": "v1alpha1", "kind": kind},
        "operation": operation,
        "object": None if operation == "DELETE" else obj,
        "oldObject": old if old is not None and old.get("kind") == kind else None,
        "dryRun": dry_run,
    }
    body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
    response = check(fuzz.post_review(path, body), uid)
    assert response is not None
    # the core decided (allowed or a rule's denial) or the request was refused as malformed: never a crash
    assert response.get("status", {}).get("reason") != "InternalError", response
