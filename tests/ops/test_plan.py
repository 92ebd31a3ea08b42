"""``plan``: which pools' machines a change replaces, and why."""

from __future__ import annotations

import copy
import sys
from collections.abc import Callable
from typing import Any

import pytest

from tests.render.schemas import REPO
from workerclass.adapters.folder import Document, read_folder
from workerclass.ops import REBUILD_ONLY, Plan, PlanRow, plan
from workerclass.ops.plan import REFUSED, render_all
from workerclass.resolve import resolve
from workerclass.state import State

#: these tests render the talos-reconcile Job, the chart's own text: the mirror's chart is given
pytestmark = pytest.mark.usefixtures("chart_text")

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


LEGACY = "tenant-example/example-legacy"


def legacy(edit: Edit) -> dict[str, Edit]:
    """``edit`` of the classless example pool's values, in its KubernetesNodes and its HelmRelease
    alike (one pool: what the API lists and what it stores)."""

    def values(obj: dict[str, Any]) -> None:
        edit({"spec": obj["spec"]["values"]} if obj["kind"] == "HelmRelease" else obj)

    return {"example-legacy": values, "kubernetes-nodes-example-legacy": values}


def extra(base: State, *objects: dict[str, Any]) -> State:
    documents = [Document(dict(record.obj), record.origin) for record in base.objects]
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
    assert all(not row.replace and row.reasons == () and row.action == "unchanged" for row in result.rows)
    assert all(row.refused == () and row.new_machines_only == () for row in result.rows)
    assert result.detailed_exit_code() == 0


def _patch(version: str) -> Edit:
    def edit(obj: dict[str, Any]) -> None:
        obj["spec"]["kubernetesVersions"]["v1.35"]["patch"] = version

    return edit


def _rendered_version(base: State, pool: str) -> str:
    record = base.pool(pool)
    assert record is not None
    effective = resolve(base, record)
    (deployment,) = [obj for obj in render_all(effective) if obj["kind"] == "MachineDeployment"]
    return str(deployment["spec"]["template"]["spec"]["version"])


def test_platform_patch_bump_replaces_exactly_the_pools_whose_machine_template_version_rolls() -> None:
    before, after = state(), state(WorkerPlatform=_patch("v1.35.7"))
    result = rows(plan(before, after))
    for pool in ALL - {"tenant-example/example-custom-kairos"}:
        rolls = _rendered_version(before, pool) != _rendered_version(after, pool)
        assert result[pool].replace is rolls, pool
        assert result[pool].action == ("replace" if rolls else "unchanged"), pool
        if rolls:
            assert "Kubernetes version: v1.35.6 -> v1.35.7" in result[pool].reasons
            assert any("spec.template.spec.version: v1.35.6 -> v1.35.7" in r for r in result[pool].reasons)
    # the platform Kairos pool follows the map's patch (API.md section 2): its machine template rolls
    assert result["tenant-example/example-kairos"].replace
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
    assert not row.replace and row.action == "update"
    assert set(row.reasons) == {"in place: minReplicas: 2 -> 1", "in place: maxReplicas: 3 -> 6"}


def test_mirror_change_is_refused_by_the_talos_provider() -> None:
    """A classless pool: registry mirrors live in the stable-named TalosConfigTemplate the chart's Job
    applies, whose spec CABPT keeps immutable."""

    def edit(obj: dict[str, Any]) -> None:
        obj["spec"]["talos"]["registryMirrors"] = {"docker.io": {"endpoints": ["https://mirror.example"]}}

    row = rows(plan(state(), state(**legacy(edit))))[LEGACY]
    assert (row.action, row.replace, row.refused, row.new_machines_only) == (
        "update",
        False,
        ("TalosConfigImmutable",),
        (),
    )
    assert row.reasons[0] == (
        "registry mirrors: none -> docker.io=https://mirror.example (refused by the Talos provider: reaches no machine)"
    )
    assert not any("machines created afterwards" in reason for reason in row.reasons)


