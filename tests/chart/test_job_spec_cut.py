"""The talos-reconcile define cut where its command script starts, the rest shared between pools.

:func:`~workerclass.chart.gotext.data_read` says which paths of the data decide a run of nodes: two
data that agree at those paths print the same text or fail the same way, whatever else they hold
(drawn templates of the reader's subset, data grafted to agree). :func:`job_spec` renders the text
before the cut per pool and the rest once per distinct value of what it reads: the whole text, the
Job's name hash and its script are those of the define rendered whole, for every chart the port
reads; pools that differ only in name share one rest, and values that could read ambiguously as a
key are never shared.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from workerclass.chart import talos_job_spec
from workerclass.chart.gotext import SPRIG, TemplateError, compile_template, data_read, read_value
from workerclass.chart.nodegroup import chart_hash
from workerclass.chart.talos_job_spec import (
    _SCRIPT_START,
    JobContext,
    JobSpec,
    SpecRest,
    _read_key,
    command_script,
    heredoc_body,
    job_spec,
)

from ..shared import given_chart
from .test_gotext_generated import _JOB_DATA, _dots, _outcome, _templates


def _graft(target: dict[str, Any], source: dict[str, Any], paths: tuple[tuple[str, ...], ...]) -> dict[str, Any]:
    """``target`` made to hold ``source``'s value at every path (longest first, so a shorter path's
    value is the one that stays)."""
    out: dict[str, Any] = dict(target)
    for path in sorted(paths, key=len, reverse=True):
        if not path:
            return dict(source)
        node = out
        for name in path[:-1]:
            child = node.get(name)
            node[name] = dict(child) if isinstance(child, dict) else {}
            node = node[name]
        node[path[-1]] = read_value(source, path)
    return out


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_templates(), first=_dots, second=_dots)
def test_data_that_agree_where_the_nodes_read_print_the_same(
    text: str, first: dict[str, Any], second: dict[str, Any]
) -> None:
    try:
        template = compile_template(text, "t.yaml")
    except TemplateError:
        return
    paths = data_read(template.nodes)
    if paths is None:
        return
    other = _graft(second, first, paths)
    assert all(repr(read_value(other, path)) == repr(read_value(first, path)) for path in paths)
    assert _outcome(lambda: template.render(first, functions=SPRIG)) == _outcome(
        lambda: template.render(other, functions=SPRIG)
    )


@pytest.mark.parametrize(
    ("text", "paths"),
    [
        ("{{ .a.b }}{{ $.c }}{{ .a.b }}", (("a", "b"), ("c",))),
        ("{{ with .a }}{{ .x }}{{ $.b }}{{ end }}", (("a",), ("b",))),
        ("{{ $v := .a }}{{ $v.x }}", (("a",),)),
        ("{{ quote (default .a .b) }}", (("a",), ("b",))),
        ("{{ if .a }}{{ .b }}{{ else }}{{ $.c.d }}{{ end }}", (("a",), ("b",), ("c", "d"))),
        ("{{ with .a }}{{ if .x }}{{ .y }}{{ end }}{{ else }}{{ .z }}{{ end }}", (("a",), ("z",))),
        ("{{ toYaml . }}", ((),)),
        ("{{ $ }}", ((),)),
        ("{{ $v }}", None),  # set before these nodes: they cannot tell what it holds
        ("{{ if .a }}{{ $v := 1 }}{{ end }}{{ $v }}", None),
    ],
)
def test_what_a_template_reads(text: str, paths: tuple[tuple[str, ...], ...] | None) -> None:
    nodes = compile_template(text, "t.yaml").nodes
    assert data_read(nodes) == paths


def _context(data: dict[str, Any], **names: str) -> JobContext:
    release = names.get("release", data["Release"]["Name"])
    return JobContext(
        release=release,
        namespace=names.get("namespace", data["Release"]["Namespace"]),
        cluster_name=names.get("cluster", data["clusterName"]),
        group_name=names.get("group", data["groupName"]),
        kubectl_image=data["kubectlImage"],
        kubelet_version=data["kubeletVersion"],
        talos_version=data["talosVersion"],
        mgmt_cluster_domain=data["mgmtClusterDomain"],
        gpus=data["group"]["gpus"],
        system_reserved_cpu=data["systemReservedCpu"],
        system_reserved_memory=data["systemReservedMemory"],
        kube_reserved_cpu=data["kubeReservedCpu"],
        kube_reserved_memory=data["kubeReservedMemory"],
        eviction_hard_memory=data["evictionHardMemory"],
        eviction_soft_memory=data["evictionSoftMemory"],
        values=data["Values"],
    )


@pytest.mark.parametrize("name", ["main", "pr3315", "pr3571"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=_JOB_DATA)
def test_the_cut_define_is_the_define_rendered_whole(name: str, data: dict[str, Any]) -> None:
    chart = given_chart(name)
    compiled = talos_job_spec._compiled(chart)
    ctx = _context(data)
    whole = _outcome(lambda: compiled.template.render(ctx.data(), functions=SPRIG))
    cut = _outcome(lambda: job_spec(ctx, chart).text)
    assert cut == whole
    if whole[0] == "text":
        spec = job_spec(ctx, chart)
        assert spec.name_hash == chart_hash(whole[1])
        assert _outcome(lambda: spec.script) == _outcome(lambda: command_script(whole[1]))
        assert _outcome(lambda: spec.heredoc) == _outcome(lambda: heredoc_body(command_script(whole[1])))


@pytest.mark.parametrize("name", ["main", "pr3315"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(first=_JOB_DATA, second=_JOB_DATA)
def test_contexts_that_agree_where_the_rest_reads_render_the_same_rest(
    name: str, first: dict[str, Any], second: dict[str, Any]
) -> None:
    split = talos_job_spec._compiled(given_chart(name)).split
    assert split is not None
    other = _graft(second, first, split.reads)
    assert _outcome(lambda: split.rest.render(first, functions=SPRIG)) == _outcome(
        lambda: split.rest.render(other, functions=SPRIG)
    )


def test_the_main_chart_s_define_is_cut_and_its_rest_names_no_pool() -> None:
    chart = given_chart("main")
    split = talos_job_spec._compiled(chart).split
    assert split is not None
    assert split.rest.nodes[0].text.startswith(_SCRIPT_START)  # type: ignore[union-attr]
    read = {path[0] for path in split.reads}
    assert not read & {"Release", "clusterName", "groupName", "kubectlImage"}
    assert {"talosVersion", "kubeletVersion", "group", "Values"} <= read


def _main_context(**names: str) -> JobContext:
    data = {
        "Release": {"Name": "kubernetes-nodes-c-a", "Namespace": "tenant-a"},
        "Values": {"talos": {"version": "v1.13.6", "installerRepository": "ghcr.io/x", "schematicID": "abc"}},
        "group": {"gpus": None},
        "groupName": "a",
        "clusterName": "kubernetes-c",
        "kubeletVersion": "v1.35.0",
        "talosVersion": "v1.13.6",
        "mgmtClusterDomain": "cozy.local",
        "systemReservedCpu": "100m",
        "systemReservedMemory": "512Mi",
        "kubeReservedCpu": "100m",
        "kubeReservedMemory": "512Mi",
        "evictionHardMemory": "5%",
        "evictionSoftMemory": "10%",
        "kubectlImage": "img:1",
    }
    return _context(data, **names)


def test_pools_that_differ_in_name_share_the_rest_and_others_do_not() -> None:
    chart = given_chart("main")
    one = job_spec(_main_context(), chart)
    other = job_spec(_main_context(release="kubernetes-nodes-c-b", group="b", namespace="tenant-b"), chart)
    assert other.rest is one.rest and other.head != one.head
    assert other.name_hash != one.name_hash  # the text before the cut names the pool: so does the hash
    assert other.script is one.script
    assert other.heredoc is one.heredoc is not None  # the heredoc searched once, its body one object
    changed = dataclasses.replace(_main_context(), kubelet_version="v1.34.2")
    assert job_spec(changed, chart).rest is not one.rest


def test_a_text_before_the_cut_that_holds_the_script_s_start_reads_the_whole_text() -> None:
    rest = SpecRest(_SCRIPT_START + "              echo rest\n          resources:\n")
    head = "a:\n  - |\n" + _SCRIPT_START + "              echo head\n          resources:\n"
    spec = JobSpec(head, rest)
    assert spec.script == command_script(head + rest.text) == "echo head\n"
    assert spec.rest.script == "echo rest\n"
    # the script's start made of the text before the cut and the first line break of the rest
    straddling = JobSpec("x" + _SCRIPT_START[:-1], rest)
    assert straddling.script == command_script(straddling.text) != rest.script


class _Kind(enum.Enum):
    ONE = "one"


@pytest.mark.parametrize(
    "value",
    [
        {"a": None},
        [None],
        math.nan,
        math.inf,
        "null",
        object(),
        {1: "a"},
        2**70,
        (1,),
        [(1,)],
        _Kind.ONE,
        uuid.UUID(int=1),
    ],
)
def test_values_that_would_read_ambiguously_are_no_key(value: Any) -> None:
    assert _read_key({"v": value}, (("v",),), {}) is None


def test_keys_tell_apart_what_prints_apart() -> None:
    values = [1, 1.0, True, "1", "", 0, None, [1], {"a": 1, "b": 2}, {"b": 2, "a": 1}]
    keys = [_read_key({"v": value}, (("v",),), {}) for value in values]
    assert None not in keys and len(set(keys)) == len(keys)
    assert _read_key({}, (("v",),), {}) == _read_key({"v": None}, (("v",),), {})  # read alike: None
    assert _read_key({"v": 1}, (("v",),), {1: "x"}) != _read_key({"v": 1}, (("v",),), {})


def test_a_define_that_sets_dollar_is_not_cut() -> None:
    """``$`` set before the cut is what the rest's ``$`` reads: rendered alone, the rest would read the data."""
    text = "{{ $ := .a }}head" + _SCRIPT_START + "{{ $.x }}\n          resources:\n"
    template = compile_template(text, "t.yaml")
    assert talos_job_spec._split(template) is None
    plain = compile_template("head" + _SCRIPT_START + "{{ $.x }}\n          resources:\n", "t.yaml")
    assert talos_job_spec._split(plain) is not None


def test_a_lone_surrogate_fails_the_name_hash_as_the_whole_text_does() -> None:
    chart = given_chart("main")
    ctx = dataclasses.replace(_main_context(), talos_version="v1\ud800")
    spec = job_spec(ctx, chart)  # the text renders, as it did whole: only the hash needs its bytes
    with pytest.raises(UnicodeEncodeError) as whole:
        chart_hash(spec.text)
    with pytest.raises(UnicodeEncodeError) as cut:
        _ = spec.name_hash
    assert str(cut.value) == str(whole.value)
