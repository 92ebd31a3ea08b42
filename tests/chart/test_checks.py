"""Table tests per failure code, with the examples of upstream-cozystack/README.md.

Each row: pool values (and release/namespace) in, the (code, field) of our first failure out,
or ``None`` for a pool the chart renders. The rows are facts and run without the oracle; where
the oracle is present, a second test checks each row against it (a schema-refused row, such as
an unlisted ``version``, is marked ``schema`` and only checked for a refusal).
"""

from __future__ import annotations

from typing import Any

import pytest

from workerclass.chart import (
    ChartRefused,
    chart_failures,
    chart_input,
    nodegroup_objects,
    render_chart,
    sizing,
)
from workerclass.violations import Violation

from .cases import code_of_message, pool_release
from .oracle import ABSENT, available, diff_paths, get_oracle

R = pool_release()
NS = "tenant-x"

_POD_CPU_ROWS: list[tuple[str, dict[str, Any], tuple[str, str] | None]] = [
    ("limit-negative", {"podCpuLimit": -1}, ("InvalidPodCPU", "spec.podCpuLimit")),
    ("request-negative", {"podCpuRequest": "-100m"}, ("InvalidPodCPU", "spec.podCpuRequest")),
    ("limit-zero-alone", {"podCpuLimit": 0}, ("InvalidPodCPU", "spec.podCpuLimit")),
    (
        "request-zero-beside-limit",
        {"podCpuLimit": 1, "podCpuRequest": 0},
        ("InvalidPodCPU", "spec.podCpuRequest"),
    ),
    ("request-over-limit", {"podCpuLimit": 1, "podCpuRequest": 2}, ("InvalidPodCPU", "spec.podCpuRequest")),
    ("1500m-under-2", {"podCpuLimit": 2, "podCpuRequest": "1500m"}, None),
    ("zero-pair", {"podCpuLimit": 0, "podCpuRequest": "0"}, None),
    ("request-zero-alone", {"podCpuRequest": 0}, None),
    ("limit-alone", {"podCpuLimit": "3"}, None),
]

