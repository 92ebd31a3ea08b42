"""The Go template reader's generated code against its tree walker.

:meth:`Template.render` runs Python code generated from the nodes; :meth:`Template.interpret`
walks them. They must print the same text and fail with the same message for any template the
reader compiles and any data: templates drawn from the reader's subset (text, fields, variables,
pipelines, parentheses, ``if`` / ``with`` / ``else``, functions, a replaced node) and the chart
texts the port reads (the talos-reconcile Job's define, PR 3315's unpin hook) with drawn data. The
generated code is kept on the template per set of replaced nodes: one compile of the chart's text
serves every pool, and a template compiled from other text never runs another's code.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workerclass.chart.gotext import SPRIG, Action, Block, Template, TemplateError, compile_define, compile_template
from workerclass.chart.talos_job_spec import JOB_SPEC_DEFINE, JOB_TEMPLATE
from workerclass.chart.unpin import UNPIN_TEMPLATE

from ..shared import given_chart

_KEYS = ("a", "b", "c")
_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.floats(-2, 1e7, allow_nan=False), st.text("ab$\\`\n ", max_size=4)
)
_data = st.recursive(
    _scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=2), st.dictionaries(st.sampled_from(_KEYS), inner, max_size=3)),
    max_leaves=8,
)
_dots = st.dictionaries(st.sampled_from(_KEYS), _data, max_size=3)


def _fields() -> st.SearchStrategy[str]:
    path = st.lists(st.sampled_from(_KEYS), min_size=0, max_size=2)
    return st.one_of(
        path.map(lambda names: "." + ".".join(names)),
        path.map(lambda names: "$" + "".join("." + name for name in names)),
        st.tuples(st.sampled_from(["$x", "$y"]), path).map(lambda t: t[0] + "".join("." + n for n in t[1])),
    )


_literals = st.sampled_from(['"s"', '"a$b"', "`raw`", "1", "2.5", "true", "nil", '"/"'])
_operands = st.one_of(_fields(), _literals)


def _pipelines() -> st.SearchStrategy[str]:
    def command(operands: list[str], function: str | None) -> str:
        return " ".join(([function] if function else []) + operands)

    functions = st.sampled_from(
        [None, "quote", "default", "trimSuffix", "replace", "ne", "not", "toYaml", "printf", "nope"]
    )
    first = st.builds(command, st.lists(_operands, min_size=1, max_size=2), functions)
    piped = st.builds(command, st.lists(_operands, max_size=2), functions.filter(lambda f: f is not None))
    simple = st.builds(lambda head, tail: " | ".join([head, *tail]), first, st.lists(piped, max_size=2))
    return st.one_of(simple, simple.map(lambda inner: f"({inner}) | quote"))


def _templates() -> st.SearchStrategy[str]:
    text = st.sampled_from(["x", " ", "\n  ", "-", ""])
    action = _pipelines().map(lambda p: "{{ " + p + " }}")
    trimmed = _pipelines().map(lambda p: "{{- " + p + " -}}")
    declare = st.builds(lambda v, p: "{{ " + v + " := " + p + " }}", st.sampled_from(["$x", "$y"]), _pipelines())
    leaf = st.one_of(text, action, trimmed, declare, st.just("{{/* note */}}"))

    def blocks(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        body = st.lists(inner, max_size=3).map("".join)
        return st.builds(
            lambda kind, test, then, otherwise: "{{ " + kind + " " + test + " }}" + then
            + ("{{ else }}" + otherwise if otherwise is not None else "") + "{{ end }}",
            st.sampled_from(["if", "with"]), _pipelines(), body, st.none() | body,
        )  # fmt: skip

    prelude = st.sampled_from(["", "{{- $x := .a }}", '{{ $x := .a }}{{ $y := "s" -}}'])
    body = st.lists(st.recursive(leaf, blocks, max_leaves=6), max_size=5).map("".join)
    return st.builds(lambda head, rest: head + rest, prelude, body)


def _outcome(run: Any) -> tuple[str, str]:
    try:
        return "text", run()
    except TemplateError as error:
        return "error", str(error)


def _same(template: Template, dot: Any, replace: dict[int, str] | None = None, **functions: Any) -> str:
    every = {**SPRIG, **functions}
    generated = _outcome(lambda: template.render(dot, functions=every, replace=replace))
    interpreted = _outcome(lambda: template.interpret(dot, functions=every, replace=replace))
    assert generated == interpreted
    return generated[1]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_templates(), dot=_dots, data=st.data())
def test_generated_code_prints_and_fails_as_the_tree_walker(text: str, dot: dict[str, Any], data: Any) -> None:
    try:
        template = compile_template(text, "t.yaml")
    except TemplateError:
        return  # not in the reader's subset: neither form runs
    _same(template, dot)
    nodes = template.find(lambda node: True)
    if nodes:
        chosen = data.draw(st.lists(st.sampled_from(nodes), max_size=2, unique_by=id))
        _same(template, dot, {id(node): f"[{index}]" for index, node in enumerate(chosen)})


@pytest.mark.parametrize(
    "text",
    [
        "{{ if .a }}{{ $x := 1 }}{{ end }}{{ $x }}",  # declared on one branch only: undefined on the other
        "{{ with .a }}{{ $x := .b }}{{ end }}{{ $x }}",  # a with body's variables stay in it
        "{{ $x := .a }}{{ with .b }}{{ $x }}{{ $x := 2 }}{{ $x }}{{ end }}{{ $x }}",
        "{{ .a .b }}",  # arguments to a value that is no method
        "{{ nope .a }}",  # a function the port does not provide
        '{{ .a | printf "%s-%s" .b }}',  # printf runs out of values
    ],
)
@pytest.mark.parametrize("dot", [{}, {"a": 1, "b": "v"}, {"a": "", "b": {"c": 2}}])
def test_scopes_and_failures_agree(text: str, dot: dict[str, Any]) -> None:
    _same(compile_template(text, "t.yaml"), dot)


def test_a_method_call_agrees() -> None:
    class Files:
        def Get(self, path: str) -> str:  # Helm's name for it
            return f"<{path}>"

    assert (
        _same(compile_template('{{ $.Files.Get "x" | trim }}{{ .Files.Nope }}', "t.yaml"), {"Files": Files()}) == "<x>"
    )


_JOB_DATA = st.fixed_dictionaries(
    {
        "Release": st.fixed_dictionaries({"Name": st.text("kn-1", min_size=1), "Namespace": st.text("tn", min_size=1)}),
        "Values": st.fixed_dictionaries(
            {},
            optional={
                "talos": st.dictionaries(
                    st.sampled_from(["installerRepository", "schematicID", "version", "registryMirrors"]),
                    _data,
                    max_size=4,
                )
            },
        ),
        "group": st.fixed_dictionaries({"gpus": _data}),
        "groupName": st.text("g-1", min_size=1),
        "clusterName": st.text("c", min_size=1),
        "kubeletVersion": st.sampled_from(["v1.35.0", ""]),
        "talosVersion": st.text("v1.$`\\", max_size=5),
        "podCIDR": st.just("10.243.0.0/16"),
        "serviceCIDR": st.just("10.95.0.0/16"),
        "dnsDomain": st.just("cluster.local"),
        "mgmtClusterDomain": st.sampled_from(["cozy.local", "cluster.local", "x"]),
        "systemReservedCpu": _scalars,
        "systemReservedMemory": _scalars,
        "kubeReservedCpu": _scalars,
        "kubeReservedMemory": _scalars,
        "evictionHardMemory": _scalars,
        "evictionSoftMemory": _scalars,
        "kubectlImage": st.text("img:1", min_size=1),
    }
)


@pytest.mark.parametrize("name", ["main", "pr3315", "pr3571"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=_JOB_DATA, replace=st.booleans())
def test_the_charts_job_define_agrees_on_drawn_contexts(name: str, data: dict[str, Any], replace: bool) -> None:
    chart = given_chart(name)
    template = _job_template(chart.digest, chart.text(JOB_TEMPLATE, what="this test"))
    blocks = template.find(lambda node: isinstance(node, Block) and ".group.gpus" in node.source)
    swapped = {id(blocks[0]): "[modules]"} if replace and blocks else None
    _same(template, data, swapped)


@pytest.mark.parametrize("name", ["pr3315"])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=st.dictionaries(st.sampled_from(["talos", "cluster", "a"]), _data, max_size=3))
def test_the_unpin_hook_agrees_on_drawn_values(name: str, values: dict[str, Any]) -> None:
    chart = given_chart(name)
    template = compile_template(chart.text(UNPIN_TEMPLATE, what="this test"), UNPIN_TEMPLATE)

    class Files:
        def Get(self, path: str) -> str:
            return "tag:1\n"

    dot = {"Release": {"Name": "kn-x", "Namespace": "tn"}, "Values": values, "Files": Files()}
    _same(template, dot, include=lambda define, _data: f"<{define}>")


_JOB_TEMPLATES: dict[str, Template] = {}


def _job_template(digest: str, text: str) -> Template:
    if digest not in _JOB_TEMPLATES:
        _JOB_TEMPLATES[digest] = compile_define(text, JOB_SPEC_DEFINE, JOB_TEMPLATE)
    return _JOB_TEMPLATES[digest]


def test_the_code_is_kept_per_template_and_set_of_replaced_nodes() -> None:
    template = compile_template("a{{ .x }}{{ if .y }}b{{ end }}", "t.yaml")
    other = compile_template("A{{ .x }}{{ if .y }}B{{ end }}", "t.yaml")
    (block,) = template.find(lambda node: isinstance(node, Block))
    assert template.render({"x": 1, "y": 1}, functions=SPRIG) == "a1b"
    assert template.render({"x": 2}, functions=SPRIG) == "a2"
    assert len(template._code) == 1  # one generation serves every dot
    assert template.render({"x": 1, "y": 1}, functions=SPRIG, replace={id(block): "[B]"}) == "a1[B]"
    assert len(template._code) == 2
    assert other.render({"x": 1, "y": 1}, functions=SPRIG) == "A1B"  # its own code, not the first's
    assert other._code.keys() == {frozenset()}
    # a replace naming no node of the template changes nothing (and the code stays one per set)
    assert template.render({"x": 3}, functions=SPRIG, replace={id(other): "?"}) == "a3"


def test_what_the_generator_leaves_to_the_walker_still_renders() -> None:
    template = compile_template("{{ $ := .a }}{{ $ }}", "t.yaml")
    assert any(isinstance(node, Action) for node in template.nodes)
    assert _same(template, {"a": "v"}) == "v"
