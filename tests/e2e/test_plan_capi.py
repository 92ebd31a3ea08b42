"""``workerclass plan``'s ``replace`` against Cluster API's own MachineDeployment controller (v1.10.1):
for every before/after pair the plan tests use, each pool that renders a MachineDeployment on both
sides is applied as its before render, then as its after render, and ``replace`` must say exactly
whether Cluster API created a new MachineSet for it.

The pairs are those of ``tests/ops/test_plan.py``, ``tests/cli/test_entrypoint.py`` and
``tests/cli/test_render_plan.py``, built with those modules' own helpers (``PAIRS`` names the test
each comes from; the chart-like renderer's pairs are planned with the real render); every pool of a
pair is a case, the bystanders included, and so are changes admission refuses whose after side
still renders (``action`` and ``replace`` then say what the change would do if let through). Each
pair lives in its own namespace ``tenant-plan-<pair>`` (the STATEs' namespaces rewritten before plan
and render; plan must say the same of the moved pair), so every case is its own MachineDeployment;
cases whose before and after objects are the same run once. Per case, as the chart and Cozystack
would write it:

- the parent ``Cluster`` ``kubernetes-<cluster>`` and the before render of the pool
  (``render(effective, talos_config_template=True)``, the TalosConfigTemplate the Job applies
  included), namespaced objects defaulted into the namespace as Helm does, are server-side applied
  (templates first, the MachineDeployment last: Cluster API refuses to create a MachineSet whose
  templates are missing), and Cluster API creates the first MachineSet;
- the after render is applied the same way, objects equal to their before skipped as Helm skips
  them (same field manager, so fields the after render drops are removed). The after side is the
  after STATE as admission stores it, as plan reads it: an UPDATE that omits the class gets the
  stored class back (:func:`workerclass.admission.admit`);
- once ``status.observedGeneration`` equals the MachineDeployment's ``metadata.generation`` (Cluster
  API patches it only after a reconcile without error, and creates the new MachineSet in that
  reconcile), the MachineSets labelled ``cluster.x-k8s.io/deployment-name=<md>`` are counted: a
  name not there before is a new MachineSet, which must equal plan's ``replace`` (in-process
  :func:`workerclass.ops.plan.plan` of the suite's pair), unless the case is in ``KNOWN``.

All cases are applied together and Cluster API reconciles them concurrently (one manager, the
session's); each case is then its own test. Stale objects the after render no longer has stay until
the end (the MachineDeployment controller compares only its own machine template with its
MachineSets': ``internal/controllers/machinedeployment/mdutil/util.go``, ``FindNewMachineSet`` and
``MachineTemplateUpToDate``). Every case's objects are deleted at the end of the module; the
namespaces stay, empty (no namespace controller runs on the test bed). The KairosConfigTemplate CRD
gets the render's one documented departure from upstream (``distribution: kubeadm``) for the
module's duration (where the CRD is served: the Kairos cases skip, with the reason, where it is not).

``LEFT_OUT`` lists the cases without a MachineDeployment on both sides, with the reason (checked:
the module fails if a left-out case renders on both sides, or a case not left out does not). No
plan case uses Proxmox (whose template CRD the test bed does not install). ``KNOWN`` is for
documented Cluster API behaviour that differs from plan; it is empty: every case agrees.

Seen to fail against a broken plan: with ``replace`` forced to ``False`` (``compare`` in
``workerclass.ops.plan`` wrapped to return its row with ``replace=False``) the 11 cases whose
machines roll failed, e.g. ``instance-type:example-talos``: "Cluster API created a new MachineSet
(MachineSets [...-4cs2g] -> [...-4cs2g, ...-x68cv]); plan says replace=False"; forced to ``True``,
the other 113 failed, e.g. ``mirror:example-talos``: "Cluster API kept its MachineSet ...; plan says
replace=True".
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.cli import test_entrypoint as entrypoint
from tests.ops import test_plan as ops
from tests.render.schemas import ENUM_EXCEPTIONS
from tests.shared import given_chart, unavailable
from workerclass.adapters.folder import Document
from workerclass.admission import admit
from workerclass.ops.plan import Plan, PlanRow, plan
from workerclass.render import RenderError, render
from workerclass.resolve.pools import resolve_pool
from workerclass.state import PoolRecord, State

from .conftest import KAIROS_DISTRIBUTION, ClusterAPI, kairos_with_kubeadm
from .kube import Kube, KubeError
from .testbed import wait_until

CAPI = "cluster.x-k8s.io/v1beta1"
MANAGER = "workerclass-e2e-plan"
#: seconds Cluster API gets to reconcile every case of a phase
SETTLE = 90
#: cases applied (and deleted) at a time
WORKERS = 6

Build = Callable[[], tuple[State, State]]


# ------------------------------------------------------------------ the suite's plan pairs


def _examples(edits: dict[str, ops.Edit]) -> State:
    return ops.state(**edits)


def _set(**spec: Any) -> ops.Edit:
    return lambda obj: obj["spec"].update(spec)


def _mirror(target: str) -> ops.Edit:
    def edit(obj: dict[str, Any]) -> None:
        obj["spec"]["talos"]["registryMirrors"] = {"docker.io": {"endpoints": [target]}}

    return edit


def _kairos_new_patch(obj: dict[str, Any]) -> None:
    ops._patch("v1.35.7")(obj)
    obj["spec"]["kairos"]["images"]["v1.35"] = {"reference": ops.PLATFORM_KAIROS_135, "kubernetesVersion": "v1.35.7"}


def _class_switch(obj: dict[str, Any]) -> None:
    obj["spec"]["workerClassName"] = "talos"
    del obj["spec"]["talos"]


def _to_kairos(obj: dict[str, Any]) -> None:
    obj["spec"] = {"cluster": "example", "workerClassName": "kairos", "version": "v1.35"}


def _omit_class(obj: dict[str, Any]) -> None:
    del obj["spec"]["workerClassName"]


def _digest_zeroed(obj: dict[str, Any]) -> None:
    """``test_plan_json``'s edit: ``ab712e0c41c4a395`` replaced by zeros in the platform file."""
    image = obj["spec"]["kairos"]["images"]["v1.35"]
    image["reference"] = image["reference"].replace("ab712e0c41c4a395", "0" * 16)