# (id, values, release, namespace, expected first (code, field) or None, schema-refused by the chart)
ROWS: list[tuple[str, dict[str, Any], str, str, tuple[str, str] | None, bool]] = [
    ("renders-defaults", {"cluster": "example"}, R, NS, None, False),
    ("cluster-missing", {}, R, NS, ("Invalid", "spec.cluster"), False),
    ("cluster-empty", {"cluster": ""}, R, NS, ("Invalid", "spec.cluster"), False),
    (
        "cr-other-md1",
        {"cluster": "example"},
        "kubernetes-nodes-other-md1",
        NS,
        ("InvalidPoolName", "metadata.name"),
        False,
    ),
    ("hr-example-legacy", {"cluster": "example"}, "example-legacy", NS, ("InvalidPoolName", "metadata.name"), False),
    ("namespace-not-tenant", {"cluster": "example"}, R, "default", ("InvalidPoolName", "metadata.namespace"), False),
    *[
        (f"{field}-{value}", {"cluster": "example", field: value}, R, NS, ("InvalidDuration", f"spec.{field}"), False)
        for field in ("maxNodeProvisionTime", "readyUnknownTimeout", "readyFalseTimeout")
        for value in ("30", "0s", "-5m", "30min", "9999999h")
    ],
    *[
        (f"duration-ok-{value}", {"cluster": "example", "maxNodeProvisionTime": value}, R, NS, None, False)
        for value in ("20m0s", "1h0m0s", "1h30m", "99999s")
    ],
    ("nodeStartupTimeout-unchecked", {"cluster": "example", "nodeStartupTimeout": "30"}, R, NS, None, False),
    (
        "version-unlisted",
        {"cluster": "example", "version": "v1.30"},
        R,
        NS,
        ("UnsupportedVersion", "spec.version"),
        True,
    ),
    (
        "half-resources-cpu",
        {"cluster": "example", "resources": {"cpu": "4"}},
        R,
        NS,
        ("IncompleteResources", "spec.resources.memory"),
        False,
    ),
    (
        "half-resources-memory",
        {"cluster": "example", "resources": {"memory": "4Gi"}},
        R,
        NS,
        ("IncompleteResources", "spec.resources.cpu"),
        False,
    ),
    (
        "half-resources-no-type",
        {"cluster": "example", "instanceType": "", "resources": {"cpu": "4"}},
        R,
        NS,
        None,
        False,
    ),
    (
        "podCpuLimit-with-type",
        {"cluster": "example", "instanceType": "u1.medium", "podCpuLimit": 3},
        R,
        NS,
        ("InvalidPodCPU", "spec.podCpuLimit"),
        False,
    ),
    (
        "podCpuRequest-with-type",
        {"cluster": "example", "podCpuRequest": "1"},
        R,
        NS,
        ("InvalidPodCPU", "spec.podCpuRequest"),
        False,
    ),
    *[
        (
            f"podcpu-{name}",
            {"cluster": "example", "instanceType": "", "resources": {"cpu": 4, "memory": "8Gi"}, **pc},
            R,
            NS,
            expected,
            False,
        )
        for name, pc, expected in _POD_CPU_ROWS
    ],
    (
        "zz-huge",
        {"cluster": "example", "instanceType": "zz.huge"},
        R,
        NS,
        ("InstanceTypeNotFound", "spec.instanceType"),
        False,
    ),
    (
        "zz-huge-sized-by-resources",
        {"cluster": "example", "instanceType": "zz.huge", "resources": {"cpu": 2, "memory": "4Gi"}},
        R,
        NS,
        None,
        False,
    ),
    *[
        (
            f"kubelet-{key}-{value}",
            {"cluster": "example", "kubelet": {key: value}},
            R,
            NS,
            ("InvalidKubeletReservation", f"spec.kubelet.{key}"),
            False,
        )
        for key, value in [
            ("systemReservedCpu", "1.5m"),
            ("kubeReservedCpu", "0"),
            ("systemReservedMemory", "1GB"),
            ("systemReservedMemory", "0"),
            ("kubeReservedMemory", "0Mi"),
            ("evictionHardMemory", "500MB"),
            ("evictionHardMemory", "x%"),
            ("evictionHardMemory", "0%"),
            ("evictionHardMemory", "150%"),
            ("evictionHardMemory", "12%"),
            ("evictionHardMemory", "500Mi"),
            ("evictionSoftMemory", "abc"),
        ]
    ],
    (
        "kubelet-absolute-pair",
        {"cluster": "example", "kubelet": {"evictionHardMemory": "100Mi", "evictionSoftMemory": "1Gi"}},
        R,
        NS,
        None,
        False,
    ),
    (
        "u1-nano-totals",
        {"cluster": "example", "instanceType": "u1.nano"},
        R,
        NS,
        ("InvalidKubeletReservation", "spec.kubelet"),
        False,
    ),
    (
        "cpu-100m-totals",
        {"cluster": "example", "instanceType": "", "resources": {"cpu": "100m", "memory": "4Gi"}},
        R,
        NS,
        ("InvalidKubeletReservation", "spec.kubelet"),
        False,
    ),
    (
        "no-memory-with-override",
        {"cluster": "example", "instanceType": "", "kubelet": {"systemReservedMemory": "1Gi"}},
        R,
        NS,
        ("InvalidKubeletReservation", "spec.kubelet"),
        False,
    ),
    (
        "no-cpu-with-override",
        {"cluster": "example", "instanceType": "", "kubelet": {"kubeReservedCpu": "100m"}},
        R,
        NS,
        ("InvalidKubeletReservation", "spec.kubelet"),
        False,
    ),
    ("no-size-no-override", {"cluster": "example", "instanceType": ""}, R, NS, None, False),
    (
        "maxUnhealthy-12.5%",
        {"cluster": "example", "maxUnhealthy": "12.5%"},
        R,
        NS,
        ("InvalidMaxUnhealthy", "spec.maxUnhealthy"),
        False,
    ),
    (
        "maxUnhealthy-empty",
        {"cluster": "example", "maxUnhealthy": ""},
        R,
        NS,
        ("InvalidMaxUnhealthy", "spec.maxUnhealthy"),
        False,
    ),
    ("maxUnhealthy-int-string", {"cluster": "example", "maxUnhealthy": "1"}, R, NS, None, False),
    ("maxUnhealthy-integer", {"cluster": "example", "maxUnhealthy": 1}, R, NS, None, True),
]


