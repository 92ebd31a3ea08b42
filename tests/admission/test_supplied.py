"""What the API filled in is not what the tenant supplied.

UPDATEs are built exactly as Cozystack's API builds them (``rest.go``): the old object is the
stored values read through Get, which applies the schema's defaults (``rest_defaulting.go``);
the new object is the request applied onto that read. The State holds what was really
written: the backing HelmRelease ``kubernetes-nodes-<name>`` and, as the webhook's cache lists
it through the API, the KubernetesNodes with the defaults applied.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.builders import (
    CHART_SCHEMATIC,
    CLUSTER,
    NAMESPACE,
    SSH_KEY,
    apply_patch,
    make_class,
    make_cluster,
    make_state,
    pool_name,
)
from workerclass import State, admit, mutate, resolve
from workerclass.chart.schema import values_schema
from workerclass.chart.values import chart_input
from workerclass.rules.supplied import api_defaults, api_filled_paths, apply_schema_defaults

NAME = pool_name("md1")
PINNED = make_class("talos-pinned", talos={"version": "v1.13.5"})


def stored_pool(values: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "apps.cozystack.io/v1alpha1",
        "kind": "KubernetesNodes",
        "metadata": {"name": NAME, "namespace": NAMESPACE},
        "spec": copy.deepcopy(values),
    }


def backing_release(values: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {
            "name": f"kubernetes-nodes-{NAME}",
            "namespace": NAMESPACE,
            "labels": {
                "apps.cozystack.io/application.kind": "KubernetesNodes",
                "apps.cozystack.io/application.name": NAME,
            },
        },
        "spec": {"values": copy.deepcopy(values)},
    }


def get(values: dict[str, Any]) -> dict[str, Any]:
    """Get: the stored values with the schema's defaults applied (``applySpecDefaults``)."""
    return stored_pool(apply_schema_defaults(copy.deepcopy(values), values_schema()))


