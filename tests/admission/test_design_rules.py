"""Rules found by reading the design page and API.md again, each pinned by a test.

- API.md section 3: "Several denials are reported together", also when the class is missing or
  breaks the class rules: the rules that do not depend on the class still run.
- Design page: "After resolving overrides, a conflicting artifact, version or schematic is
  rejected": a class whose baseline alone conflicts is refused on its own CREATE, but a pool whose
  overrides make disk and installer agree resolves.
- Design page: "The built-in names are talos and kairos": a class under a built-in name keeps
  that name's bootstrap family.
- API.md section 6: ``Denied(denials)``.
"""

from __future__ import annotations

import pytest

from tests.builders import (
    KAIROS_FIXED,
    TALOS_EXAMPLE,
    has_denial,
    make_class,
    make_cluster,
    make_platform,
    make_pool,
    make_state,
    pairs,
    platform_talos,
    refused,
    resolved,
)
from workerclass import Denied, resolve
from workerclass.admission import admit, validate


def test_class_not_found_is_reported_with_the_other_denials() -> None:
    state = make_state()
    pool = make_pool(workerClassName="nope", version="v1.31", minReplicas=3, maxReplicas=1)
    found = pairs(refused(state, pool))
    assert ("ClassNotFound", "spec.workerClassName") in found
    assert ("InvalidReplicas", "spec.minReplicas") in found
    assert ("ControlPlaneTooOld", "spec.version") in found  # v1.31 is 4 minors below the v1.35 parent


def test_a_broken_class_is_reported_with_the_other_denials() -> None:
    broken = make_class("broken", "kairos", image={"kubernetesVersion": "v1.35.6"})
    state = make_state(classes=[broken])
    found = pairs(refused(state, make_pool(workerClassName="broken", version="v1.36", minReplicas=-1)))
    assert ("IncompleteImage", "spec.workerClassName") in found
    assert ("InvalidReplicas", "spec.minReplicas") in found
    assert ("ControlPlaneTooOld", "spec.version") in found  # v1.36 is newer than the v1.35 parent


def test_a_missing_class_alone_is_the_only_denial() -> None:
    violations = refused(make_state(), make_pool(workerClassName="nope"))
    assert pairs(violations) == {("ClassNotFound", "spec.workerClassName")}


# A class whose factory disk is pinned to Talos v1.12.4 while the platform's Talos is v1.13.6.
PINNED_DISK = make_class("pinned-disk", kubevirt={"osImage": {"factory": {"version": "v1.12.4"}}})


def test_a_class_whose_baseline_alone_conflicts_is_refused_on_create() -> None:
    decision = admit(make_state(), "CREATE", PINNED_DISK)
    assert not decision.allowed
    assert has_denial(decision.denials, "ArtifactConflict", "spec.kubevirt.osImage.factory.version")


def test_a_pool_whose_overrides_make_that_baseline_agree_resolves() -> None:
    state = make_state(classes=[PINNED_DISK])
    pool = make_pool(workerClassName="pinned-disk", version="v1.34", talos={"version": "v1.12.4"})
    effective = resolved(state, pool)
    assert effective["talos"]["version"] == "v1.12.4"
    assert effective["image"]["version"] == "v1.12.4"


def test_a_pool_that_keeps_the_conflicting_baseline_is_refused_after_resolution() -> None:
    state = make_state(classes=[PINNED_DISK])
    violations = refused(state, make_pool(workerClassName="pinned-disk"))
    assert any(v.code == "ArtifactConflict" for v in violations), [str(v) for v in violations]


@pytest.mark.parametrize(
    ("name", "bootstrap"),
    [pytest.param("talos", "kairos", id="talos-as-kairos"), pytest.param("kairos", "talos", id="kairos-as-talos")],
)
def test_a_builtin_name_keeps_its_family(name: str, bootstrap: str) -> None:
    obj = make_class(name, bootstrap)
    decision = admit(make_state(), "CREATE", obj)
    assert not decision.allowed
    assert has_denial(decision.denials, "Invalid", "spec.bootstrap")
    # A folder that redefines it anyway: pools selecting it fail closed.
    state = make_state(classes=[obj])
    assert has_denial(refused(state, make_pool(workerClassName=name)), "Invalid", "spec.workerClassName")


def test_a_builtin_name_may_be_redefined_within_its_family() -> None:
    obj = make_class("talos", talos={"version": "v1.13.6"})
    assert admit(make_state(), "CREATE", obj).allowed
    assert resolved(make_state(classes=[obj]), make_pool())["class"] == "talos"


def test_denied_carries_denials() -> None:
    with pytest.raises(Denied) as raised:
        resolve(make_state(), make_pool(workerClassName="nope"))
    assert raised.value.denials == raised.value.violations
    assert [v.code for v in raised.value.denials] == ["ClassNotFound"]