def _first(values: dict[str, Any], release: str, namespace: str) -> tuple[list[Violation], tuple[str, str] | None]:
    failures = chart_failures(chart_input(values, namespace=namespace, release=release))
    return failures, ((failures[0].code, failures[0].field) if failures else None)


@pytest.mark.parametrize(
    ("values", "release", "namespace", "expected"), [r[1:5] for r in ROWS], ids=[r[0] for r in ROWS]
)
def test_row(values: dict[str, Any], release: str, namespace: str, expected: tuple[str, str] | None) -> None:
    failures, first = _first(values, release, namespace)
    assert first == expected, failures
    for f in failures:
        assert f.message and f.field.startswith(("spec.", "metadata.")), f


@pytest.mark.skipif(not available(), reason=ABSENT)
@pytest.mark.parametrize(
    ("values", "release", "namespace", "expected", "schema"), [r[1:6] for r in ROWS], ids=[r[0] for r in ROWS]
)
def test_row_matches_the_oracle(
    values: dict[str, Any], release: str, namespace: str, expected: tuple[str, str] | None, schema: bool
) -> None:
    result = get_oracle().render(values, release=release, namespace=namespace)
    if schema:
        assert not result.ok and result.error.startswith("values schema:"), result.error
        return
    if expected is None:
        assert result.ok, result.error
    else:
        assert not result.ok and code_of_message(result.error) == expected[0], result.error


def test_every_failure_is_reported_not_only_the_first() -> None:
    values = {
        "cluster": "example",
        "maxUnhealthy": "12.5%",
        "readyFalseTimeout": "0s",
        "kubelet": {"systemReservedCpu": "1.5m", "evictionHardMemory": "12%"},
        "podCpuLimit": 3,
    }
    failures, _ = _first(values, R, "default")
    codes = [(f.code, f.field) for f in failures]
    assert codes == [
        ("InvalidPodCPU", "spec.podCpuLimit"),
        ("InvalidKubeletReservation", "spec.kubelet.systemReservedCpu"),
        ("InvalidKubeletReservation", "spec.kubelet.evictionHardMemory"),
        ("InvalidMaxUnhealthy", "spec.maxUnhealthy"),
        ("InvalidDuration", "spec.readyFalseTimeout"),
        ("InvalidPoolName", "metadata.namespace"),
    ]


def test_talos_matrix_and_version_map_both_reported() -> None:
    failures, _ = _first({"cluster": "example", "version": "v1.30"}, R, NS)
    assert [(f.code, f.field) for f in failures] == [
        ("UnsupportedVersion", "spec.version"),
        ("TalosKubernetesIncompatible", "spec.version"),
    ]
    other_minor, _ = _first({"cluster": "example", "version": "v1.30", "talos": {"version": "v1.12.1"}}, R, NS)
    assert [f.code for f in other_minor] == ["UnsupportedVersion"]  # other Talos minors are not checked


SECRET = "hunter2-s3cr3t-T0KEN/with:odd chars"


@pytest.mark.parametrize(
    "values",
    [
        {"maxUnhealthy": SECRET},
        {"maxNodeProvisionTime": SECRET},
        {"kubelet": {"systemReservedMemory": SECRET}},
        {"kubelet": {"evictionHardMemory": SECRET + "%"}},
        {"instanceType": SECRET},
        {"cluster": SECRET},
    ],
)
def test_messages_never_quote_a_value_outside_a_strict_shape(values: dict[str, Any]) -> None:
    failures = chart_failures(chart_input({"cluster": "example", **values}, namespace=NS, release=R))
    assert failures
    for f in failures:
        assert "hunter2" not in f.message and "s3cr3t" not in f.message, f


def test_messages_quote_harmless_shapes() -> None:
    failures = chart_failures(
        chart_input({"cluster": "example", "maxNodeProvisionTime": "30min"}, namespace=NS, release=R)
    )
    assert (
        failures[0].message == 'maxNodeProvisionTime must be a whole number of s, m or h (e.g. 30m, 1h30m), got "30min"'
    )