def test_a_classified_pools_mirror_change_rolls_it_to_a_template_of_its_own_content() -> None:
    """Ours to apply: the template is named by its content, the MachineDeployment follows, and
    Cluster API replaces the machines (the design: bootstrap changes require replacement workers)."""

    def edit(obj: dict[str, Any]) -> None:
        obj["spec"]["talos"]["registryMirrors"] = {"docker.io": {"endpoints": ["https://mirror.example"]}}

    result = plan(state(), state(**{"example-talos": edit}))
    row = rows(result)["tenant-example/example-talos"]
    assert (row.action, row.replace, row.refused) == ("replace", True, ())
    assert any("bootstrap.configRef" in reason and "kubernetes-example-talos-" in reason for reason in row.reasons), (
        row.reasons
    )
    assert result.detailed_exit_code() == 2


def test_a_classified_pool_rendering_the_charts_template_still_rolls_on_a_change() -> None:
    """Its class adds nothing to the machine config: it renders the chart's stable name (the drop-in);
    a change of that config would be refused there, so it is named by its content and rolls."""

    def no_modules(obj: dict[str, Any]) -> None:
        obj["spec"].pop("kernelModules", None)

    def edit(obj: dict[str, Any]) -> None:
        no_modules(obj)
        obj["spec"]["talos"]["registryMirrors"] = {"docker.io": {"endpoints": ["https://mirror.example"]}}

    before = state(**{"example-talos": no_modules})
    record = before.pools[("KubernetesNodes", "tenant-example", "example-talos")]
    names = {
        obj["metadata"]["name"] for obj in render_all(resolve(before, record)) if obj["kind"] == "TalosConfigTemplate"
    }
    assert names == {"kubernetes-example-talos"}  # the chart's own name: what the chart renders
    row = rows(plan(before, state(**{"example-talos": edit})))["tenant-example/example-talos"]
    assert (row.action, row.replace, row.refused) == ("replace", True, ())


def test_kernel_modules_change_is_refused_by_the_talos_provider() -> None:
    """PR 3571 renders kernel modules into the machine config: the TalosConfigTemplate, not the disk.
    A classless pool's change is refused; a classified pool's rolls (its own template)."""

    def edit(obj: dict[str, Any]) -> None:
        obj["spec"]["kernelModules"] = [{"name": "nvme_tcp"}, {"name": "dm_thin_pool"}]

    row = rows(plan(state(), state(**{"example-talos": edit})))["tenant-example/example-talos"]
    assert (row.action, row.replace, row.refused) == ("replace", True, ())
    assert "kernel modules: nvme_tcp -> nvme_tcp, dm_thin_pool" in row.reasons


@pytest.mark.parametrize(
    ("pool", "edit", "reason"),
    [
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
    ids=["instance-type", "ssh-key"],
)
def test_each_rolling_change_is_named(pool: str, edit: Edit, reason: str) -> None:
    row = rows(plan(state(), state(**{pool: edit})))[f"tenant-example/{pool}"]
    assert row.replace
    assert reason in row.reasons


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        (lambda obj: obj["spec"].update(labels={"team": "a"}), "labels: none -> team=a"),
        (lambda obj: obj["spec"].update(maxUnhealthy="1"), "in place: maxUnhealthy: 50% -> 1"),
        (
            lambda obj: obj["spec"].update(taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]),
            "taints: none -> k=v:NoSchedule",
        ),
    ],
    ids=["labels", "health", "taints"],
)
def test_in_place_changes_are_named_and_do_not_replace(edit: Edit, reason: str) -> None:
    row = rows(plan(state(), state(**{"example-talos": edit})))["tenant-example/example-talos"]
    assert not row.replace and row.action == "update" and row.refused == ()
    # in place, or (when the renderer puts it in a template under the same name) for new machines only
    assert any(reason in text for text in row.reasons), row.reasons


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
    assert row.replace and row.action == "replace"
    assert row.reasons[0] == "bootstrap family: talos -> kairos"