def test_class_update_still_checks_immutability_first() -> None:
    changed = make_class("talos-example-r1", talos={"version": "v1.12.4"})
    decision = validate(make_state(), "UPDATE", changed, TALOS_EXAMPLE)
    assert pairs(decision.denials) == {("ClassImmutable", "spec")}


def test_builtin_and_factory_together_are_refused_on_proxmox_too() -> None:
    pool = make_pool(
        cluster="pve", proxmox={"templateTags": ["talos"]}, kubevirt={"osImage": {"builtin": {}, "factory": {}}}
    )
    found = pairs(refused(make_state(), pool))
    assert ("OsImageOnProxmox", "spec.kubevirt.osImage") in found
    assert ("OsImageSourceConflict", "spec.kubevirt.osImage") in found


# Design page: "Classes contain OS and bootstrap settings, not GPU licenses or tenant credentials."
SECRET = "s3cr3t-value"


@pytest.mark.parametrize(
    ("obj", "field"),
    [
        pytest.param(
            make_pool(talos={"registryMirrors": {"docker.io": {"endpoints": [f"https://user:{SECRET}@m.example"]}}}),
            "spec.talos.registryMirrors.docker.io.endpoints[0]",
            id="pool-mirror-endpoint",
        ),
        pytest.param(
            make_class(talos={"imageFactoryURL": f"https://u:{SECRET}@factory.example"}),
            "spec.talos.imageFactoryURL",
            id="class-factory-url",
        ),
        pytest.param(
            make_pool(kubevirt={"osImage": {"factory": {"endpoint": f"https://{SECRET}@factory.example/x"}}}),
            "spec.kubevirt.osImage.factory.endpoint",
            id="pool-factory-endpoint",
        ),
        pytest.param(
            make_class(
                "fixed",
                "kairos",
                image={
                    "kubernetesVersion": "v1.35.6",
                    "reference": f"u:{SECRET}@registry.example.com/w@sha256:" + "a" * 64,
                },
            ),
            "spec.image.reference",
            id="class-image-reference",
        ),
    ],
)
def test_credentials_in_urls_and_references_are_refused_without_echoing_them(obj: dict, field: str) -> None:
    decision = admit(make_state(), "CREATE", obj)
    assert not decision.allowed
    assert has_denial(decision.denials, "Invalid", field), [str(v) for v in decision.denials]
    assert all(SECRET not in v.message for v in decision.denials)


@pytest.mark.parametrize(
    "reference",
    [
        "registry.example.com/workers/kairos-worker@sha256:" + "a" * 64,
        "localhost:5000/kairos@sha256:" + "a" * 64,
        "ghcr.io/org/kairos-worker:v1.35.6@sha256:" + "a" * 64,
        "kairos@sha256:" + "a" * 64,
    ],
)
def test_pinned_references_are_accepted(reference: str) -> None:
    obj = make_class("fixed", "kairos", image={"kubernetesVersion": "v1.35.6", "reference": reference})
    assert admit(make_state(), "CREATE", obj).allowed


def test_an_unpinned_reference_is_still_image_not_pinned_only() -> None:
    obj = make_class("fixed", "kairos", image={"kubernetesVersion": "v1.35.6", "reference": "registry.example.com/w:1"})
    assert pairs(admit(make_state(), "CREATE", obj).denials) == {("ImageNotPinned", "spec.image.reference")}


# Rendered labels, taints and roles must be valid Kubernetes values, or the API server (or Cluster
# API's webhook) refuses the rendered objects after admission allowed the pool.
@pytest.mark.parametrize(
    ("spec", "field"),
    [
        pytest.param(
            {"labels": {"cluster.x-k8s.io/deployment-name": "hijack"}},
            "spec.labels.cluster.x-k8s.io/deployment-name",
            id="cluster-api-label",
        ),
        pytest.param(
            {"labels": {"topology.cluster.x-k8s.io/owned": ""}},
            "spec.labels.topology.cluster.x-k8s.io/owned",
            id="cluster-api-subdomain-label",
        ),
        pytest.param({"labels": {"team": "has space"}}, "spec.labels.team", id="label-value-space"),
        pytest.param({"labels": {"team": "a" * 64}}, "spec.labels.team", id="label-value-64"),
        pytest.param({"labels": {"x" * 64: "a"}}, "spec.labels." + "x" * 64, id="label-name-64"),
        pytest.param({"taints": [{"key": "a b", "effect": "NoSchedule"}]}, "spec.taints[0].key", id="taint-key"),
        pytest.param(
            {"taints": [{"key": "dedicated", "value": "v v", "effect": "NoSchedule"}]},
            "spec.taints[0].value",
            id="taint-value",
        ),
        pytest.param({"roles": ["r" * 64]}, "spec.roles[0]", id="role-64"),
        pytest.param({"storageClass": "Bad Class"}, "spec.storageClass", id="storage-class"),
        pytest.param({"instanceType": "u1 medium"}, "spec.instanceType", id="instance-type"),
    ],
)
def test_values_kubernetes_would_refuse_are_invalid(spec: dict, field: str) -> None:
    decision = admit(make_state(), "CREATE", make_pool(**spec))
    assert not decision.allowed
    assert has_denial(decision.denials, "Invalid", field), [str(v) for v in decision.denials]