@pytest.mark.parametrize(
    "values",
    [
        {"cluster": 5},
        {"cluster": "example", "kubelet": "x", "resources": [1], "gpus": "a", "roles": 3},
        {"cluster": "example", "podCpuLimit": {"a": 1}, "podCpuRequest": [2], "maxUnhealthy": None},
        {"cluster": "example", "talos": None, "version": 1.35, "instanceType": 7},
        {"cluster": "example", "kernelModules": ["x", {"name": 5, "parameters": "p"}], "schematicID": 3},
        {
            "cluster": "example",
            "instanceType": "",
            "resources": {"cpu": "inf", "memory": "nanMi"},
            "podCpuLimit": "infm",
        },
        {"cluster": "example", "_cluster": {"ephemeral-storage-allocation-ratio": "0"}},
    ],
)
def test_wrong_types_never_crash(values: dict[str, Any]) -> None:
    failures = chart_failures(chart_input(values, namespace=NS, release=R))
    assert all(isinstance(f, Violation) for f in failures)


def test_pr3571_kernel_modules_and_schematic_id() -> None:
    values = {
        "cluster": "example",
        "kernelModules": [{"name": "nvidia$(id)"}, {"name": "ok_mod", "parameters": ["NVreg_X=1", "a b"]}],
        "schematicID": "ab'c",
    }
    inp = chart_input(values, namespace=NS, release=R, variant="pr3571")
    assert [(f.code, f.field) for f in chart_failures(inp)] == [
        ("InvalidKernelModule", "spec.kernelModules[0].name"),
        ("InvalidKernelModule", "spec.kernelModules[1].parameters[1]"),
        ("Invalid", "spec.schematicID"),
    ]
    fine = chart_input({"cluster": "example"}, namespace=NS, release=R, variant="pr3571")
    assert chart_failures(fine) == []


def test_render_chart_refuses_with_every_failure() -> None:
    inp = chart_input({"cluster": "example", "maxUnhealthy": "", "instanceType": "zz.huge"}, namespace=NS, release=R)
    with pytest.raises(ChartRefused) as info:
        render_chart(inp)
    assert [f.code for f in info.value.failures] == ["InstanceTypeNotFound", "InvalidMaxUnhealthy"]


PR3571_ROWS: list[tuple[dict[str, Any], tuple[str, str] | None]] = [
    ({"kernelModules": [{"name": "nvidia$(id)"}]}, ("InvalidKernelModule", "spec.kernelModules[0].name")),
    ({"kernelModules": [{"name": ""}]}, ("InvalidKernelModule", "spec.kernelModules[0].name")),
    (
        {"kernelModules": [{"name": "ok", "parameters": ["a b"]}]},
        ("InvalidKernelModule", "spec.kernelModules[0].parameters[0]"),
    ),
    ({"kernelModules": [{"name": "ok", "parameters": ["NVreg_X=1;Y=0x2"]}]}, None),
    ({"kernelModules": []}, None),
    ({"schematicID": "ab'c"}, ("Invalid", "spec.schematicID")),
    ({"talos": {"schematicID": "a$b"}}, ("Invalid", "spec.talos.schematicID")),
    ({"maxNodeProvisionTime": "0s", "podCpuLimit": -1}, None),  # not guarded in PR 3571's base
    ({"maxUnhealthy": "12.5%"}, ("InvalidMaxUnhealthy", "spec.maxUnhealthy")),
]


@pytest.mark.parametrize(("values", "expected"), PR3571_ROWS)
def test_pr3571_rows(values: dict[str, Any], expected: tuple[str, str] | None) -> None:
    inp = chart_input({"cluster": "example", **values}, namespace=NS, release=R, variant="pr3571")
    failures = chart_failures(inp)
    assert ((failures[0].code, failures[0].field) if failures else None) == expected, failures
    if available():
        result = get_oracle().render({"cluster": "example", **values}, release=R, namespace=NS, chart="pr3571")
        if expected is None:
            assert result.ok, result.error
        else:
            assert not result.ok and code_of_message(result.error) == expected[0], result.error


def test_foreign_machinedeployment_is_refused_as_invalid_pool_name() -> None:
    def first(owner: str | None) -> list[tuple[str, str]]:
        inp = chart_input({"cluster": "example"}, namespace=NS, release=R, existing_machinedeployment_release=owner)
        return [(f.code, f.field) for f in chart_failures(inp)]

    assert first("kubernetes-example") == [("InvalidPoolName", "metadata.name")]
    assert first(R) == [] and first("") == [] and first(None) == []


