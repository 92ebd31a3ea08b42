"""``workerclass preflight --kubeconfig`` as a user runs it against the real API server: the bundle's
own service-based webhook configurations, the serving Secret and a ready Deployment are safe; a
caBundle of another CA, a selector or rules that miss KubernetesNodes and a Deployment that is not
ready each make it ``not safe`` with the failing check named; ``--uninstall`` lists a custom class
held by the finalizer and a classified Kairos pool.

For the safe install the url-registered configurations of the test bed are swapped for the
bundle's service-based ones (``manifests(ca)``), the Secret ``workerclass-webhook-tls`` is made
from the webhook's own certificate pair and the Deployment's status subresource is patched ready;
no pool is written while they are swapped in (no pod serves the Service), and the url-registered
configurations are put back afterwards.

Seen to fail against a broken bundle/server: with the caBundle swapped to another CA
(``CertAuthority.create("another-ca")``) and the check of the serving Secret's ``tls.crt`` against
the bundle's CAs left out of the report, the live preflight exited 0 (``another-ca`` failed on
``assert code == 1``).
"""

from __future__ import annotations

import base64
import copy
import json
import subprocess
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from workerclass.api import FINALIZER

from .conftest import NAMESPACE, TENANT, Install, Served, WebhookCerts, manifests
from .kube import Kube, KubeError
from .testbed import ApiServer, CertAuthority, wait_until, workerclass_command

ADMISSION = "admissionregistration.k8s.io/v1"
CLASSES = "cozystack.io/v1alpha1"
POOLS = "apps.cozystack.io/v1alpha1"
SECRET = "workerclass-webhook-tls"
DEPLOYMENT = "workerclass-webhook"
MANAGER = "workerclass-e2e-install"


