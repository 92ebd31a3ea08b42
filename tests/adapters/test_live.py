"""The live reading of the webhook install (``adapters.live``) against kmock, through lightkube's
real sync client: what is listed, what a refused list becomes, and that a broken install read
live is not safe."""

from __future__ import annotations

import asyncio
import base64
import json
import os
from pathlib import Path
from typing import Any

import kmock
import pytest
import yaml

pytest.importorskip("lightkube")

from lightkube import Client, KubeConfig

from tests.adapters.live_cluster import (
    CA,
    NAMESPACE,
    SECRET,
    TENANT,
    TOKEN,
    Objects,
    WithNamespaces,
    certificate_authority,
    find,
    healthy_install,
    kairos_crd,
    kubeconfig,
    namespaces,
    pem,
    pool,
    refuse,
    resource_of,
    seed,
    serving_certificate,
    tls_secret,
    webhook,
    write_kubeconfig,
)
from workerclass.adapters import kubeconfig as connecting
from workerclass.adapters.kubeconfig import LiveError, kube_client, load_kubeconfig
from workerclass.adapters.live import Install, live_preflight, read_install
from workerclass.api.webhooks import WEBHOOKS
from workerclass.ops.preflight import Preflight


def kmock_error(status: int, reason: str) -> kmock.KubernetesError:
    return kmock.KubernetesError(status=status, reason=reason, message="secrets is forbidden (server message)")


def client_for(server: str, **options: Any) -> Any:
    return Client(config=KubeConfig.from_dict(kubeconfig(server, **options)), trust_env=False)


def reader(emulator: kmock.KubernetesEmulator, objects: Objects | None = None, refused: int | None = None) -> Any:
    """lightkube's client on the emulator; Namespaces listed from ``objects`` (kmock cannot serve them)."""
    return WithNamespaces(client_for(str(emulator.url)), namespaces(objects or []), refused)


async def read(
    emulator: kmock.KubernetesEmulator, objects: Objects | None = None, refused: int | None = None
) -> Install:
    client = reader(emulator, objects, refused)
    try:
        return await asyncio.to_thread(read_install, client)
    finally:
        client.close()


async def verdict(
    emulator: kmock.KubernetesEmulator, objects: Objects | None = None, refused: int | None = None
) -> Preflight:
    client = reader(emulator, objects, refused)
    try:
        return await asyncio.to_thread(live_preflight, client)
    finally:
        client.close()


def failed(result: Preflight, check: str) -> list[str]:
    return [c.message for c in result.of(check) if c.verdict == "fail"]


def paths(emulator: kmock.KubernetesEmulator) -> list[str]:
    """The URL paths the client asked for, in order."""
    return [request.url.path for request in emulator[kmock.method.GET]]


# ---------------------------------------------------------------------- what is read


@pytest.mark.asyncio
async def test_the_healthy_install_read_live_is_safe(kmock: kmock.KubernetesEmulator) -> None:
    seed(kmock, healthy_install())
    install = await read(kmock)
    assert install.unreadable == ()
    kinds = sorted(obj["kind"] for obj in install.objects)
    assert kinds == [
        "CustomResourceDefinition",
        "Deployment",
        "MutatingWebhookConfiguration",
        "PodDisruptionBudget",
        "Service",
        "ValidatingWebhookConfiguration",
    ]
    assert all(obj["apiVersion"] and "managedFields" not in obj["metadata"] for obj in install.objects)
    assert find(install.objects, "Deployment")["status"]["readyReplicas"] == 2
    result = install.preflight()
    assert result.safe, [c for c in result.checks if c.verdict == "fail"]
    assert [c.check for c in result.checks if c.verdict == "warn"] == ["outage", "chart"]  # no --chart: assumed
    ok = {c.message for c in result.of("caBundle")}
    assert ok == {"all 5 workerclass webhooks have a caBundle that holds the CA of the serving certificate"}
    (served,) = install.certificates
    assert (served.ref.namespace, served.ref.name, served.ref.deployment) == (
        NAMESPACE,
        SECRET,
        f"{NAMESPACE}/workerclass-webhook",
    )
    assert served.certificate is not None and b"BEGIN CERTIFICATE" in served.certificate
    assert "not-for-print" not in repr(install)  # tls.key is not kept


