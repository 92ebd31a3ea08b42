"""The worker controller's write decisions on plain data (:mod:`workerclass.ops.writes`): no client,
no fake API; desired and live objects in, the applies, prunes, pins, deletions and reports out."""

from __future__ import annotations

import copy
from typing import Any

from workerclass.ops.workers import PINNED_ANNOTATION, POOL_ANNOTATION, POOL_LABEL, DesiredPool, pool_key
from workerclass.ops.writes import (
    CHART_NOT_GATED,
    KAIROS_UNKNOWN,
    Event,
    Gate,
    LeftOver,
    Orphans,
    PoolReads,
    decide_pool,
    digest,
    gate_pool,
    needs_references,
    object_key,
    plan_cleanup,
    plan_left_over,
    plan_pins,
    plan_pool,
    plan_prune,
    plan_report,
    pool_outcome,
    taken_by,
)

MANAGER = "workerclass-controller"
NS = "tenant-a"


def obj(kind: str, name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": NS, "labels": {POOL_LABEL: "p1"}},
        "spec": spec,
    }


def fields(value: Any) -> dict[str, Any]:
    if isinstance(value, dict) and value:
        return {".": {}, **{f"f:{key}": fields(item) for key, item in value.items()}}
    return {}


def live(desired: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """``desired`` as the API server holds it after our apply (our managedFields), with ``changes`` to its spec."""
    out = copy.deepcopy(desired)
    body = {key: value for key, value in desired.items() if key not in ("apiVersion", "kind")}
    body["metadata"] = {k: v for k, v in desired["metadata"].items() if k not in ("name", "namespace")}
    tree = {key: value for key, value in fields(body).items() if key != "."}
    out["metadata"]["managedFields"] = [{"manager": MANAGER, "operation": "Apply", "fieldsV1": tree}]
    out["metadata"]["resourceVersion"] = "7"
    out["spec"].update(changes)
    return out


def test_an_absent_object_is_applied_and_one_as_desired_is_only_recorded() -> None:
    deployment, template = obj("MachineDeployment", "md", replicas=None), obj("KubevirtMachineTemplate", "t1", a=1)
    pool_live = {object_key(template): live(template)}
    writes = plan_pool([template, deployment], pool_live, {}, manager=MANAGER, fresh=True)
    assert [(item.key, item.reason) for item in writes.apply] == [(object_key(deployment), "absent")]
    assert writes.settled == ((object_key(template), digest(template)),)
    assert writes.prune == ()


def test_without_a_fresh_look_an_object_applied_as_desired_is_not_compared() -> None:
    template = obj("KubevirtMachineTemplate", "t1", a=1)
    pool_live = {object_key(template): live(template, a=2)}  # drifted, but no watch said so
    applied = {object_key(template): digest(template)}
    assert plan_pool([template], pool_live, applied, manager=MANAGER, fresh=False).apply == ()
    (item,) = plan_pool([template], pool_live, applied, manager=MANAGER, fresh=True).apply
    assert item.reason == ".spec.a differs"


def test_a_field_the_render_dropped_is_applied_away() -> None:
    before = obj("MachineHealthCheck", "mhc", a=1, b=2)
    after = obj("MachineHealthCheck", "mhc", a=1)
    pool_live = {object_key(before): live(before)}  # holds every value ``after`` sets, and b
    (item,) = plan_pool([after], pool_live, {}, manager=MANAGER, fresh=True).apply
    assert "fields applied differ" in item.reason and ".spec.b" in item.reason
    (item,) = plan_pool([after], pool_live, {object_key(before): digest(before)}, manager=MANAGER, fresh=False).apply
    assert item.reason == "changed since the last apply"


def test_what_the_pool_no_longer_renders_is_pruned_unless_a_machine_set_still_uses_it() -> None:
    old, new = obj("KubevirtMachineTemplate", "t-old"), obj("KubevirtMachineTemplate", "t-new")
    job = obj("Job", "old-job")
    pool_live = {object_key(o): live(o) for o in (old, new, job)}
    assert needs_references([new], pool_live)
    assert not needs_references([new, old], {object_key(new): live(new), object_key(old): live(old)})
    assert plan_prune([object_key(new)], pool_live, {"t-old"}) == (object_key(job),)
    assert plan_prune([object_key(new)], pool_live, set()) == (object_key(job), object_key(old))
    held = live(job)
    held["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"  # being deleted: not asked again
    assert plan_prune([], {object_key(job): held}) == ()
    assert not needs_references([], {object_key(job): live(job)})


def test_a_ca_config_map_stays_while_a_template_that_stays_names_it() -> None:
    ca = obj("ConfigMap", "pool-ca")
    old = obj("KubevirtMachineTemplate", "t-old", disk={"source": {"http": {"certConfigMap": "pool-ca"}}})
    new = obj("KubevirtMachineTemplate", "t-new", disk={"source": {"http": {}}})
    pool_live = {object_key(o): live(o) for o in (ca, old, new)}
    assert plan_prune([object_key(new)], pool_live, {"t-old"}) == ()  # the old template and its CA stay
    assert set(plan_prune([object_key(new)], pool_live, set())) == {object_key(ca), object_key(old)}


def helm_made(kind: str, name: str, release: str, *, pinned: bool = False, ours: bool = False) -> dict[str, Any]:
    annotations = {"meta.helm.sh/release-name": release, "meta.helm.sh/release-namespace": NS}
    if pinned:
        annotations |= {"helm.sh/resource-policy": "keep", PINNED_ANNOTATION: "handoff"}
    labels = {"app.kubernetes.io/managed-by": "Helm", **({POOL_LABEL: "p1"} if ours else {})}
    return {"kind": kind, "metadata": {"name": name, "namespace": NS, "labels": labels, "annotations": annotations}}


def test_pins_ungated_releases_and_what_a_gone_pool_left_pinned() -> None:
    legacy = helm_made("MachineDeployment", "legacy", "r-legacy")
    kept = helm_made("MachineHealthCheck", "legacy", "r-legacy", pinned=True)
    ungated = helm_made("MachineDeployment", "classified", "r-classified")
    handed = helm_made("Job", "classified", "r-classified", pinned=True, ours=True)  # applied over: ours
    gone = helm_made("MachineDeployment", "gone", "r-gone", pinned=True)
    stranger = helm_made("MachineDeployment", "other", "r-other")  # not pinned by us: never touched
    pins = plan_pins(
        [legacy, kept, ungated, handed, gone, stranger],
        classless={(NS, "r-legacy")},
        classified={(NS, "r-classified")},
    )
    assert pins.pin == (legacy,)
    assert pins.ungated == {(NS, "r-classified")}
    assert pins.left == {(NS, "r-gone"): {object_key(gone): gone}}

    # a kind could not be listed: what was found before stays so
    partial = plan_pins(
        [],
        classless=set(),
        classified=set(),
        complete=False,
        previous_ungated=pins.ungated,
        previous_left=pins.left,
    )
    assert partial.ungated == pins.ungated and partial.left == pins.left
    assert plan_pins([], classless=set(), classified=set()).left == {}


def test_what_was_left_pinned_goes_once_its_helmrelease_is_gone() -> None:
    gone = helm_made("MachineDeployment", "gone", "r-gone", pinned=True)
    gone["metadata"]["labels"] |= {"helm.toolkit.fluxcd.io/name": "hr-gone", "helm.toolkit.fluxcd.io/namespace": NS}
    left = {(NS, "r-gone"): {object_key(gone): gone}}
    assert plan_left_over(left, known={(NS, "r-gone")}, helm_releases=set()) == (((NS, "r-gone"),), ())
    assert plan_left_over(left, known=set(), helm_releases={(NS, "hr-gone")}) == ((), ())  # Helm is uninstalling
    back, due = plan_left_over(left, known=set(), helm_releases={(NS, "unrelated")})
    assert back == () and due == (LeftOver((NS, "r-gone"), ("hr-gone", "r-gone"), (object_key(gone),)),)


def test_a_gone_pools_labelled_objects_wait_for_the_helmrelease_they_name() -> None:
    a = obj("Job", "a")
    a["metadata"]["labels"][POOL_LABEL] = "gone"
    a["metadata"]["annotations"] = {POOL_ANNOTATION: f"{NS}/kubernetes-nodes-x"}
    a["metadata"]["ownerReferences"] = [{"kind": "HelmRelease", "name": "direct-x"}]
    b = obj("ClusterRole", "b")
    b["metadata"]["labels"][POOL_LABEL] = "gone"
    b["metadata"]["annotations"] = {POOL_ANNOTATION: f"{NS}/kubernetes-nodes-x"}
    still = obj("Job", "still")  # label p1: a pool that is there
    unnamed = obj("Job", "unnamed")
    unnamed["metadata"]["labels"][POOL_LABEL] = "gone"  # no pool named: not ours to judge
    objects = {object_key(o): o for o in (a, b, still, unnamed)}
    assert plan_cleanup(objects, {"p1"}) == (
        Orphans(NS, "kubernetes-nodes-x", ("direct-x",), tuple(sorted([object_key(a), object_key(b)]))),
    )
    assert plan_cleanup(objects, {"p1", "gone"}) == ()


def test_reports_say_a_state_when_it_changes_and_an_apply_when_it_wrote() -> None:
    first = plan_report(None, "refused", "no", class_name="c")
    assert first.changed and first.events == (Event("WorkersRefused", "no", True, unless_said=True),)
    assert plan_report(("refused", "no"), "refused", "no").events == ()
    again = plan_report(("refused", "no"), "refused", "other reason")
    assert not again.changed and again.events == (Event("WorkersRefused", "other reason", True),)
    applied = plan_report(("refused", "no"), "applied", "", wrote=3, class_name="c")
    assert applied.changed and applied.events == (Event("WorkersApplied", "3 object(s) applied for class c", False),)
    assert plan_report(("applied", ""), "applied", "", wrote=0).events == ()
    rolling = plan_report(("applied", ""), "waiting-for-rollout", "rolling", wrote=1, class_name="c")
    assert [event.reason for event in rolling.events] == ["WorkersWaitingForRollout", "WorkersApplied"]
    waiting = plan_report(None, "waiting-for-release", "waiting")
    assert waiting.events == (Event("WorkersWaitingForRelease", "waiting", False, unless_said=True),)


# ------------------------------------------------------------------ a pool's pass, decided

RELEASE = "kubernetes-nodes-p1"


def desired(*objects: dict[str, Any], state: str = "ready", bootstrap: str = "talos", message: str = "") -> DesiredPool:
    return DesiredPool(
        identity=f"{NS}/p1", kind="KubernetesNodes", namespace=NS, release=RELEASE, owner=RELEASE,
        class_name="talos", state=state, objects=objects, bootstrap=bootstrap, message=message,  # type: ignore[arg-type]
    )  # fmt: skip


def mine(kind: str, name: str, **spec: Any) -> dict[str, Any]:
    """An object of the pool ``p1`` as the controller renders it: its pool label on it."""
    out = obj(kind, name, **spec)
    out["metadata"]["labels"] = {POOL_LABEL: pool_key(NS, RELEASE)}
    return out


ours = live  # the pool's desired object as the API server holds it after our apply


def test_a_pool_is_not_written_while_a_gate_holds_it() -> None:
    deployment = mine("MachineDeployment", "md", replicas=1)
    pool = desired(deployment)
    assert gate_pool(pool) is None
    assert gate_pool(desired(deployment, state="refused", message="no")) == Gate("refused", "no")
    assert gate_pool(pool, ungated={(NS, RELEASE)}) == Gate("refused", CHART_NOT_GATED)
    assert gate_pool(pool, ungated={(NS, "another")}) is None
    assert gate_pool(desired(deployment, bootstrap="kairos"), kairos_known=False) == Gate("failing", KAIROS_UNKNOWN)
    assert gate_pool(pool, kairos_known=False) is None  # a Talos pool does not wait for the Kairos CRD
    unlisted = gate_pool(pool, listed={"Secret"}, list_errors={"MachineDeployment": "403 Forbidden"})
    assert unlisted == Gate(
        "failing", "the pool's live objects cannot be listed: MachineDeployment (403 Forbidden); retrying"
    )
    assert gate_pool(pool, listed=set()) == Gate(
        "failing", "the pool's live objects cannot be listed: MachineDeployment (not listed yet); retrying"
    )
    assert gate_pool(pool, listed={"MachineDeployment"}) is None
    assert gate_pool(pool, listed=None) is None  # no watch runs: the pass lists what it compares
    assert gate_pool(pool, backing_off=True) == Gate("failing", None)  # its last report stands


def test_an_object_someone_else_owns_refuses_the_whole_pool() -> None:
    deployment, template = mine("MachineDeployment", "md", replicas=1), mine("KubevirtMachineTemplate", "t1", a=1)
    pool = desired(template, deployment)
    foreign = live(deployment)
    foreign["metadata"]["labels"] = {POOL_LABEL: pool_key(NS, "kubernetes-nodes-other")}
    seen = {object_key(template): None, object_key(deployment): foreign}
    message = taken_by(pool, pool.objects, seen)
    assert message is not None and message.startswith(f"MachineDeployment {NS}/md exists and belongs to ")
    decision = decide_pool(pool, PoolReads(pool.objects, {}, seen), {}, manager=MANAGER, fresh=True)
    assert (decision.state, decision.message, decision.writes.apply) == ("refused", message, ())
    # the pool's own objects, or absent ones, may be applied over
    held = {object_key(template): None, object_key(deployment): ours(deployment)}
    assert taken_by(pool, pool.objects, held) is None


def test_unusable_join_inputs_write_nothing_and_otherwise_the_pool_is_planned() -> None:
    deployment, template = mine("MachineDeployment", "md", replicas=1), mine("KubevirtMachineTemplate", "t1", a=1)
    pool = desired(template, deployment)
    failure = "the join input Secret tenant-a/example-bootstrap cannot be read (404)"
    decision = decide_pool(pool, PoolReads(pool.objects, {}, join_failure=failure), {}, manager=MANAGER, fresh=True)
    assert (decision.state, decision.message, decision.writes.apply) == ("failing", f"{failure}: retrying", ())
    old = mine("KubevirtMachineTemplate", "t0", a=0)
    pool_live = {object_key(template): ours(template), object_key(old): ours(old)}
    reads = PoolReads(pool.objects, pool_live, referenced=frozenset({"t0"}))
    decision = decide_pool(pool, reads, {}, manager=MANAGER, fresh=True)
    assert decision.state is None
    assert [item.key for item in decision.writes.apply] == [object_key(deployment)]
    assert decision.writes.prune == ()  # t0 stays: a MachineSet still builds machines from it
    reads = PoolReads(pool.objects, pool_live)
    assert decide_pool(pool, reads, {}, manager=MANAGER, fresh=True).writes.prune == (object_key(old),)


def test_a_pool_waits_for_its_machine_deployment_to_roll_out() -> None:
    deployment = mine("MachineDeployment", "md", replicas=2)
    key = object_key(deployment)

    def with_status(generation: int, **status: Any) -> dict[str, dict[str, Any]]:
        held = ours(deployment)
        held["metadata"]["generation"] = generation
        held["status"] = status
        return {key: held}

    assert pool_outcome([deployment], {}) == ("applied", "")
    assert pool_outcome([deployment], with_status(2, observedGeneration=2, replicas=2, updatedReplicas=2)) == (
        "applied",
        "",
    )
    rolling = ("waiting-for-rollout", "the MachineDeployment is rolling out its machines")
    assert pool_outcome([deployment], with_status(3, observedGeneration=2, replicas=2, updatedReplicas=2)) == rolling
    assert pool_outcome([deployment], with_status(2, observedGeneration=2, replicas=2, updatedReplicas=1)) == rolling