def test_valid_labels_taints_and_roles_are_allowed() -> None:
    pool = make_pool(
        labels={"team": "a", "example.com/tier": "gold-1", "empty": ""},
        taints=[{"key": "example.com/dedicated", "value": "gpu", "effect": "NoSchedule"}],
        roles=["ingress-nginx", "r" * 63],
        storageClass="replicated",
        instanceType="u1.medium",
    )
    decision = admit(make_state(), "CREATE", pool)
    assert decision.allowed, [str(v) for v in decision.denials]


def test_a_pool_cannot_move_to_another_parent_cluster() -> None:
    state = make_state(clusters=[make_cluster(), make_cluster("other")])
    old = make_pool()
    decision = validate(state, "UPDATE", make_pool(cluster="other"), old)
    assert has_denial(decision.denials, "Invalid", "spec.cluster"), [str(v) for v in decision.denials]
    assert validate(state, "UPDATE", make_pool(maxReplicas=5), old).allowed


# Pool names: InvalidPoolName on CREATE only (tests/admission/test_chart_codes.py).


def test_gpus_and_storage_class_on_proxmox_are_warned_about() -> None:
    pool = make_pool(
        cluster="pve", proxmox={"templateTags": ["talos"]}, gpus=[{"name": "nvidia.com/GA100"}], storageClass="fast"
    )
    decision = admit(make_state(), "CREATE", pool)
    assert decision.allowed, [str(v) for v in decision.denials]
    assert any("gpus are not attached on Proxmox" in warning for warning in decision.warnings)
    assert any("storageClass is not used on Proxmox" in warning for warning in decision.warnings)


def test_a_pool_and_its_backing_release_are_one_pool() -> None:
    """Cozystack stores KubernetesNodes N as HelmRelease kubernetes-nodes-N: one pool, not two."""
    from tests.builders import make_release

    pool, release = make_pool("twin"), make_release("twin", maxReplicas=7)
    state = make_state([pool, release])
    assert [p.kind for p in state.sorted_pools() if p.name.endswith("twin")] == ["KubernetesNodes"]
    assert state.stored_values(pool["metadata"]["namespace"], pool["metadata"]["name"]) == release["spec"]["values"]
    assert validate(state, "CREATE", pool).allowed


def test_a_pool_override_conflicting_with_the_class_disk_is_charged_to_the_pool_field() -> None:
    """The class pins a golden disk of Talos v1.13.6; the pool's own talos.version is what conflicts."""
    klass = make_class("golden-b", kubevirt={"osImage": {"builtin": {"version": "v1.13.6"}}})
    state = make_state(classes=[klass])
    pool = make_pool(workerClassName="golden-b", version="v1.34", talos={"version": "v1.12.4"})
    violations = refused(state, pool)
    assert has_denial(violations, "ArtifactConflict", "spec.talos.version"), [str(v) for v in violations]


def test_a_pool_disk_conflicting_with_the_pool_talos_is_charged_to_the_disk_field() -> None:
    pool = make_pool(
        version="v1.34", talos={"version": "v1.12.4"}, kubevirt={"osImage": {"factory": {"version": "v1.13.6"}}}
    )
    violations = refused(make_state(), pool)
    assert has_denial(violations, "ArtifactConflict", "spec.kubevirt.osImage.factory.version"), [
        str(v) for v in violations
    ]


def _terminating(obj: dict) -> dict:
    out = {**obj, "metadata": {**obj["metadata"], "deletionTimestamp": "2026-11-29T20:00:00Z"}}
    return out


def test_a_pool_cannot_newly_select_a_class_being_deleted() -> None:
    state = make_state(classes=[_terminating(TALOS_EXAMPLE)])
    decision = admit(state, "CREATE", make_pool(workerClassName="talos-example-r1"))
    assert has_denial(decision.denials, "ClassNotFound", "spec.workerClassName"), [str(v) for v in decision.denials]
    old = make_pool(workerClassName="talos")
    decision = admit(state, "UPDATE", make_pool(workerClassName="talos-example-r1"), old)
    assert has_denial(decision.denials, "ClassNotFound", "spec.workerClassName")
    # a pool that already selects it keeps working while the class waits for it
    stored = make_pool(workerClassName="talos-example-r1")
    assert admit(state, "UPDATE", make_pool(workerClassName="talos-example-r1", maxReplicas=5), stored).allowed


