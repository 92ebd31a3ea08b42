"""Keys no one reads are said, not refused; keys whose meaning is refused stay refusals.

Cozystack's API stores a pool's values without pruning and the chart ignores keys it does not
know, so a pool holding a stale or unknown key renders today: refusing it would freeze the pool
(with ``failurePolicy: Fail`` even a scale-up). Such a key, at the top or nested, is a warning
that names it (when it has a field name's shape) and the known key it is closest to, on classless
and classified pools, CREATE and UPDATE, KubernetesNodes and HelmRelease. Talos settings on a
Kairos pool, and pool keys a ComputePlane node group does not carry, stay refusals; our own
resources (WorkerClass) keep refusing unknown fields.
"""

from __future__ import annotations

import copy
import difflib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.builders import (
    make_class,
    make_compute_plane,
    make_pool,
    make_release,
    make_state,
    pairs,
)
from workerclass import admit
from workerclass.model import reader as reader_module
from workerclass.model.pool import CHART_KEYS
from workerclass.model.reader import MAX_NAMED_UNKNOWN

#: (spec overrides, the path the warning names, the known key it suggests or None)
UNKNOWN = {
    "top-level": ({"someOldKey": True}, "someOldKey", None),
    "top-level-typo": ({"maxReplica": 4}, "maxReplica", "maxReplicas"),
    "top-level-case": ({"workerclassname": "talos"}, "workerclassname", "workerClassName"),
    "kubelet": ({"kubelet": {"extraArg": "x"}}, "kubelet.extraArg", None),
    "kubelet-typo": ({"kubelet": {"evictionHardMemroy": "5%"}}, "kubelet.evictionHardMemroy", "evictionHardMemory"),
    "resources": ({"resources": {"cpu": "2", "memory": "4Gi", "gpu": 1}}, "resources.gpu", None),
    "gpus": ({"gpus": [{"name": "nvidia.com/AD102GL_L40S", "count": 2}]}, "gpus[0].count", None),
    "images": ({"images": {"kubectl": "", "talosctl": "x"}}, "images.talosctl", None),
    "talos": ({"talos": {"versoin": "v1.13.6"}}, "talos.versoin", "version"),
    "kernel-modules": ({"kernelModules": [{"name": "nvme_tcp", "options": []}]}, "kernelModules[0].options", None),
    "os-image": ({"kubevirt": {"osImage": {"factory": {}, "golden": {}}}}, "kubevirt.osImage.golden", None),
    "taints": ({"taints": [{"key": "a", "effect": "NoSchedule", "operator": "Exists"}]}, "taints[0].operator", None),
}


def _pool(kind: str, classified: bool, spec: dict[str, Any]) -> dict[str, Any]:
    if kind == "HelmRelease":
        return make_release("md1", **({"workerClassName": "talos"} if classified else {}), **spec)
    return make_pool("md1", **({} if classified else {"workerClassName": None}), **spec)


@pytest.mark.parametrize(("spec", "path", "closest"), UNKNOWN.values(), ids=UNKNOWN.keys())
@pytest.mark.parametrize("kind", ["KubernetesNodes", "HelmRelease"])
@pytest.mark.parametrize("classified", [False, True], ids=["classless", "classified"])
@pytest.mark.parametrize("operation", ["CREATE", "UPDATE"])
def test_an_unknown_key_is_a_warning_naming_it(
    spec: dict[str, Any], path: str, closest: str | None, kind: str, classified: bool, operation: str
) -> None:
    obj = _pool(kind, classified, spec)
    base = "spec.values" if kind == "HelmRelease" else "spec"
    old = copy.deepcopy(obj) if operation == "UPDATE" else None
    state = make_state([obj] if old is not None else [])
    decision = admit(state, operation, obj, old)
    assert decision.allowed, [str(v) for v in decision.denials]
    said = [w for w in decision.warnings if w.startswith(f"{base}.{path}: unknown field")]
    assert len(said) == 1, decision.warnings
    assert (f"did you mean {closest}?" in said[0]) if closest else ("did you mean" not in said[0])


def test_a_key_that_may_be_a_secret_is_not_named() -> None:
    token = "ghp_" + "a1B2c3D4" * 5
    decision = admit(make_state(), "CREATE", make_pool("md1", **{token: "x"}))
    assert decision.allowed
    (said,) = [w for w in decision.warnings if "unknown field" in w]
    assert token not in said and said.startswith("spec: has an unknown field (its name is not shown)")


