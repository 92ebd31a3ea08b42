"""The package's Helm chart installed, upgraded and uninstalled with Helm's own engine, in the
README's runbook order, on an API server of its own (the session's already holds the bundle's
cluster-wide objects, which Helm would refuse to adopt).

The runbook: install with ``webhook.configurations=false`` (the CRDs, RBAC, Service and
Deployments), wait for the Deployments (no pod runs on the test bed: nothing to wait for here),
then upgrade with ``webhook.configurations=true``; uninstall in the reverse order. Cozystack's
injected platform values (``_cluster``, ``_namespace``) ride along, as helm-controller passes
them. What is checked: each step leaves exactly the objects ``workerclass manifests`` gives for
those values, the CRDs outlive the uninstall (``helm.sh/resource-policy: keep``) with the
namespace, and a custom class still holding the controller's finalizer waits for it to be removed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from workerclass.api.resources import FINALIZER, WORKER_CLASS
from workerclass.deploy import install_manifests
from workerclass.helm_chart import options_for

from .conftest import WebhookCerts
from .helm import helm
from .kube import JSON_PATCH, Kube
from .testbed import ROOT, ApiServer, Binaries, wait_until

CHART = ROOT / "charts" / "workerclass"
NAMESPACE = "cozy-workerclass"
RELEASE = "workerclass"


@pytest.fixture(scope="module")
def bare(binaries: Binaries, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:
    server = ApiServer(tmp_path_factory.mktemp("chart-testbed"), binaries)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def _present(kube: Kube, objects: list[dict[str, Any]]) -> set[tuple[str, str]]:
    found = set()
    for obj in objects:
        meta = obj["metadata"]
        if kube.find(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace")) is not None:
            found.add((obj["kind"], meta["name"]))
    return found


def _expected(values: dict[str, Any]) -> list[dict[str, Any]]:
    options, controller = options_for(values, NAMESPACE)
    return install_manifests(options, controller=controller)


def test_install_upgrade_uninstall_in_the_runbook_order(bare: ApiServer, webhook_certs: WebhookCerts) -> None:
    kube = Kube(bare.url, bare.ssl_context())
    kubeconfig = bare.admin.kubeconfig
    try:
        kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
        ca = webhook_certs.ca.pem.decode()
        first: dict[str, Any] = {"caBundle": ca, "webhook": {"configurations": False}}
        everything = _expected({"caBundle": ca})
        configurations = {
            (obj["kind"], obj["metadata"]["name"]) for obj in everything if obj["kind"].endswith("WebhookConfiguration")
        }
        assert len(configurations) == 2

        helm("install", kubeconfig=kubeconfig, release=RELEASE, namespace=NAMESPACE, chart=CHART, values=first)
        installed = _present(kube, everything)
        assert installed == {(o["kind"], o["metadata"]["name"]) for o in _expected(first)}
        assert not installed & configurations  # the webhook configurations come last
        for obj in _expected(first):  # as applied: the live objects hold what the bundle says
            meta = obj["metadata"]
            live = kube.get(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"))
            if "spec" in obj and obj["kind"] != "CustomResourceDefinition":
                assert _within(obj["spec"], live["spec"]), obj["kind"]

        # a custom class, its finalizer as the controller keeps it (written before the webhooks match:
        # no webhook pod runs on the test bed, and a Fail webhook refuses what it cannot reach)
        kube.create(
            {
                "apiVersion": WORKER_CLASS.api_version,
                "kind": "WorkerClass",
                "metadata": {"name": "custom", "finalizers": [FINALIZER]},
                "spec": {"bootstrap": "talos"},
            }
        )

        second = {"caBundle": ca, "webhook": {"configurations": True, "replicas": 3}}
        helm("upgrade", kubeconfig=kubeconfig, release=RELEASE, namespace=NAMESPACE, chart=CHART, values=second)
        assert _present(kube, everything) == {(o["kind"], o["metadata"]["name"]) for o in everything}
        deployment = kube.get("apps/v1", "Deployment", "workerclass-webhook", NAMESPACE)
        assert deployment["spec"]["replicas"] == 3

        # uninstall: the webhook configurations first, then the release
        helm("upgrade", kubeconfig=kubeconfig, release=RELEASE, namespace=NAMESPACE, chart=CHART, values=first)
        assert not _present(kube, everything) & configurations
        helm("uninstall", kubeconfig=kubeconfig, release=RELEASE, namespace=NAMESPACE)
        crds = {(o["kind"], o["metadata"]["name"]) for o in everything if o["kind"] == "CustomResourceDefinition"}
        wait_until(lambda: _present(kube, everything) == crds, timeout=60, what="only the CRDs left")
        assert kube.get("v1", "Namespace", NAMESPACE)["status"]["phase"] == "Active"
        assert kube.get(WORKER_CLASS.api_version, "WorkerClass", "custom")["metadata"]["name"] == "custom"

        # without the controller, a deleted custom class waits on its finalizer: removed by hand
        # (an UPDATE that leaves the spec alone) once no pool selects it
        kube.delete(WORKER_CLASS.api_version, "WorkerClass", "custom")
        held = kube.get(WORKER_CLASS.api_version, "WorkerClass", "custom")
        assert "deletionTimestamp" in held["metadata"]
        kube.patch(
            WORKER_CLASS.api_version,
            "WorkerClass",
            "custom",
            [{"op": "remove", "path": "/metadata/finalizers"}],
            content_type=JSON_PATCH,
        )
        wait_until(lambda: kube.find(WORKER_CLASS.api_version, "WorkerClass", "custom") is None, timeout=30)
    finally:
        kube.close()


def _within(expected: Any, live: Any) -> bool:
    """Every field of ``expected`` is in ``live`` with that value (the server adds defaults)."""
    if isinstance(expected, dict):
        return isinstance(live, dict) and all(
            key in live and _within(value, live[key]) for key, value in expected.items()
        )
    if isinstance(expected, list):
        return isinstance(live, list) and len(live) == len(expected) and all(map(_within, expected, live))
    return bool(expected == live) or str(expected) == str(live)
