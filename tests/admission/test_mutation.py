"""The application-API table of the specification (and of API.md section 3, "Mutation").

Every row tells unset, empty and set apart, checks the RFC 6902 op (``add``, which sets the
member whether it is absent or ``""``, as API.md says "patch adds"), and runs the mutation twice to prove it idempotent.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.builders import (
    ABSENT,
    KAIROS_FIXED,
    TALOS_EXAMPLE,
    apply_patch,
    make_platform,
    make_pool,
    make_state,
    pairs,
)
from workerclass import admit, resolve

PATH = "/spec/workerClassName"


@dataclass(frozen=True)
class Row:
    id: str
    operation: str
    new: Any  # workerClassName of the request: ABSENT, "" or a name
    old: Any = None  # None: no old object (CREATE); otherwise the stored workerClassName (ABSENT, "", name)
    default: str = "talos"  # the platform's defaultWorkerClass
    patch_op: str | None = None  # expected op on /spec/workerClassName (always add: it also sets ""), None = no patch
    stored: Any = ABSENT  # expected workerClassName after the mutation
    denials: tuple[str, ...] = ()  # expected denial codes (empty: allowed)
    request: dict[str, Any] = field(default_factory=dict)  # other spec overrides of the request
    old_request: dict[str, Any] = field(default_factory=dict)


ROWS = [
    # CREATE with class omitted or empty: admission writes the current platform default, then validates it.
    Row("create-omitted-gets-default", "CREATE", ABSENT, patch_op="add", stored="talos"),
    Row("create-empty-gets-default", "CREATE", "", patch_op="add", stored="talos"),
    Row(
        "create-omitted-default-changed-to-kairos", "CREATE", ABSENT, default="kairos", patch_op="add", stored="kairos"
    ),
    Row("create-empty-default-changed-to-kairos", "CREATE", "", default="kairos", patch_op="add", stored="kairos"),
    Row(
        "create-omitted-default-custom-class",
        "CREATE",
        ABSENT,
        default="talos-example-r1",
        patch_op="add",
        stored="talos-example-r1",
    ),
    Row(
        "create-omitted-default-missing-fails-closed",
        "CREATE",
        ABSENT,
        default="gone",
        patch_op="add",
        stored="gone",
        denials=("ClassNotFound",),
    ),
    # CREATE with an explicit class: preserved and validated.
    Row("create-explicit-talos-kept", "CREATE", "talos", default="kairos", stored="talos"),
    Row("create-explicit-kairos-kept", "CREATE", "kairos", stored="kairos"),
    Row("create-explicit-custom-kept", "CREATE", "talos-example-r1", stored="talos-example-r1"),
    Row("create-explicit-missing-validated", "CREATE", "nope", stored="nope", denials=("ClassNotFound",)),
    Row(
        "create-explicit-validated-for-image",
        "CREATE",
        "kairos-example-v1-35-6-r1",
        stored="kairos-example-v1-35-6-r1",
        request={"version": "v1.34"},
        denials=("VersionMismatch",),
    ),
    # UPDATE of a classless pool, class omitted or empty: the pool remains legacy Talos, no patch.
    Row("update-classless-omitted-stays-classless", "UPDATE", ABSENT, old=ABSENT),
    Row("update-classless-empty-stays-classless", "UPDATE", "", old=ABSENT, stored=""),
    Row("update-classless-stored-empty-omitted", "UPDATE", ABSENT, old=""),
    Row("update-classless-ignores-changed-default", "UPDATE", ABSENT, old=ABSENT, default="kairos"),
    Row(
        "update-classless-full-replace-stays-classless",
        "UPDATE",
        ABSENT,
        old=ABSENT,
        request={"minReplicas": 2, "maxReplicas": 5, "instanceType": "u1.large"},
    ),
    # UPDATE of a classified pool, class omitted or empty: the stored class is restored.
    Row(
        "update-classified-omitted-restored",
        "UPDATE",
        ABSENT,
        old="talos-example-r1",
        patch_op="add",
        stored="talos-example-r1",
    ),
    Row(
        "update-classified-empty-restored",
        "UPDATE",
        "",
        old="talos-example-r1",
        patch_op="add",
        stored="talos-example-r1",
    ),
    Row("update-classified-builtin-talos-empty-restored", "UPDATE", "", old="talos", patch_op="add", stored="talos"),
    Row("update-classified-kairos-omitted-restored", "UPDATE", ABSENT, old="kairos", patch_op="add", stored="kairos"),
    Row(
        "update-classified-restores-stored-not-default",
        "UPDATE",
        ABSENT,
        old="talos-example-r1",
        default="kairos",
        patch_op="add",
        stored="talos-example-r1",
    ),
    Row(
        "update-classified-full-replace-restored",
        "UPDATE",
        ABSENT,
        old="talos-example-r1",
        patch_op="add",
        stored="talos-example-r1",
        request={"minReplicas": 2, "maxReplicas": 5, "instanceType": "u1.large", "kernelModules": []},
        old_request={"talos": {"version": "v1.13.6"}, "kernelModules": [{"name": "nvme_tcp"}]},
    ),
    Row(
        "update-classified-empty-full-replace-restored",
        "UPDATE",
        "",
        old="kairos",
        patch_op="add",
        stored="kairos",
        request={"minReplicas": 3, "maxReplicas": 4},
    ),
    # UPDATE keeping or selecting a class: validated for family and image/override compatibility.
    Row("update-same-class-kept", "UPDATE", "talos-example-r1", old="talos-example-r1", stored="talos-example-r1"),
    Row("update-another-talos-class", "UPDATE", "talos-example-r1", old="talos", stored="talos-example-r1"),
    Row("update-classless-to-talos-class", "UPDATE", "talos-example-r1", old=ABSENT, stored="talos-example-r1"),
    Row(
        "update-kairos-to-fixed-kairos",
        "UPDATE",
        "kairos-example-v1-35-6-r1",
        old="kairos",
        stored="kairos-example-v1-35-6-r1",
    ),
    Row(
        "update-talos-to-kairos-refused",
        "UPDATE",
        "kairos",
        old="talos",
        stored="kairos",
        denials=("BootstrapFamilyChange",),
    ),
    Row(
        "update-kairos-to-talos-refused",
        "UPDATE",
        "talos-example-r1",
        old="kairos",
        stored="talos-example-r1",
        denials=("BootstrapFamilyChange",),
    ),
    Row(
        "update-classless-to-kairos-refused",
        "UPDATE",
        "kairos",
        old=ABSENT,
        stored="kairos",
        denials=("BootstrapFamilyChange",),
    ),
    Row(
        "update-another-class-image-incompatible",
        "UPDATE",
        "kairos-example-v1-35-6-r1",
        old="kairos",
        stored="kairos-example-v1-35-6-r1",
        request={"version": "v1.34"},
        old_request={"version": "v1.34"},
        denials=("VersionMismatch",),
    ),
    Row(
        "update-another-class-override-incompatible",
        "UPDATE",
        "talos-example-r1",
        old="talos",
        stored="talos-example-r1",
        request={"kubevirt": {"osImage": {"factory": {"version": "v1.13.5"}}}},
        denials=("ArtifactConflict",),
    ),
    Row("update-another-class-missing", "UPDATE", "nope", old="talos", stored="nope", denials=("ClassNotFound",)),
]


def _state(row: Row) -> Any:
    return make_state(platform=make_platform(defaultWorkerClass=row.default))


def _request(row: Row) -> tuple[dict[str, Any], dict[str, Any] | None]:
    obj = make_pool(workerClassName=row.new, **row.request)
    old = None if row.old is None else make_pool(workerClassName=row.old, **row.old_request)
    return obj, old


@pytest.mark.parametrize("row", ROWS, ids=[row.id for row in ROWS])
def test_application_api_table(row: Row) -> None:
    state = _state(row)
    obj, old = _request(row)
    before = copy.deepcopy(obj)

    decision = admit(state, row.operation, obj, old=old)

    assert obj == before, "admission must not modify its input"
    assert decision.operation == row.operation
    expected_patch = [] if row.patch_op is None else [{"op": row.patch_op, "path": PATH, "value": row.stored}]
    assert decision.patch == expected_patch
    assert decision.object == apply_patch(obj, decision.patch), "object is the request after the patch"
    assert decision.object["spec"].get("workerClassName", ABSENT) == row.stored
    assert sorted(v.code for v in decision.denials) == sorted(row.denials), [str(v) for v in decision.denials]
    assert decision.allowed is (not row.denials)
    # Everything but the class is left as the tenant wrote it.
    rest = {k: v for k, v in decision.object["spec"].items() if k != "workerClassName"}
    assert rest == {k: v for k, v in obj["spec"].items() if k != "workerClassName"}


@pytest.mark.parametrize("row", ROWS, ids=[row.id for row in ROWS])
def test_application_api_mutation_is_idempotent(row: Row) -> None:
    state = _state(row)
    obj, old = _request(row)
    first = admit(state, row.operation, obj, old=old)
    patched = apply_patch(obj, first.patch)

    second = admit(state, row.operation, patched, old=old)

    assert second.patch == []
    assert second.object == patched
    assert second.allowed is first.allowed
    assert pairs(second.denials) == pairs(first.denials)


def test_denials_of_a_defaulted_create_name_the_stored_class_field() -> None:
    state = make_state(platform=make_platform(defaultWorkerClass="gone"))
    decision = admit(state, "CREATE", make_pool(workerClassName=ABSENT))
    assert ("ClassNotFound", "spec.workerClassName") in pairs(decision.denials)


@pytest.mark.parametrize(
    ("stored", "expected_class", "expected_bootstrap"),
    [("talos-example-r1", "talos-example-r1", "talos"), (ABSENT, None, "talos"), ("kairos", "kairos", "kairos")],
    ids=["classified-talos", "classless", "classified-kairos"],
)
def test_changing_the_platform_default_does_not_retarget_stored_pools(
    stored: Any, expected_class: Any, expected_bootstrap: str
) -> None:
    pool = make_pool("stored", workerClassName=stored)
    for default in ("talos", "kairos", "talos-example-r1"):
        state = make_state([pool], platform=make_platform(defaultWorkerClass=default))
        effective = resolve(state, pool)
        assert (effective.class_name, effective.bootstrap) == (expected_class, expected_bootstrap), default


def test_default_is_a_stored_value_not_a_schema_default() -> None:
    """The stored value survives a later change of the platform default (it was written, not implied)."""
    created = admit(make_state(), "CREATE", make_pool(workerClassName=ABSENT)).object
    assert created is not None and created["spec"]["workerClassName"] == "talos"
    later = make_state([created], platform=make_platform(defaultWorkerClass="kairos"))
    update = admit(later, "UPDATE", make_pool(workerClassName=ABSENT), old=created)
    assert update.patch == [{"op": "add", "path": PATH, "value": "talos"}]
    assert update.allowed, [str(v) for v in update.denials]


@pytest.mark.parametrize("operation", ["CREATE", "UPDATE"])
def test_mutation_never_touches_worker_classes(operation: str) -> None:
    """Only the KubernetesNodes application API mutates; WorkerClass objects are never patched."""
    state = make_state()
    for obj in (TALOS_EXAMPLE, KAIROS_FIXED):
        decision = admit(state, operation, obj, old=obj if operation == "UPDATE" else None)
        assert decision.patch == []
        assert decision.allowed, [str(v) for v in decision.denials]