def preflight(cluster: ApiServer, *extra: str) -> tuple[int, dict[str, Any]]:
    """``workerclass preflight --kubeconfig ADMIN -o json`` as a subprocess: its exit code and JSON."""
    out = subprocess.run(
        [*workerclass_command(), "preflight", "--kubeconfig", str(cluster.admin.kubeconfig), *extra, "-o", "json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode in (0, 1), out.stderr
    data: dict[str, Any] = json.loads(out.stdout)
    return out.returncode, data


def failed(data: dict[str, Any]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for check in data["checks"]:
        if check["verdict"] == "fail":
            out.setdefault(check["check"], []).append(check["message"])
    return out


def _webhooks(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [obj for obj in objects if obj["kind"] in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")]


@pytest.fixture
def served_by_service(kube: Kube, install: Install, webhook_certs: WebhookCerts) -> Iterator[list[dict[str, Any]]]:
    """The bundle's own service-based configurations registered, the serving Secret made, the webhook
    Deployment reported ready; all put back afterwards. No pool may be written meanwhile."""
    bundle = _webhooks(manifests(webhook_certs.ca_file))
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/tls",
        "metadata": {"name": SECRET, "namespace": NAMESPACE},
        "data": {
            "tls.crt": base64.b64encode(webhook_certs.cert.read_bytes()).decode(),
            "tls.key": base64.b64encode(webhook_certs.key.read_bytes()).decode(),
        },
    }
    kube.delete("v1", "Secret", SECRET, NAMESPACE)
    kube.create(secret)
    ready = {"replicas": 2, "readyReplicas": 2, "availableReplicas": 2, "updatedReplicas": 2}
    try:
        kube.patch("apps/v1", "Deployment", DEPLOYMENT, {"status": ready}, namespace=NAMESPACE, sub="status")
        for obj in bundle:
            kube.apply(obj, manager=MANAGER)
        yield bundle
    finally:
        for obj in _webhooks(install.objects):
            kube.apply(obj, manager=MANAGER)
        kube.patch("apps/v1", "Deployment", DEPLOYMENT, {"status": None}, namespace=NAMESPACE, sub="status")
        kube.delete("v1", "Secret", SECRET, NAMESPACE)


def test_the_bundle_served_by_its_service_is_safe(cluster: ApiServer, served_by_service: list[dict[str, Any]]) -> None:
    code, data = preflight(cluster)
    assert code == 0 and data["safe"] is True, failed(data)
    (ca,) = [c for c in data["checks"] if c["check"] == "caBundle"]
    assert ca["verdict"] == "ok" and "holds the CA of the serving certificate" in ca["message"]
    assert all("PRIVATE KEY" not in c["message"] for c in data["checks"])


def _broken(bundle: list[dict[str, Any]], path: str, change: Callable[[dict[str, Any]], None]) -> list[dict[str, Any]]:
    out = copy.deepcopy(bundle)
    for obj in out:
        for item in obj["webhooks"]:
            if path in ("*", item["clientConfig"]["service"]["path"]):
                change(item)
    return out


def _other_ca(item: dict[str, Any]) -> None:
    item["clientConfig"]["caBundle"] = base64.b64encode(CertAuthority.create("another-ca").pem).decode()


def _object_selector(item: dict[str, Any]) -> None:
    item["objectSelector"] = {"matchLabels": {"admitted": "yes"}}


def _namespace_selector(item: dict[str, Any]) -> None:
    item["namespaceSelector"] = {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn",
                                                       "values": [TENANT]}]}  # fmt: skip


def _rules(item: dict[str, Any]) -> None:
    item["rules"][0]["resources"] = ["kuberneteses"]


@pytest.mark.parametrize(
    ("path", "change", "check"),
    [
        ("*", _other_ca, "caBundle"),
        ("/mutate/kubernetesnodes", _object_selector, "selectors"),
        ("/validate/kubernetesnodes", _namespace_selector, "selectors"),
        ("/validate/kubernetesnodes", _rules, "matching"),
    ],
    ids=["another-ca", "object-selector", "namespace-selector", "rules"],
)
def test_a_broken_configuration_is_not_safe(
    cluster: ApiServer,
    kube: Kube,
    served_by_service: list[dict[str, Any]],
    path: str,
    change: Callable[[dict[str, Any]], None],
    check: str,
) -> None:
    for obj in _broken(served_by_service, path, change):
        kube.apply(obj, manager=MANAGER)
    code, data = preflight(cluster)
    assert code == 1 and data["safe"] is False
    assert check in failed(data), failed(data)
    if check == "caBundle":
        assert all("holds no CA that signed the serving certificate" in m for m in failed(data)["caBundle"])
        assert set(failed(data)) == {"caBundle"}


def test_a_deployment_that_is_not_ready_is_not_safe(
    cluster: ApiServer, kube: Kube, served_by_service: list[dict[str, Any]]
) -> None:
    kube.patch(
        "apps/v1", "Deployment", DEPLOYMENT, {"status": {"replicas": 2, "readyReplicas": 0, "availableReplicas": 0}},
        namespace=NAMESPACE, sub="status",
    )  # fmt: skip
    code, data = preflight(cluster)
    assert code == 1
    assert failed(data).get("readiness") == [f"Deployment {NAMESPACE}/{DEPLOYMENT} is not ready: 0 of 2 replicas ready"]


def test_uninstall_lists_a_held_custom_class_and_a_kairos_pool(cluster: ApiServer, kube: Kube, webhook: Served) -> None:
    name, pool = "kairos-e2e-uninstall-r1", "example-e2e-uninstall"
    klass = {
        "apiVersion": CLASSES,
        "kind": "WorkerClass",
        "metadata": {"name": name, "finalizers": [FINALIZER]},
        "spec": {
            "bootstrap": "kairos",
            "image": {
                "kubernetesVersion": "v1.35.6",
                "reference": "registry.example.com/workers/kairos-worker@sha256:" + "3f" * 32,
            },
        },
    }
    nodes = {
        "apiVersion": POOLS,
        "kind": "KubernetesNodes",
        "metadata": {"name": pool, "namespace": TENANT},
        "spec": {"cluster": "example", "workerClassName": name, "version": "v1.35", "minReplicas": 1, "maxReplicas": 2},
    }

    def create_pool() -> bool:  # the webhook's cache sees the class a moment after its CREATE
        try:
            kube.create(nodes)
        except KubeError:
            return False
        return True

    kube.create(klass)
    try:
        wait_until(create_pool, timeout=30, what="the pool admitted")
        code, data = preflight(cluster, "--uninstall")
        assert code == 1 and data["safe"] is False
        by = {(c["check"], c["object"]): c for c in data["checks"]}
        kairos = by[("uninstall-kairos-pools", f"KubernetesNodes {TENANT}/{pool}")]
        assert kairos["verdict"] == "fail" and "would become Talos machines: migrate first" in kairos["message"]
        held = by[("uninstall-finalizers", f"WorkerClass {name}")]
        assert held["verdict"] == "fail" and f"pools select it: {TENANT}/{pool}" in held["message"]
        assert "stays Terminating" in held["message"]
    finally:
        kube.delete(POOLS, "KubernetesNodes", pool, TENANT)
        kube.patch(CLASSES, "WorkerClass", name, {"metadata": {"finalizers": None}})
        wait_until(lambda: kube.find(POOLS, "KubernetesNodes", pool, TENANT) is None, timeout=30, what="pool gone")
        kube.delete(CLASSES, "WorkerClass", name)
