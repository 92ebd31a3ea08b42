"""Property tests: resolution and admission never raise on arbitrary pool dicts, the mutation is
idempotent on anything, and a pool that supplies nothing resolves exactly to its class baseline.
"""

from __future__ import annotations

import contextlib
import copy
import os
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.builders import (
    API_CODES,
    CERTIFICATE,
    FACTORY_URL,
    INSTALLER_REPOSITORY,
    NVIDIA_GPU,
    PRIVATE_KEY,
    SCHEMATIC_A,
    SCHEMATIC_B,
    SCHEMATIC_C,
    SSH_KEY,
    TALOS_VERSION,
    apply_patch,
    factory_url,
    make_class,
    make_compute_plane,
    make_platform,
    make_pool,
    make_release,
    make_state,
    view,
)
from workerclass import Denied, admit, resolve
from workerclass.resolve import resolve_pool
from workerclass.state import State

#: ``CORE_EXAMPLES=3000 pytest tests/resolve`` for a thorough local run; the default keeps the suite fast.
EXAMPLES = int(os.environ.get("CORE_EXAMPLES", "100"))
FAST = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])

STATE = make_state([make_pool("stored", workerClassName="talos-example-r1")])
KAIROS_STATE = make_state(platform=make_platform(defaultWorkerClass="kairos"))

POOL_KEYS = [
    "cluster",
    "workerClassName",
    "version",
    "minReplicas",
    "maxReplicas",
    "instanceType",
    "resources",
    "diskSize",
    "storageClass",
    "roles",
    "labels",
    "taints",
    "maxUnhealthy",
    "nodeStartupTimeout",
    "readyUnknownTimeout",
    "readyFalseTimeout",
    "gpus",
    "sshKeys",
    "talos",
    "kernelModules",
    "kubevirt",
    "proxmox",
]
INTERESTING_STRINGS = [
    "",
    "talos",
    "kairos",
    "example",
    "pve",
    "v1.35",
    "v1.35.6",
    "v1.13.6",
    "50%",
    "nvidia.com/AD102GL_L40S",
    SCHEMATIC_A,
    SSH_KEY,
    PRIVATE_KEY,
    "https://factory.example",
    "kairos-example-v1-35-6-r1",
]

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
    | st.sampled_from(INTERESTING_STRINGS)
)
keys = st.sampled_from(
    [*POOL_KEYS, "version", "schematicID", "osImage", "builtin", "factory", "templateTags", "name", "endpoints"]
) | st.text(max_size=8)
json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(keys, children, max_size=5),
    max_leaves=12,
)
pool_specs = st.dictionaries(st.sampled_from(POOL_KEYS) | st.text(max_size=8), json_values, max_size=10)


def _valid_spec() -> dict[str, Any]:
    return copy.deepcopy(
        {
            "cluster": "example",
            "workerClassName": "talos-example-r1",
            "version": "v1.35",
            "minReplicas": 1,
            "maxReplicas": 3,
            "instanceType": "u1.medium",
            "labels": {"team": "a"},
            "taints": [{"key": "gpu", "value": "true", "effect": "NoSchedule"}],
            "gpus": [NVIDIA_GPU],
            "sshKeys": [],
            "talos": {
                "version": "v1.13.6",
                "schematicID": SCHEMATIC_A,
                "registryMirrors": {"docker.io": {"endpoints": ["https://mirror.example"]}},
            },
            "kernelModules": [{"name": "nvme_tcp", "parameters": ["a=1"]}],
            "kubevirt": {"osImage": {"builtin": {"version": "", "schematicID": ""}}},
            "proxmox": {"templateTags": ["talos-v1.13.6"]},
        }
    )


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, item in value.items():
            out += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out += _paths(item, (*prefix, index))
    return out


@st.composite
def mutated_specs(draw: st.DrawFn) -> dict[str, Any]:
    """A valid pool spec with a few paths replaced by arbitrary values or removed."""
    spec = _valid_spec()
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        paths = _paths(spec)
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent: Any = spec
        for step in path[:-1]:
            parent = parent[step]
        if draw(st.booleans()) and isinstance(parent, dict):
            parent.pop(path[-1], None)
        else:
            parent[path[-1]] = copy.deepcopy(draw(json_values))
    return spec


