"""Hypothesis-generated classless pools, rendered by workerclass and by the real chart (the oracle).

Pools are drawn over the chart's value space: both sizing modes (an instance type Cozystack ships,
or ``resources`` with optional podCpuLimit/podCpuRequest pairs), GPUs, kubelet reservations and
eviction thresholds, the serial console, health timeouts and ``maxUnhealthy``, the provision time,
Talos version/schematic/factory/installer/registry mirrors, Kubernetes versions, replica bounds,
disk and storage class, roles, pool names, both KubernetesNodes and KubernetesNodes HelmRelease, and
the platform's ``_cluster`` values (cluster domain, topology spread constraints).
Each one goes through the public path (a State with the parent Kubernetes, the pool object,
``resolve``, ``render``) and through one long-lived oracle process; every object is compared and
the differing field paths are printed. Where the chart refuses a pool, workerclass must refuse it too.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.chart.oracle import ABSENT, available, get_oracle
from tests.shared import given_chart
from workerclass import render, resolve
from workerclass.render import RenderError
from workerclass.state import State, pool_from_object
from workerclass.violations import Denied

from .test_parity import CLUSTER, NAMESPACE, PARENT, object_differences

pytestmark = pytest.mark.skipif(not available(), reason=ABSENT)

#: Examples per property: one oracle render is ~0.1 s, so the module stays within ~30 s.
EXAMPLES = 120

INSTANCE_TYPES = ["u1.medium", "u1.large", "u1.xlarge", "u1.2xlarge", "u1.small", "cx1.large", "m1.large", "o1.xlarge"]
QUANTITY_CPU = ["1", "2", "4", "8", "1500m", "500m", "3"]
QUANTITY_MEMORY = ["2Gi", "4Gi", "8Gi", "16Gi", "3000Mi", "6Gi"]
DURATIONS = ["30s", "5m", "10m", "15m", "1h", "1h30m", "90m", "2h"]
SCHEMATICS = [
    "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515",
    "376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba",
]


def _optional(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.none(), strategy)


@st.composite
def pool_values(draw: st.DrawFn) -> dict[str, Any]:
    values: dict[str, Any] = {"cluster": CLUSTER}
    choices: dict[str, Any] = {
        "version": _optional(st.sampled_from(["v1.32", "v1.33", "v1.34", "v1.35"])),
        "minReplicas": _optional(st.integers(0, 3)),
        "maxReplicas": _optional(st.sampled_from([3, 5, 10, 1000000])),
        "diskSize": _optional(st.sampled_from(["20Gi", "30Gi", "50Gi", "2Gi"])),
        "storageClass": _optional(st.sampled_from(["replicated", "local", ""])),
        "roles": _optional(st.lists(st.sampled_from(["ingress-nginx", "storage", "gpu"]), max_size=2, unique=True)),
        "gpus": _optional(
            st.lists(st.sampled_from(["nvidia.com/AD102GL_L40S", "nvidia.com/GA102GL_A10"]), max_size=2).map(
                lambda names: [{"name": name} for name in names]
            )
        ),
        "logSerialConsole": _optional(st.booleans()),
        "maxUnhealthy": _optional(st.sampled_from(["50%", "1", "0", "33%", "100%"])),
        "nodeStartupTimeout": _optional(st.sampled_from(DURATIONS)),
        "readyUnknownTimeout": _optional(st.sampled_from(DURATIONS)),
        "readyFalseTimeout": _optional(st.sampled_from(DURATIONS)),
        "maxNodeProvisionTime": _optional(st.sampled_from(DURATIONS)),
    }
    for key, strategy in choices.items():
        value = draw(strategy)
        if value is not None:
            values[key] = value
    if draw(st.booleans()):  # instance-type sizing
        values["instanceType"] = draw(st.sampled_from(INSTANCE_TYPES))
    else:
        values["instanceType"] = ""
        values["resources"] = {
            "cpu": draw(st.sampled_from(QUANTITY_CPU)),
            "memory": draw(st.sampled_from(QUANTITY_MEMORY)),
        }
        pair = draw(st.sampled_from([None, ("3", "1"), ("2", "2"), ("0", "0"), ("1", None)]))
        if pair is not None:
            values["podCpuLimit"] = pair[0]
            if pair[1] is not None:
                values["podCpuRequest"] = pair[1]
    if draw(st.booleans()):
        kubelet: dict[str, str] = {}
        for key, options in (
            ("systemReservedMemory", ["300Mi", "512Mi"]),
            ("kubeReservedMemory", ["256Mi", "400Mi"]),
            ("systemReservedCpu", ["100m", "200m"]),
            ("kubeReservedCpu", ["60m", "100m"]),
        ):
            choice = draw(_optional(st.sampled_from(options)))
            if choice is not None:
                kubelet[key] = choice
        hard, soft = draw(st.sampled_from([(None, None), ("5%", "12%"), ("7%", "10%"), ("100Mi", "300Mi")]))
        if hard is not None:
            kubelet["evictionHardMemory"], kubelet["evictionSoftMemory"] = hard, soft
        values["kubelet"] = kubelet
    if draw(st.booleans()):
        talos: dict[str, Any] = {}
        for key, strategy in (
            ("version", st.sampled_from(["v1.13.6", "v1.13.2"])),
            ("schematicID", st.sampled_from(SCHEMATICS)),
            ("imageFactoryURL", st.sampled_from(["https://factory.talos.dev", "https://factory.example/"])),
            ("installerRepository", st.sampled_from(["factory.talos.dev/installer", "registry.example/installer"])),
            (
                "registryMirrors",
                st.sampled_from(
                    [
                        {},
                        {"docker.io": {"endpoints": ["https://mirror.example"]}},
                        {"ghcr.io": {"endpoints": ["https://a.example", "https://b.example"], "skipFallback": True}},
                    ]
                ),
            ),
        ):
            choice = draw(_optional(strategy))
            if choice is not None:
                talos[key] = choice
        values["talos"] = talos
    return values


@st.composite
def pools(draw: st.DrawFn) -> dict[str, Any]:
    name = draw(st.from_regex(r"[a-z][a-z0-9]{0,6}", fullmatch=True))
    values = draw(pool_values())
    if draw(st.booleans()):
        return {
            "apiVersion": "apps.cozystack.io/v1alpha1",
            "kind": "KubernetesNodes",
            "metadata": {"name": f"{CLUSTER}-{name}", "namespace": NAMESPACE},
            "spec": values,
        }
    return {
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {
            "name": f"kubernetes-nodes-{CLUSTER}-{name}",
            "namespace": NAMESPACE,
            "labels": {"apps.cozystack.io/application.kind": "KubernetesNodes"},
        },
        "spec": {"values": values},
    }


def _values(pool: dict[str, Any]) -> dict[str, Any]:
    values: dict[str, Any] = pool["spec"] if pool["kind"] == "KubernetesNodes" else pool["spec"]["values"]
    return values


#: The platform's ``_cluster`` values (WorkerPlatform ``spec.clusterValues``); None: the default.
CLUSTER_VALUES: list[dict[str, Any] | None] = [
    None,
    {"cluster-domain": "cozy.example"},
    {
        "cluster-domain": "cozy.local",
        "scheduling": {
            "globalAppTopologySpreadConstraints": (
                "topologySpreadConstraints:\n- maxSkew: 2\n  topologyKey: kubernetes.io/hostname\n"
                "  whenUnsatisfiable: DoNotSchedule\n"
            )
        },
    },
]


def _platform(cluster_values: dict[str, Any]) -> dict[str, Any]:
    platform = copy.deepcopy(dict(State.from_objects([]).platform_object))
    platform["spec"]["clusterValues"] = cluster_values
    return platform


def ours(
    pool: dict[str, Any], cluster_values: dict[str, Any] | None = None, chart: str = "main"
) -> list[dict[str, Any]] | str:
    context = [PARENT] if cluster_values is None else [PARENT, _platform(cluster_values)]
    state = State.from_objects([*context, pool]).with_chart(given_chart(chart))
    record = pool_from_object(pool)
    assert record is not None
    stored = state.pool(record.identity)
    assert stored is not None
    try:
        return render(resolve(state, stored), talos_config_template=True)
    except Denied as denied:
        return f"denied: {denied}"
    except RenderError as error:
        return f"render refused: {error}"


def theirs(
    pool: dict[str, Any], cluster_values: dict[str, Any] | None = None, chart: str = "main"
) -> list[dict[str, Any]] | str:
    name = pool["metadata"]["name"]
    result = get_oracle().render(
        copy.deepcopy(_values(pool)),
        release=f"kubernetes-nodes-{name}" if pool["kind"] == "KubernetesNodes" else name,
        namespace=NAMESPACE,
        cluster_values={"_cluster": cluster_values} if cluster_values is not None else None,
        talos_config_template=True,
        chart=chart,
    )
    return result.objects if result.ok else f"chart refused: {result.error}"


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(pools(), st.sampled_from(CLUSTER_VALUES))
def test_classless_pools_render_what_the_chart_renders(
    pool: dict[str, Any], cluster_values: dict[str, Any] | None
) -> None:
    mine, chart = ours(pool, cluster_values), theirs(pool, cluster_values)
    if isinstance(chart, str):
        assert isinstance(mine, str), f"the chart refuses {_values(pool)}: {chart}; workerclass renders it"
        return
    assert not isinstance(mine, str), f"the chart renders {_values(pool)}; workerclass: {mine}"
    differences = object_differences(mine, chart)
    assert not differences, f"{_values(pool)}:\n  " + "\n  ".join(differences[:40])


@settings(max_examples=EXAMPLES // 4, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(pools(), st.sampled_from(CLUSTER_VALUES))
def test_classless_pools_render_what_the_pr3315_chart_renders(
    pool: dict[str, Any], cluster_values: dict[str, Any] | None
) -> None:
    """PR 3315's chart given as ``--chart`` gives it, against the oracle's ``--chart pr3315``: the pool's
    objects and its pre-delete unpin hook (PR 3315's lookups find nothing offline, on both sides)."""
    mine, chart = ours(pool, cluster_values, "pr3315"), theirs(pool, cluster_values, "pr3315")
    if isinstance(chart, str):
        assert isinstance(mine, str), f"the chart refuses {_values(pool)}: {chart}; workerclass renders it"
        return
    assert not isinstance(mine, str), f"the chart renders {_values(pool)}; workerclass: {mine}"
    assert any(obj["metadata"]["name"].endswith("-unpin") for obj in mine)
    differences = object_differences(mine, chart)
    assert not differences, f"{_values(pool)}:\n  " + "\n  ".join(differences[:40])


@settings(max_examples=EXAMPLES // 3, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(pools())
def test_a_talos_class_with_the_pools_settings_renders_the_classless_objects(pool: dict[str, Any]) -> None:
    classless = ours(pool)
    classified = copy.deepcopy(pool)
    _values(classified)["workerClassName"] = "talos"
    if _values(classified).get("gpus"):
        _values(classified)["kernelModules"] = []  # the NVIDIA rule runs for classified pools only
    if isinstance(classless, str):
        return  # a refused pool: the classless render is what is pinned
    mine = ours(classified)
    assert not isinstance(mine, str), mine
    differences = object_differences(mine, classless)
    assert not differences, f"{_values(classified)}:\n  " + "\n  ".join(differences[:40])


#: Values the chart refuses at render time (``upstream-cozystack/README.md``, "Render-time failures"),
#: mixed into generated pools: where the chart refuses, workerclass must refuse too (admission
#: maps each refusal to its code), and where a later key makes the pool valid again, render the same.
BREAKERS: list[dict[str, Any]] = [
    {"maxNodeProvisionTime": "30min"},
    {"readyUnknownTimeout": "0s"},
    {"readyFalseTimeout": "9999999h"},
    {"instanceType": "u1.medium", "resources": {"cpu": "4"}},
    {"instanceType": "u1.medium", "podCpuLimit": "3"},
    {"instanceType": "", "resources": {"cpu": "2", "memory": "4Gi"}, "podCpuLimit": "-1"},
    {"instanceType": "", "resources": {"cpu": "2", "memory": "4Gi"}, "podCpuLimit": "0"},
    {"instanceType": "", "resources": {"cpu": "2", "memory": "4Gi"}, "podCpuLimit": "1", "podCpuRequest": "2"},
    {"instanceType": "", "resources": {"cpu": "2", "memory": "4Gi"}, "podCpuLimit": "1", "podCpuRequest": "0"},
    {"instanceType": "zz.huge"},
    {"kubelet": {"systemReservedCpu": "1.5m"}},
    {"kubelet": {"kubeReservedMemory": "1GB"}},
    {"kubelet": {"systemReservedMemory": "0"}},
    {"kubelet": {"evictionHardMemory": "12%"}},
    {"kubelet": {"evictionHardMemory": "500Mi"}},
    {"kubelet": {"evictionHardMemory": "x%", "evictionSoftMemory": "10%"}},
    {"instanceType": "u1.nano"},
    {"instanceType": "", "resources": {"cpu": "100m", "memory": "4Gi"}},
    {"instanceType": "", "kubelet": {"systemReservedMemory": "512Mi"}},
    {"maxUnhealthy": "12.5%"},
    {"maxUnhealthy": ""},
]


@settings(max_examples=EXAMPLES // 3, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(pools(), st.sampled_from(BREAKERS))
def test_where_the_chart_refuses_a_pool_workerclass_refuses_it(pool: dict[str, Any], breaker: dict[str, Any]) -> None:
    values = _values(pool)
    for key, value in breaker.items():
        values[key] = copy.deepcopy(value)
    mine, chart = ours(pool), theirs(pool)
    if isinstance(chart, str):
        assert isinstance(mine, str), f"the chart refuses {values}: {chart}; workerclass renders it"
        assert mine.startswith("denied: "), f"refused only by the renderer, not by admission: {mine}"
        return
    assert not isinstance(mine, str), f"the chart renders {values}; workerclass: {mine}"
    differences = object_differences(mine, chart)
    assert not differences, f"{values}:\n  " + "\n  ".join(differences[:40])


def test_golden_files_are_what_the_oracle_renders_today() -> None:
    """The golden facts are regenerated, never edited: ``scripts/regen-render-golden.py --check``."""
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "scripts" / "regen-render-golden.py"
    result = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


@st.composite
def module_lists(draw: st.DrawFn) -> list[dict[str, Any]]:
    names = draw(st.lists(st.from_regex(r"[a-z][a-z0-9_-]{0,10}", fullmatch=True), min_size=1, max_size=4, unique=True))
    modules: list[dict[str, Any]] = []
    for name in names:
        parameters = draw(
            st.lists(st.from_regex(r"[a-zA-Z_][a-zA-Z0-9_]{0,8}=[a-z0-9]{1,4}", fullmatch=True), max_size=2)
        )
        modules.append({"name": name, "parameters": parameters} if parameters else {"name": name})
    return modules


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(module_lists())
def test_kernel_modules_render_as_the_pr3571_chart_renders_them(modules: list[dict[str, Any]]) -> None:
    import yaml

    pool = {
        "apiVersion": "apps.cozystack.io/v1alpha1",
        "kind": "KubernetesNodes",
        "metadata": {"name": f"{CLUSTER}-mods", "namespace": NAMESPACE},
        "spec": {"cluster": CLUSTER, "version": "v1.35", "workerClassName": "talos", "kernelModules": modules},
    }
    mine = ours(pool)
    assert not isinstance(mine, str), mine
    legacy = {"cluster": CLUSTER, "version": "v1.35", "kernelModules": modules}
    result = get_oracle().render(
        legacy,
        release=f"kubernetes-nodes-{CLUSTER}-mods",
        namespace=NAMESPACE,
        chart="pr3571",
        talos_config_template=True,
    )
    assert result.ok, result.error

    def kernel(objects: list[dict[str, Any]]) -> Any:
        (tct,) = [obj for obj in objects if obj["kind"] == "TalosConfigTemplate"]
        return yaml.safe_load(tct["spec"]["template"]["spec"]["data"])["machine"].get("kernel")

    assert kernel(mine) == kernel(result.objects)
    assert [module["name"] for module in kernel(mine)["modules"]] == [module["name"] for module in modules]


#: Spellings the chart renders that admission once refused (whole-number floats as a webhook's JSON
#: carries them, a duration ending in a newline, label-name roles, an empty GPU name, keys no one
#: reads): rendered as the chart renders them, object for object.
SPELLINGS: dict[str, dict[str, Any]] = {
    "whole-float-replicas": {"minReplicas": 1.0, "maxReplicas": 3.0},
    "whole-float-cpu": {"instanceType": "", "resources": {"cpu": 2.0, "memory": "4Gi"}},
    "whole-float-disk": {"diskSize": 21474836480.0},
    "duration-with-newline": {"nodeStartupTimeout": "20m\n"},
    "label-name-roles": {"roles": ["ingress_nginx", "A"]},
    "empty-gpu-name": {"instanceType": "gn1.xlarge", "gpus": [{"name": ""}]},
    "unknown-keys": {"someOldKey": True, "kubelet": {"extraArg": "x"}, "talos": {"versoin": "v1"}},
}


@pytest.mark.parametrize("values", SPELLINGS.values(), ids=SPELLINGS.keys())
def test_spellings_the_chart_renders_render_its_objects(values: dict[str, Any]) -> None:
    spec = {"cluster": CLUSTER, **values}
    pool = {
        "apiVersion": "apps.cozystack.io/v1alpha1",
        "kind": "KubernetesNodes",
        "metadata": {"name": f"{CLUSTER}-md1", "namespace": NAMESPACE},
        "spec": spec,
    }
    theirs = get_oracle().render(spec, release=f"kubernetes-nodes-{CLUSTER}-md1", namespace=NAMESPACE)
    assert theirs.ok, theirs.error
    state = State.from_objects([PARENT, pool]).with_chart(given_chart("main"))
    assert not object_differences(render(resolve(state, pool)), theirs.objects)