def test_class_metadata_updates_are_allowed_even_if_the_platform_changed_since() -> None:
    """A finalizer added or removed is an UPDATE with the same spec: never refused by today's rules."""
    klass = make_class("golden", talos={"schematicID": "0f" * 32}, kubevirt={"osImage": {"builtin": {}}})
    state = make_state(classes=[klass])
    assert admit(state, "CREATE", klass).allowed
    retired = make_state(classes=[klass], platform=make_platform(talos=platform_talos(goldens=[])))
    assert not admit(retired, "CREATE", klass).allowed  # today the golden is gone
    with_finalizer = {**klass, "metadata": {**klass["metadata"], "finalizers": ["example.com/x"]}}
    assert validate(retired, "UPDATE", klass, with_finalizer).allowed


def test_deleting_the_unused_platform_default_class_is_allowed_with_a_warning() -> None:
    state = make_state(platform=make_platform(defaultWorkerClass="talos-example-r1"))
    decision = validate(state, "DELETE", None, TALOS_EXAMPLE)
    assert decision.allowed
    assert any("platform default" in warning for warning in decision.warnings)
    assert validate(state, "DELETE", None, make_class("unused")).warnings == []
    # a built-in name stays resolvable (the package's own class takes over): no warning
    assert validate(make_state(), "DELETE", None, make_class("talos")).warnings == []


def test_check_keeps_a_stored_pool_whose_class_waits_to_be_deleted() -> None:
    """``check`` admits stored pools as CREATEs: one that already selects the class is not new to it."""
    stored = make_pool("kept", workerClassName="talos-example-r1")
    state = make_state([stored], classes=[_terminating(TALOS_EXAMPLE), KAIROS_FIXED])
    assert admit(state, "CREATE", stored).allowed
    assert not admit(state, "CREATE", make_pool("fresh", workerClassName="talos-example-r1")).allowed


def test_a_malformed_old_object_is_not_a_crash() -> None:
    for old in ([1], "x", 3):
        decision = admit(make_state(), "UPDATE", make_pool(), old)  # type: ignore[arg-type]
        assert isinstance(decision.allowed, bool)


@pytest.mark.parametrize(
    ("labels", "allowed"),
    [
        ({"node.cluster.x-k8s.io/pool": "gpu"}, True),  # the prefix Cluster API copies to Nodes
        ({"mycluster.x-k8s.io/a": "b"}, True),
        ({"cluster.x-k8s.io/cluster-name": "other"}, False),
    ],
)
def test_only_cluster_api_own_label_prefixes_are_reserved(labels: dict, allowed: bool) -> None:
    assert admit(make_state(), "CREATE", make_pool(labels=labels)).allowed is allowed


def test_text_that_mentions_a_private_key_is_still_validated_as_a_label() -> None:
    decision = admit(make_state(), "CREATE", make_pool(labels={"a": "NO PRIVATE KEY"}))
    assert has_denial(decision.denials, "Invalid", "spec.labels.a"), [str(v) for v in decision.denials]
    taint = {"key": "a", "value": "MY PRIVATE KEY", "effect": "NoSchedule"}
    decision = admit(make_state(), "CREATE", make_pool(taints=[taint]))
    assert has_denial(decision.denials, "Invalid", "spec.taints[0].value")


@pytest.mark.parametrize(
    ("obj", "field"),
    [
        pytest.param(
            make_class(
                "fixed", "kairos", image={"kubernetesVersion": "v1.35.6", "reference": f"robot:{SECRET}@r.example/k:v1"}
            ),
            "spec.image.reference",
            id="unpinned-reference-with-credentials",
        ),
        pytest.param(
            make_class(talos={"installerRepository": f"robot:{SECRET}@factory.example/installer"}),
            "spec.talos.installerRepository",
            id="installer-repository",
        ),
        pytest.param(
            make_pool(talos={"registryMirrors": {"docker.io": {"endpoints": [f"https://user:{SECRET}/x@m.example"]}}}),
            "spec.talos.registryMirrors.docker.io.endpoints[0]",
            id="url-with-slash-in-password",
        ),
    ],
)
def test_values_that_may_carry_credentials_are_never_quoted(obj: dict, field: str) -> None:
    decision = admit(make_state(), "CREATE", obj)
    assert has_denial(decision.denials, "Invalid", field), [str(v) for v in decision.denials]
    assert all(SECRET not in v.message for v in decision.denials)


def test_a_url_port_must_be_a_number() -> None:
    pool = make_pool(talos={"registryMirrors": {"docker.io": {"endpoints": ["https://mirror.example:notaport"]}}})
    assert has_denial(
        admit(make_state(), "CREATE", pool).denials, "Invalid", "spec.talos.registryMirrors.docker.io.endpoints[0]"
    )