def _pair(before: dict[str, ops.Edit], after: dict[str, ops.Edit]) -> Build:
    return lambda: (_examples(before), _examples(after))


NEW_POOL = {
    "apiVersion": "apps.cozystack.io/v1alpha1",
    "kind": "KubernetesNodes",
    "metadata": {"name": "example-zz", "namespace": "tenant-example"},
    "spec": {"cluster": "example", "workerClassName": "talos", "version": "v1.35"},
}
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
OTHER_CLUSTER = {
    "apiVersion": "apps.cozystack.io/v1alpha1",
    "kind": "Kubernetes",
    "metadata": {"name": "other", "namespace": "tenant-example"},
    "spec": {"version": "v1.35"},
}


def _direct_switch() -> tuple[State, State]:
    switched = copy.deepcopy(DIRECT)
    switched["spec"]["values"]["workerClassName"] = "kairos"
    return ops.extra(ops.state(), DIRECT), ops.extra(ops.state(), switched)


def _added_removed(reverse: bool) -> Build:
    def build() -> tuple[State, State]:
        before = ops.state()
        after = ops.extra(ops.state(**{"example-kairos": _set(workerClassName="no-such-class")}), NEW_POOL)
        return (after, before) if reverse else (before, after)

    return build


def _compute_plane(**group: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps.cozystack.io/v1alpha1",
        "kind": "ComputePlane",
        "metadata": {"name": "cp", "namespace": "tenant-example"},
        "spec": {"nodeGroups": {"md0": {"maxReplicas": 2}, "md1": {"maxReplicas": 2, **group}}},
    }


