"""``plan``: which pools' machines a change replaces, and why."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from workerclass.adapters.folder import Document, read_folder
from workerclass.ops import REBUILD_ONLY, Plan, PlanRow, plan
from workerclass.ops.plan import REFUSED
from workerclass.state import State

from .schemas import REPO

EXAMPLES = REPO / "examples"
Edit = Callable[[dict[str, Any]], None]
PLATFORM_KAIROS_135 = "ghcr.io/cozystack/cozystack/kairos-worker@sha256:" + "c" * 64


def state(**edits: Edit) -> State:
    """The examples folder with ``edits[kind_or_name](obj)`` applied to matching objects."""
    documents = []
    for document in read_folder(EXAMPLES):
        obj = copy.deepcopy(document.obj)
        for target, edit in edits.items():
            if target in (obj.get("kind"), obj.get("metadata", {}).get("name")):
                edit(obj)
        documents.append(Document(obj, document.origin))
    return State.from_documents(documents)


def extra(base: State, *objects: dict[str, Any]) -> State:
    documents = [Document(record.obj, record.origin) for record in base.objects]
    documents += [Document(obj, f"test#{index}") for index, obj in enumerate(objects)]
    return State.from_documents(documents)


def rows(result: Plan) -> dict[str, PlanRow]:
    return {row.pool: row for row in result.rows}


ALL = {
    "tenant-example/example-custom-kairos",
    "tenant-example/example-kairos",
    "tenant-example/example-legacy",
    "tenant-example/example-talos",
}


def test_no_change_replaces_nothing_and_lists_every_pool() -> None:
    result = plan(state(), state())
    assert set(rows(result)) == ALL
    assert all(not row.replace and row.reasons == () and row.status == "unchanged" for row in result.rows)


def _patch(version: str) -> Edit:
    def edit(obj: dict[str, Any]) -> None:
        obj["spec"]["kubernetesVersions"]["v1.35"]["patch"] = version

    return edit


def test_platform_patch_bump_replaces_talos_pools_on_that_minor_but_not_fixed_kairos() -> None:
    result = rows(plan(state(), state(WorkerPlatform=_patch("v1.35.7"))))
    for pool in ("tenant-example/example-talos", "tenant-example/example-legacy"):
        assert result[pool].replace, pool
        assert "Kubernetes version: v1.35.6 -> v1.35.7" in result[pool].reasons
    fixed = result["tenant-example/example-custom-kairos"]
    assert not fixed.replace and fixed.reasons == ()


def _kairos_digest(obj: dict[str, Any]) -> None:
    obj["spec"]["kairos"]["images"]["v1.35"]["reference"] = PLATFORM_KAIROS_135


def test_platform_kairos_digest_change_replaces_and_is_flagged_rebuild_only() -> None:
    result = rows(plan(state(), state(WorkerPlatform=_kairos_digest)))
    row = result["tenant-example/example-kairos"]
    assert row.replace and row.rebuild_only
    assert row.reasons[0].startswith("image reference: ghcr.io/cozystack/cozystack/kairos-worker@sha256:ab712e")
    assert row.reasons[0].endswith(PLATFORM_KAIROS_135)
    assert any(reason.startswith(REBUILD_ONLY) for reason in row.reasons)
    for pool in ALL - {"tenant-example/example-kairos"}:
        assert not result[pool].replace, pool


def test_platform_kairos_image_for_a_new_patch_is_not_rebuild_only() -> None:
    def edit(obj: dict[str, Any]) -> None:
        _patch("v1.35.7")(obj)
        obj["spec"]["kairos"]["images"]["v1.35"] = {"reference": PLATFORM_KAIROS_135, "kubernetesVersion": "v1.35.7"}

    row = rows(plan(state(), state(WorkerPlatform=edit)))["tenant-example/example-kairos"]
    assert row.replace and not row.rebuild_only
    assert "Kubernetes version: v1.35.6 -> v1.35.7" in row.reasons


def test_platform_default_class_change_replaces_no_pool() -> None:
    def edit(obj: dict[str, Any]) -> None:
        obj["spec"]["defaultWorkerClass"] = "kairos"

    result = plan(state(), state(WorkerPlatform=edit))
    assert result.replacing == ()
    assert all(row.reasons == () for row in result.rows)


def test_replica_change_does_not_replace() -> None:
    def edit(obj: dict[str, Any]) -> None:
        obj["spec"]["minReplicas"] = 1
        obj["spec"]["maxReplicas"] = 6

    row = rows(plan(state(), state(**{"example-kairos": edit})))["tenant-example/example-kairos"]
    assert not row.replace
    assert row.reasons == ("in place: autoscaling bounds: min=2, max=3 -> min=1, max=6",)


def test_mirror_change_replaces() -> None:
    def edit(obj: dict[str, Any]) -> None:
        obj["spec"]["talos"]["registryMirrors"] = {"docker.io": {"endpoints": ["https://mirror.example"]}}

    row = rows(plan(state(), state(**{"example-talos": edit})))["tenant-example/example-talos"]
    assert row.replace
    assert row.reasons == ("registry mirrors: none -> docker.io=https://mirror.example",)


@pytest.mark.parametrize(
    ("pool", "edit", "reason"),
    [
        (
            "example-talos",
            lambda obj: obj["spec"].update(kernelModules=[{"name": "nvme_tcp"}, {"name": "dm_thin_pool"}]),
            "kernel modules: nvme_tcp -> nvme_tcp, dm_thin_pool",
        ),
        (
            "example-talos",
            lambda obj: obj["spec"].update(instanceType="u1.large"),
            "instance type: u1.medium -> u1.large",
        ),
        (
            "example-kairos",
            lambda obj: obj["spec"].update(
                sshKeys=["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGV4YW1wbGVrZXlleGFtcGxla2V5 a@b"]
            ),
            "SSH key: none -> set",
        ),
    ],
    ids=["kernel-modules", "instance-type", "ssh-key"],
)
def test_each_rolling_change_is_named(pool: str, edit: Edit, reason: str) -> None:
    row = rows(plan(state(), state(**{pool: edit})))[f"tenant-example/{pool}"]
    assert row.replace
    assert reason in row.reasons


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        (lambda obj: obj["spec"].update(labels={"team": "a"}), "in place: node labels: none -> team=a"),
        (lambda obj: obj["spec"].update(maxUnhealthy=1), "in place: health check:"),
        (
            lambda obj: obj["spec"].update(taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]),
            "in place: node taints: none -> k=v:NoSchedule",
        ),
    ],
    ids=["labels", "health", "taints"],
)
def test_in_place_changes_are_named_and_do_not_replace(edit: Edit, reason: str) -> None:
    row = rows(plan(state(), state(**{"example-talos": edit})))["tenant-example/example-talos"]
    assert not row.replace
    assert any(text.startswith(reason) for text in row.reasons), row.reasons


def test_class_switch_to_the_same_settings_does_not_replace() -> None:
    def edit(obj: dict[str, Any]) -> None:
        obj["spec"]["workerClassName"] = "talos"
        del obj["spec"]["talos"]

    row = rows(plan(state(), state(**{"example-talos": edit})))["tenant-example/example-talos"]
    assert not row.replace
    assert row.reasons == ("in place: class: talos-example-r1 -> talos",)


def test_bootstrap_family_change_names_the_family() -> None:
    def edit(obj: dict[str, Any]) -> None:
        obj["spec"] = {"cluster": "example", "workerClassName": "kairos", "version": "v1.35"}

    row = rows(plan(state(), state(**{"example-talos": edit})))["tenant-example/example-talos"]
    assert row.replace
    assert row.reasons[0] == "bootstrap family: talos -> kairos"


def test_added_removed_and_denied_pools_have_rows_and_replace_nothing() -> None:
    new_pool = {
        "apiVersion": "apps.cozystack.io/v1alpha1",
        "kind": "KubernetesNodes",
        "metadata": {"name": "zz-new", "namespace": "tenant-example"},
        "spec": {"cluster": "example", "workerClassName": "talos", "version": "v1.35"},
    }

    def deny(obj: dict[str, Any]) -> None:
        obj["spec"]["workerClassName"] = "no-such-class"

    before = state()
    after = extra(state(**{"example-kairos": deny}), new_pool)
    result = rows(plan(before, after))
    assert result["tenant-example/zz-new"].status == "added"
    assert result["tenant-example/example-kairos"].status == "denied"
    assert "ClassNotFound" in result["tenant-example/example-kairos"].reasons[0]
    reverse = rows(plan(after, before))
    assert reverse["tenant-example/zz-new"].status == "removed"
    assert not any(row.replace for row in [*result.values(), *reverse.values()])


def test_json_rows_have_exactly_the_api_keys() -> None:
    document = plan(state(), state(WorkerPlatform=_kairos_digest)).as_dict()
    assert set(document) == {"pools"}
    assert [set(row) for row in document["pools"]] == [{"pool", "replace", "reasons"}] * len(ALL)
    assert [row["pool"] for row in document["pools"]] == sorted(ALL)


# --------------------------------------------------------------------------- what admission refuses


def test_bootstrap_family_change_is_flagged_as_refused_without_empty_reasons() -> None:
    def edit(obj: dict[str, Any]) -> None:
        obj["spec"] = {"cluster": "example", "workerClassName": "kairos", "version": "v1.35"}

    row = rows(plan(state(), state(**{"example-talos": edit})))["tenant-example/example-talos"]
    assert row.replace and row.status == "refused"
    assert any(reason.startswith(f"{REFUSED} (BootstrapFamilyChange): talos -> kairos") for reason in row.reasons)
    assert not any("none -> none" in reason for reason in row.reasons), row.reasons


def test_family_change_of_a_direct_helm_release_is_not_guarded() -> None:
    """No webhook validates HelmRelease writers (API.md section 5): the switch would go through."""

    def edit(obj: dict[str, Any]) -> None:
        obj["spec"]["values"]["workerClassName"] = "kairos"
        obj["spec"]["values"].pop("talos", None)
        obj["spec"]["values"].pop("kernelModules", None)

    row = rows(plan(state(), state(**{"example-legacy": edit})))["tenant-example/example-legacy"]
    assert row.replace and row.status == "changed", row
    assert "bootstrap family: talos -> kairos" in row.reasons
    assert not any(reason.startswith(REFUSED) for reason in row.reasons)


def test_moving_a_pool_to_another_cluster_replaces_and_is_refused() -> None:
    other = {
        "apiVersion": "apps.cozystack.io/v1alpha1",
        "kind": "Kubernetes",
        "metadata": {"name": "other", "namespace": "tenant-example"},
        "spec": {"version": "v1.35"},
    }

    def edit(obj: dict[str, Any]) -> None:
        obj["spec"]["cluster"] = "other"

    row = rows(plan(extra(state(), other), extra(state(**{"example-talos": edit}), other)))[
        "tenant-example/example-talos"
    ]
    assert row.replace
    assert "parent cluster: example -> other" in row.reasons
    assert any(reason.startswith(f"{REFUSED} (Invalid)") for reason in row.reasons)


def test_an_edited_class_spec_is_flagged_as_refused() -> None:
    def edit(obj: dict[str, Any]) -> None:
        obj["spec"]["talos"]["registryMirrors"] = {"docker.io": {"endpoints": ["https://m.example"]}}

    row = rows(plan(state(), state(**{"talos-example-r1": edit})))["tenant-example/example-talos"]
    assert row.replace and row.status == "refused"
    assert "registry mirrors: none -> docker.io=https://m.example" in row.reasons
    assert any(reason.startswith(f"{REFUSED} (ClassImmutable)") for reason in row.reasons)


def test_omitting_the_class_on_update_keeps_the_stored_class() -> None:
    """API.md section 3: UPDATE of a classified pool with the class omitted restores it; nothing rolls."""

    def edit(obj: dict[str, Any]) -> None:
        del obj["spec"]["workerClassName"]

    row = rows(plan(state(), state(**{"example-talos": edit})))["tenant-example/example-talos"]
    assert not row.replace
    assert row.status == "unchanged"
    assert row.reasons == (
        "class omitted: admission restores the stored class talos-example-r1 (not a switch to legacy)",
    )