def test_quantities_the_arithmetic_cannot_take_are_invalid() -> None:
    inp = chart_input(
        {"cluster": "example", "instanceType": "", "resources": {"cpu": "inf", "memory": "8Gi"}, "podCpuLimit": "nanm"},
        namespace=NS,
        release=R,
        cluster_values={"_cluster": {"ephemeral-storage-allocation-ratio": "abc"}},
    )
    assert [(f.code, f.field) for f in chart_failures(inp)] == [
        ("Invalid", "spec.resources.cpu"),
        ("Invalid", "spec.podCpuLimit"),
        ("Invalid", "_cluster.ephemeral-storage-allocation-ratio"),
    ]


@pytest.mark.parametrize("ratio", ["0", "abc", 0, "inf", "8", 10])
def test_ephemeral_storage_ratio_the_chart_cannot_divide_by(ratio: Any) -> None:
    platform = {"_cluster": {"ephemeral-storage-allocation-ratio": ratio}}
    inp = chart_input({"cluster": "example"}, namespace=NS, release=R, cluster_values=platform)
    ours = [(f.code, f.field) for f in chart_failures(inp)]
    if available():  # the chart's decimal division panics: a template error, not a fail message
        assert get_oracle().render({"cluster": "example"}, release=R, namespace=NS, cluster_values=platform).ok == (
            not ours
        )
    assert ours in ([], [("Invalid", "_cluster.ephemeral-storage-allocation-ratio")])


CUSTOM_TYPES: dict[str, Any] = {
    "cpu-only": {
        "kind": "VirtualMachineClusterInstancetype",
        "metadata": {"name": "cpu-only"},
        "spec": {"cpu": {"guest": 2}},
    },
    "empty": {},
    "string-sizes": {
        "kind": "VirtualMachineClusterInstancetype",
        "metadata": {"name": "string-sizes"},
        "spec": {"cpu": {"guest": "1500m"}, "memory": {"guest": "3Gi"}},
    },
}


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ({"instanceType": "cpu-only"}, None),
        (
            {"instanceType": "cpu-only", "kubelet": {"kubeReservedMemory": "1Gi"}},
            ("InvalidKubeletReservation", "spec.kubelet"),
        ),
        ({"instanceType": "empty"}, ("InstanceTypeNotFound", "spec.instanceType")),
        ({"instanceType": "string-sizes"}, None),
        ({"instanceType": "u1.medium"}, ("InstanceTypeNotFound", "spec.instanceType")),
    ],
    ids=["cpu-only", "cpu-only-memory-override", "empty-object", "string-sizes", "not-in-this-table"],
)
def test_custom_instancetype_tables(values: dict[str, Any], expected: tuple[str, str] | None) -> None:
    inp = chart_input({"cluster": "example", **values}, namespace=NS, release=R, instancetypes=CUSTOM_TYPES)
    failures = chart_failures(inp)
    assert ((failures[0].code, failures[0].field) if failures else None) == expected, failures
    if not available():
        return
    result = get_oracle().render({"cluster": "example", **values}, release=R, namespace=NS, instancetypes=CUSTOM_TYPES)
    assert result.ok == (expected is None), result.error
    if result.ok:
        for ours in nodegroup_objects(inp, sizing(inp)):
            assert not diff_paths(ours, result.one(ours["kind"]))


@pytest.mark.usefixtures("chart_text")
def test_render_chart_checks_class_era_kernel_modules_and_installer_image() -> None:
    inp = chart_input({"cluster": "example"}, namespace=NS, release=R)
    with pytest.raises(ChartRefused) as info:
        render_chart(inp, kernel_modules=[{"name": "nvidia$(id)"}], installer_image="repo/x:`id`")
    assert [(f.code, f.field) for f in info.value.failures] == [
        ("InvalidKernelModule", "kernelModules[0].name"),
        ("Invalid", "installerImage"),
    ]
    assert "`id`" not in str(info.value) and "$(id)" not in str(info.value)
    objects = render_chart(
        inp,
        kernel_modules=[{"name": "nvme_tcp"}, {"name": "nvidia", "parameters": ["NVreg_X=1"]}],
        installer_image="factory.talos.dev/installer/abc:v1.13.6",
        talos_config_template=True,
    )
    assert objects[-1]["kind"] == "TalosConfigTemplate"


