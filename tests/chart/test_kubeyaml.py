"""The package's YAML reader: Kubernetes' reading (go-yaml v2, then JSON) on PyYAML's C parser.

- it reads every KubevirtMachineTemplate text of the chart's value space (constraints and
  class-era disks included) as the oracle's reader does, and as the same resolution on PyYAML's
  pure-Python parser does (the C parser changes the speed, never the value);
- plain scalars, keys and explicit tags resolve as go-yaml v2 decodes them into ``interface{}``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.chart.oracle import oracle_read
from workerclass.chart import chart_failures, golden_disk, kubevirtmachinetemplate_text, sizing
from workerclass.chart.kubeyaml import KubeLoader, from_yaml, k8s_load, k8s_load_all
from workerclass.chart.nodegroup import Disk

from .cases import free_pools, make_input, pools

DISKS = st.sampled_from(
    [None, golden_disk("abc", "v1.13.6"), Disk.http("https://m.example/image/x/v1/openstack-amd64.raw.xz", "ca-cm")]
)


class PurePythonKubeLoader(yaml.SafeLoader):
    """The same resolution and constructors on PyYAML's pure-Python parser."""


PurePythonKubeLoader.yaml_implicit_resolvers = dict(KubeLoader.yaml_implicit_resolvers)
PurePythonKubeLoader.yaml_constructors = dict(KubeLoader.yaml_constructors)
for _name in (
    "construct_plain",
    "construct_mapping",
    "construct_yaml_map",
    "construct_typed",
    "construct_text",
    "repeated_key",
    "metadata_read",
):
    setattr(PurePythonKubeLoader, _name, getattr(KubeLoader, _name))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
@given(st.one_of(pools(), free_pools()), DISKS)
def test_every_define_text_reads_as_the_oracle_and_the_pure_python_parser_read_it(
    case: tuple[dict[str, Any], str, str, Any], disk: Disk | None
) -> None:
    inp = make_input(*case)
    if chart_failures(inp):
        return
    text = kubevirtmachinetemplate_text(inp, sizing(inp), disk)
    loaded = k8s_load(text)
    assert json.dumps(loaded) == json.dumps(yaml.load(text, Loader=PurePythonKubeLoader))  # key order too
    assert [loaded] == oracle_read(text)


SCALARS = {
    "yaml-1.1-booleans": "[y, Y, n, N, yes, No, on, OFF, true, False]",
    "nulls": "[~, null, Null, NULL, '']",
    "go-integers": "[0x1F, 0o17, 017, 0b101, 1_000, -08, +5, 18446744073709551615, 18446744073709551616]",
    "floats": "[1e2, .5, 3.0, -1.5e-7, .inf, -.Inf, 1e20]",
    "text-not-numbers": "[1:30, 2001-12-14, 2001-12-14 21:59:43.10 -5, 0000:07:00.0, 1e, 0x, v1.35]",
    "keys": "{on: a, 1: b, 1.5: c, 3.0: d, ~x: e}",
    "merge": "{base: &b {x: 1, y: 2}, other: {<<: *b, y: 3}}",
    "quoted": "['y', \"1e2\", '1:30']",
}


@pytest.mark.parametrize("text", SCALARS.values(), ids=SCALARS.keys())
def test_scalars_and_keys_resolve_as_kubernetes_reads_them(text: str) -> None:
    assert [k8s_load(text)] == oracle_read(text)


def test_a_null_key_has_no_json_form() -> None:
    with pytest.raises(yaml.YAMLError, match="null"):
        k8s_load("{~: a}")


def test_every_document_of_a_stream() -> None:
    assert k8s_load_all("a: y\n---\nb: 1e2\n") == oracle_read("a: y\n---\nb: 1e2\n")


def test_from_yaml_is_helms_shape_for_what_is_not_a_mapping() -> None:
    assert from_yaml("") == {}
    assert from_yaml("a: [1, 2]") == {"a": [1, 2]}
    assert set(from_yaml("- 1")) == {"Error"}
    assert set(from_yaml("a: [")) == {"Error"}