def _entrypoint(before: dict[str, Any], after: dict[str, Any]) -> Build:
    """``tests/cli/test_entrypoint.py``'s STATE folders (``base_pools`` with changes), as States."""

    def state(changes: dict[str, Any]) -> State:
        objects = [entrypoint.cluster(), *entrypoint.base_pools(**changes)]
        return State.from_documents([Document(obj, f"entrypoint#{i}") for i, obj in enumerate(objects)])

    return lambda: (state(before), state(after))


@dataclass(frozen=True)
class Pair:
    id: str
    source: str
    build: Build
    pools: tuple[str, ...]


EXAMPLE_POOLS = ("example-custom-kairos", "example-kairos", "example-legacy", "example-talos")
ENTRY_POOLS = ("example-md1", "example-md2", "example-md3", "example-md5")

PAIRS = [
    Pair("no-change", "test_no_change_replaces_nothing_and_lists_every_pool", _pair({}, {}), EXAMPLE_POOLS),
    Pair(
        "platform-patch",
        "test_platform_patch_bump_replaces_exactly_the_pools_whose_machine_template_version_rolls",
        _pair({}, {"WorkerPlatform": ops._patch("v1.35.7")}),
        EXAMPLE_POOLS,
    ),
    Pair(
        "kairos-digest",
        "test_platform_kairos_digest_change_replaces_and_is_flagged_rebuild_only,"
        " test_json_rows_have_exactly_the_api_keys",
        _pair({}, {"WorkerPlatform": ops._kairos_digest}),
        EXAMPLE_POOLS,
    ),
    Pair(
        "kairos-new-patch",
        "test_platform_kairos_image_for_a_new_patch_is_not_rebuild_only",
        _pair({}, {"WorkerPlatform": _kairos_new_patch}),
        EXAMPLE_POOLS,
    ),
    Pair(
        "default-class",
        "test_platform_default_class_change_replaces_no_pool",
        _pair({}, {"WorkerPlatform": _set(defaultWorkerClass="kairos")}),
        EXAMPLE_POOLS,
    ),
    Pair(
        "replicas",
        "test_replica_change_does_not_replace",
        _pair({}, {"example-kairos": _set(minReplicas=1, maxReplicas=6)}),
        EXAMPLE_POOLS,
    ),
    Pair(
        "mirror",
        "test_mirror_change_is_refused_by_the_talos_provider, test_a_config_template_changed_under_its_name_...",
        _pair({}, {"example-talos": _mirror("https://mirror.example")}),
        EXAMPLE_POOLS,
    ),
    Pair(
        "kernel-modules",
        "test_kernel_modules_change_is_refused_by_the_talos_provider",
        _pair({}, {"example-talos": _set(kernelModules=[{"name": "nvme_tcp"}, {"name": "dm_thin_pool"}])}),
        EXAMPLE_POOLS,
    ),
    Pair(
        "instance-type",
        "test_each_rolling_change_is_named[instance-type]",
        _pair({}, {"example-talos": _set(instanceType="u1.large")}),
        EXAMPLE_POOLS,
    ),
    Pair(
        "ssh-key",
        "test_each_rolling_change_is_named[ssh-key]",
        _pair(
            {},
            {"example-kairos": _set(sshKeys=["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGV4YW1wbGVrZXlleGFtcGxla2V5 a@b"])},
        ),
        EXAMPLE_POOLS,
    ),
    Pair(
        "labels",
        "test_in_place_changes_are_named_and_do_not_replace[labels]",
        _pair({}, {"example-talos": _set(labels={"team": "a"})}),
        EXAMPLE_POOLS,
    ),
    Pair(
        "health",
        "test_in_place_changes_are_named_and_do_not_replace[health]",
        _pair({}, {"example-talos": _set(maxUnhealthy="1")}),
        EXAMPLE_POOLS,
    ),
    Pair(
        "taints",
        "test_in_place_changes_are_named_and_do_not_replace[taints]",
        _pair({}, {"example-talos": _set(taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}])}),
        EXAMPLE_POOLS,
    ),
    Pair(
        "class-switch",
        "test_class_switch_to_the_same_settings_does_not_replace",
        _pair({}, {"example-talos": _class_switch}),
        EXAMPLE_POOLS,
    ),
    Pair(
        "family",
        "test_bootstrap_family_change_names_the_family, test_bootstrap_family_change_is_flagged_as_refused_...",
        _pair({}, {"example-talos": _to_kairos}),
        EXAMPLE_POOLS,
    ),
    Pair(
        "added-removed",
        "test_added_removed_and_denied_pools_have_rows_and_replace_nothing (forward)",
        _added_removed(reverse=False),
        (*EXAMPLE_POOLS, "example-zz"),
    ),
    Pair(
        "removed-added",
        "test_added_removed_and_denied_pools_have_rows_and_replace_nothing (reverse)",
        _added_removed(reverse=True),
        (*EXAMPLE_POOLS, "example-zz"),
    ),
    Pair(
        "direct-release",
        "test_family_change_of_a_direct_helm_release_is_not_guarded",
        _direct_switch,
        (*EXAMPLE_POOLS, "kubernetes-nodes-example-direct"),
    ),
    Pair(
        "move-cluster",
        "test_moving_a_pool_to_another_cluster_is_refused",
        lambda: (
            ops.extra(ops.state(), OTHER_CLUSTER),
            ops.extra(ops.state(**{"example-talos": _set(cluster="other")}), OTHER_CLUSTER),
        ),
        EXAMPLE_POOLS,
    ),
    Pair(
        "class-edit",
        "test_an_edited_class_spec_is_flagged_as_refused",
        _pair({}, {"talos-example-r1": _mirror("https://m.example")}),
        EXAMPLE_POOLS,
    ),
    Pair(
        "class-omitted",
        "test_omitting_the_class_on_update_keeps_the_stored_class",
        _pair({}, {"example-talos": _omit_class}),
        EXAMPLE_POOLS,
    ),
    Pair(
        "minor",
        "test_a_rolling_machine_template_field_replaces (planned with the real render)",
        _pair({}, {"example-talos": _set(version="v1.34")}),
        EXAMPLE_POOLS,
    ),
    Pair(
        "max-replicas",
        "test_in_place_fields_of_the_machine_deployment_do_not_replace (planned with the real render)",
        _pair({"example-talos": _set(maxReplicas=3)}, {"example-talos": _set(maxReplicas=6)}),
        EXAMPLE_POOLS,
    ),
    Pair(
        "compute-plane",
        "test_a_compute_plane_group_outside_its_allowlist_is_refused_for_that_group_only",
        lambda: (
            ops.extra(ops.state(), _compute_plane()),
            ops.extra(ops.state(), _compute_plane(version="v1.35", maxReplicas=4)),
        ),
        (*EXAMPLE_POOLS, "cp-md0", "cp-md1"),
    ),
    Pair(
        "platform-digest-zeroed",
        "tests/cli/test_render_plan.py test_plan_json, test_plan_table_for_people",
        _pair({}, {"WorkerPlatform": _digest_zeroed}),
        EXAMPLE_POOLS,
    ),
    Pair(
        "entry-rows",
        "tests/cli/test_entrypoint.py test_plan_rows_for_every_pool_with_actions_and_detailed_exit_code",
        _entrypoint(
            {},
            {
                "md1": {"maxReplicas": 6},
                "md2": {"instanceType": "u1.large"},
                "md3": None,
                "md4": {"workerClassName": "talos"},
            },
        ),
        (*ENTRY_POOLS, "example-md4"),
    ),
    Pair(
        "entry-in-place",
        "tests/cli/test_entrypoint.py test_plan_detailed_exit_code_zero_for_creates_and_in_place_updates",
        _entrypoint({}, {"md1": {"minReplicas": 2}, "md9": {"workerClassName": "talos"}}),
        (*ENTRY_POOLS, "example-md9"),
    ),
    Pair(
        "entry-same",
        "tests/cli/test_entrypoint.py test_plan_detailed_exit_code_zero_for_creates_and_in_place_updates (same)",
        _entrypoint({}, {}),
        ENTRY_POOLS,
    ),
    Pair(
        "entry-delete",
        "tests/cli/test_entrypoint.py test_plan_a_deleted_pool_is_a_change_for_the_exit_code",
        _entrypoint({}, {"md3": None}),
        ENTRY_POOLS,
    ),
    Pair(
        "entry-typo",
        "tests/cli/test_entrypoint.py test_plan_a_class_typo_is_refused_and_exits_one",
        _entrypoint({}, {"md2": {"workerClassName": "tlaos"}}),
        ENTRY_POOLS,
    ),
    Pair(
        "entry-family",
        "tests/cli/test_entrypoint.py test_plan_a_family_switch_is_refused_over_its_replacement",
        _entrypoint({}, {"md1": {"workerClassName": "kairos"}}),
        ENTRY_POOLS,
    ),
    Pair(
        "entry-stdin",
        "tests/cli/test_entrypoint.py test_plan_reads_several_paths_and_stdin",
        _entrypoint({}, {"md7": {"workerClassName": "talos"}}),
        (*ENTRY_POOLS, "example-md7"),
    ),
]
BY_ID = {pair.id: pair for pair in PAIRS}