def test_added_removed_and_denied_pools_have_rows_and_replace_nothing() -> None:
    new_pool = {
        "apiVersion": "apps.cozystack.io/v1alpha1",
        "kind": "KubernetesNodes",
        "metadata": {"name": "example-zz", "namespace": "tenant-example"},
        "spec": {"cluster": "example", "workerClassName": "talos", "version": "v1.35"},
    }

    def deny(obj: dict[str, Any]) -> None:
        obj["spec"]["workerClassName"] = "no-such-class"

    before = state()
    after = extra(state(**{"example-kairos": deny}), new_pool)
    forward = plan(before, after)
    result = rows(forward)
    assert result["tenant-example/example-zz"].action == "create"
    assert result["tenant-example/example-zz"].refused == ()
    denied = result["tenant-example/example-kairos"]
    assert denied.refused == ("ClassNotFound",) and not denied.replace
    assert any(reason.startswith(f"{REFUSED} (ClassNotFound)") for reason in denied.reasons)
    assert forward.detailed_exit_code() == 1
    reverse_plan = plan(after, before)
    reverse = rows(reverse_plan)
    assert reverse["tenant-example/example-zz"].action == "delete"
    assert reverse["tenant-example/example-zz"].refused == ()
    assert not any(row.replace for row in [*result.values(), *reverse.values()])
    assert reverse_plan.detailed_exit_code() == 2  # a deletion removes machines: a change, as terraform counts it


def test_json_rows_have_exactly_the_api_keys() -> None:
    document = plan(state(), state(WorkerPlatform=_kairos_digest)).as_dict()
    assert set(document) == {"chart", "pools", "refusals"}  # the chart emulated, the rows, refused class changes
    keys = {"pool", "action", "replace", "refused", "rebuildOnly", "newMachinesOnly", "reasons"}
    assert [set(row) for row in document["pools"]] == [keys] * len(ALL)
    kairos = next(row for row in document["pools"] if row["pool"] == "tenant-example/example-kairos")
    assert kairos["action"] == "replace" and kairos["rebuildOnly"] is True and kairos["refused"] == []
    assert [row["pool"] for row in document["pools"]] == sorted(ALL)


# --------------------------------------------------------------------------- what admission refuses


def test_bootstrap_family_change_is_flagged_as_refused_without_empty_reasons() -> None:
    def edit(obj: dict[str, Any]) -> None:
        obj["spec"] = {"cluster": "example", "workerClassName": "kairos", "version": "v1.35"}

    row = rows(plan(state(), state(**{"example-talos": edit})))["tenant-example/example-talos"]
    assert row.replace and row.action == "replace" and row.refused == ("BootstrapFamilyChange",)
    assert any(reason.startswith(f"{REFUSED} (BootstrapFamilyChange)") for reason in row.reasons)
    assert any("talos" in reason and "kairos" in reason for reason in row.reasons if reason.startswith(REFUSED))
    assert not any("none -> none" in reason for reason in row.reasons), row.reasons


DIRECT: dict[str, Any] = {
    "apiVersion": "helm.toolkit.fluxcd.io/v2",
    "kind": "HelmRelease",
    "metadata": {
        "name": "kubernetes-nodes-example-direct",
        "namespace": "tenant-example",
        "labels": {"apps.cozystack.io/application.kind": "KubernetesNodes"},
    },
    "spec": {"values": {"cluster": "example", "version": "v1.35"}},
}


def _direct(**values: Any) -> dict[str, Any]:
    out = copy.deepcopy(DIRECT)
    out["spec"]["values"].update(values)
    return out


@pytest.mark.parametrize(
    ("before", "after", "code"),
    [
        ({}, {"workerClassName": "kairos"}, "BootstrapFamilyChange"),
        ({"workerClassName": "talos"}, {"workerClassName": "kairos"}, "BootstrapFamilyChange"),
        ({"workerClassName": "kairos"}, {"workerClassName": "talos"}, "BootstrapFamilyChange"),
        ({}, {"cluster": "other"}, "Invalid"),
    ],
    ids=["classless-to-kairos", "talos-to-kairos", "kairos-to-talos", "cluster-move"],
)
def test_a_pool_stored_as_a_helm_release_gets_the_update_rules(
    before: dict[str, Any], after: dict[str, Any], code: str
) -> None:
    """A pool written as its HelmRelease is changed by the same rules as a KubernetesNodes (no
    webhook sees that write, so plan is where the change is caught)."""
    result = plan(extra(state(), _direct(**before)), extra(state(), _direct(**after)))
    row = rows(result)["tenant-example/kubernetes-nodes-example-direct"]
    assert code in row.refused, row
    assert any(reason.startswith(f"{REFUSED} ({code})") for reason in row.reasons), row.reasons
    assert any("no webhook" in reason for reason in row.reasons), row.reasons
    assert result.detailed_exit_code() == 1