@pytest.mark.parametrize(
    ("provider", "verdict", "says"),
    [
        (("k0s", "k3s", "kubeadm"), "ok", "provider path: the Kairos bootstrap provider takes the kubeadm path"),
        (("k0s", "k3s"), "ok", "data-secret path: the Kairos bootstrap provider's"),
        (None, "ok", "data-secret path: the cluster has no kairosconfigtemplates"),
    ],
    ids=["kubeadm", "upstream-enum", "no-provider"],
)
@pytest.mark.asyncio
async def test_live_preflight_says_which_bootstrap_path_kairos_pools_get(
    kmock: kmock.KubernetesEmulator, provider: tuple[str, ...] | None, verdict: str, says: str
) -> None:
    objects = [obj for obj in healthy_install() if obj["kind"] != "CustomResourceDefinition"]
    if provider is not None:
        objects.append(kairos_crd(provider))
    seed(kmock, objects)
    result = (await read(kmock)).preflight()
    rows = result.of("kairosProvider")
    assert [(row.verdict, says in row.message) for row in rows] == [(verdict, True)]
    assert "STATE holds no such CRD" not in rows[0].message  # live: the cluster was read
    assert result.safe


@pytest.mark.asyncio
async def test_only_the_namespace_the_webhooks_call_is_read(kmock: kmock.KubernetesEmulator) -> None:
    objects = healthy_install()
    foreign = json.loads(json.dumps(find(objects, "ValidatingWebhookConfiguration")))
    foreign["metadata"] = {"name": "policy-engine"}
    foreign["webhooks"] = [
        {
            "name": "validate.policy.example",
            "admissionReviewVersions": ["v1"],
            "sideEffects": "None",
            "clientConfig": {"service": {"name": "policy", "namespace": "policy", "path": "/validate"}},
            "rules": [{"apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"], "operations": ["*"]}],
        }
    ]
    seed(kmock, [*objects, foreign])
    client = reader(kmock, objects)
    install = await asyncio.to_thread(read_install, client)
    client.close()
    asked = paths(kmock)
    assert not any("/namespaces/policy/" in path for path in asked)
    assert client.namespace_lists == 0 and not any("kubernetesnodes" in path for path in asked)  # no selector
    assert {f"/api/v1/namespaces/{NAMESPACE}/services", f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments"} <= set(
        asked
    )
    result = install.preflight()
    assert result.safe
    (other,) = result.of("otherWebhooks")
    assert other.verdict == "warn" and "validate.policy.example" in other.message


# ---------------------------------------------------------------------- a broken install is not safe


@pytest.mark.asyncio
async def test_a_deployment_with_no_ready_replica_is_not_safe(kmock: kmock.KubernetesEmulator) -> None:
    seed(kmock, healthy_install(ready=0))
    result = await verdict(kmock)
    assert not result.safe
    assert failed(result, "readiness") == [
        f"Deployment {NAMESPACE}/workerclass-webhook is not ready: 0 of 2 replicas ready"
    ]


@pytest.mark.asyncio
async def test_a_deployment_without_status_says_the_controller_has_not_reported(
    kmock: kmock.KubernetesEmulator,
) -> None:
    objects = healthy_install()
    del find(objects, "Deployment")["status"]
    seed(kmock, objects)
    (message,) = failed(await verdict(kmock), "readiness")
    assert message.endswith("has no status: the deployment controller has not reported on it yet")


@pytest.mark.asyncio
async def test_a_ca_bundle_that_is_no_certificate_is_not_safe(kmock: kmock.KubernetesEmulator) -> None:
    objects = healthy_install()
    webhook(objects, "/mutate/kubernetesnodes")["clientConfig"]["caBundle"] = "Zm9v"  # "foo"
    seed(kmock, objects)
    result = await verdict(kmock)
    assert not result.safe
    (message,) = failed(result, "caBundle")
    assert "caBundle holds no PEM certificate" in message


@pytest.mark.asyncio
async def test_a_ca_that_cert_manager_never_injected_is_not_safe_live(kmock: kmock.KubernetesEmulator) -> None:
    seed(kmock, healthy_install(inject_ca=False))  # the annotation is there, the caBundle is not
    result = await verdict(kmock)
    assert not result.safe
    messages = failed(result, "caBundle")
    assert len(messages) == len(WEBHOOKS)
    assert all("cert-manager.io/inject-ca-from: cozy-workerclass/workerclass-webhook" in m for m in messages)