def update(stored: dict[str, Any], request: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(new, old)`` of an UPDATE: the request (a merge patch of the spec) applied onto Get."""
    old = get(stored)
    new = copy.deepcopy(old)
    for key, value in request.items():
        if value is None:
            new["spec"].pop(key, None)
        else:
            new["spec"][key] = copy.deepcopy(value)
    return new, old


def state_for(stored: dict[str, Any]) -> State:
    return make_state([backing_release(stored), get(stored)], classes=[PINNED])


def test_get_fills_the_chart_defaults_as_the_api_does() -> None:
    old = get({"cluster": CLUSTER})["spec"]
    assert old["talos"] == {
        "version": "v1.13.6",
        "schematicID": CHART_SCHEMATIC,
        "imageFactoryURL": "https://factory.talos.dev",
        "installerRepository": "factory.talos.dev/installer",
        "registryMirrors": {},
    }
    assert old["kubelet"] == {"evictionHardMemory": "7%", "evictionSoftMemory": "10%"}
    assert (old["logSerialConsole"], old["maxUnhealthy"], old["images"]) == (False, "50%", {"kubectl": ""})
    assert api_defaults()["version"] == "v1.35"


def test_the_backing_release_is_the_stored_record_not_a_second_pool() -> None:
    stored = {"cluster": CLUSTER, "maxReplicas": 3}
    state = state_for(stored)
    assert state.stored_values(NAMESPACE, NAME) == stored
    assert [p.kind for p in state.sorted_pools() if p.name.endswith("md1")] == ["KubernetesNodes"]


# --------------------------------------------------------------------------- classless


CLASSLESS = {"cluster": CLUSTER, "minReplicas": 1, "maxReplicas": 3, "roles": ["ingress-nginx"]}


def test_classless_update_gets_no_patch_and_resolves_without_the_filled_values() -> None:
    new, old = update(CLASSLESS, {"maxReplicas": 5})
    state = state_for(CLASSLESS)
    decision = admit(state, "UPDATE", new, old)
    assert decision.allowed, [str(v) for v in decision.denials]
    assert decision.patch == []  # API.md: stays classless; no patch
    effective = resolve(state, _supplied(state, new, old))
    assert effective.class_name is None
    assert dict(effective.values) == {**CLASSLESS, "maxReplicas": 5}


def _supplied(state: State, new: dict[str, Any], old: dict[str, Any]) -> dict[str, Any]:
    from workerclass.admission import supplied_object

    return dict(supplied_object(state, "UPDATE", new, old))


def test_classless_update_resolves_to_the_same_talos_settings_either_way() -> None:
    new, old = update(CLASSLESS, {"maxReplicas": 5})
    state = state_for(CLASSLESS)
    stripped = resolve(state, _supplied(state, new, old))
    verbatim = resolve(state, new)
    assert stripped.talos == verbatim.talos
    assert (stripped.kubernetes_version, stripped.installer_image) == (
        verbatim.kubernetes_version,
        verbatim.installer_image,
    )
    # the chart coalesces values.yaml over both: the same values, but for the kubelet eviction
    # defaults the schema documents and the chart's template applies when they are absent
    with_filled = dict(chart_input(new["spec"], namespace=NAMESPACE, release=f"kubernetes-nodes-{NAME}").values)
    without = dict(chart_input(stripped.values, namespace=NAMESPACE, release=f"kubernetes-nodes-{NAME}").values)
    assert with_filled.pop("kubelet") == {"evictionHardMemory": "7%", "evictionSoftMemory": "10%"}
    assert without.pop("kubelet") == {}
    assert with_filled == without


def test_classless_update_renders_the_same_with_or_without_the_filled_values() -> None:
    """The oracle renders the chart for both: byte-identical objects."""
    from tests.chart.oracle import get_oracle, require_oracle

    require_oracle()
    new, old = update(CLASSLESS, {"maxReplicas": 5})
    state = state_for(CLASSLESS)
    stripped = resolve(state, _supplied(state, new, old)).values
    oracle = get_oracle()
    release = f"kubernetes-nodes-{NAME}"
    a = oracle.render(new["spec"], release=release, namespace=NAMESPACE)
    b = oracle.render(dict(stripped), release=release, namespace=NAMESPACE)
    assert a.ok and b.ok, (a.error, b.error)
    assert a.objects == b.objects


# --------------------------------------------------------------------------- classified Talos


PINNED_POOL = {"cluster": CLUSTER, "workerClassName": "talos-pinned", "version": "v1.35", "maxReplicas": 3}


@pytest.mark.parametrize(
    "request_",
    [{"maxReplicas": 5}, {"workerClassName": None, "maxReplicas": 5}, {"workerClassName": ""}],
    ids=["scale", "class-omitted", "class-empty"],
)
def test_api_filled_talos_version_never_overrides_the_class(request_: dict[str, Any]) -> None:
    new, old = update(PINNED_POOL, request_)
    assert new["spec"]["talos"]["version"] == "v1.13.6"  # what the API filled in
    state = state_for(PINNED_POOL)
    decision = admit(state, "UPDATE", new, old)
    assert decision.allowed, [str(v) for v in decision.denials]
    mutated = apply_patch(new, decision.patch)
    assert mutated == decision.object
    assert mutated["spec"].get("workerClassName") == "talos-pinned"
    assert "talos" not in mutated["spec"] and "kubelet" not in mutated["spec"] and "images" not in mutated["spec"]
    removed = {op["path"] for op in decision.patch if op["op"] == "remove"}
    assert {"/spec/talos", "/spec/kubelet", "/spec/logSerialConsole", "/spec/storageClass"} <= removed
    assert "/spec/version" not in removed and "/spec/maxReplicas" not in removed  # the stored values hold them
    if decision.patch[0]["op"] == "add":
        assert decision.patch[0]["path"] == "/spec/workerClassName"  # the class op comes first
    assert resolve(state, mutated).talos.version == "v1.13.5"  # type: ignore[union-attr]
    # idempotent: the mutated object needs no further patch
    assert mutate(state, "UPDATE", mutated, old).patch == []


def test_validation_alone_also_ignores_what_the_api_filled() -> None:
    """The validating webhook may see the object before (or without) the mutation."""
    from workerclass import validate

    new, old = update(PINNED_POOL, {"maxReplicas": 5})
    decision = validate(state_for(PINNED_POOL), "UPDATE", new, old)
    assert decision.allowed, [str(v) for v in decision.denials]


def test_a_stored_value_equal_to_the_default_stays_supplied() -> None:
    written = {**PINNED_POOL, "talos": {"version": "v1.13.6"}}
    new, old = update(written, {"maxReplicas": 5})
    state = state_for(written)
    decision = admit(state, "UPDATE", new, old)
    removed = {op["path"] for op in decision.patch}
    assert "/spec/talos/version" not in removed and "/spec/talos" not in removed
    assert "/spec/talos/schematicID" in removed
    assert resolve(state, decision.object).talos.version == "v1.13.6"  # type: ignore[arg-type,union-attr]


def test_a_value_that_differs_from_the_default_is_supplied() -> None:
    new, old = update(PINNED_POOL, {"maxReplicas": 5})
    new["spec"]["talos"]["version"] = "v1.13.4"
    state = state_for(PINNED_POOL)
    decision = admit(state, "UPDATE", new, old)
    assert resolve(state, decision.object).talos.version == "v1.13.4"  # type: ignore[arg-type,union-attr]
    paths = api_filled_paths(new["spec"], PINNED_POOL)
    assert ("talos", "version") not in paths and ("talos", "schematicID") in paths


# --------------------------------------------------------------------------- Kairos


KAIROS_POOL = {
    "cluster": CLUSTER,
    "workerClassName": "kairos",
    "version": "v1.35",
    "minReplicas": 1,
    "sshKeys": [SSH_KEY],
}


def test_kairos_update_is_no_talos_setting_on_kairos() -> None:
    new, old = update(KAIROS_POOL, {"maxReplicas": 4})
    assert new["spec"]["talos"]["schematicID"] == CHART_SCHEMATIC
    state = state_for(KAIROS_POOL)
    decision = admit(state, "UPDATE", new, old)
    assert decision.allowed, [str(v) for v in decision.denials]
    assert {"op": "remove", "path": "/spec/talos"} in decision.patch
    assert mutate(state, "UPDATE", decision.object, old).patch == []  # type: ignore[arg-type]


def test_kairos_create_with_talos_values_written_is_refused() -> None:
    """On CREATE the spec is as sent: a Talos value written on a Kairos pool is supplied."""
    obj = stored_pool({**KAIROS_POOL, "talos": {"version": "v1.13.6"}})
    decision = admit(make_state(), "CREATE", obj)
    assert any(v.code == "TalosSettingOnKairos" and v.field == "spec.talos.version" for v in decision.denials)


def test_kairos_update_without_a_stored_record_takes_the_talos_defaults_for_api_filled() -> None:
    """No backing HelmRelease in State: a Kairos pool's Talos-only values equal to the chart's
    defaults are the API's read (a CREATE with them is refused, so the tenant never wrote them)."""
    new, old = update(KAIROS_POOL, {"maxReplicas": 4})
    state = make_state([make_cluster()])
    decision = admit(state, "UPDATE", new, old)
    assert decision.allowed, [str(v) for v in decision.denials]
    stored = make_state([stored_pool(KAIROS_POOL)])  # a STATE folder holding the KubernetesNodes
    assert admit(stored, "UPDATE", new, old).allowed
    # a Talos value of the tenant's own (not the chart default) is still refused
    own, _ = update(KAIROS_POOL, {"talos": {**new["spec"]["talos"], "version": "v1.13.5"}})
    assert any(v.code == "TalosSettingOnKairos" for v in admit(state, "UPDATE", own, old).denials)


def test_helm_release_updates_are_as_written() -> None:
    """HelmReleases are written directly, without the API: everything present is supplied."""
    values = {**KAIROS_POOL, "talos": {"version": "v1.13.6"}}
    release = backing_release(values)
    release["metadata"]["name"] = f"kubernetes-nodes-{CLUSTER}-direct"
    before = copy.deepcopy(release)
    del before["spec"]["values"]["talos"]
    decision = admit(make_state(), "UPDATE", release, before)
    assert any(v.code == "TalosSettingOnKairos" for v in decision.denials)


def test_a_pool_listed_with_the_defaults_resolves_from_its_release() -> None:
    """The webhook's cache lists KubernetesNodes through the API (defaults applied): a State
    resolves the pool from its backing release, so the class baseline is not overridden."""
    state = state_for(PINNED_POOL)
    record = state.pool(f"{NAMESPACE}/{NAME}")
    assert record is not None and "talos" not in record.values
    assert resolve(state, record).talos.version == "v1.13.5"  # type: ignore[union-attr]