def test_an_unchanged_helm_release_pool_is_not_refused() -> None:
    result = plan(extra(state(), _direct(workerClassName="kairos")), extra(state(), _direct(workerClassName="kairos")))
    row = rows(result)["tenant-example/kubernetes-nodes-example-direct"]
    assert (row.action, row.refused) == ("unchanged", ())


def test_moving_a_pool_to_another_cluster_is_refused() -> None:
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
    # Refused (a pool cannot move; its <cluster>-<pool> name no longer fits): nothing renders, nothing rolls.
    assert "Invalid" in row.refused and row.action == "update" and not row.replace
    assert any(reason.startswith(f"{REFUSED} (Invalid)") for reason in row.reasons)


def test_an_edited_class_spec_is_flagged_as_refused() -> None:
    def edit(obj: dict[str, Any]) -> None:
        obj["spec"]["talos"]["registryMirrors"] = {"docker.io": {"endpoints": ["https://m.example"]}}

    result = plan(state(), state(**{"talos-example-r1": edit}))
    row = rows(result)["tenant-example/example-talos"]
    assert row.refused == ("ClassImmutable",) and row.new_machines_only == ()
    assert [(refusal.kind, refusal.name) for refusal in result.refusals] == [("WorkerClass", "talos-example-r1")]
    assert result.detailed_exit_code() == 1
    document = result.as_dict()
    assert list(document) == ["chart", "pools", "refusals"]
    (refusal,) = document["refusals"]
    assert list(refusal) == ["kind", "name", "refused", "denials"]
    assert (refusal["kind"], refusal["name"]) == ("WorkerClass", "talos-example-r1")
    assert refusal["refused"] == ["ClassImmutable"]
    assert refusal["denials"][0]["code"] == "ClassImmutable"
    assert "registry mirrors: none -> docker.io=https://m.example" in row.reasons
    assert any(reason.startswith(f"{REFUSED} (ClassImmutable)") for reason in row.reasons)


def test_omitting_the_class_on_update_keeps_the_stored_class() -> None:
    """API.md section 3: UPDATE of a classified pool with the class omitted restores it; nothing rolls."""

    def edit(obj: dict[str, Any]) -> None:
        del obj["spec"]["workerClassName"]

    row = rows(plan(state(), state(**{"example-talos": edit})))["tenant-example/example-talos"]
    assert not row.replace
    assert row.action == "unchanged" and row.refused == ()
    assert row.reasons == (
        "class omitted: admission restores the stored class talos-example-r1 (not a switch to legacy)",
    )


# --------------------------------------------------------------------------- generic over rendered objects