#: Cases without a MachineDeployment on both sides: nothing for Cluster API to roll or keep.
LEFT_OUT: dict[str, str] = {
    "added-removed:example-zz": "created: no before objects (plan: create)",
    "added-removed:example-kairos": "refused (ClassNotFound): the after side does not resolve, nothing renders",
    "removed-added:example-zz": "deleted: no after objects (plan: delete, its machines go with the MachineDeployment)",
    "removed-added:example-kairos": "denied in the before state (ClassNotFound): no before objects",
    "move-cluster:example-talos": "refused (Invalid): the pool cannot move to another cluster, nothing renders",
    "compute-plane:cp-md1": "refused (NotAllowedInComputePlane): the after side does not resolve, nothing renders",
    "entry-rows:example-md3": "deleted: no after objects",
    "entry-rows:example-md4": "created: no before objects",
    "entry-in-place:example-md9": "created: no before objects",
    "entry-delete:example-md3": "deleted: no after objects",
    "entry-typo:example-md2": "refused (ClassNotFound): the after side does not resolve, nothing renders",
    "entry-stdin:example-md7": "created: no before objects",
}

#: Documented Cluster API behaviour that differs from plan: case -> (Cluster API's answer, why).
KNOWN: dict[str, tuple[bool, str]] = {}

