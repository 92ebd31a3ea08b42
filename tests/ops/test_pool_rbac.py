"""The rules the chart's pool roles grant, as the controller must hold them: read from the chart port,
fixed names kept, names a release derives widened to every name."""

from __future__ import annotations

from workerclass.chart.context import ChartInput
from workerclass.chart.dashboard import render_dashboard
from workerclass.chart.talos_job import render_talos_rbac
from workerclass.ops.pool_rbac import pool_role_rules, rules_grant, uncovered_verbs


def _chart_rules(namespace: str, cluster: str, pool: str) -> list[dict[str, object]]:
    inp = ChartInput(values={"cluster": cluster}, release=f"kubernetes-nodes-{cluster}-{pool}", namespace=namespace)
    objects = [*render_talos_rbac(inp), *render_dashboard(inp)]
    return [rule for obj in objects if obj["kind"] in ("Role", "ClusterRole") for rule in obj["rules"]]


def test_every_rule_the_chart_renders_for_any_pool_is_held_as_written_or_wider() -> None:
    held = [entry.rule for entry in pool_role_rules()]
    for sample in (("tenant-example", "example", "workers"), ("tenant-a-b", "prod", "gpu")):
        rules = _chart_rules(*sample)
        assert len(rules) == len(held)
        for rule, wide in zip(rules, held, strict=True):
            assert rules_grant([wide], rule), rule


def test_fixed_names_stay_and_release_names_go() -> None:
    by_source = {(entry.source, entry.rule["resources"][0]): entry for entry in pool_role_rules()}
    coredns = by_source[("the talos-reconcile Job's CoreDNS ClusterRole", "services")]
    assert coredns.rule["resourceNames"] == ["kube-dns"] and not coredns.named_by_release
    secrets = by_source[("the talos-reconcile Job's Role", "secrets")]
    assert "resourceNames" not in secrets.rule and secrets.named_by_release
    assert secrets.names == (
        "kubernetes-<cluster>-talos-secrets",
        "kubernetes-<cluster>-talos-ca",
        "kubernetes-<cluster>-ca",
    )
    monitor = by_source[("the dashboard's Role", "workloadmonitors")]
    assert monitor.names == ("kubernetes-<cluster>-<pool>",)


def test_uncovered_verbs_are_those_no_rule_grants() -> None:
    wanted = {"apiGroups": [""], "resources": ["services"], "resourceNames": ["kube-dns"], "verbs": ["get", "list"]}
    assert uncovered_verbs([{"apiGroups": [""], "resources": ["services"], "verbs": ["get"]}], wanted) == ["list"]
    assert uncovered_verbs([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}], wanted) == []
    assert uncovered_verbs([{**wanted, "resourceNames": ["other"]}], wanted) == ["get", "list"]