@pytest.mark.asyncio
async def test_a_namespace_selector_that_leaves_out_a_pool_namespace_is_not_safe(
    kmock: kmock.KubernetesEmulator,
) -> None:
    objects = healthy_install()
    selector = {"matchExpressions": [{"key": "tenant", "operator": "DoesNotExist"}]}
    webhook(objects, "/mutate/kubernetesnodes")["namespaceSelector"] = selector
    seed(kmock, [*objects, pool("example-talos")])
    install = await read(kmock, objects)
    (listed,) = [obj for obj in install.objects if obj["kind"] == "KubernetesNodes"]
    assert listed == {  # trimmed to what State reads
        "apiVersion": "apps.cozystack.io/v1alpha1",
        "kind": "KubernetesNodes",
        "metadata": {"name": "example-talos", "namespace": TENANT},
        "spec": pool("example-talos")["spec"],
    }
    assert sum(obj["kind"] == "Namespace" for obj in install.objects) == len(namespaces(objects))
    result = install.preflight()
    assert not result.safe
    (message,) = failed(result, "selectors")
    assert f"excludes namespaces that hold KubernetesNodes: {TENANT}" in message
    assert "/apis/apps.cozystack.io/v1alpha1/kubernetesnodes" in paths(kmock)


@pytest.mark.asyncio
async def test_a_namespace_selector_that_leaves_out_only_empty_namespaces_warns(
    kmock: kmock.KubernetesEmulator,
) -> None:
    objects = healthy_install()
    selector = {
        "matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system"]}]
    }
    webhook(objects, "/mutate/kubernetesnodes")["namespaceSelector"] = selector
    seed(kmock, [*objects, pool("example-talos")])
    result = await verdict(kmock, objects)
    assert result.safe
    (warning,) = result.of("selectors")
    assert (
        warning.verdict == "warn" and "excludes namespaces kube-system (none holds KubernetesNodes" in warning.message
    )


@pytest.mark.asyncio
async def test_pools_of_a_kind_the_server_does_not_serve_are_none(kmock: kmock.KubernetesEmulator) -> None:
    objects = healthy_install()
    webhook(objects, "/validate/computeplanes")["namespaceSelector"] = {"matchLabels": {"tenant": "true"}}
    seed(kmock, objects, skip=("ComputePlane",))
    install = await read(kmock, objects)
    assert install.unreadable == ()
    assert install.preflight().safe


@pytest.mark.asyncio
async def test_an_object_selector_or_rules_that_miss_kubernetesnodes_are_not_safe(
    kmock: kmock.KubernetesEmulator,
) -> None:
    objects = healthy_install()
    webhook(objects, "/mutate/kubernetesnodes")["objectSelector"] = {"matchLabels": {"x": "y"}}
    webhook(objects, "/validate/kubernetesnodes")["rules"][0]["resources"] = ["kubernetes"]
    seed(kmock, objects)
    result = await verdict(kmock)
    assert not result.safe
    assert any("objectSelector" in m for m in failed(result, "selectors"))
    assert any("/validate/kubernetesnodes" in m for m in failed(result, "matching"))


@pytest.mark.asyncio
async def test_a_url_webhook_is_reported_not_read(kmock: kmock.KubernetesEmulator) -> None:
    objects = healthy_install()
    client = webhook(objects, "/validate/computeplanes")["clientConfig"]
    client["url"] = "https://webhook.example/validate/computeplanes"
    del client["service"]
    seed(kmock, objects)
    result = await verdict(kmock)
    assert not result.safe
    (message,) = failed(result, "service")
    assert "is served from a URL (clientConfig.url), not a Service" in message
    assert "cannot be verified from the cluster" in message
    assert "webhook.example" not in message


def _with_secret(objects: Objects, certificate: bytes) -> Objects:
    return [*(obj for obj in objects if obj["kind"] != "Secret"), tls_secret(certificate)]


@pytest.mark.asyncio
async def test_a_ca_bundle_of_another_ca_than_the_serving_certificates_is_not_safe(
    kmock: kmock.KubernetesEmulator,
) -> None:
    other = certificate_authority("another-ca")
    seed(kmock, _with_secret(healthy_install(), serving_certificate(other)))
    result = await verdict(kmock)
    assert not result.safe
    messages = failed(result, "caBundle")
    assert len(messages) == len(WEBHOOKS)
    assert all(
        f"caBundle holds no CA that signed the serving certificate in Secret {NAMESPACE}/{SECRET}" in m
        for m in messages
    )
    assert all("not-for-print" not in c.message for c in result.checks)


