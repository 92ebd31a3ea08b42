"""Preflight's reading of where its objects came from (``Source``): lists refused by the API server
fail the checks that needed them, cert-manager's annotation is judged by the reading, and a
namespaceSelector is judged against the namespaces read and the pools they hold."""

from __future__ import annotations

import base64
import copy
from typing import Any

from workerclass.api.webhooks import WEBHOOKS
from workerclass.deploy import InstallOptions, webhook_manifests
from workerclass.ops.preflight import FOLDER, Preflight, Source, Unreadable, preflight, preflight_objects
from workerclass.state import State

Objects = list[dict[str, Any]]
NAMESPACE = "cozy-workerclass"
LIVE = Source(live=True)


def install(
    *, ready: int = 2, ca: bytes | None = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
) -> Objects:
    # the namespace exists before the install (the bundle creates none), as in a cluster
    objects = [namespace(NAMESPACE), *copy.deepcopy(webhook_manifests(InstallOptions()))]
    for obj in objects:
        if obj["kind"] == "Deployment":
            obj["status"] = {"replicas": 2, "readyReplicas": ready}
        if ca is not None and "webhooks" in obj:
            for item in obj["webhooks"]:
                item["clientConfig"]["caBundle"] = base64.b64encode(ca).decode()
    return objects


def webhook(objects: Objects, path: str) -> dict[str, Any]:
    return next(
        item
        for obj in objects
        for item in obj.get("webhooks", [])
        if item["clientConfig"].get("service", {}).get("path") == path
    )