def _check_pool(state: State, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
    """Nothing raises but Denied; decisions are consistent; the mutation is idempotent."""
    before = copy.deepcopy(obj)
    try:
        effective = resolve(state, obj)
    except Denied as denied:
        assert denied.violations
        assert all(v.code in API_CODES for v in denied.violations)
    else:
        view(effective)
    for operation, previous in (("CREATE", None), ("UPDATE", old)):
        decision = admit(state, operation, obj, old=previous)
        assert decision.allowed is (not decision.denials)
        assert all(v.code in API_CODES and isinstance(v.field, str) for v in decision.denials)
        patched = apply_patch(obj, decision.patch)
        assert decision.object == patched
        again = admit(state, operation, patched, old=previous)
        assert again.patch == []
        assert again.object == patched
        if decision.allowed and operation == "CREATE":
            resolve(state, patched)  # allowed objects resolve
    assert obj == before, "the request is not modified in place"


@FAST
@given(spec=pool_specs)
def test_arbitrary_pool_specs_never_raise(spec: dict[str, Any]) -> None:
    obj = make_pool("fuzz")
    obj["spec"] = spec
    _check_pool(STATE, obj, make_pool("fuzz", workerClassName="talos-example-r1"))
    _check_pool(KAIROS_STATE, obj, make_pool("fuzz", workerClassName="kairos"))


@FAST
@given(spec=mutated_specs())
def test_mutated_valid_pools_never_raise(spec: dict[str, Any]) -> None:
    obj = make_pool("fuzz")
    obj["spec"] = spec
    _check_pool(STATE, obj, make_pool("fuzz", workerClassName="talos-example-r1"))


@FAST
@given(
    spec=json_values,
    metadata=json_values,
    kind=st.sampled_from(["KubernetesNodes", "HelmRelease", "WorkerClass", "ComputePlane"]),
)
def test_arbitrary_objects_never_raise(spec: Any, metadata: Any, kind: str) -> None:
    obj = {"apiVersion": "x/v1", "kind": kind, "metadata": metadata, "spec": spec}
    for operation in ("CREATE", "UPDATE", "DELETE"):
        decision = admit(STATE, operation, obj, old=obj if operation != "CREATE" else None)
        assert isinstance(decision.allowed, bool)


@FAST
@given(values=pool_specs)
def test_arbitrary_helm_release_values_never_raise_and_are_never_patched(values: dict[str, Any]) -> None:
    obj = make_release("fuzz")
    obj["spec"]["values"] = values
    with contextlib.suppress(Denied):
        resolve(STATE, obj)
    decision = admit(STATE, "CREATE", obj)
    assert decision.patch == []


@FAST
@given(specs=st.lists(pool_specs, min_size=1, max_size=3), groups=json_values)
def test_arbitrary_stored_pools_resolve_without_raising(specs: list[dict[str, Any]], groups: Any) -> None:
    objects: list[dict[str, Any]] = []
    for index, spec in enumerate(specs):
        pool = make_pool(f"p{index}")
        pool["spec"] = spec
        objects.append(pool)
    plane = make_compute_plane()
    plane["spec"]["nodeGroups"] = groups
    state = make_state([*objects, plane])
    for record in state.sorted_pools():
        effective, denials, warnings = resolve_pool(state, record)
        assert (effective is None) is bool(denials)
        assert all(isinstance(w, str) for w in warnings)


@FAST
@given(
    spec=st.dictionaries(
        st.sampled_from(["bootstrap", "talos", "kernelModules", "kubevirt", "proxmox", "image"]) | st.text(max_size=6),
        json_values,
        max_size=6,
    )
)
def test_arbitrary_class_specs_never_raise(spec: dict[str, Any]) -> None:
    obj = make_class("fuzz")
    obj["spec"] = spec
    for operation, old in (("CREATE", None), ("UPDATE", make_class("fuzz")), ("DELETE", None)):
        decision = admit(STATE, operation, obj, old=old)
        assert decision.allowed is (not decision.denials)
        assert decision.patch == []
    # A pool selecting whatever that class became never raises either.
    state = make_state([obj])
    with contextlib.suppress(Denied):
        resolve(state, make_pool(workerClassName="fuzz"))


# --------------------------------------------------------------------------- baseline property

MIRROR_ENDPOINTS = st.lists(
    st.sampled_from(["https://m1.example", "https://m2.example/v2"]), min_size=1, max_size=2, unique=True
)
class_talos = st.fixed_dictionaries(
    {},
    optional={
        "version": st.sampled_from(["", "v1.13.6", "v1.13.5", "v1.13.0"]),
        "schematicID": st.sampled_from(["", SCHEMATIC_A, SCHEMATIC_B, SCHEMATIC_C]),
        "imageFactoryURL": st.sampled_from(["", "https://factory.example", "https://class-factory.example:8443/x"]),
        "imageFactoryCA": st.sampled_from(["", CERTIFICATE]),
        "installerRepository": st.sampled_from(
            ["", "class.example/installer", "registry.example:5000/talos/installer"]
        ),
        "registryMirrors": st.dictionaries(
            st.sampled_from(["docker.io", "ghcr.io", "quay.io"]),
            MIRROR_ENDPOINTS.map(lambda endpoints: {"endpoints": endpoints}),
            max_size=3,
        ),
    },
)
modules = st.lists(
    st.fixed_dictionaries(
        {"name": st.sampled_from(["nvme_tcp", "drbd", "zfs", "br_netfilter"])},
        optional={"parameters": st.lists(st.sampled_from(["a=1", "b=2"]), max_size=2)},
    ),
    max_size=3,
)
class_specs = st.fixed_dictionaries(
    {},
    optional={
        "talos": class_talos,
        "kernelModules": modules,
        "kubevirt": st.sampled_from([{}, {"osImage": {}}, {"osImage": {"factory": {}}}]),
    },
)
PLATFORM_TALOS = {
    "version": TALOS_VERSION,
    "schematicID": SCHEMATIC_A,
    "imageFactoryURL": FACTORY_URL,
    "imageFactoryCA": "",
    "installerRepository": INSTALLER_REPOSITORY,
}


@FAST
@given(spec=class_specs, gpus=st.sampled_from([[], [NVIDIA_GPU]]), talos_block=st.sampled_from(["absent", "empty"]))
def test_a_pool_that_supplies_nothing_resolves_to_the_class_baseline(
    spec: dict[str, Any], gpus: list[Any], talos_block: str
) -> None:
    state = make_state(classes=[make_class("baseline", **spec)])
    extra: dict[str, Any] = {"talos": {}} if talos_block == "empty" else {}
    effective = view(resolve(state, make_pool(workerClassName="baseline", gpus=gpus, **extra)))

    talos_spec = spec.get("talos", {})
    expected = {name: talos_spec.get(name) or default for name, default in PLATFORM_TALOS.items()}
    expected["registryMirrors"] = talos_spec.get("registryMirrors", {})
    assert effective["talos"] == expected
    if "kernelModules" in spec:
        expected_modules = [{"name": m["name"], "parameters": m.get("parameters", [])} for m in spec["kernelModules"]]
    elif gpus:
        expected_modules = [
            {"name": "nvidia", "parameters": ["NVreg_NvLinkDisable=1"]},
            {"name": "nvidia_uvm", "parameters": []},
            {"name": "nvidia_drm", "parameters": []},
            {"name": "nvidia_modeset", "parameters": []},
        ]
    else:
        expected_modules = []
    assert effective["kernelModules"] == expected_modules
    assert effective["image"]["source"] == "factory"
    assert effective["image"]["reference"] == factory_url(
        expected["schematicID"], expected["version"], expected["imageFactoryURL"]
    )
    assert (
        effective["installerImage"]
        == f"{expected['installerRepository']}/{expected['schematicID']}:{expected['version']}"
    )
    assert (effective["class"], effective["bootstrap"], effective["kubernetesVersion"]) == (
        "baseline",
        "talos",
        "v1.35.6",
    )