@pytest.mark.asyncio
async def test_a_bundle_that_also_holds_the_right_ca_is_safe(kmock: kmock.KubernetesEmulator) -> None:
    other = certificate_authority("another-ca")
    objects = healthy_install()
    for obj in objects:
        for item in obj.get("webhooks", []):
            item["clientConfig"]["caBundle"] = base64.b64encode(pem(other[1]) + pem(CA[1])).decode()
    seed(kmock, objects)
    assert (await verdict(kmock)).safe


@pytest.mark.asyncio
async def test_an_expired_serving_certificate_is_not_safe(kmock: kmock.KubernetesEmulator) -> None:
    seed(kmock, _with_secret(healthy_install(), serving_certificate(CA, days=-1)))
    (message,) = failed(await verdict(kmock), "caBundle")
    assert f"the serving certificate in Secret {NAMESPACE}/{SECRET}" in message and "expired at" in message


@pytest.mark.asyncio
async def test_a_serving_secret_that_cannot_be_read_warns_only(kmock: kmock.KubernetesEmulator) -> None:
    seed(kmock, healthy_install(secret=False))  # absent: 404
    result = await verdict(kmock)
    assert result.safe
    (warning,) = result.of("caBundle")
    assert warning.verdict == "warn" and warning.object == f"Secret {NAMESPACE}/{SECRET}"
    assert f"cannot get Secret {NAMESPACE}/{SECRET}" in warning.message and "404" in warning.message


@pytest.mark.asyncio
async def test_a_forbidden_serving_secret_warns_without_the_server_message(kmock: kmock.KubernetesEmulator) -> None:
    seed(kmock, healthy_install())
    kmock["get", resource_of("Secret")] << kmock_error(403, "Forbidden")
    result = await verdict(kmock)
    assert result.safe
    (warning,) = result.of("caBundle")
    assert warning.verdict == "warn" and "403 Forbidden" in warning.message
    assert all("server message" not in c.message and "not-for-print" not in c.message for c in result.checks)


# ---------------------------------------------------------------------- refused lists


@pytest.mark.asyncio
async def test_a_list_the_identity_may_not_read_fails_the_check_that_needed_it(
    kmock: kmock.KubernetesEmulator,
) -> None:
    seed(kmock, healthy_install())
    refuse(kmock, "Deployment")
    refuse(kmock, "PodDisruptionBudget")
    install = await read(kmock)
    assert [(u.kind, u.resource, u.namespace, u.status) for u in install.unreadable] == [
        ("Deployment", "deployments.apps", NAMESPACE, "403 Forbidden"),
        ("PodDisruptionBudget", "poddisruptionbudgets.policy", NAMESPACE, "403 Forbidden"),
    ]
    result = install.preflight()
    assert not result.safe
    (readiness,) = failed(result, "readiness")
    assert f"cannot list deployments.apps in namespace {NAMESPACE}: 403 Forbidden" in readiness
    assert all("secret-user" not in c.message and "server message" not in c.message for c in result.checks)


@pytest.mark.asyncio
async def test_refused_webhook_configurations_fail_matching(kmock: kmock.KubernetesEmulator) -> None:
    seed(kmock, healthy_install())
    refuse(kmock, "ValidatingWebhookConfiguration")
    result = await verdict(kmock)
    assert not result.safe
    messages = failed(result, "matching")
    assert len(messages) == sum(not w.mutating for w in WEBHOOKS)  # one per validating path
    assert all(
        m.startswith("cannot list validatingwebhookconfigurations.admissionregistration.k8s.io: 403 Forbidden")
        for m in messages
    )
    assert [c.verdict for c in result.of("matching") if "/mutate/kubernetesnodes" in c.message] == ["ok"]


@pytest.mark.asyncio
async def test_refused_namespaces_fail_the_selector_check(kmock: kmock.KubernetesEmulator) -> None:
    objects = healthy_install()
    webhook(objects, "/mutate/kubernetesnodes")["namespaceSelector"] = {"matchLabels": {"tenant": "true"}}
    seed(kmock, objects)
    (message,) = failed(await verdict(kmock, objects, refused=403), "selectors")
    assert message.endswith("cannot be verified (cannot list namespaces: 403 Forbidden)")