def test_talos_settings_on_kairos_stay_refused() -> None:
    pool = make_pool("md1", workerClassName="kairos", talos={"version": "v1.13.6"})
    assert ("TalosSettingOnKairos", "spec.talos.version") in pairs(admit(make_state(), "CREATE", pool).denials)


@pytest.mark.parametrize("key", ["workerClassName", "version", "talos", "kernelModules", "sshKeys"])
def test_a_pool_key_outside_the_compute_plane_allowlist_stays_refused(key: str) -> None:
    plane = make_compute_plane(node_groups={"workers": {"maxReplicas": 2, key: "x"}})
    assert ("NotAllowedInComputePlane", f"spec.nodeGroups.workers.{key}") in pairs(
        admit(make_state(), "CREATE", plane).denials
    )


def test_a_key_no_pool_knows_in_a_compute_plane_node_group_is_a_warning() -> None:
    plane = make_compute_plane(node_groups={"workers": {"maxReplicas": 2, "maxReplica": 3, "kubelet": {"x": "1"}}})
    decision = admit(make_state(), "CREATE", plane)
    assert decision.allowed, [str(v) for v in decision.denials]
    assert any(
        w.startswith("spec.nodeGroups.workers.maxReplica: unknown field (did you mean maxReplicas?)")
        for w in decision.warnings
    )
    assert any(w.startswith("spec.nodeGroups.workers.kubelet.x: unknown field") for w in decision.warnings)


def test_a_worker_class_keeps_refusing_unknown_fields() -> None:
    decision = admit(make_state(), "CREATE", make_class("custom", talos={"versoin": "v1.13.6"}))
    assert ("Invalid", "spec.talos.versoin") in pairs(decision.denials)
    assert any("did you mean version?" in v.message for v in decision.denials)


#: What the design page refuses, written in a pool: (spec overrides, code, field below the values)
DESIGN_REFUSED = {
    "bootstrap-other-family": ({"bootstrap": "kairos"}, "BootstrapFamilyChange", "bootstrap"),
    "bootstrap-same-family": ({"bootstrap": "talos"}, "BootstrapFamilyChange", "bootstrap"),
    "fixed-image-reference": (
        {"image": {"reference": "registry.example.com/w@sha256:" + "3f" * 32}},
        "TenantImageSetting",
        "image.reference",
    ),
    "fixed-image-version": (
        {"image": {"kubernetesVersion": "v1.35.6"}},
        "TenantImageSetting",
        "image.kubernetesVersion",
    ),
    "pull-secret": ({"imagePullSecrets": [{"name": "registry"}]}, "TenantImageSetting", "imagePullSecrets"),
}


@pytest.mark.parametrize(("spec", "code", "path"), DESIGN_REFUSED.values(), ids=DESIGN_REFUSED.keys())
@pytest.mark.parametrize("kind", ["KubernetesNodes", "HelmRelease"])
@pytest.mark.parametrize("classified", [False, True], ids=["classless", "classified"])
def test_what_the_design_refuses_is_a_denial_not_an_unknown_key(
    spec: dict[str, Any], code: str, path: str, kind: str, classified: bool
) -> None:
    """No override changes the family, a fixed image is the class's, and this interface accepts no
    tenant pull Secret: each is refused with its code, never said to have no effect."""
    obj = _pool(kind, classified, spec)
    base = "spec.values" if kind == "HelmRelease" else "spec"
    decision = admit(make_state(), "CREATE", obj)
    assert (code, f"{base}.{path}") in pairs(decision.denials), [str(v) for v in decision.denials]
    assert not [w for w in decision.warnings if "no effect" in w], decision.warnings


def test_the_chart_reads_name_override() -> None:
    """The chart's ``kubernetes.name`` reads ``nameOverride`` (not in its values schema): no
    "no effect" warning for it, which would be untrue."""
    decision = admit(make_state(), "CREATE", make_pool("md1", nameOverride="workers"))
    assert decision.allowed and not [w for w in decision.warnings if "nameOverride" in w], decision.warnings


@pytest.mark.parametrize("value", ["50Gi", ""], ids=["set", "empty"])
def test_ephemeral_storage_in_a_compute_plane_node_group_is_refused(value: str) -> None:
    """The ComputePlane passes unlisted node-group fields to the kubernetes chart, whose render fails
    on ``ephemeralStorage`` (whatever its value): refused with that chart's reason."""
    plane = make_compute_plane(
        node_groups={"md0": {"maxReplicas": 2, "roles": ["ingress-nginx"], "ephemeralStorage": value}}
    )
    decision = admit(make_state(), "CREATE", plane)
    (denial,) = [v for v in decision.denials if v.field == "spec.nodeGroups.md0.ephemeralStorage"]
    assert denial.code == "NotAllowedInComputePlane"
    assert "diskSize" in denial.message and "kubernetes chart" in denial.message
    assert not [w for w in decision.warnings if "ephemeralStorage" in w]


