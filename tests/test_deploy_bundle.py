"""The install bundle as a cluster receives it: it owns no namespace it did not create, no disruption
budget blocks a node drain, ``/metrics`` is not open to every source, and every RBAC rule has its
reason written beside it."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from workerclass.cli.main import _register, app
from workerclass.deploy import (
    METRICS_PORT,
    PORT,
    InstallOptions,
    install_manifests,
    to_yaml,
    webhook_manifests,
)

_register()


def of_kind(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [obj for obj in objects if obj["kind"] == kind]


def manifests(*args: str) -> Any:
    return CliRunner().invoke(app, ["manifests", *args])


@pytest.mark.parametrize("namespace", ["cozy-workerclass", "cozy-system"], ids=["own", "cozy-system"])
def test_the_bundle_creates_no_namespace_by_default(namespace: str) -> None:
    """Deleting the bundle (kubectl delete -f) must never delete a namespace it did not create,
    such as cozy-system, which every Cozystack cluster has."""
    result = manifests("-n", namespace, "-o", "json")
    assert result.exit_code == 0, result.stderr
    items = json.loads(result.stdout)["items"]
    assert of_kind(items, "Namespace") == []
    assert {obj["metadata"].get("namespace") for obj in items} - {None} == {namespace}


def test_a_namespace_only_on_request_and_never_a_shared_one() -> None:
    created = json.loads(manifests("-n", "workerclass-test", "--create-namespace", "-o", "json").stdout)["items"]
    (namespace,) = of_kind(created, "Namespace")
    assert namespace["metadata"]["name"] == "workerclass-test"
    assert created.index(namespace) < min(i for i, obj in enumerate(created) if obj["metadata"].get("namespace"))
    for shared in ("cozy-system", "kube-system", "default", "kube-public", "cozy-public"):
        refused = manifests("-n", shared, "--create-namespace")
        assert refused.exit_code == 2, shared
        assert refused.stderr.startswith("error: ") and shared in refused.stderr


@pytest.mark.parametrize("replicas", [1, 2, 3], ids=["one", "two", "three"])
def test_no_disruption_budget_blocks_a_drain(replicas: int) -> None:
    objects = webhook_manifests(InstallOptions(replicas=replicas))
    (budget,) = of_kind(objects, "PodDisruptionBudget")
    spec = budget["spec"]
    assert "minAvailable" not in spec
    # the eviction API's arithmetic: healthy pods minus the desired healthy count
    desired_healthy = replicas - spec["maxUnavailable"]
    assert replicas - desired_healthy >= 1, "a drain of a node with every replica healthy must evict one"
    assert spec["unhealthyPodEvictionPolicy"] == "AlwaysAllow"  # a crash-looping replica never holds a drain


def _ingress_ports(policy: dict[str, Any]) -> dict[int, list[dict[str, Any]]]:
    """Each port a NetworkPolicy admits -> the ``from`` peers of its rules ([] means every source)."""
    out: dict[int, list[dict[str, Any]]] = {}
    for rule in policy["spec"]["ingress"]:
        for port in rule["ports"]:
            out.setdefault(port["port"], []).extend(rule.get("from", []))
    return out


def test_metrics_are_not_open_to_every_source() -> None:
    objects = install_manifests(InstallOptions(metrics_namespace="cozy-monitoring"))
    webhook, controller = of_kind(objects, "Deployment")
    container = webhook["spec"]["template"]["spec"]["containers"][0]
    ports = {port["name"]: port["containerPort"] for port in container["ports"]}
    assert ports == {"https": PORT, "metrics": METRICS_PORT}
    args = container["args"]
    assert args[args.index("--metrics-port") + 1] == str(METRICS_PORT)  # /metrics leaves the HTTPS port
    policies = {policy["metadata"]["name"]: policy for policy in of_kind(objects, "NetworkPolicy")}
    assert set(policies) == {"workerclass-webhook", "workerclass-controller"}
    monitoring = [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "cozy-monitoring"}}}]
    webhook_ports = _ingress_ports(policies["workerclass-webhook"])
    assert webhook_ports == {PORT: [], METRICS_PORT: monitoring}  # the API server's calls come from anywhere
    controller_container = controller["spec"]["template"]["spec"]["containers"][0]
    controller_ports = {port["name"]: port["containerPort"] for port in controller_container["ports"]}
    assert _ingress_ports(policies["workerclass-controller"]) == {
        controller_ports["liveness"]: [],
        controller_ports["metrics"]: monitoring,
    }
    for policy in policies.values():
        assert policy["spec"]["policyTypes"] == ["Ingress"]
    without = install_manifests(InstallOptions(metrics_namespace=None))
    for policy in of_kind(without, "NetworkPolicy"):
        assert all(port in (PORT, 8080) for port in _ingress_ports(policy)), "no scraper: the port is closed"
    cilium = of_kind(install_manifests(InstallOptions(network_policy="cilium")), "CiliumNetworkPolicy")
    for policy in cilium:
        for rule in policy["spec"]["ingress"]:
            scraped = any(port["port"] == str(METRICS_PORT) for to in rule["toPorts"] for port in to["ports"])
            if scraped:
                assert "fromEndpoints" in rule and "fromEntities" not in rule


def test_every_rbac_rule_has_its_reason_written_beside_it() -> None:
    text = to_yaml(install_manifests())
    documents = text.split("\n---\n")
    roles = [doc for doc in documents if re.search(r"^kind: (Cluster)?Role$", doc, re.M)]
    assert len(roles) == 3  # the webhook's ClusterRole, the controller's ClusterRole and its Lease Role
    for document in roles:
        lines = document.splitlines()
        rules_at = lines.index("rules:")
        items = [i for i in range(rules_at + 1, len(lines)) if lines[i].startswith("- ")]
        assert items, document
        reasons = []
        for index in items:
            comment = lines[index - 1]
            assert comment.startswith("# "), f"no reason beside {lines[index]!r}"
            reasons.append(comment)
        assert len(set(reasons)) == len(reasons), "each rule says its own reason"
    assert list(yaml.safe_load_all(text)) == install_manifests()  # the comments change no object


def _section(title: str) -> str:
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text("utf-8")
    start = readme.index(f"\n## {title}\n")
    end = readme.find("\n## ", start + 1)
    return readme[start:end]


def test_the_readme_says_how_it_runs_in_a_cluster() -> None:
    text = _section("How it runs in a cluster")
    gate = Path(__file__).resolve().parents[1] / "deploy" / "chart-gate"
    # the chart versions the gate has a patch for, each named (a new patch must be documented here)
    named = {"kubernetes-nodes-main.patch": "main `3c780acd4`", "kubernetes-nodes-pr3315.patch": "PR 3315"}
    assert sorted(path.name for path in gate.glob("*.patch")) == sorted(named)
    assert "`deploy/chart-gate/`" in text and all(words in text for words in named.values())
    needed = ("cert-manager", "KubeVirt", "CDI", "kubeadm", "`k0s`", "`k3s`", "preflight --live", "Kubernetes 1.29")
    for word in needed:
        assert word in text, word
    assert "Without cert-manager" in text and "caBundle" in text and "--ca-bundle" in text
    for step in ("Installing", "Upgrading", "Uninstalling", "Finalizers"):
        assert f"**{step}" in text, step


def test_the_runbooks_commands_are_ones_the_tools_take() -> None:
    text = _section("How it runs in a cluster")
    commands = re.findall(r"^\$ workerclass (manifests[^|\n]*)", text, re.M)
    assert len(commands) >= 3
    for command in commands:
        result = manifests(*command.split()[1:])
        assert result.exit_code == 0, (command, result.stderr)
    from workerclass.helm_chart import default_values

    for key in re.findall(r"--set(?:-file)? ([A-Za-z.]+)=", text):
        node: Any = default_values()
        for part in key.split("."):
            assert isinstance(node, dict) and part in node, f"--set {key}: no such value"
            node = node[part]