def namespace(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def pool(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps.cozystack.io/v1alpha1",
        "kind": "KubernetesNodes",
        "metadata": {"name": "example-talos", "namespace": namespace},
        "spec": {"cluster": "example", "version": "v1.35"},
    }


def failed(result: Preflight, check: str) -> list[str]:
    return [c.message for c in result.of(check) if c.verdict == "fail"]


def refused(kind: str, resource: str, namespace: str | None = NAMESPACE) -> Source:
    return Source(live=True, unreadable=(Unreadable(kind, resource, namespace, "403 Forbidden"),))


def test_the_generated_install_with_its_ca_injected_is_safe_live_and_from_a_folder() -> None:
    assert preflight_objects(install(), LIVE).safe
    assert preflight_objects(install(), FOLDER).safe
    assert preflight_objects(install(ca=None), FOLDER).safe  # the annotation promises the injection


def test_live_the_annotation_without_its_ca_fails() -> None:
    messages = failed(preflight_objects(install(ca=None), LIVE), "caBundle")
    assert len(messages) == len(WEBHOOKS) and all("the CA was not injected" in m for m in messages)


def test_a_ca_bundle_without_a_pem_certificate_fails_in_both_readings() -> None:
    for source in (FOLDER, LIVE):
        messages = failed(preflight_objects(install(ca=b"not a certificate"), source), "caBundle")
        assert len(messages) == len(WEBHOOKS) and all("caBundle holds no PEM certificate" in m for m in messages)


def test_wording_follows_the_reading() -> None:
    objects = [obj for obj in install() if obj["kind"] != "Service"]
    assert failed(preflight_objects(objects, FOLDER), "service")[0].endswith("call is not in STATE")
    assert failed(preflight_objects(objects, LIVE), "service")[0].endswith("call is not in the cluster")


def test_a_refused_service_list_is_not_a_missing_service() -> None:
    objects = [obj for obj in install() if obj["kind"] != "Service"]
    (message,) = failed(preflight_objects(objects, refused("Service", "services")), "service")
    assert message.endswith(f"cannot be read: cannot list services in namespace {NAMESPACE}: 403 Forbidden")


def test_a_refused_list_in_another_namespace_changes_nothing() -> None:
    assert preflight_objects(install(), refused("Deployment", "deployments.apps", "elsewhere")).safe


def test_a_refused_budget_list_fails_what_would_only_warn() -> None:
    objects = [obj for obj in install() if obj["kind"] != "PodDisruptionBudget"]
    assert preflight_objects(objects, LIVE).safe  # no budget: a warning
    result = preflight_objects(objects, refused("PodDisruptionBudget", "poddisruptionbudgets.policy"))
    (message,) = failed(result, "disruptionBudget")
    assert "whether a PodDisruptionBudget covers" in message and "403 Forbidden" in message


def test_refused_configurations_replace_the_coverage_of_their_paths() -> None:
    objects = [obj for obj in install() if obj["kind"] != "MutatingWebhookConfiguration"]
    source = refused("MutatingWebhookConfiguration", "mutatingwebhookconfigurations.admissionregistration.k8s.io", None)
    result = preflight_objects(objects, source)
    (message,) = failed(result, "matching")
    assert message.startswith("cannot list mutatingwebhookconfigurations") and "/mutate/kubernetesnodes" in message
    assert "no MutatingWebhookConfiguration webhook sends" not in " ".join(c.message for c in result.checks)


def test_nothing_readable_says_why_not_that_nothing_is_installed() -> None:
    both = (
        Unreadable(
            "MutatingWebhookConfiguration",
            "mutatingwebhookconfigurations.admissionregistration.k8s.io",
            None,
            "403 Forbidden",
        ),
        Unreadable(
            "ValidatingWebhookConfiguration",
            "validatingwebhookconfigurations.admissionregistration.k8s.io",
            None,
            "403 Forbidden",
        ),
    )
    result = preflight_objects([], Source(live=True, unreadable=both))
    assert not result.safe
    assert all("no workerclass webhook configuration" not in c.message for c in result.checks)
    assert len(failed(result, "matching")) == len(WEBHOOKS)


def test_a_url_webhook_says_its_server_cannot_be_verified() -> None:
    objects = install()
    client = webhook(objects, "/validate/computeplanes")["clientConfig"]
    client["url"] = "https://webhook.example/validate/computeplanes"
    del client["service"]
    (message,) = failed(preflight_objects(objects, LIVE), "service")
    assert "served from a URL (clientConfig.url), not a Service" in message and "webhook.example" not in message


# ---------------------------------------------------------------------- namespace selectors


def _tenant_selector(objects: Objects) -> None:
    webhook(objects, "/mutate/kubernetesnodes")["namespaceSelector"] = {"matchLabels": {"tenant": "true"}}


def test_a_selector_that_leaves_out_a_namespace_holding_pools_fails() -> None:
    objects = install()
    _tenant_selector(objects)
    objects += [namespace("tenant-a", tenant="true"), namespace("tenant-b"), pool("tenant-b")]
    for source in (FOLDER, LIVE):
        (message,) = failed(preflight_objects(objects, source), "selectors")
        assert "excludes namespaces that hold KubernetesNodes: tenant-b:" in message


def test_a_selector_that_leaves_out_only_empty_namespaces_warns() -> None:
    objects = install()
    _tenant_selector(objects)
    objects += [namespace("tenant-a", tenant="true"), pool("tenant-a")]
    result = preflight_objects(objects, LIVE)
    assert result.safe
    (warning,) = result.of("selectors")
    assert (
        warning.verdict == "warn" and f"excludes namespaces {NAMESPACE} (none holds KubernetesNodes" in warning.message
    )


def test_the_name_label_every_namespace_carries_is_matched() -> None:
    objects = install()
    selector = {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["tenant-a"]}]}
    webhook(objects, "/mutate/kubernetesnodes")["namespaceSelector"] = selector
    objects = [obj for obj in objects if obj["kind"] != "Namespace"] + [namespace("tenant-a"), pool("tenant-a")]
    (warning,) = preflight_objects(objects, LIVE).of("selectors")
    assert warning.verdict == "warn" and "matches every namespace in the cluster" in warning.message


def test_refused_namespaces_or_pools_fail_a_selector_that_needs_them() -> None:
    objects = install()
    _tenant_selector(objects)
    for source in (
        refused("Namespace", "namespaces", None),
        refused("KubernetesNodes", "kubernetesnodes.apps.cozystack.io", None),
    ):
        (message,) = failed(preflight_objects(objects, source), "selectors")
        assert "which namespaces it excludes cannot be verified" in message


def test_without_namespaces_read_a_folder_keeps_the_warning() -> None:
    objects = [obj for obj in install() if obj["kind"] != "Namespace"]
    _tenant_selector(objects)
    (warning,) = preflight_objects([*objects, pool("tenant-b")], FOLDER).of("selectors")
    assert warning.verdict == "warn" and "could exclude tenant namespaces" in warning.message


def test_a_state_carries_the_namespaces_and_the_pools() -> None:
    objects = install()
    _tenant_selector(objects)
    objects += [namespace("tenant-b"), pool("tenant-b")]
    state = State.from_objects(objects)
    assert [c.as_dict() for c in preflight(state, LIVE).checks if c.check != "chart"] == [
        c.as_dict() for c in preflight_objects(objects, LIVE).checks
    ]
    assert failed(preflight(state), "selectors")
