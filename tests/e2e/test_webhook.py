"""The admission webhook as the API server calls it: ``workerclass serve webhook`` as a process,
registered by the bundle's own configurations, deciding KubernetesNodes and WorkerClass writes.

The default class is written on CREATE and restored on UPDATE by the API server applying our
JSONPatch (the stored object is read back); denials reach the client with their codes and field
paths; a legacy pool's UPDATE passes untouched; a class in use cannot be deleted.

Seen to fail against a broken bundle (``WORKERCLASS_E2E_BREAK=mutating-rule-singular``, the
mutating configuration's rule naming the resource ``kubernetesnode``): the API server never called
the mutation, a CREATE without a class was stored classless (no ``workerClassName``), and a full
replace without the class was refused ``BootstrapFamilyChange`` instead of having it restored.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.builders import SSH_KEY

from .conftest import TENANT, Served
from .kube import Kube, KubeError

POOLS = "apps.cozystack.io/v1alpha1"


def pool(name: str, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"cluster": "example", "version": "v1.35", "minReplicas": 1, "maxReplicas": 2}
    body.update(spec)
    return {
        "apiVersion": POOLS,
        "kind": "KubernetesNodes",
        "metadata": {"name": name, "namespace": TENANT},
        "spec": body,
    }


@pytest.fixture
def cleanup(kube: Kube) -> Any:
    created: list[tuple[str, str, str, str | None]] = []
    yield created
    for api_version, kind, name, namespace in reversed(created):
        kube.delete(api_version, kind, name, namespace)


def test_a_new_pool_gets_the_platform_default_class(kube: Kube, webhook: Served, cleanup: list) -> None:
    cleanup.append((POOLS, "KubernetesNodes", "example-e2e-new", TENANT))
    answer = kube.create(pool("example-e2e-new"))
    assert answer["spec"]["workerClassName"] == "talos"
    stored = kube.get(POOLS, "KubernetesNodes", "example-e2e-new", TENANT)
    assert stored["spec"]["workerClassName"] == "talos"
    assert stored["spec"]["maxReplicas"] == 2  # nothing else touched


@pytest.mark.parametrize("omitted", ["absent", "empty"])
def test_a_full_replace_without_the_class_keeps_the_stored_class(
    kube: Kube, webhook: Served, cleanup: list, omitted: str
) -> None:
    name = f"example-e2e-replace-{omitted}"
    cleanup.append((POOLS, "KubernetesNodes", name, TENANT))
    kube.create(pool(name, workerClassName="kairos", sshKeys=[]))
    stored = kube.get(POOLS, "KubernetesNodes", name, TENANT)
    replacement = copy.deepcopy(stored)
    replacement["spec"] = {k: v for k, v in stored["spec"].items() if k != "workerClassName"}
    if omitted == "empty":
        replacement["spec"]["workerClassName"] = ""
    replacement["spec"]["maxReplicas"] = 3
    kube.replace(replacement)
    after = kube.get(POOLS, "KubernetesNodes", name, TENANT)
    assert after["spec"]["workerClassName"] == "kairos"
    assert after["spec"]["maxReplicas"] == 3


def test_a_legacy_pool_stays_classless_on_update(kube: Kube, webhook: Served) -> None:
    before = kube.get(POOLS, "KubernetesNodes", "example-legacy", TENANT)
    assert "workerClassName" not in before["spec"]
    kube.patch(POOLS, "KubernetesNodes", "example-legacy", {"spec": {"maxReplicas": 4}}, namespace=TENANT)
    after = kube.get(POOLS, "KubernetesNodes", "example-legacy", TENANT)
    assert "workerClassName" not in after["spec"]
    assert after["spec"]["maxReplicas"] == 4
    assert {k: v for k, v in after["spec"].items() if k != "maxReplicas"} == {
        k: v for k, v in before["spec"].items() if k != "maxReplicas"
    }
    kube.patch(POOLS, "KubernetesNodes", "example-legacy", {"spec": {"maxReplicas": 3}}, namespace=TENANT)


def _refusal(kube: Kube, obj: dict[str, Any]) -> KubeError:
    with pytest.raises(KubeError) as caught:
        kube.create(obj)
    return caught.value


def test_denials_reach_the_client_with_codes_and_field_paths(kube: Kube, webhook: Served) -> None:
    error = _refusal(kube, pool("example-e2e-denied", workerClassName="talos", sshKeys=[SSH_KEY]))
    assert error.code == 403
    assert error.reason == "SSHKeysOnTalos"
    assert "kubernetesnodes.validate.workerclass.cozystack.io" in error.message
    assert "SSHKeysOnTalos spec.sshKeys" in error.message
    assert SSH_KEY not in error.message  # a key is never echoed
    causes = (error.status.get("details") or {}).get("causes") or []
    assert {(cause["reason"], cause["field"]) for cause in causes} >= {("SSHKeysOnTalos", "spec.sshKeys")}
    assert kube.find(POOLS, "KubernetesNodes", "example-e2e-denied", TENANT) is None


def test_several_denials_are_reported_together(kube: Kube, webhook: Served) -> None:
    error = _refusal(kube, pool("example-e2e-many", workerClassName="missing-class", minReplicas=5, maxReplicas=2))
    assert error.code == 403
    assert "ClassNotFound spec.workerClassName" in error.message
    assert "InvalidReplicas" in error.message


def test_an_invalid_value_is_a_422(kube: Kube, webhook: Served) -> None:
    error = _refusal(kube, pool("example-e2e-invalid", workerClassName="talos", minReplicas="two"))
    assert error.code == 422
    assert error.reason == "Invalid"
    assert "spec.minReplicas" in error.message


def live_reads(webhook: Served) -> dict[str, float]:
    """The webhook's ``workerclass_webhook_live_reads_total`` of ``validate-kubernetesnodes``, by outcome."""
    import ssl
    import urllib.request

    context = ssl.create_default_context(cadata=webhook.ca.decode())
    with urllib.request.urlopen(f"https://127.0.0.1:{webhook.port}/metrics", context=context, timeout=5) as answer:
        text = answer.read().decode()
    counts = {"same": 0.0, "behind": 0.0, "failed": 0.0}
    for line in text.splitlines():
        if line.startswith("workerclass_webhook_live_reads_total{") and 'webhook="validate-kubernetesnodes"' in line:
            outcome = line.split('outcome="', 1)[1].split('"', 1)[0]
            counts[outcome] = float(line.rsplit(" ", 1)[1])
    return counts


