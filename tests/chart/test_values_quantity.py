"""Unit facts for the chart's number and values semantics (no oracle needed).

Go's ``%v`` of float64, ``strconv.ParseFloat``/``ParseInt(s, 0, 64)`` as spf13/cast uses them,
shopspring/decimal's ``divf`` (16 decimal places, half away from zero) and exact ``mulf``, cozy-lib's
``toFloat``, ``kubernetes.cpuToMillicores``, Helm's coalesce, go-yaml v2 scalars, and sizing figures
the oracle printed for the shipped instance types.
"""

from __future__ import annotations

from typing import Any

import pytest

from workerclass.chart import (
    chart_defaults,
    chart_input,
    coalesce,
    kubectl_image,
    load_instancetypes,
    sizing,
    version_map,
)
from workerclass.chart.goyaml import to_yaml
from workerclass.chart.kubeyaml import k8s_load, plain_scalar
from workerclass.chart.quantity import cpu_to_millicores, divf, go_float_str, mulf, to_float, to_float64, to_int


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1e6, "1e+06"),
        (123456.0, "123456"),
        (1234567.0, "1.234567e+06"),
        (0.0001, "0.0001"),
        (0.00001, "1e-05"),
        (1e21, "1e+21"),
        (-1.5, "-1.5"),
        (0.0, "0"),
        (4294967296.0, "4.294967296e+09"),
        (53687091.2, "5.36870912e+07"),
    ],
)
def test_go_percent_v_of_a_float64(value: float, text: str) -> None:
    assert go_float_str(value) == text


@pytest.mark.parametrize(
    ("value", "number"),
    [
        ("2Gi", 2147483648.0),
        ("100m", 0.1),
        ("1E", 1e18),
        ("1Ei", 2.0**60),
        ("5e3", 5000.0),
        ("1.", 1.0),
        ("+.5k", 500.0),
        ("abc", 0.0),
        ("1_000", 0.0),  # Go's ParseFloat takes no underscores without a base prefix
        ("1e400", 0.0),  # out of range: cast gives 0
        (3, 3.0),
        ("4u", 4e-6),
    ],
)
def test_to_float(value: Any, number: float) -> None:
    assert to_float(value) == number


@pytest.mark.parametrize(
    ("value", "millis"), [("100m", "100"), ("0.5", "500"), (4, "4000"), ("1.5m", "1.5"), ("0.0005", "0"), ("2", "2000")]
)
def test_cpu_to_millicores(value: Any, millis: str) -> None:
    assert cpu_to_millicores(value) == millis


@pytest.mark.parametrize(
    ("value", "number"), [("0100", 64), ("1.5", 0), ("2.000", 2), ("0x10", 16), (3.9, 3), (-3.9, -3), ("1_000", 0)]
)
def test_to_int_is_cast_to_int(value: Any, number: int) -> None:
    assert to_int(value) == number


def test_decimal_arithmetic() -> None:
    assert divf(to_float("2Gi"), 40.0) == 53687091.2
    assert divf(1.0, 3e16) == 0.0  # rounded at 16 decimal places, unlike float division
    assert divf(4.0, 1e17) == 0.0 and divf(5.0, 1e16) == 5e-16
    assert divf(5.0, 1e17) == 1e-16 and divf(-5.0, 1e17) == -1e-16  # half rounds away from zero
    assert mulf(0.1, 3.0) == 0.3  # exact product, unlike 0.1 * 3
    assert to_float64("nope") == 0.0


def test_coalesce_is_helms() -> None:
    defaults = {"a": 1, "m": {"x": 1, "y": 2}, "l": [1, 2], "t": {"k": 1}, "z": {"q": 1}}
    user = {"a": None, "m": {"y": None, "w": 3}, "l": [9], "t": "scalar", "new": None, "u": {"n": None}}
    out = coalesce(user, defaults)
    assert out == {"m": {"x": 1, "w": 3}, "l": [9], "t": "scalar", "z": {"q": 1}, "u": {"n": None}}
    assert user["m"] == {"y": None, "w": 3}  # not mutated


def test_chart_input_layers_pool_over_platform_over_defaults() -> None:
    inp = chart_input(
        {"cluster": "c", "talos": {"version": "v1.13.0"}},
        namespace="tenant-a",
        release="kubernetes-nodes-c-p",
        cluster_values={"_cluster": {"cluster-domain": "x.local"}, "_namespace": {"host": "h"}},
    )
    assert inp.values["talos"]["version"] == "v1.13.0"
    assert inp.values["talos"]["schematicID"] == chart_defaults()["talos"]["schematicID"]
    assert inp.values["_cluster"] == {"cluster-domain": "x.local"}
    assert inp.group_name == "p" and inp.cluster_name == "kubernetes-c"
    assert chart_input({}, namespace="n", release="r").values["_cluster"] == {"cluster-domain": "cozy.local"}


def test_data_files() -> None:
    assert version_map()["v1.35"] == "v1.35.6"
    assert kubectl_image().startswith("docker.io/alpine/k8s:")
    assert len(load_instancetypes()) == 69
    d = chart_defaults()
    d["talos"]["version"] = "mutated"
    assert chart_defaults()["talos"]["version"] == "v1.13.6"


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("0000:07:00.0", "0000:07:00.0"),
        ("1e+06", 1000000),
        ("010", 8),
        ("0x1F", 31),
        ("on", True),
        ("n", False),
        ("", None),
        ("1.5", 1.5),
        ("+1Gi", "+1Gi"),
        ("20m", "20m"),
    ],
)
def test_plain_scalars_as_kubernetes_reads_them(text: str, value: Any) -> None:
    got = plain_scalar(text)
    assert got == value and type(got) is type(value)


def test_to_yaml_and_k8s_load() -> None:
    text = to_yaml(
        {"requests": {"ephemeral-storage": "53687091", "cpu": "1500m"}, "limits": {"cpu": "3", "x": [1, "on"]}}
    )
    assert text == (
        'limits:\n  cpu: "3"\n  x:\n  - 1\n  - "on"\nrequests:\n  cpu: 1500m\n  ephemeral-storage: "53687091"'
    )
    assert k8s_load("a: 0000:07:00.0\nb: 1e3\nc:\non: 1") == {"a": "0000:07:00.0", "b": 1000, "c": None, "true": 1}


@pytest.mark.parametrize(
    ("values", "figures"),
    [
        ({}, ("4Gi", "1", "256Mi", "50m", "3297Mi", "900m")),
        (
            {"instanceType": "", "resources": {"cpu": 4, "memory": "8Gi"}},
            ("8Gi", "4", "409Mi", "200m", "6800Mi", "3600m"),
        ),
        ({"instanceType": "u1.2xlarge"}, ("32Gi", "8", "1024Mi", "400m", "28426Mi", "7200m")),
        (
            {"instanceType": "", "resources": {"cpu": "64", "memory": "2Ti"}},
            ("2Ti", "64", "1024Mi", "500m", "1.948303e+06Mi", "63000m"),
        ),
        ({"instanceType": ""}, ("", "", "256Mi", "50m", None, None)),
    ],
)
def test_sizing_figures(values: dict[str, Any], figures: tuple[Any, ...]) -> None:
    s = sizing(chart_input({"cluster": "e", **values}, namespace="tenant-x", release="kubernetes-nodes-e-p"))
    got = (s.effective_memory, s.effective_cpu, s.system_reserved_memory, s.system_reserved_cpu)
    assert (*got, s.capacity_memory(), s.capacity_cpu()) == figures
