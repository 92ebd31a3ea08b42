"""The wire format on its own: AdmissionReview responses built from core decisions."""

from __future__ import annotations

import base64
import json

import pytest

from workerclass.admission.decision import Decision
from workerclass.violations import Violation
from workerclass.webhook import EnvelopeError, RequestError, Target, decode, encode, from_decision, refusal

NODES = Target("KubernetesNodes", "apps.cozystack.io", "v1alpha1")
PATCH = [{"op": "add", "path": "/spec/workerClassName", "value": "talos"}]


def test_allowed_without_change_has_no_patch() -> None:
    assert from_decision("u", Decision(True, "CREATE"), mutating=True) == {"uid": "u", "allowed": True}


def test_patch_only_from_the_mutating_path() -> None:
    response = from_decision("u", Decision(True, "CREATE", patch=PATCH), mutating=True)
    assert response["patchType"] == "JSONPatch"
    assert json.loads(base64.b64decode(response["patch"])) == PATCH
    assert "patch" not in from_decision("u", Decision(True, "CREATE", patch=PATCH), mutating=False)


def test_denial_status() -> None:
    denials = [
        Violation("ClassNotFound", "spec.workerClassName", "no such class"),
        Violation("Invalid", "spec.x", "bad"),
    ]
    response = from_decision("u", Decision(False, "CREATE", denials=denials, warnings=["w"]), mutating=False)
    assert response["allowed"] is False and response["warnings"] == ["w"]
    assert response["status"]["code"] == 403 and response["status"]["reason"] == "ClassNotFound"
    assert response["status"]["message"] == "ClassNotFound spec.workerClassName: no such class; Invalid spec.x: bad"
    first_invalid = from_decision("u", Decision(False, "CREATE", denials=denials[::-1]), mutating=False)
    assert first_invalid["status"]["code"] == 422 and first_invalid["status"]["reason"] == "Invalid"


def test_denial_without_reason_still_says_so() -> None:
    response = from_decision("u", Decision(False, "CREATE"), mutating=True)
    assert response["status"]["code"] == 403 and "without a stated reason" in response["status"]["message"]


def test_encode_and_refusal() -> None:
    data = json.loads(encode(refusal("u", 503, "ServiceUnavailable", "not ready")))
    assert data == {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {
            "uid": "u",
            "allowed": False,
            "status": {"status": "Failure", "code": 503, "reason": "ServiceUnavailable", "message": "not ready"},
        },
    }
    # the lenient path for what orjson refuses (an int over 64 bits, a type it does not know)
    assert json.loads(encode({"uid": "u", "allowed": True, "warnings": [2**70]}))["response"]["warnings"] == [2**70]
    assert json.loads(encode({"uid": "u", "allowed": True, "warnings": [{1, 2}]}))["response"]["warnings"] == ["{1, 2}"]


def test_decode_errors() -> None:
    with pytest.raises(EnvelopeError) as envelope:
        decode(b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {}}', NODES)
    assert envelope.value.status == 400
    body = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {"uid": "x", "operation": "UPDATE", "object": {}},
    }
    with pytest.raises(RequestError) as request:
        decode(json.dumps(body).encode(), NODES)
    assert request.value.uid == "x" and "oldObject" in request.value.message


def test_decode_fills_kind_and_namespace_and_name() -> None:
    body = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "x",
            "operation": "DELETE",
            "namespace": "ns",
            "kind": {"group": "apps.cozystack.io", "version": "v1alpha1", "kind": "KubernetesNodes"},
            "oldObject": {"metadata": {"name": "pool"}},
            "dryRun": True,
        },
    }
    review = decode(json.dumps(body).encode(), NODES)
    assert review.obj is None and review.dry_run is True and review.identity == "ns/pool"
    assert review.old == {
        "apiVersion": "apps.cozystack.io/v1alpha1",
        "kind": "KubernetesNodes",
        "metadata": {"name": "pool", "namespace": "ns"},
    }


def test_the_scrubber_hides_request_values_but_never_the_objects_keys() -> None:
    from workerclass.webhook.review import HIDDEN, scrub

    secret = "ahunter2secretz+Q/"
    obj = {"spec": {"sshKeys": [secret], "workerClassName": "talos", "foo": {"x": 1}}}
    denials = [
        Violation("SSHKeysOnTalos", "spec.sshKeys", "Talos has no SSH server: leave sshKeys empty"),
        Violation("Invalid", "spec.foo", f"unknown field; expected one of: sshKeys, workerClassName (got {secret})"),
    ]
    response = scrub(from_decision("u", Decision(False, "UPDATE", denials=denials), mutating=False), obj)
    causes = response["status"]["details"]["causes"]
    assert causes[0]["message"] == "Talos has no SSH server: leave sshKeys empty"
    assert causes[1]["message"] == f"unknown field; expected one of: sshKeys, workerClassName (got {HIDDEN})"
    assert secret not in response["status"]["message"] and "leave sshKeys empty" in response["status"]["message"]


def test_an_answer_carries_fifty_denials_and_counts_the_rest() -> None:
    """Every line of an answer is compared with the request's values, and the API server keeps 4096
    characters of warnings: 20,000 denials of one wide pool are answered as their first 50 and a count."""
    from workerclass.webhook.review import MAX_ANSWERED, scrub

    secret = "ahunter2secretz+Q/"
    denials = [
        Violation("Invalid", f"spec.roles[{index}]", f"is not a role ({secret})") for index in range(MAX_ANSWERED + 12)
    ]
    warnings = [f"spec.k{index}: unknown field" for index in range(MAX_ANSWERED + 3)]
    response = from_decision("u", Decision(False, "CREATE", denials=denials, warnings=warnings), mutating=False)
    causes = response["status"]["details"]["causes"]
    assert [cause["field"] for cause in causes] == [f"spec.roles[{index}]" for index in range(MAX_ANSWERED)]
    assert response["status"]["message"].endswith("; and 12 more denials not shown (fix these first)")
    assert response["status"]["message"].count("Invalid spec.roles[") == MAX_ANSWERED
    assert response["warnings"] == [*warnings[:MAX_ANSWERED], "workerclass: 3 more warnings not shown"]
    scrubbed = scrub(response, {"spec": {"roles": [secret]}})
    assert secret not in scrubbed["status"]["message"]
    assert scrubbed["status"]["message"].endswith("; and 12 more denials not shown (fix these first)")


def test_an_answer_of_fifty_denials_is_whole() -> None:
    from workerclass.webhook.review import MAX_ANSWERED

    denials = [Violation("Invalid", f"spec.roles[{index}]", "is not a role") for index in range(MAX_ANSWERED)]
    response = from_decision("u", Decision(False, "CREATE", denials=denials), mutating=False)
    assert len(response["status"]["details"]["causes"]) == MAX_ANSWERED
    assert response["status"]["message"] == "; ".join(
        f"Invalid spec.roles[{i}]: is not a role" for i in range(MAX_ANSWERED)
    )
