"""The package's YAML reader: Kubernetes' reading (go-yaml v2, then JSON) on PyYAML's C parser.

- it reads every KubevirtMachineTemplate text of the chart's value space (constraints and
  class-era disks included) as the oracle's reader does, and as the same resolution on PyYAML's
  pure-Python parser does (the C parser changes the speed, never the value);
- plain scalars, keys and explicit tags resolve as go-yaml v2 decodes them into ``interface{}``.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from yaml.nodes import MappingNode, ScalarNode, SequenceNode
from yaml.resolver import BaseResolver

from tests.chart.oracle import oracle_read
from workerclass.chart import chart_failures, golden_disk, kubevirtmachinetemplate_text, sizing
from workerclass.chart.kubeyaml import PLAIN_TAG, KubeLoader, from_yaml, k8s_load, k8s_load_all
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
    "_pair_name",
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


#: documents for the one-call-per-node builder and the PyYAML constructor it hands the rest to
BUILDER_CASES = {
    "plain-and-quoted": "a: y\nb: '1e2'\nc: [1, 0x1F, ~, \"x\"]\nd: {e: {f: [g, {h: 1.5}]}}\n",
    "typed-tags": "a: !!int 017\nb: !!float 3\nc: !!bool yes\nd: !!null ''\ne: !!str 12\nf: !!timestamp 2001-12-14\n",
    "binary": "a: !!binary aGVsbG8=\n",
    "merge": "base: &b {x: 1, y: 2}\nother: {<<: *b, y: 3}\n",
    "merge-list": "a: &a {x: 1}\nb: &b {y: 2}\nc: {<<: [*a, *b], z: 3}\n",
    "aliases": "a: &a [1, {b: 2}]\nc: [*a, *a]\nd: &d x\ne: *d\n",
    "explicit-seq-map": "a: !!seq [1, 2]\nb: !!map {c: 1}\n",
    "repeated-key": "a: 1\na: 2\n",
    "keys": "{on: a, 1: b, 1.5: c, 3.0: d, ~x: e}",
    "empty": "",
    "scalar-document": "just text",
}
BUILDER_ERRORS = {
    "null-key": "{~: a}",
    "collection-key": "? [a]\n: b\n",
    "set": "a: !!set {x, y}\n",
    "omap": "a: !!omap [x: 1]\n",
    "int-tag-misfit": "a: !!int 1:30\n",
    "unknown-tag": "a: !duration 5s\n",
}


def _slow(text: str) -> Any:
    return yaml.load(text, Loader=PurePythonKubeLoader)  # PyYAML's own construct_document


@pytest.mark.parametrize("text", BUILDER_CASES.values(), ids=BUILDER_CASES.keys())
def test_the_builder_reads_as_pyyamls_constructor_does(text: str) -> None:
    loaded = k8s_load(text)
    assert json.dumps(loaded) == json.dumps(_slow(text))  # key order too


@pytest.mark.parametrize("text", BUILDER_ERRORS.values(), ids=BUILDER_ERRORS.keys())
def test_the_builder_refuses_what_pyyamls_constructor_refuses(text: str) -> None:
    with pytest.raises(yaml.YAMLError) as slow:
        _slow(text)
    with pytest.raises(yaml.YAMLError) as fast:
        k8s_load(text)
    assert str(fast.value).splitlines()[0] == str(slow.value).splitlines()[0]


def test_a_collection_inside_itself_is_left_to_pyyamls_constructor() -> None:
    """PyYAML builds it inside itself (what the bounds then refuse as too deep); the builder hands it on."""
    loaded = k8s_load("a: &a [1, *a]\n")
    assert loaded["a"][1] is loaded["a"]


def test_an_alias_is_its_anchors_value_and_each_is_built_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """An alias shares its anchor's value, as PyYAML's constructor shares it, so a document of
    aliases of aliases (a "billion laughs") is built in time linear in its nodes."""
    laughs = "a0: &a0 [x, x]\n" + "".join(f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}]\n" for i in range(1, 40))
    calls = []
    original = KubeLoader._built
    monkeypatch.setattr(
        KubeLoader, "_built", lambda self, node, made, depth: calls.append(1) or original(self, node, made, depth)
    )
    loaded = k8s_load(laughs)
    assert loaded["a39"][0] is loaded["a38"] and loaded["a39"][1] is loaded["a38"]
    assert len(calls) < 40 * 6  # each key, each list and its two members once: not 2**40


def test_a_plain_document_is_built_without_pyyamls_constructor(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: Any, node: Any, deep: bool = False) -> Any:
        raise AssertionError(f"PyYAML's constructor called for {node.tag}")

    monkeypatch.setattr(KubeLoader, "construct_object", refuse)
    loaded = k8s_load("a: [1, 'b', {c: y}]\nmetadata: {name: x}\n")
    assert loaded == {"a": [1, "b", {"c": True}], "metadata": {"name": "x"}}


@pytest.mark.parametrize("value", ["<<", "<", "<<<", "", "a", "1e2", "~", "<< ", "y"])
@pytest.mark.parametrize("implicit", [(True, False), (False, True), (False, False)])
def test_a_nodes_tag_is_the_registered_resolvers_tag(value: str, implicit: tuple[bool, bool]) -> None:
    loader = KubeLoader("")
    try:
        for kind in (ScalarNode, SequenceNode, MappingNode):
            assert loader.resolve(kind, value, implicit) == BaseResolver.resolve(loader, kind, value, implicit)
    finally:
        loader.dispose()


def test_a_subclass_with_resolvers_of_its_own_is_read_by_pyyamls_resolution() -> None:
    class Dated(KubeLoader):
        pass

    Dated.add_implicit_resolver("tag:yaml.org,2002:timestamp", re.compile(r"^\d{4}-\d\d-\d\d$"), list("0123456789"))
    loader = Dated("")
    try:
        assert loader.resolve(ScalarNode, "2001-12-14", (True, False)) == "tag:yaml.org,2002:timestamp"
        assert loader.resolve(ScalarNode, "2001", (True, False)) == PLAIN_TAG
    finally:
        loader.dispose()
    assert yaml.load("a: 2001-12-14\n", Loader=Dated) == {"a": "2001-12-14"}  # a timestamp keeps its text


def test_a_path_resolver_is_refused_and_the_composer_tracks_no_path() -> None:
    """The composer's calls around each node are C callables that keep nothing: a path resolver,
    which they would have to track, is refused rather than silently ignored."""
    with pytest.raises(NotImplementedError):
        KubeLoader.add_path_resolver("tag:yaml.org,2002:str", ["spec"], ScalarNode)
    assert not KubeLoader.yaml_path_resolvers
    loader = KubeLoader("a: [1, {b: c}]\n")
    try:
        assert loader.descend_resolver(None, None) is True  # no frame, no state kept
        assert loader.ascend_resolver() == ()
        assert loader.construct_document(loader.get_single_node()) == {"a": [1, {"b": "c"}]}
    finally:
        loader.dispose()


def test_a_document_deeper_than_the_builder_goes_is_pyyamls_to_build() -> None:
    """Past twice the bounds' depth the builder hands the document on, so that a deep one gets the
    readers' refusal with its file and line (``tests/test_poison.py``), not Python's recursion limit."""

    class Constructed(KubeLoader):  # the C parser, PyYAML's constructor
        construct_document = yaml.constructor.BaseConstructor.construct_document

    text = "a: " + "[" * 900 + "x" + "]" * 900 + "\n"  # within the C scanner's 1,000 flow levels
    loaded = k8s_load(text)
    assert loaded == yaml.load(text, Loader=Constructed)
    assert json.dumps(loaded).count("[") == 900