def test_a_pool_for_a_cluster_that_does_not_exist_is_refused(kube: Kube, webhook: Served) -> None:
    before = live_reads(webhook)
    obj = pool("nowhere-e2e", workerClassName="talos")
    obj["spec"]["cluster"] = "nowhere"
    error = _refusal(kube, obj)
    assert error.reason == "ClusterNotFound"
    # confirmed by reading the parent kinds live, with the webhook's own RBAC, before it was denied
    after = live_reads(webhook)
    assert after["failed"] == before["failed"]
    assert after["same"] + after["behind"] > before["same"] + before["behind"]


CLASSES = "cozystack.io/v1alpha1"


def test_a_class_in_use_cannot_be_deleted_and_its_spec_cannot_change(
    kube: Kube, webhook: Served, cleanup: list
) -> None:
    klass = {
        "apiVersion": CLASSES,
        "kind": "WorkerClass",
        "metadata": {"name": "talos-e2e-r1"},
        "spec": {"bootstrap": "talos", "talos": {"version": "v1.13.6"}},
    }
    cleanup.append((CLASSES, "WorkerClass", "talos-e2e-r1", None))
    kube.create(klass)
    cleanup.append((POOLS, "KubernetesNodes", "example-e2e-selects", TENANT))
    kube.create(pool("example-e2e-selects", workerClassName="talos-e2e-r1", talos={"version": "v1.13.6"}))

    from .testbed import wait_until

    # the webhook's cache sees the pool within moments (a watch event)
    wait_until(lambda: not _deletable(kube, "talos-e2e-r1"), timeout=20, what="ClassInUse from the webhook")
    with pytest.raises(KubeError) as caught:
        kube.delete(CLASSES, "WorkerClass", "talos-e2e-r1", missing_ok=False)
    assert "ClassInUse" in caught.value.message and "1 live pool(s) in 1 namespace(s)" in caught.value.message
    assert "example-e2e-selects" not in caught.value.message  # counts, never another tenant's names
    kube.delete(POOLS, "KubernetesNodes", "example-e2e-selects", TENANT)
    wait_until(lambda: _deletable(kube, "talos-e2e-r1"), timeout=20, what="the class deletable once unused")


def _deletable(kube: Kube, name: str) -> bool:
    try:
        kube.delete(CLASSES, "WorkerClass", name, missing_ok=False, dry_run=True)
    except KubeError as error:
        if error.reason == "ClassInUse":
            return False
        raise
    return True
