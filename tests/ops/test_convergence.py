"""When the worker controller applies (:func:`~workerclass.ops.convergence.apply_reason`): pure, over the
``managedFields`` a real API server writes (associative lists by key, sets by value, atomic lists
whole, ``.`` for a map or item owned as such)."""

from __future__ import annotations

from typing import Any

from workerclass.ops.convergence import apply_reason, managed_by, owns_exactly

MANAGER = "workerclass-controller"

DESIRED: dict[str, Any] = {
    "apiVersion": "cluster.x-k8s.io/v1beta1",
    "kind": "MachineDeployment",
    "metadata": {
        "name": "md",
        "namespace": "tenant",
        "labels": {"pool": "abc"},
        "ownerReferences": [{"apiVersion": "v2", "kind": "HelmRelease", "name": "r", "uid": "u1"}],
    },
    "spec": {
        "clusterName": "c",
        "template": {"spec": {"containers": [{"name": "a", "image": "i", "ports": [{"containerPort": 80}]}]}},
        "finalizers": ["x", "y"],
        "args": ["--one", "--two"],
    },
}

#: what the API server records for DESIRED's apply (ports keyed by containerPort and a defaulted protocol)
FIELDS: dict[str, Any] = {
    "f:metadata": {
        "f:labels": {".": {}, "f:pool": {}},
        "f:ownerReferences": {'k:{"uid":"u1"}': {}},  # an atomic struct: owned whole
    },
    "f:spec": {
        "f:clusterName": {},
        "f:template": {
            "f:spec": {
                "f:containers": {
                    'k:{"name":"a"}': {
                        ".": {},
                        "f:name": {},
                        "f:image": {},
                        "f:ports": {'k:{"containerPort":80,"protocol":"TCP"}': {".": {}, "f:containerPort": {}}},
                    }
                }
            }
        },
        "f:finalizers": {'v:"x"': {}, 'v:"y"': {}},
        "f:args": {},
    },
}


def live(fields: dict[str, Any], **changes: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {**DESIRED, "metadata": {**DESIRED["metadata"], "uid": "server", "resourceVersion": "7"}}
    obj["metadata"]["managedFields"] = [
        {"manager": "capi", "operation": "Update", "fieldsV1": {"f:spec": {"f:replicas": {}}}},
        {"manager": MANAGER, "operation": "Apply", "fieldsType": "FieldsV1", "fieldsV1": fields},
        {"manager": MANAGER, "operation": "Apply", "subresource": "status", "fieldsV1": {"f:status": {}}},
    ]
    obj["spec"] = {**DESIRED["spec"], "replicas": 2, **changes}
    return obj


def test_the_field_set_the_server_records_matches_the_desired_object() -> None:
    assert managed_by(live(FIELDS), MANAGER) == FIELDS
    assert owns_exactly(live(FIELDS), DESIRED, MANAGER)
    assert apply_reason(DESIRED, live(FIELDS), manager=MANAGER, applied=None, digest="d") is None


def test_a_field_we_own_and_no_longer_set_makes_an_apply_due() -> None:
    fields = {**FIELDS, "f:metadata": {**FIELDS["f:metadata"], "f:annotations": {".": {}, "f:dropped": {}}}}
    assert not owns_exactly(live(fields), DESIRED, MANAGER)
    assert apply_reason(DESIRED, live(fields), manager=MANAGER, applied=None, digest="d") == (
        "the fields applied differ from the desired ones at .metadata.annotations"
    )
    item = FIELDS["f:spec"]["f:template"]["f:spec"]["f:containers"]['k:{"name":"a"}']
    extra = {**item, "f:command": {}}
    nested = {
        **FIELDS,
        "f:spec": {**FIELDS["f:spec"], "f:template": {"f:spec": {"f:containers": {'k:{"name":"a"}': extra}}}},
    }
    assert not owns_exactly(live(nested), DESIRED, MANAGER)
    sets = {**FIELDS, "f:spec": {**FIELDS["f:spec"], "f:finalizers": {'v:"x"': {}, 'v:"y"': {}, 'v:"z"': {}}}}
    assert not owns_exactly(live(sets), DESIRED, MANAGER)


def test_a_field_another_writer_took_makes_an_apply_due() -> None:
    spec = {key: value for key, value in FIELDS["f:spec"].items() if key != "f:clusterName"}
    assert not owns_exactly(live({**FIELDS, "f:spec": spec}), DESIRED, MANAGER)


def test_never_applied_by_us_or_absent_or_changed_or_a_value_differs() -> None:
    theirs = live(FIELDS)
    theirs["metadata"]["managedFields"] = theirs["metadata"]["managedFields"][:1]
    assert apply_reason(DESIRED, theirs, manager=MANAGER, applied=None, digest="d") is not None
    assert apply_reason(DESIRED, None, manager=MANAGER, applied=None, digest="d") == "absent"
    assert apply_reason(DESIRED, live(FIELDS), manager=MANAGER, applied="old", digest="d") == (
        "changed since the last apply"
    )
    assert apply_reason(DESIRED, live(FIELDS), manager=MANAGER, applied="d", digest="d") is None
    assert apply_reason(DESIRED, live(FIELDS, clusterName="other"), manager=MANAGER, applied="d", digest="d") == (
        ".spec.clusterName differs"
    )
