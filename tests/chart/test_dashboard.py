"""``dashboard-resourcemap.yaml`` against the real chart: the Role and the cozy-lib RoleBinding
subjects for tenants at every depth, and the chart's refusal of a namespace that is no tenant."""

from __future__ import annotations

import pytest

from workerclass.chart.dashboard import (
    InvalidTenant,
    access_levels_at_or_above,
    all_parent_tenants_and_this,
    render_dashboard,
)
from workerclass.chart.values import chart_input

from .oracle import diff_paths, get_oracle, require_oracle

require_oracle()

CASES = {
    "root": ("tenant-root", "example", "md1"),
    "child": ("tenant-example", "example", "md1"),
    "grandchild": ("tenant-a-b", "k8s", "gpu-pool"),
    "deep": ("tenant-a-b-c-d", "c1", "p-1"),
    "digits": ("tenant-1", "x0", "y9"),
}


@pytest.mark.parametrize(("namespace", "cluster", "pool"), list(CASES.values()), ids=list(CASES))
def test_dashboard_objects_match_the_oracle(namespace: str, cluster: str, pool: str) -> None:
    release = f"kubernetes-nodes-{cluster}-{pool}"
    values = {"cluster": cluster}
    result = get_oracle().render(values, release=release, namespace=namespace)
    assert result.ok, result.error
    theirs = [o for o in result.objects if o["metadata"]["name"] == f"{release}-dashboard-resources"]
    assert [o["kind"] for o in theirs] == ["Role", "RoleBinding"]
    ours = render_dashboard(chart_input(values, namespace=namespace, release=release))
    assert not diff_paths(ours, theirs), "\n".join(diff_paths(ours, theirs))


@pytest.mark.parametrize("namespace", ["default", "tenantx", "kube-system"])
def test_a_namespace_outside_the_tenants_is_the_chart_refusal(namespace: str) -> None:
    release = "kubernetes-nodes-example-md1"
    result = get_oracle().render({"cluster": "example"}, release=release, namespace=namespace)
    assert not result.ok
    with pytest.raises(InvalidTenant) as raised:
        render_dashboard(chart_input({"cluster": "example"}, namespace=namespace, release=release))
    assert str(raised.value) == result.error


@pytest.mark.parametrize(
    ("namespace", "tenants"),
    [
        ("tenant-root", ["tenant-root"]),
        ("tenant-a", ["tenant-a", "tenant-root"]),
        ("tenant-a-b", ["tenant-a", "tenant-a-b", "tenant-root"]),
    ],
    ids=["root", "child", "grandchild"],
)
def test_parent_tenants(namespace: str, tenants: list[str]) -> None:
    assert all_parent_tenants_and_this(namespace) == tenants


def test_access_levels_at_or_above_use_in_name_order() -> None:
    assert access_levels_at_or_above("use") == ["admin", "super-admin", "use"]
    assert access_levels_at_or_above("view") == ["admin", "super-admin", "use", "view"]
    with pytest.raises(ValueError, match="allowed values are"):
        access_levels_at_or_above("owner")