CASES = [f"{pair.id}:{pool}" for pair in PAIRS for pool in pair.pools]


def _params() -> Iterator[Any]:
    for case in CASES:
        if case in LEFT_OUT:
            yield pytest.param(case, id=case, marks=pytest.mark.skip(reason=f"left out: {LEFT_OUT[case]}"))
        else:
            yield pytest.param(case, id=case)


# ------------------------------------------------------------------ the states in a case's namespace


def namespace_of(pair: Pair) -> str:
    return f"tenant-plan-{pair.id}"


_ORIGINAL_NAMESPACES = ("tenant-example", entrypoint.cluster()["metadata"]["namespace"])


def rehomed(state: State, namespace: str) -> State:
    """``state`` with every namespaced object of the tests' tenants moved to ``namespace`` (the same chart)."""
    documents = []
    for record in state.objects:
        obj = copy.deepcopy(dict(record.obj))
        metadata = obj.get("metadata", {})
        if metadata.get("namespace") in _ORIGINAL_NAMESPACES:
            metadata["namespace"] = namespace
        documents.append(Document(obj, record.origin))
    return State.from_documents(documents).with_chart(state.chart)


def _record(state: State, identity: str) -> PoolRecord | None:
    found = [record for record in state.sorted_pools() if record.identity == identity]
    return found[0] if found else None