def test_a_compute_plane_unknown_key_names_the_chart_that_ignores_it() -> None:
    """A node group's unknown key reaches the kubernetes chart (not workerclass's reading): the
    warning says that chart does not read it."""
    plane = make_compute_plane(node_groups={"workers": {"maxReplicas": 2, "someOldKey": 1}})
    (said,) = [w for w in admit(make_state(), "CREATE", plane).warnings if "someOldKey" in w]
    assert "kubernetes chart" in said and "neither the chart nor workerclass" not in said


# --------------------------------------------------------------------------- many unknown keys


def test_past_twenty_unknown_keys_one_line_counts_the_rest() -> None:
    """Each named key costs a spelling search and a line of the answer: a pool of thousands of unknown
    keys is said in 21 lines, the first 20 keys in the values' order and one that counts the rest."""
    extra = {f"oldKey{index}": index for index in range(MAX_NAMED_UNKNOWN + 7)}
    decision = admit(make_state(), "CREATE", make_pool("md1", **extra))
    assert decision.allowed, [str(v) for v in decision.denials]
    said = [w for w in decision.warnings if "unknown field" in w]
    assert [w.split(":", 1)[0] for w in said[:MAX_NAMED_UNKNOWN]] == [
        f"spec.oldKey{index}" for index in range(MAX_NAMED_UNKNOWN)
    ]
    assert said[MAX_NAMED_UNKNOWN:] == [
        "spec: 7 more unknown fields (their names are not shown): "
        "neither the chart nor workerclass reads it, so it has no effect"
    ]


def test_exactly_twenty_unknown_keys_are_all_named() -> None:
    extra = {f"oldKey{index}": index for index in range(MAX_NAMED_UNKNOWN)}
    said = [w for w in admit(make_state(), "CREATE", make_pool("md1", **extra)).warnings if "unknown field" in w]
    assert len(said) == MAX_NAMED_UNKNOWN and not [w for w in said if "more unknown fields" in w]


def test_a_worker_class_with_many_unknown_fields_is_refused_with_a_count() -> None:
    extra = {f"versoin{index}": "x" for index in range(MAX_NAMED_UNKNOWN + 3)}
    decision = admit(make_state(), "CREATE", make_class("custom", talos=extra))
    unknown = [v for v in decision.denials if v.field.startswith("spec.talos")]
    assert len(unknown) == MAX_NAMED_UNKNOWN + 1
    assert unknown[-1].field == "spec.talos"
    assert unknown[-1].message.startswith("has 3 more unknown fields (their names are not shown); expected one of: ")


def test_thousands_of_unknown_keys_are_read_in_one_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the named keys are searched for a spelling (the search is what made a wide mapping slow)."""
    searched: list[str] = []
    real = reader_module._closest

    def counting(key: str, known: frozenset[str]) -> str | None:
        searched.append(key)
        return real(key, known)

    monkeypatch.setattr(reader_module, "_closest", counting)
    extra = {f"k{index}": 1 for index in range(5000)}
    decision = admit(make_state(), "CREATE", make_pool("md1", **extra))
    assert decision.allowed
    assert len(searched) == MAX_NAMED_UNKNOWN


@settings(max_examples=300, deadline=None)
@given(
    key=st.one_of(
        st.text(alphabet="abcdefghijklmnopqrstuvwxyzRMN", min_size=0, max_size=60),
        st.sampled_from(sorted(CHART_KEYS)).map(lambda k: k + "x" * 7),
        st.sampled_from(sorted(CHART_KEYS)).flatmap(lambda k: st.integers(0, len(k)).map(lambda n: k[:n] + k)),
    )
)
def test_a_long_key_is_the_typo_of_no_known_key(key: str) -> None:
    """The length cut-off gives difflib's answer: past 1.5 times the longest known key no ratio reaches 0.8."""
    known = frozenset(CHART_KEYS)
    folded = {name.lower(): name for name in known}
    if key.lower() in folded:
        expected: str | None = folded[key.lower()]
    else:
        match = difflib.get_close_matches(key.lower(), list(folded), n=1, cutoff=0.8)
        expected = folded[match[0]] if match else None
    assert reader_module._closest(key, known) == expected