@pytest.mark.parametrize(
    ("constraints", "renders"),
    [
        ("topologySpreadConstraints:\n- maxSkew: 1\n  topologyKey: zone\n  whenUnsatisfiable: DoNotSchedule\n", True),
        (
            "a: 1\ntopologySpreadConstraints: [{maxSkew: 2, topologyKey: host, whenUnsatisfiable: ScheduleAnyway}]\n",
            True,
        ),
        ("a: {}\ni: '- dash'\n", False),
        ("- maxSkew: 1\n  topologyKey: zone\n", False),  # a list: fromYaml gives {Error: ...}
        ("topologySpreadConstraints: []\n", False),
    ],
    ids=["list-last", "flow-list-last", "scalar-last", "bare-list", "empty-list"],
)
def test_scheduling_constraints_the_chart_cannot_render(constraints: str, renders: bool) -> None:
    platform = {"_cluster": {"scheduling": {"globalAppTopologySpreadConstraints": constraints}}}
    inp = chart_input({"cluster": "example"}, namespace=NS, release=R, cluster_values=platform)
    ours = [(f.code, f.field) for f in chart_failures(inp)]
    assert ours == ([] if renders else [("Invalid", "_cluster.scheduling.globalAppTopologySpreadConstraints")])
    if available():
        result = get_oracle().render({"cluster": "example"}, release=R, namespace=NS, cluster_values=platform)
        assert result.ok == renders, result.error
        if renders:
            assert not diff_paths(nodegroup_objects(inp, sizing(inp))[0], result.one("KubevirtMachineTemplate"))


UNQUOTED_ROWS: list[tuple[str, dict[str, Any], str | None]] = [
    ("role-space", {"roles": ["a b"]}, None),
    ("role-colon-space", {"roles": ["x: y"]}, "spec.roles[0]"),
    ("role-comment", {"roles": ["#c"]}, None),
    ("role-quote", {"roles": ["ok", "it's"]}, None),
    ("role-newline", {"roles": ["x\n  y"]}, "spec.roles[0]"),
    ("gpu-comment", {"gpus": [{"name": "a #b"}]}, None),
    ("gpu-flow", {"gpus": [{"name": "[x"}]}, "spec.gpus[0].name"),
    ("gpu-alias", {"gpus": [{"name": "*alias"}]}, "spec.gpus[0].name"),
    ("gpu-trailing-colon", {"gpus": [{"name": "nvidia.com/X:"}]}, "spec.gpus[0].name"),
    ("timeout-colon", {"nodeStartupTimeout": "a: b"}, "spec.nodeStartupTimeout"),
    ("timeout-flow-map", {"nodeStartupTimeout": "{a: 1}"}, None),
    ("timeout-flow-list", {"nodeStartupTimeout": "[1, 2]"}, None),
    ("timeout-newline", {"nodeStartupTimeout": "x\ny: 1"}, "spec.nodeStartupTimeout"),
    ("url-comment", {"talos": {"imageFactoryURL": "https://x/ #c"}}, None),
    ("schematic-colon", {"talos": {"schematicID": "a: b"}}, "spec.talos.schematicID"),
    ("version-newline", {"talos": {"version": "v1.13.6\n  evil: 1"}}, "spec.talos.version"),
]


@pytest.mark.parametrize(("values", "field"), [r[1:] for r in UNQUOTED_ROWS], ids=[r[0] for r in UNQUOTED_ROWS])
def test_values_pasted_unquoted(values: dict[str, Any], field: str | None) -> None:
    inp = chart_input({"cluster": "example", **values}, namespace=NS, release=R)
    ours = [(f.code, f.field) for f in chart_failures(inp)]
    assert ours == ([] if field is None else [("Invalid", field)])
    if not available():
        return
    result = get_oracle().render({"cluster": "example", **values}, release=R, namespace=NS)
    assert result.ok == (field is None), result.error
    if result.ok:  # the chart renders what the YAML reads back: comments cut, flow collections parsed
        for obj in nodegroup_objects(inp, sizing(inp)):
            assert not diff_paths(obj, result.one(obj["kind"]))