def _chart_like_render(effective: Any, **_: Any) -> list[dict[str, Any]]:
    """A small renderer shaped like Cozystack's chart: a hash-named infrastructure template, a
    stable-named TalosConfigTemplate (registry mirrors live there), a v1beta1 MachineDeployment."""
    base = f"kubernetes-{effective.name}"
    talos = effective.talos.as_dict() if effective.talos is not None else {}
    disk = f"{base}-{abs(hash((talos.get('version'), talos.get('schematicID')))) % 16**6:06x}"
    return [
        {
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1alpha1",
            "kind": "KubevirtMachineTemplate",
            "metadata": {"name": disk, "namespace": effective.namespace},
            "spec": {"template": {"spec": {"image": talos.get("version")}}},
        },
        {
            "apiVersion": "bootstrap.cluster.x-k8s.io/v1alpha3",
            "kind": "TalosConfigTemplate",
            "metadata": {"name": base, "namespace": effective.namespace},
            "spec": {"template": {"spec": {"mirrors": talos.get("registryMirrors")}}},
        },
        {
            "apiVersion": "cluster.x-k8s.io/v1beta1",
            "kind": "MachineDeployment",
            "metadata": {
                "name": base,
                "namespace": effective.namespace,
                "annotations": {"max": str(effective.pool.max_replicas)},
            },
            "spec": {
                "clusterName": f"kubernetes-{effective.cluster}",
                "template": {
                    "spec": {
                        "version": effective.kubernetes_version,
                        "nodeDrainTimeout": "1m" if effective.pool.max_replicas == 3 else "2m",
                        "infrastructureRef": {"kind": "KubevirtMachineTemplate", "name": disk},
                        "bootstrap": {"configRef": {"kind": "TalosConfigTemplate", "name": base}},
                    }
                },
            },
        },
    ]


@pytest.fixture
def chart_like(monkeypatch: pytest.MonkeyPatch) -> None:
    # ``workerclass.ops.plan`` as an attribute path is the function the package exports: patch the module.
    monkeypatch.setattr(sys.modules["workerclass.ops.plan"], "render_all", _chart_like_render)


@pytest.mark.usefixtures("chart_like")
def test_a_config_template_changed_under_its_name_is_refused_by_the_talos_provider() -> None:
    """Any renderer's stable-named TalosConfigTemplate, changed: CABPT refuses it (the shipped facts' chart)."""

    def edit(obj: dict[str, Any]) -> None:
        obj["spec"]["talos"]["registryMirrors"] = {"docker.io": {"endpoints": ["https://mirror.example"]}}

    result = plan(state(), state(**legacy(edit)))
    row = rows(result)[LEGACY]
    assert (row.action, row.replace, row.refused, row.new_machines_only) == (
        "update",
        False,
        ("TalosConfigImmutable",),
        (),
    )
    assert any(
        reason.startswith(
            "refused by the Talos provider (TalosConfigImmutable) TalosConfigTemplate kubernetes-example-legacy"
        )
        for reason in row.reasons
    )
    assert result.detailed_exit_code() == 1
    assert row.as_dict()["refused"] == ["TalosConfigImmutable"]


@pytest.mark.usefixtures("chart_like")
def test_a_rolling_machine_template_field_replaces() -> None:
    """A new pool minor changes the MachineDeployment's machine template version: Cluster API rolls it.

    (A platform-map patch bump no longer does for Talos pools: they render the chart's own
    version map, and the pool gets a warning instead; see tests/resolve/test_version_map.py.)
    """

    def minor(obj: dict[str, Any]) -> None:
        obj["spec"]["version"] = "v1.34"

    result = plan(state(), state(**{"example-talos": minor}))
    row = rows(result)["tenant-example/example-talos"]
    assert (row.action, row.replace, row.new_machines_only) == ("replace", True, ())
    assert "Kubernetes version: v1.35.6 -> v1.34.9" in row.reasons
    assert (
        "machines replaced: MachineDeployment kubernetes-example-talos spec.template.spec.version: v1.35.6 -> v1.34.9"
    ) in row.reasons
    assert result.detailed_exit_code() == 2


@pytest.mark.usefixtures("chart_like")
def test_in_place_fields_of_the_machine_deployment_do_not_replace() -> None:
    """Replica annotations and nodeDrainTimeout (propagated in place by Cluster API) never roll."""

    def edit(obj: dict[str, Any]) -> None:
        obj["spec"]["maxReplicas"] = 6

    before = rows(plan(state(), state()))["tenant-example/example-talos"]
    assert before.action == "unchanged"
    talos = state(**{"example-talos": lambda obj: obj["spec"].update(maxReplicas=3)})
    row = rows(plan(talos, state(**{"example-talos": edit})))["tenant-example/example-talos"]
    assert (row.action, row.replace, row.new_machines_only) == ("update", False, ())
    assert "in place: maxReplicas: 3 -> 6" in row.reasons