def stored_after(before: State, after: State, identity: str) -> tuple[State, PoolRecord | None]:
    """The after state with the pool as admission stores it (an omitted class restored)."""
    new, old = _record(after, identity), _record(before, identity)
    if new is None or new.kind != "KubernetesNodes":
        return after, new
    new_obj = after.find(new.kind, new.namespace, new.name)
    old_obj = before.find(new.kind, new.namespace, new.name) if old is not None else None
    assert new_obj is not None
    decision = admit(
        after, "UPDATE" if old_obj is not None else "CREATE", new_obj.obj, old_obj.obj if old_obj else None
    )
    if decision.object is None or not decision.patch:
        return after, new
    stored = after.with_object(copy.deepcopy(dict(decision.object)))
    return stored, _record(stored, identity)


def rendered(state: State, record: PoolRecord | None) -> list[dict[str, Any]]:
    """What the release holds for the pool (the TalosConfigTemplate the Job applies included), or []."""
    if record is None:
        return []
    effective, _, _ = resolve_pool(state, record)
    if effective is None:
        return []
    try:
        return [copy.deepcopy(obj) for obj in render(effective, talos_config_template=True)]
    except RenderError:  # the chart refuses the pool: nothing renders
        return []


def deployment_of(objects: list[dict[str, Any]]) -> dict[str, Any] | None:
    found = [obj for obj in objects if obj["kind"] == "MachineDeployment"]
    assert len(found) <= 1, "one MachineDeployment per pool"
    return found[0] if found else None


def _deployment(objects: list[dict[str, Any]]) -> dict[str, Any]:
    found = deployment_of(objects)
    assert found is not None
    return found


@dataclass
class Case:
    id: str
    namespace: str
    row: PlanRow
    before: list[dict[str, Any]]
    after: list[dict[str, Any]]
    #: filled in on the test bed
    deployment: str = ""
    machine_sets_before: set[str] = field(default_factory=set)
    machine_sets_after: set[str] = field(default_factory=set)
    generation: int = 0
    same_as: str | None = None

    @property
    def new_machine_set(self) -> bool:
        return bool(self.machine_sets_after - self.machine_sets_before)


def _pool_record(state: State, pool: str) -> PoolRecord | None:
    found = [record for record in state.sorted_pools() if record.name == pool]
    assert len(found) <= 1, pool
    return found[0] if found else None


