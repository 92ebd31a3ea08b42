"""The API table: each resource and webhook declared once, and every door reading that one row."""

from __future__ import annotations

import pytest

from workerclass.adapters import kube
from workerclass.api import resources, webhooks
from workerclass.api.names import FAMILIES, IMAGE_SOURCES, INFRASTRUCTURES, is_family, is_infrastructure
from workerclass.api.resources import RESOURCES, WATCHED, by_kind
from workerclass.api.webhooks import WEBHOOKS, by_path
from workerclass.crds import crd_manifests
from workerclass.deploy import InstallOptions, install_manifests
from workerclass.ops import preflight
from workerclass.state import KINDS, POOL_KINDS
from workerclass.webhook import review
from workerclass.webhook.routes import ROUTES


def test_each_kind_and_each_plural_is_declared_once() -> None:
    assert len({resource.kind for resource in RESOURCES}) == len(RESOURCES)
    assert len({resource.name for resource in RESOURCES}) == len(RESOURCES)
    assert [resource.rank for resource in RESOURCES] == sorted(resource.rank for resource in RESOURCES)
    assert all(by_kind(resource.kind) is resource for resource in RESOURCES)
    assert by_kind("Pod") is None and by_kind(None) is None


def test_the_cache_watches_every_row_and_the_controller_reads_a_subset() -> None:
    assert set(WATCHED) == set(RESOURCES)
    assert set(resources.CONTROLLER_READS) <= set(WATCHED)
    assert kube.WATCHED is WATCHED  # the adapters' names are the table's rows


def test_state_takes_its_kinds_from_the_table() -> None:
    for kind, (group, namespaced, rank) in KINDS.items():
        row = by_kind(kind)
        assert row is not None and (row.group, row.namespaced, row.rank) == (group, namespaced, rank)
    assert POOL_KINDS == ("KubernetesNodes", "HelmRelease", "ComputePlane") == resources.POOL_KINDS


def test_the_crds_we_ship_are_the_owned_rows() -> None:
    owned = {resource.name for resource in RESOURCES if resource.owned}
    assert {crd["metadata"]["name"] for crd in crd_manifests()} == owned
    for crd in crd_manifests():
        row = next(resource for resource in RESOURCES if resource.name == crd["metadata"]["name"])
        assert crd["spec"]["group"] == row.group and crd["spec"]["scope"] == row.scope
        assert [version["name"] for version in crd["spec"]["versions"]] == [row.version]


@pytest.mark.parametrize("webhook", WEBHOOKS, ids=[webhook.path for webhook in WEBHOOKS])
def test_a_webhook_is_routed_installed_and_checked_from_its_row(webhook: webhooks.Webhook) -> None:
    assert by_path(webhook.path) is webhook
    route = next(route for route in ROUTES if route.path == webhook.path)
    assert (route.name, route.mutating, route.decider) == (webhook.name, webhook.mutating, webhook.decider)
    assert route.target.kind == webhook.resource.kind and route.target.group == webhook.resource.group
    installed = [
        entry
        for document in install_manifests(InstallOptions())
        if document.get("kind") == webhook.configuration
        for entry in document["webhooks"]
        if entry["clientConfig"]["service"]["path"] == webhook.path
    ]
    assert [entry["name"] for entry in installed] == [webhook.webhook_name]
    (rule,) = installed[0]["rules"]
    assert rule == {
        "apiGroups": [webhook.resource.group],
        "apiVersions": [webhook.resource.version],
        "resources": [webhook.resource.plural],
        "operations": list(webhook.operations),
        "scope": webhook.resource.scope,
    }
    expectation = next(item for item in preflight.EXPECTED if item.path == webhook.path)
    assert (expectation.kind, expectation.group, expectation.resource, expectation.operations) == (
        webhook.resource.kind,
        webhook.resource.group,
        webhook.resource.plural,
        webhook.operations,
    )
    assert webhook.webhook_name.endswith("." + resources.WEBHOOK_DOMAIN)


def test_the_admitted_operations_are_the_ordered_union_of_the_webhooks() -> None:
    union = [operation for webhook in WEBHOOKS for operation in webhook.operations]
    expected = tuple(operation for operation in webhooks.ALL_OPERATIONS if operation in union)
    assert webhooks.ADMITTED_OPERATIONS == expected == ("CREATE", "UPDATE", "DELETE")


def test_a_route_targets_its_rows_version() -> None:
    for route in ROUTES:
        assert route.target == review.Target(route.resource.kind, route.resource.group, route.resource.version)


def test_the_closed_name_sets() -> None:
    assert FAMILIES == ("talos", "kairos")
    assert INFRASTRUCTURES == ("kubevirt", "proxmox")
    assert set(IMAGE_SOURCES) == {"factory", "builtin", "proxmox", "fixed", "platform"}
    assert is_family("kairos") and not is_family("Kairos") and not is_family(None)
    assert is_infrastructure("proxmox") and not is_infrastructure("")