def test_a_compute_plane_group_outside_its_allowlist_is_refused_for_that_group_only() -> None:
    def compute_plane(**group: Any) -> dict[str, Any]:
        return {
            "apiVersion": "apps.cozystack.io/v1alpha1",
            "kind": "ComputePlane",
            "metadata": {"name": "cp", "namespace": "tenant-example"},
            "spec": {"nodeGroups": {"md0": {"maxReplicas": 2}, "md1": {"maxReplicas": 2, **group}}},
        }

    result = plan(extra(state(), compute_plane()), extra(state(), compute_plane(version="v1.35", maxReplicas=4)))
    by_pool = rows(result)
    assert by_pool["tenant-example/cp-md1"].refused == ("NotAllowedInComputePlane",)
    assert by_pool["tenant-example/cp-md0"].refused == () and by_pool["tenant-example/cp-md0"].action == "unchanged"
    assert result.detailed_exit_code() == 1


def _ssh_key(obj: dict[str, Any]) -> None:
    obj["spec"]["sshKeys"] = ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGV4YW1wbGVrZXlleGFtcGxla2V5 ops@example"]


def test_a_kairos_bootstrap_change_is_a_new_data_secret_and_replaces_the_workers() -> None:
    """The data-secret path (no Kairos provider with kubeadm in STATE): a new SSH key is new
    bootstrap data, a new Secret name in ``dataSecretName``, so plan says the machines are replaced."""
    row = rows(plan(state(), state(**{"example-kairos": _ssh_key})))["tenant-example/example-kairos"]
    assert row.action == "replace" and row.replace
    assert any("bootstrap.dataSecretName" in reason for reason in row.reasons), row.reasons
    others = rows(plan(state(), state(**{"example-kairos": _ssh_key})))
    assert not others["tenant-example/example-custom-kairos"].replace


def test_plan_renders_kairos_pools_on_the_path_the_state_gives_them() -> None:
    """A STATE holding a Kairos provider's CRD that takes kubeadm: the provider path on both sides,
    so the same SSH-key change is a new KairosConfigTemplate in ``bootstrap.configRef``."""
    from tests.ops.test_providers import crd

    provider = crd(enum=["k0s", "k3s", "kubeadm"])
    before, after = extra(state(), provider), extra(state(**{"example-kairos": _ssh_key}), provider)
    row = rows(plan(before, after))["tenant-example/example-kairos"]
    assert row.replace and any("bootstrap.configRef" in reason for reason in row.reasons), row.reasons


def _parent(edit: Callable[[dict[str, Any]], None]) -> dict[str, Edit]:
    return {"Kubernetes": edit}


def test_a_parent_apps_node_groups_are_planned_as_far_as_plan_can_tell() -> None:
    """The parent kubernetes chart renders them: created and deleted groups say so, a changed one is
    not predicted, with the reason; an unchanged one adds no row."""

    def add(obj: dict[str, Any]) -> None:
        obj["spec"]["nodeGroups"] = {"gpu": {"minReplicas": 1, "instanceType": "u1.large"}}

    def change(obj: dict[str, Any]) -> None:
        obj["spec"]["nodeGroups"] = {"gpu": {"minReplicas": 1, "instanceType": "u1.xlarge"}}

    def drop_md0(obj: dict[str, Any]) -> None:
        obj["spec"]["nodeGroups"] = {"md0": None, "gpu": {"minReplicas": 1, "instanceType": "u1.large"}}

    assert not any(row.kind == "NodeGroup" for row in plan(state(), state()).rows)
    created = rows(plan(state(), state(**_parent(add))))["tenant-example/example-gpu"]
    assert created.action == "create" and not created.replace
    changed = plan(state(**_parent(add)), state(**_parent(change)))
    row = rows(changed)["tenant-example/example-gpu"]
    assert row.action == "unpredicted" and "not predicted" in row.reasons[0]
    assert changed.detailed_exit_code() == 1
    deleted = plan(state(**_parent(add)), state(**_parent(drop_md0)))
    assert rows(deleted)["tenant-example/example-md0"].action == "delete"
    assert deleted.detailed_exit_code() == 2