def _sides(before: State, after: State, pool: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    record = _pool_record(before, pool) or _pool_record(after, pool)
    assert record is not None, pool
    stored, new_record = stored_after(before, after, record.identity)
    return rendered(before, _record(before, record.identity)), rendered(stored, new_record)


def _row(result: Plan, pool: str) -> PlanRow:
    (row,) = [row for row in result.rows if row.pool.endswith(f"/{pool}")]
    return row


def build_cases() -> dict[str, Case]:
    """Every case with plan's row for the suite's pair and, unless an earlier case has the same
    before and after objects (then it is ``same_as`` that one), its objects in the pair's own
    namespace; checks ``LEFT_OUT``."""
    out: dict[str, Case] = {}
    mismatched: list[str] = []
    seen: dict[str, str] = {}
    for pair in PAIRS:
        # Talos pools render the talos-reconcile Job from the chart's text: both sides run the mirror's chart
        before, after = (side.with_chart(given_chart("main+gate")) for side in pair.build())
        rows = plan(before, after)
        moved: tuple[State, State, Plan] | None = None
        for pool in pair.pools:
            case_id, row = f"{pair.id}:{pool}", _row(rows, pool)
            objects_before, objects_after = _sides(before, after, pool)
            both = deployment_of(objects_before) is not None and deployment_of(objects_after) is not None
            if both == (case_id in LEFT_OUT):
                mismatched.append(f"{case_id} (renders a MachineDeployment on both sides: {both})")
            if not both:
                continue
            key = json.dumps([objects_before, objects_after], sort_keys=True)
            if key in seen:
                out[case_id] = Case(case_id, "", row, [], [], same_as=seen[key])
                continue
            seen[key] = case_id
            namespace = namespace_of(pair)
            if moved is None:
                moved_before, moved_after = rehomed(before, namespace), rehomed(after, namespace)
                moved = moved_before, moved_after, plan(moved_before, moved_after)
            moved_row = _row(moved[2], pool)
            # the namespace is in the template hash: plan must say the same of the pair moved there
            assert (moved_row.action, moved_row.replace) == (row.action, row.replace), case_id
            out[case_id] = Case(case_id, namespace, row, *_sides(moved[0], moved[1], pool))
    assert not mismatched, f"LEFT_OUT is wrong for: {mismatched}"
    return out


# ------------------------------------------------------------------ on the test bed


def _namespaced(kube: Kube, objects: list[dict[str, Any]], namespace: str) -> None:
    for obj in objects:  # Helm puts a namespaced object the chart leaves unnamespaced in the release's namespace
        if kube.resource_of(obj).namespaced:
            obj["metadata"].setdefault("namespace", namespace)


def _apply(kube: Kube, case: Case, objects: list[dict[str, Any]], unchanged: list[dict[str, Any]]) -> int:
    """The objects server-side applied, templates and the rest first, the MachineDeployment last
    (those equal to one in ``unchanged`` skipped, as Helm skips an unchanged object); the
    MachineDeployment's generation afterwards."""
    for obj in sorted(objects, key=lambda obj: obj["kind"] == "MachineDeployment"):
        if obj not in unchanged:
            kube.apply(obj, manager=MANAGER)
    return int(kube.get(CAPI, "MachineDeployment", case.deployment, case.namespace)["metadata"]["generation"])


def _each(cases: list[Case], work: Callable[[Case], Any]) -> None:
    """``work`` for every case, a few at a time (the API server answers applies in parallel)."""
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        list(pool.map(work, cases))


def _machine_sets(kube: Kube, case: Case) -> set[str]:
    found = kube.list(CAPI, "MachineSet", case.namespace, labels=f"cluster.x-k8s.io/deployment-name={case.deployment}")
    return {ms["metadata"]["name"] for ms in found}


def _reconciled(kube: Kube, case: Case) -> bool:
    """Cluster API has reconciled the generation applied (or a later one) without error."""
    deployment = kube.get(CAPI, "MachineDeployment", case.deployment, case.namespace)
    generation = int(deployment["metadata"]["generation"])
    observed = (deployment.get("status") or {}).get("observedGeneration")
    return generation >= case.generation and observed == generation


def _wait_all(kube: Kube, cases: list[Case], ready: Callable[[Case], bool], what: str) -> None:
    pending = list(cases)
    deadline = time.monotonic() + SETTLE
    while pending and time.monotonic() < deadline:
        pending = [case for case in pending if not ready(case)]
        if pending:
            time.sleep(0.2)
    if pending:
        raise TimeoutError(f"{what} not reached in {SETTLE}s for: {[case.id for case in pending]}")


def _parent_clusters(kube: Kube, case: Case) -> None:
    names = {str(_deployment(objects)["spec"]["clusterName"]) for objects in (case.before, case.after)}
    for name in sorted(names):
        kube.apply(
            {
                "apiVersion": CAPI,
                "kind": "Cluster",
                "metadata": {"name": name, "namespace": case.namespace},
                "spec": {},
            },
            manager=MANAGER,
        )


def _cleanup(kube: Kube, cases: list[Case]) -> None:
    """Every case's objects deleted: Cluster API removes the MachineSets and Machines (its finalizers;
    the Cluster goes last, after its descendants), the rest goes directly (no garbage collector runs
    on the test bed). The namespaces stay, empty: no namespace controller would finish deleting them."""

    def delete(case: Case) -> None:
        identities = [
            (obj["apiVersion"], obj["kind"], obj["metadata"]["name"], obj["metadata"].get("namespace"))
            for obj in [*case.before, *case.after]
        ]
        for api_version, kind, name, namespace in dict.fromkeys(identities):
            kube.delete(api_version, kind, name, namespace)

    _each(cases, delete)
    namespaces = sorted({case.namespace for case in cases})
    for namespace in namespaces:
        for cluster in kube.list(CAPI, "Cluster", namespace):
            kube.delete(CAPI, "Cluster", cluster["metadata"]["name"], namespace)

    def gone() -> bool:
        return not any(kube.list(CAPI, "Cluster", namespace) for namespace in namespaces)

    wait_until(gone, timeout=SETTLE, interval=0.5, what="the cases' Cluster API objects deleted")


@pytest.fixture(scope="module")
def kairos_kubeadm(kube: Kube, capi: ClusterAPI) -> Iterator[str]:
    """The KairosConfigTemplate CRD with the render's one documented departure from upstream
    (``tests/render/schemas.py`` ``ENUM_EXCEPTIONS``: ``distribution: kubeadm``, which the provider's
    enum lacks), for this module's Kairos pools; the upstream schema is put back afterwards. Yields
    why the CRD is not served ("" when it is): then the Kairos cases are left out, and skip."""
    assert ENUM_EXCEPTIONS == [("KairosConfigTemplate", KAIROS_DISTRIBUTION, "kubeadm")]
    if capi.kairos_absent:
        yield capi.kairos_absent
        return
    with kairos_with_kubeadm(kube):
        yield ""


def _kairos(case: Case) -> bool:
    """Whether the case applies a KairosConfigTemplate (it needs the Kairos provider's CRD)."""
    return any(obj.get("kind") == "KairosConfigTemplate" for obj in [*case.before, *case.after])


@pytest.fixture(scope="module")
def outcomes(kube: Kube, capi: ClusterAPI, kairos_kubeadm: str) -> Iterator[dict[str, Case]]:
    cases = build_cases()
    runs = [case for case in cases.values() if case.same_as is None and not (kairos_kubeadm and _kairos(case))]
    for namespace in sorted({case.namespace for case in runs}):
        try:
            kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        except KubeError as error:
            if error.code != 409:
                raise
    for case in runs:
        _namespaced(kube, case.before, case.namespace)
        _namespaced(kube, case.after, case.namespace)
        case.deployment = str(_deployment(case.before)["metadata"]["name"])

    def before(case: Case) -> None:
        _parent_clusters(kube, case)
        case.generation = _apply(kube, case, case.before, [])

    def after(case: Case) -> None:
        case.generation = _apply(kube, case, case.after, case.before)

    try:
        _each(runs, before)
        _wait_all(kube, runs, lambda case: _reconciled(kube, case) and bool(_machine_sets(kube, case)), "a MachineSet")
        for case in runs:
            case.machine_sets_before = _machine_sets(kube, case)
            assert len(case.machine_sets_before) == 1, (case.id, case.machine_sets_before)
        _each(runs, after)
        _wait_all(kube, runs, lambda case: _reconciled(kube, case), "the after generation observed")
        for case in runs:
            case.machine_sets_after = _machine_sets(kube, case)
        yield cases
    finally:
        _cleanup(kube, runs)


@pytest.mark.parametrize("case_id", list(_params()))
def test_plan_replace_is_whether_cluster_api_creates_a_machine_set(
    case_id: str, outcomes: dict[str, Case], kairos_kubeadm: str
) -> None:
    case = outcomes[case_id]
    run = outcomes[case.same_as] if case.same_as else case
    if kairos_kubeadm and _kairos(run):
        unavailable(f"{case_id} applies a KairosConfigTemplate, whose CRD is absent: {kairos_kubeadm}")
    created = run.new_machine_set
    said = "created a new MachineSet" if created else "kept its MachineSet"
    detail = f"MachineSets {sorted(run.machine_sets_before)} -> {sorted(run.machine_sets_after)}"
    if case_id in KNOWN:
        expected, why = KNOWN[case_id]
        assert created is expected, f"{case_id}: KNOWN says Cluster API {expected}, it {said} ({detail})"
        assert case.row.replace is not created, f"{case_id}: plan now agrees with Cluster API; drop KNOWN ({why})"
        return
    assert case.row.replace is created, (
        f"{case_id}: Cluster API {said} ({detail}); plan says replace={case.row.replace}, action={case.row.action}, "
        f"reasons={list(case.row.reasons)}"
    )
