"""``workerclass manifests`` and the committed ``deploy/workerclass.yaml``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer.main
import yaml
from typer.testing import CliRunner

from tests.webhook.helpers import ROOT
from workerclass.adapters.kube import WATCHED
from workerclass.api import CONTROLLER_READS
from workerclass.cli.main import _register, app
from workerclass.crds import crd_manifests
from workerclass.deploy import (
    NAME,
    OPERATIONS_BY_PATH,
    WEBHOOK_MEMORY_LIMIT_MIB,
    WEBHOOK_MEMORY_REQUEST_MIB,
    InstallOptions,
    controller_manifests,
    install_manifests,
    kept_crds,
    to_yaml,
    webhook_manifests,
)
from workerclass.webhook import ROUTES

_register()
COMMITTED = ROOT / "deploy" / "workerclass.yaml"


def by_kind(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for obj in objects:
        assert obj["kind"] not in out, f"two {obj['kind']}"
        out[obj["kind"]] = obj
    return out


def test_committed_manifests_match_the_generator() -> None:
    assert COMMITTED.read_text() == to_yaml(install_manifests()), (
        "deploy/workerclass.yaml is stale: run `workerclass manifests > deploy/workerclass.yaml`"
    )
    result = CliRunner().invoke(app, ["manifests"])
    assert result.exit_code == 0
    assert result.stdout == COMMITTED.read_text()
    assert list(yaml.safe_load_all(COMMITTED.read_text())) == install_manifests()
    alone = CliRunner().invoke(app, ["manifests", "--without-controller"])
    assert list(yaml.safe_load_all(alone.stdout)) == [*kept_crds(), *webhook_manifests()]
    assert [crd["spec"] for crd in kept_crds()] == [crd["spec"] for crd in crd_manifests()]


def test_controller_install_is_two_replicas_one_leader_with_the_rbac_it_writes_with() -> None:
    from workerclass.ops.workers import WORKER_KINDS

    objects = controller_manifests()
    kinds = [obj["kind"] for obj in objects]
    assert kinds == [
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "Deployment",
        "NetworkPolicy",
    ]
    deployment = objects[-2]
    assert deployment["spec"]["replicas"] == 2  # one leader on the Lease; the other takes over
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["args"][:2] == ["serve", "controller"]
    assert "--lease-namespace" in container["args"]
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    lease = objects[3]["rules"]
    assert lease == [
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "create", "update"]}
    ]
    rules = objects[1]["rules"]
    writes: dict[tuple[str, str], set[str]] = {}
    for rule in rules:
        if set(rule["verbs"]) - {"get", "list", "watch"}:
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    writes.setdefault((group, resource), set()).update(rule["verbs"])
    assert writes[("cozystack.io", "workerclasses")] == {"patch"}  # the finalizer; never delete a class
    assert writes[("cozystack.io", "workerclasses/status")] == {"patch"}
    assert writes[("", "events")] == {"create", "list"}  # list: an Event said before a restart is not said again
    for kind in WORKER_KINDS:  # what the chart renders for a pool: applied, pinned, pruned
        assert {"create", "patch", "delete"} <= writes[(kind.group, kind.plural)], kind.kind
    for resource in ("roles", "clusterroles", "rolebindings", "clusterrolebindings"):  # held, never granted
        assert not writes[("rbac.authorization.k8s.io", resource)] & {"bind", "escalate"}, resource
    assert ("apps.cozystack.io", "kubernetesnodes") not in writes  # pools are the tenant's: read only
    assert ("helm.toolkit.fluxcd.io", "helmreleases") not in writes
    read = {(group, resource) for rule in rules for group in rule["apiGroups"] for resource in rule["resources"]}
    assert {(watched.group, watched.plural) for watched in CONTROLLER_READS} <= read


def test_every_route_has_one_webhook_with_safe_settings() -> None:
    objects = by_kind(webhook_manifests())
    hooks = {
        hook["clientConfig"]["service"]["path"]: (kind, hook)
        for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
        for hook in objects[kind]["webhooks"]
    }
    assert set(hooks) == {route.path for route in ROUTES}
    plurals = {(watched.group, watched.kind): watched for watched in WATCHED}
    for route in ROUTES:
        kind, hook = hooks[route.path]
        assert kind == ("MutatingWebhookConfiguration" if route.mutating else "ValidatingWebhookConfiguration")
        assert hook["failurePolicy"] == "Fail"
        assert hook["sideEffects"] == "None"
        assert hook["admissionReviewVersions"] == ["v1"]
        assert 1 <= hook["timeoutSeconds"] <= 30
        assert hook["clientConfig"]["service"] == {
            "name": NAME,
            "namespace": "cozy-workerclass",
            "path": route.path,
            "port": 443,
        }
        watched = plurals[(route.target.group, route.target.kind)]
        (rule,) = hook["rules"]
        assert rule["apiGroups"] == [watched.group] and rule["apiVersions"] == [watched.version]
        assert rule["resources"] == [watched.plural]  # the main resource only, never status
        assert rule["operations"] == OPERATIONS_BY_PATH[route.path]
        assert rule["scope"] == ("Namespaced" if watched.namespaced else "Cluster")
        assert hook["name"].endswith(".workerclass.cozystack.io")
    # only what a rule needs: pool DELETE and CONNECT are not matched, class DELETE is (ClassInUse)
    assert "DELETE" not in OPERATIONS_BY_PATH["/validate/kubernetesnodes"]
    assert OPERATIONS_BY_PATH["/validate/workerclasses"] == ["CREATE", "UPDATE", "DELETE"]
    assert all("CONNECT" not in operations for operations in OPERATIONS_BY_PATH.values())


def test_rbac_reads_exactly_what_the_cache_watches() -> None:
    """list and watch on what the cache watches; get, by name, on the chart the pools run (the
    ApplicationDefinition kubernetes-nodes and the Flux sources a chartRef may name); no write."""
    from workerclass.api.resources import APPLICATION_DEFINITION, CHART_SOURCES, POOL_APPLICATION

    role = by_kind(webhook_manifests())["ClusterRole"]
    watching = [rule for rule in role["rules"] if "list" in rule["verbs"]]
    granted = {(group, resource) for rule in watching for group in rule["apiGroups"] for resource in rule["resources"]}
    assert granted == {(watched.group, watched.plural) for watched in WATCHED}
    assert all(rule["verbs"] == ["get", "list", "watch"] for rule in watching)
    reading = [rule for rule in role["rules"] if rule not in watching]
    assert all(rule["verbs"] == ["get"] for rule in reading)
    got = {(group, resource) for rule in reading for group in rule["apiGroups"] for resource in rule["resources"]}
    assert got == {(APPLICATION_DEFINITION.group, APPLICATION_DEFINITION.plural)} | {
        (source.group, source.plural) for source in CHART_SOURCES.values()
    }
    definition = next(rule for rule in reading if rule["resources"] == [APPLICATION_DEFINITION.plural])
    assert definition["resourceNames"] == [POOL_APPLICATION]
    assert "Role" not in by_kind(webhook_manifests())  # no write access anywhere
    binding = by_kind(webhook_manifests())["ClusterRoleBinding"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": NAME, "namespace": "cozy-workerclass"}]


def test_deployment_service_and_budget_fit_together() -> None:
    objects = by_kind(webhook_manifests())
    deployment = objects["Deployment"]["spec"]
    pod = deployment["template"]
    container = pod["spec"]["containers"][0]
    assert deployment["replicas"] == 2
    assert deployment["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    labels = pod["metadata"]["labels"]
    for selector in (
        deployment["selector"]["matchLabels"],
        objects["Service"]["spec"]["selector"],
        objects["PodDisruptionBudget"]["spec"]["selector"]["matchLabels"],
    ):
        assert selector.items() <= labels.items()
    assert objects["PodDisruptionBudget"]["spec"]["maxUnavailable"] == 1  # never holds a drain (test_deploy_bundle)
    assert objects["Service"]["spec"]["ports"][0]["targetPort"] == container["ports"][0]["name"] == "https"
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "scheme": "HTTPS", "port": "https"}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "scheme": "HTTPS", "port": "https"}
    assert pod["spec"]["terminationGracePeriodSeconds"] > 5 + 20  # shutdown delay + drain fit in
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert pod["spec"]["volumes"][0]["secret"]["secretName"] == objects["Certificate"]["spec"]["secretName"]

    # the container's arguments are ones `workerclass serve webhook` accepts
    command = typer.main.get_command(app)
    webhook = command.commands["serve"].commands["webhook"]  # type: ignore[attr-defined]
    assert container["args"][:2] == ["serve", "webhook"]
    context = webhook.make_context("webhook", list(container["args"][2:]))
    assert context.params["port"] == 8443 and str(context.params["tls_cert"]) == "/tls/tls.crt"


def test_ca_bundle_instead_of_cert_manager(tmp_path: Path) -> None:
    pem = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
    objects = webhook_manifests(InstallOptions(ca_bundle=pem, namespace="elsewhere", image="example/wc:1"))
    kinds = [obj["kind"] for obj in objects]
    assert "Certificate" not in kinds and "Issuer" not in kinds
    for obj in objects:
        if obj["kind"].endswith("WebhookConfiguration"):
            assert "annotations" not in obj["metadata"]
            for hook in obj["webhooks"]:
                assert (
                    hook["clientConfig"]["caBundle"]
                    == "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUIKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo="
                )
                assert hook["clientConfig"]["service"]["namespace"] == "elsewhere"

    bundle = tmp_path / "ca.crt"
    bundle.write_bytes(pem)
    result = CliRunner().invoke(app, ["manifests", "--ca-bundle", str(bundle), "-n", "elsewhere", "-o", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["kind"] == "List" and all(
        item["metadata"].get("namespace", "elsewhere") == "elsewhere" for item in data["items"]
    )


def test_ca_bundle_errors_are_one_line(tmp_path: Path) -> None:
    key = tmp_path / "key.pem"
    key.write_text("-----BEGIN CERTIFICATE-----\n-----BEGIN PRIVATE KEY-----\n")
    result = CliRunner().invoke(app, ["manifests", "--ca-bundle", str(key)])
    assert result.exit_code == 2 and "private key" in result.stderr
    result = CliRunner().invoke(app, ["manifests", "--ca-bundle", str(tmp_path / "absent")])
    assert result.exit_code == 2 and "cannot read" in result.stderr
    assert "Traceback" not in result.stderr


def test_ingress_is_restricted_to_the_webhook_port() -> None:
    objects = by_kind(webhook_manifests())
    policy = objects["NetworkPolicy"]
    container = objects["Deployment"]["spec"]["template"]["spec"]["containers"][0]
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= (
        objects["Deployment"]["spec"]["template"]["metadata"]["labels"].items()
    )
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    assert policy["spec"]["ingress"][0] == {
        "ports": [{"protocol": "TCP", "port": container["ports"][0]["containerPort"]}]
    }  # the HTTPS port from anywhere; /metrics has its own port and source (test_deploy_bundle)

    cilium = by_kind(webhook_manifests(InstallOptions(network_policy="cilium", metrics_namespace="monitoring")))
    assert "NetworkPolicy" not in cilium
    rules = cilium["CiliumNetworkPolicy"]["spec"]["ingress"]
    assert rules[0]["fromEntities"] == ["kube-apiserver", "host"]  # the API server's calls, the kubelet's probes
    assert rules[1]["fromEndpoints"] == [{"matchLabels": {"k8s:io.kubernetes.pod.namespace": "monitoring"}}]
    assert rules[0]["toPorts"] == [{"ports": [{"port": "8443", "protocol": "TCP"}]}]
    assert rules[1]["toPorts"] == [{"ports": [{"port": "9090", "protocol": "TCP"}]}]
    assert "NetworkPolicy" not in by_kind(webhook_manifests(InstallOptions(network_policy="none")))


def test_memory_request_and_limit_come_from_the_measured_figures() -> None:
    container = by_kind(webhook_manifests())["Deployment"]["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"]["requests"]["memory"] == f"{WEBHOOK_MEMORY_REQUEST_MIB}Mi"
    assert container["resources"]["limits"]["memory"] == f"{WEBHOOK_MEMORY_LIMIT_MIB}Mi"
    assert WEBHOOK_MEMORY_REQUEST_MIB < WEBHOOK_MEMORY_LIMIT_MIB
