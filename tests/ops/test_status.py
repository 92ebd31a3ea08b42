"""WorkerClass status (API.md section 1) and deletion retention, as pure functions over a State."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from workerclass.adapters.folder import load_state
from workerclass.ops.status import class_status, deletion_blocker
from workerclass.state import State

ROOT = Path(__file__).resolve().parents[2]
NS = "tenant-example"
TALOS_EXAMPLE = "talos-example-r1"
KAIROS_FIXED = "kairos-example-v1-35-6-r1"


def make_class(name: str, bootstrap: str = "talos", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "cozystack.io/v1alpha1",
        "kind": "WorkerClass",
        "metadata": {"name": name},
        "spec": {"bootstrap": bootstrap, **spec},
    }


def make_pool(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps.cozystack.io/v1alpha1",
        "kind": "KubernetesNodes",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"cluster": "example", "version": "v1.35", **spec},
    }


def make_release(name: str, **values: Any) -> dict[str, Any]:
    return {
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {
            "name": name,
            "namespace": NS,
            "labels": {"apps.cozystack.io/application.kind": "KubernetesNodes"},
        },
        "spec": {"values": {"cluster": "example", "version": "v1.35", **values}},
    }


def make_state(objects: list[dict[str, Any]] = (), *, classes: list[dict[str, Any]] = ()) -> State:  # type: ignore[assignment]
    """The examples (without their pools), plus ``classes`` and ``objects``."""
    base = [dict(record.obj) for record in load_state(ROOT / "examples").objects]
    base = [obj for obj in base if obj["kind"] not in ("KubernetesNodes", "HelmRelease")]
    return State.from_objects([*base, *classes, *objects])


def conditions(status: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {condition["type"]: condition for condition in status["conditions"]}


def test_an_unused_valid_class() -> None:
    status = class_status(make_state(), "talos-example-r1", 3)
    assert status is not None
    assert status["pools"] == 0
    assert [c["type"] for c in status["conditions"]] == ["Accepted", "InUse"]
    found = conditions(status)
    assert (found["Accepted"]["status"], found["Accepted"]["reason"]) == ("True", "Valid")
    assert (found["InUse"]["status"], found["InUse"]["reason"]) == ("False", "NoPools")
    assert all(c["observedGeneration"] == 3 for c in status["conditions"])
    assert all(set(c) == {"type", "status", "reason", "message", "observedGeneration"} for c in status["conditions"])


def test_without_a_generation_no_observed_generation() -> None:
    status = class_status(make_state(), "talos-example-r1")
    assert status is not None
    assert all("observedGeneration" not in c for c in status["conditions"])


def test_live_pools_of_every_kind_are_counted() -> None:
    objects = [
        make_pool("a", workerClassName="talos-example-r1"),
        make_pool("b", workerClassName="talos-example-r1"),
        make_release("c", workerClassName="talos-example-r1"),
        make_pool("d", workerClassName="talos"),
    ]
    status = class_status(make_state(objects), "talos-example-r1")
    assert status is not None and status["pools"] == 3
    in_use = conditions(status)["InUse"]
    assert (in_use["status"], in_use["reason"]) == ("True", "PoolsSelectClass")
    assert in_use["message"].startswith("3 live pool(s) in 1 namespace(s) select this class")
    assert deletion_blocker(make_state(objects), "talos-example-r1") is not None
    assert deletion_blocker(make_state(objects), KAIROS_FIXED) is None


def test_no_tenant_reads_another_tenants_pools_in_a_class() -> None:
    """A class is readable wherever tenants pick classes: its status and the ClassInUse answer (which
    reaches whoever calls the webhook's port) count pools and namespaces, never name them."""
    objects = []
    for index, team in enumerate(["alpha", "alpha", "bravo", "charlie"] * 2):
        pool = make_pool(f"example-p{index:02}", workerClassName="talos-example-r1")
        pool["metadata"]["namespace"] = f"tenant-{team}"
        objects.append(pool)
    state = make_state(objects)
    status = class_status(state, "talos-example-r1", 1, {"tenant-alpha/example-p00": "refused"})
    assert status is not None and status["pools"] == 8
    said = [condition["message"] for condition in status["conditions"]]
    said.append(deletion_blocker(state, "talos-example-r1") or "")
    for text in said:
        assert "tenant-" not in text and "example-p" not in text, text
    assert "8 live pool(s) in 3 namespace(s)" in said[1] and "8 live pool(s) in 3 namespace(s)" in said[3]


def test_a_class_that_breaks_the_rules_is_not_accepted() -> None:
    broken = make_class("broken", "kairos", talos={"version": "v1.13.6"})
    status = class_status(make_state(classes=[broken]), "broken")
    assert status is not None
    accepted = conditions(status)["Accepted"]
    assert (accepted["status"], accepted["reason"]) == ("False", "TalosSettingOnKairos")
    assert "spec.talos.version" in accepted["message"]
    assert "pools that select this class are refused" in accepted["message"]


def test_a_baseline_that_alone_conflicts_is_not_accepted() -> None:
    pinned = make_class("pinned", kubevirt={"osImage": {"factory": {"version": "v1.12.4"}}})
    status = class_status(make_state(classes=[pinned]), "pinned")
    assert status is not None
    accepted = conditions(status)["Accepted"]
    assert (accepted["status"], accepted["reason"]) == ("False", "ArtifactConflict")
    # pools may still override it, so the status does not claim that they are refused
    assert "baseline on its own" in accepted["message"] and "are refused" not in accepted["message"]


def test_unknown_class_has_no_status() -> None:
    assert class_status(make_state(), "nope") is None
    assert deletion_blocker(make_state(), "nope") is None


def test_the_built_in_classes_have_a_status_too() -> None:
    state: State = make_state([make_pool("k", workerClassName="kairos")])
    status = class_status(state, "kairos")
    assert status is not None and status["pools"] == 1


def test_a_pool_seen_as_both_kinds_is_counted_once() -> None:
    objects = [
        make_pool("twin", workerClassName="talos-example-r1"),
        make_release("twin", workerClassName="talos-example-r1"),
    ]
    status = class_status(make_state(objects), "talos-example-r1")
    assert status is not None and status["pools"] == 1


# ---------------------------------------------------------------------- WorkersApplied


@pytest.mark.parametrize(
    ("workers", "status", "reason", "says"),
    [
        (None, None, None, None),
        ({}, "False", "Pending", "2 pool(s) in 1 namespace(s) not reconciled yet"),
        (
            {"tenant-example/example-a": "applied", "tenant-example/example-b": "applied"},
            "True",
            "Applied",
            "2 pool(s)",
        ),
        (
            {"tenant-example/example-a": "applied", "tenant-example/example-b": "waiting-for-rollout"},
            "False",
            "WaitingForRollout",
            "1 pool(s) in 1 namespace(s) rolling out their machines; 1 applied",
        ),
        (
            {"tenant-example/example-a": "refused", "tenant-example/example-b": "waiting-for-rollout"},
            "False",
            "Refused",
            "1 pool(s) in 1 namespace(s) refused",
        ),
        (
            {"tenant-example/example-a": "not-resolvable", "tenant-example/example-b": "failing"},
            "False",
            "NotResolvable",
            "1 pool(s) in 1 namespace(s) failing to apply",
        ),
    ],
    ids=["no-worker-controller", "not-reconciled", "all-applied", "rolling", "refused-first", "unresolvable-first"],
)
def test_workers_applied_summarizes_the_pools_worker_states(
    workers: dict[str, str] | None, status: str | None, reason: str | None, says: str | None
) -> None:
    state = make_state(
        [make_pool("example-a", workerClassName=TALOS_EXAMPLE), make_pool("example-b", workerClassName=TALOS_EXAMPLE)]
    )
    found = conditions(class_status(state, TALOS_EXAMPLE, 1, workers) or {})
    if status is None:
        assert "WorkersApplied" not in found  # without the worker controller there is nothing to say
        return
    condition = found["WorkersApplied"]
    assert (condition["status"], condition["reason"]) == (status, reason)
    assert says is not None and says in condition["message"]
    assert condition["observedGeneration"] == 1


def test_workers_applied_of_an_unused_class_is_true() -> None:
    found = conditions(class_status(make_state(), TALOS_EXAMPLE, None, {}) or {})
    assert (found["WorkersApplied"]["status"], found["WorkersApplied"]["reason"]) == ("True", "NoPools")


def test_every_condition_written_is_one_the_crd_allows() -> None:
    from workerclass.api.resources import CLASS_CONDITIONS
    from workerclass.crds import crd_manifests

    state = make_state([make_pool("example-a", workerClassName=TALOS_EXAMPLE)])
    written = {condition["type"] for condition in (class_status(state, TALOS_EXAMPLE, 1, {}) or {})["conditions"]}
    assert written == set(CLASS_CONDITIONS)
    crd = next(crd for crd in crd_manifests() if crd["spec"]["names"]["kind"] == "WorkerClass")
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    allowed = schema["properties"]["status"]["properties"]["conditions"]["items"]["properties"]["type"]["enum"]
    assert set(allowed) == written


def test_transition_times_are_kept_while_a_condition_keeps_its_status() -> None:
    from workerclass.ops.status import with_transitions

    current = {
        "conditions": [
            {"type": "Accepted", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"},
            {"type": "InUse", "status": "False", "lastTransitionTime": "2026-01-01T00:00:00Z"},
            {"type": "WorkersApplied", "status": "True"},  # written before times were: stamped now
        ]
    }
    status = {
        "conditions": [
            {"type": "Accepted", "status": "True", "reason": "Valid"},
            {"type": "InUse", "status": "True", "reason": "PoolsSelectClass"},
            {"type": "WorkersApplied", "status": "True", "reason": "Applied"},
        ],
        "pools": 1,
    }
    stamped = with_transitions(status, current, "2026-02-02T00:00:00Z")
    assert [c["lastTransitionTime"] for c in stamped["conditions"]] == [
        "2026-01-01T00:00:00Z",
        "2026-02-02T00:00:00Z",
        "2026-02-02T00:00:00Z",
    ]
    assert stamped["pools"] == 1 and "lastTransitionTime" not in status["conditions"][0]  # a copy
    assert with_transitions(status, {}, "t")["conditions"][0]["lastTransitionTime"] == "t"