@pytest.mark.asyncio
async def test_unauthorized_is_an_error_without_the_server_message(kmock: kmock.KubernetesEmulator) -> None:
    seed(kmock, healthy_install())
    refuse(kmock, "MutatingWebhookConfiguration", 401, "Unauthorized")
    with pytest.raises(LiveError) as caught:
        await read(kmock)
    assert str(caught.value) == "the API server refused the credentials (401 Unauthorized)"


@pytest.mark.asyncio
async def test_an_unreachable_server_is_an_error_without_its_url() -> None:
    client = client_for("https://reader:hunter2@127.0.0.1:9")  # the discard port: nothing listens
    try:
        with pytest.raises(LiveError) as caught:
            await asyncio.to_thread(read_install, client)
    finally:
        client.close()
    text = str(caught.value)
    assert text.startswith("cannot reach the API server (")
    assert "hunter2" not in text and "127.0.0.1" not in text


# ---------------------------------------------------------------------- the kubeconfig


def test_a_missing_kubeconfig_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(LiveError, match=r"nope.yaml: no such kubeconfig file$"):
        load_kubeconfig(tmp_path / "nope.yaml")


def test_a_broken_kubeconfig_never_quotes_it(tmp_path: Path) -> None:
    path = tmp_path / "config"
    path.write_text(f"users:\n- name: a\n  user: {{token: {TOKEN}\n")
    with pytest.raises(LiveError) as caught:
        load_kubeconfig(path)
    assert str(caught.value) == f"{path}: not a kubeconfig (invalid YAML)"
    path.write_text("- just\n- a list\n")
    with pytest.raises(LiveError, match="not a mapping"):
        load_kubeconfig(path)


def test_contexts_are_chosen_and_named(tmp_path: Path) -> None:
    config = kubeconfig("https://127.0.0.1:6443")
    config["contexts"].append({"name": "other", "context": {"cluster": "kmock"}})  # no user: anonymous
    del config["current-context"]
    path = tmp_path / "config"
    path.write_text(yaml.safe_dump(config))
    with pytest.raises(LiveError, match="sets no current-context: give --context NAME"):
        load_kubeconfig(path)
    with pytest.raises(LiveError, match=r"no context 'missing' in .* \(it has: kmock, other\)"):
        load_kubeconfig(path, "missing")
    target = load_kubeconfig(path, "kmock")
    assert target.label == "context kmock" and target.config.user.token == TOKEN
    anonymous = load_kubeconfig(path, "other")
    assert anonymous.config.user.token is None
    kube_client(anonymous).close()


def test_kubeconfig_files_are_found_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(connecting, "SERVICE_ACCOUNT", str(tmp_path / "no-service-account"))
    first = write_kubeconfig(tmp_path / "a", "https://127.0.0.1:1", context="a")
    second = write_kubeconfig(tmp_path / "b", "https://127.0.0.1:2", context="b")
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join([str(tmp_path / "absent"), str(first), str(second)]))
    assert load_kubeconfig().label == "context a"  # the first file's current-context
    target = load_kubeconfig(context="b")
    assert target.config.cluster.server == "https://127.0.0.1:2"
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "absent"))
    with pytest.raises(
        LiveError, match=r"tried the in-cluster service account \(.*\), KUBECONFIG \(.*absent: no such file\)"
    ):
        load_kubeconfig()


def test_the_objects_feed_the_same_preflight_as_a_folder(tmp_path: Path) -> None:
    """An Install's State is what the same objects read from a folder make: one verdict."""
    from workerclass.adapters.folder import load_state
    from workerclass.ops.preflight import FOLDER, preflight

    objects: Objects = [o for o in healthy_install() if o["kind"] != "Namespace"]
    (tmp_path / "install.yaml").write_text(yaml.safe_dump_all(objects))
    folder = preflight(load_state(tmp_path), FOLDER)
    install = Install(objects)
    assert [c.as_dict() for c in install.preflight().checks] == [
        c.as_dict() for c in preflight(load_state(tmp_path), install.source).checks
    ]
    assert folder.safe and install.preflight().safe
