"""Every admission table row as a real admission.k8s.io/v1 AdmissionReview over HTTPS.

The mutating path's patch is applied with jsonpatch and the result checked, then sent to the
validating path the way the API server chains them; mutation runs twice to prove it idempotent.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest

from workerclass.webhook import StaticSource

from .cases import NS, Denial, denial_rows, pool, ssh_key, stored, table_state
from .helpers import Client, patched, review

MUTATE = "/mutate/kubernetesnodes"
VALIDATE = "/validate/kubernetesnodes"

CLASSIFIED = "KubernetesNodes:tenant-example/example-talos"  # selects talos-example-r1


def admit_chain(
    client: Client, obj: dict[str, Any], *, operation: str = "CREATE", old: Any = None
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """Mutate, apply the patch, validate the result: ``(mutating response, object, validating response)``."""
    sent = review(obj, operation=operation, old=old)
    reply = client.post_review(MUTATE, sent)
    assert reply.status == 200, reply.body
    mutation = reply.response
    assert mutation["uid"] == sent["request"]["uid"]
    assert mutation["allowed"] is True
    after = patched(obj, mutation)

    # idempotent: the mutated object needs no further patch
    again = client.post_review(MUTATE, review(after, operation=operation, old=old)).response
    assert "patch" not in again

    reply = client.post_review(VALIDATE, review(after, operation=operation, old=old))
    assert reply.status == 200
    validation = reply.response
    assert "patch" not in validation and "patchType" not in validation
    return mutation, after, validation


# --------------------------------------------------------------------------- the mutation table (API.md section 3)


def without_class(obj: dict[str, Any], value: Any) -> dict[str, Any]:
    """``obj`` with workerClassName removed (``value`` is ...) or set to ``value``."""
    changed = copy.deepcopy(obj)
    changed["spec"].pop("workerClassName", None)
    if value is not ...:
        changed["spec"]["workerClassName"] = value
    return changed


@pytest.mark.parametrize("value", [..., ""], ids=["omitted", "empty"])
def test_create_without_class_gets_platform_default(client: Client, value: Any) -> None:
    mutation, after, validation = admit_chain(client, without_class(pool(), value))
    assert mutation["patchType"] == "JSONPatch"
    assert after["spec"]["workerClassName"] == "talos"  # the examples' platform default
    assert validation["allowed"] is True


def test_create_without_spec_gets_platform_default(client: Client) -> None:
    obj = pool()
    del obj["spec"]
    reply = client.post_review(MUTATE, review(obj)).response
    # it names no minor and no parent to take one from: the chart's default is written beside the class
    assert patched(obj, reply)["spec"] == {"workerClassName": "talos", "version": "v1.35"}


def test_create_with_explicit_class_is_kept(client: Client) -> None:
    mutation, after, validation = admit_chain(client, pool(workerClassName="kairos", sshKeys=[]))
    assert "patch" not in mutation and "patchType" not in mutation
    assert after["spec"]["workerClassName"] == "kairos"
    assert validation["allowed"] is True


@pytest.mark.parametrize("value", [..., ""], ids=["omitted", "empty"])
def test_update_of_classless_pool_stays_legacy(client: Client, value: Any) -> None:
    old = pool("legacy")
    mutation, after, validation = admit_chain(
        client, without_class(pool("legacy", minReplicas=2), value), operation="UPDATE", old=old
    )
    assert "patch" not in mutation
    assert after["spec"].get("workerClassName", "") == ""
    assert validation["allowed"] is True


@pytest.mark.parametrize("value", [..., ""], ids=["omitted", "empty"])
def test_update_of_classified_pool_restores_stored_class(client: Client, value: Any) -> None:
    old = stored(CLASSIFIED)
    new = without_class(old, value)
    new["spec"]["maxReplicas"] = 5
    mutation, after, validation = admit_chain(client, new, operation="UPDATE", old=old)
    assert mutation["patchType"] == "JSONPatch"
    assert after["spec"]["workerClassName"] == "talos-example-r1"
    assert after["spec"]["maxReplicas"] == 5
    assert validation["allowed"] is True


def test_update_full_replace_restores_stored_class(client: Client) -> None:
    old = stored(CLASSIFIED)
    replacement = {
        "apiVersion": old["apiVersion"],
        "kind": old["kind"],
        "metadata": {"name": old["metadata"]["name"], "namespace": NS},
        "spec": {"cluster": "example", "version": "v1.35"},
    }
    mutation, after, validation = admit_chain(client, replacement, operation="UPDATE", old=old)
    assert mutation["patchType"] == "JSONPatch"
    assert after["spec"] == {"cluster": "example", "version": "v1.35", "workerClassName": "talos-example-r1"}
    assert validation["allowed"] is True


def test_update_selecting_another_class_of_the_same_family_is_allowed(client: Client) -> None:
    old = stored(CLASSIFIED)
    new = copy.deepcopy(old)
    new["spec"]["workerClassName"] = "talos"
    mutation, after, validation = admit_chain(client, new, operation="UPDATE", old=old)
    assert "patch" not in mutation
    assert after["spec"]["workerClassName"] == "talos"
    assert validation["allowed"] is True


def test_update_selecting_another_family_is_denied(client: Client) -> None:
    old = stored(CLASSIFIED)
    new = copy.deepcopy(old)
    new["spec"].update(workerClassName="kairos", talos={}, kernelModules=[])
    _, _, validation = admit_chain(client, new, operation="UPDATE", old=old)
    assert validation["allowed"] is False
    assert validation["status"]["reason"] == "BootstrapFamilyChange"
    assert validation["status"]["code"] == 403


def test_talos_kubernetes_incompatible(client: Client, source: StaticSource) -> None:
    """A Talos minor the platform's support matrix says does not run the pool's Kubernetes minor."""
    previous = source.state
    platform = stored("WorkerPlatform:/default")
    platform["spec"]["talos"]["supportMatrix"] = {
        "v1.11": {"min": "v1.29", "max": "v1.34"},
        "v1.13": {"min": "v1.31", "max": "v1.36"},
    }
    source.replace(table_state(extra=[platform]))
    try:
        obj = pool(workerClassName="talos", version="v1.35", talos={"version": "v1.11.5"}, kubevirt={"osImage": {}})
        reply = client.post_review(VALIDATE, review(obj)).response
    finally:
        source.replace(previous)
    assert reply["allowed"] is False
    status = reply["status"]
    assert [cause["reason"] for cause in status["details"]["causes"]] == ["TalosKubernetesIncompatible"]
    assert status["reason"] == "TalosKubernetesIncompatible" and status["code"] == 403
    assert status["details"]["causes"][0]["field"] == "spec.talos.version"


# --------------------------------------------------------------------------- the platform default and stored pools


@pytest.fixture
def kairos_default(source: StaticSource) -> Iterator[None]:
    """The served state with the platform default switched to kairos, restored afterwards."""
    previous = source.state
    platform = stored("WorkerPlatform:/default")
    platform["spec"]["defaultWorkerClass"] = "kairos"
    source.replace(table_state(extra=[platform]))
    yield
    source.replace(previous)


def test_changed_platform_default_applies_to_new_creates(client: Client, kairos_default: None) -> None:
    _, after, validation = admit_chain(client, pool())
    assert after["spec"]["workerClassName"] == "kairos"
    assert validation["allowed"] is True


def test_changed_platform_default_does_not_retarget_stored_pools(client: Client, kairos_default: None) -> None:
    old = stored(CLASSIFIED)
    _, after, _ = admit_chain(client, without_class(old, ...), operation="UPDATE", old=old)
    assert after["spec"]["workerClassName"] == "talos-example-r1"
    old = pool("legacy")
    mutation, after, _ = admit_chain(client, pool("legacy"), operation="UPDATE", old=old)
    assert "patch" not in mutation and "workerClassName" not in after["spec"]


# --------------------------------------------------------------------------- the denial codes (API.md section 3)


@pytest.mark.parametrize("row", denial_rows(), ids=lambda row: row.id)
def test_denial_code(client: Client, row: Denial) -> None:
    sent = review(row.obj, operation=row.operation, old=row.old)
    reply = client.post_review(row.path, sent)
    assert reply.status == 200
    assert reply.headers["content-type"].startswith("application/json")
    response = reply.response
    assert response["uid"] == sent["request"]["uid"]
    assert response["allowed"] is False
    status = response["status"]
    causes = status["details"]["causes"]
    assert [cause["reason"] for cause in causes] == [row.code]
    assert status["reason"] == row.code
    assert status["code"] == (422 if row.code == "Invalid" else 403)
    cause = causes[0]
    assert status["message"] == f"{cause['reason']} {cause['field']}: {cause['message']}"
    assert "patch" not in response


def test_several_denials_are_listed_together(client: Client) -> None:
    obj = pool(workerClassName="talos", sshKeys=["ssh-ed25519 AAAA x"], minReplicas=3, maxReplicas=1)
    response = client.post_review(VALIDATE, review(obj)).response
    codes = [cause["reason"] for cause in response["status"]["details"]["causes"]]
    assert len(codes) >= 2 and "InvalidReplicas" in codes
    assert response["status"]["reason"] == codes[0]
    assert response["status"]["message"].count("; ") == len(codes) - 1
    for cause in response["status"]["details"]["causes"]:
        assert f"{cause['reason']} {cause['field']}: {cause['message']}" in response["status"]["message"]


def test_invalid_first_answers_422(client: Client) -> None:
    response = client.post_review(VALIDATE, review(pool(workerClassName="talos", minReplicas="three"))).response
    assert response["status"]["reason"] == "Invalid" and response["status"]["code"] == 422


# --------------------------------------------------------------------------- the other kinds allowed


def test_example_objects_are_allowed(client: Client) -> None:
    for name, path in [
        ("KubernetesNodes:tenant-example/example-kairos", VALIDATE),
        ("KubernetesNodes:tenant-example/example-talos", VALIDATE),
        ("KubernetesNodes:tenant-example/example-custom-kairos", VALIDATE),
        ("WorkerClass:/talos-example-r1", "/validate/workerclasses"),
        ("WorkerClass:/kairos-example-v1-35-6-r1", "/validate/workerclasses"),
    ]:
        response = client.post_review(path, review(stored(name))).response
        assert response["allowed"] is True, (name, response)


def test_class_update_with_unchanged_spec_and_delete_of_unused_class_are_allowed(client: Client) -> None:
    old = stored("WorkerClass:/talos-example-r1")
    new = copy.deepcopy(old)
    new["metadata"]["labels"] = {"team": "platform"}
    assert client.post_review("/validate/workerclasses", review(new, operation="UPDATE", old=old)).response["allowed"]
    unused = {
        "apiVersion": "cozystack.io/v1alpha1",
        "kind": "WorkerClass",
        "metadata": {"name": "unused"},
        "spec": {"bootstrap": "talos"},
    }
    response = client.post_review("/validate/workerclasses", review(None, operation="DELETE", old=unused)).response
    assert response["allowed"] is True


def test_compute_plane_with_allowlisted_keys_is_allowed(client: Client) -> None:
    obj = {
        "apiVersion": "apps.cozystack.io/v1alpha1",
        "kind": "ComputePlane",
        "metadata": {"name": "plane", "namespace": NS},
        "spec": {
            "nodeGroups": {
                "md0": {"minReplicas": 1, "maxReplicas": 3, "instanceType": "u1.medium", "roles": ["ingress-nginx"]}
            }
        },
    }
    assert client.post_review("/validate/computeplanes", review(obj)).response["allowed"] is True


def test_pool_delete_is_allowed(client: Client) -> None:
    old = stored(CLASSIFIED)
    for path in (MUTATE, VALIDATE):
        response = client.post_review(path, review(None, operation="DELETE", old=old)).response
        assert response["allowed"] is True and "patch" not in response


def test_dry_run_is_answered_like_the_real_request(client: Client) -> None:
    obj = pool()
    real = client.post_review(MUTATE, review(obj, uid="a")).response
    dry = client.post_review(MUTATE, review(obj, uid="a", dry_run=True)).response
    assert real == dry
    assert patched(obj, dry)["spec"]["workerClassName"] == "talos"
    metrics = client.request("GET", "/metrics").body.decode()
    assert 'workerclass_webhook_dry_run_requests_total{webhook="mutate-kubernetesnodes"}' in metrics


def test_warnings_are_returned(client: Client) -> None:
    obj = pool(workerClassName="kairos", sshKeys=[ssh_key()])
    response = client.post_review(VALIDATE, review(obj)).response
    assert response["allowed"] is True
    assert any("sudo-capable" in warning for warning in response["warnings"])
