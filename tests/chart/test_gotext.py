"""The Go template reader the port renders the chart's own text with.

Templates written here (our own text) pin Go's text/template rules the reader follows: ``{{-`` and
``-}}`` trim whitespace around an action, comments print nothing, ``if`` / ``with`` / ``else`` /
``end`` nest, variables and pipelines pass values (the piped value last), a missing value prints
nothing, sprig's functions behave as sprig's; what the reader does not know fails with the template's
name and line. Against the real charts: every template the port reads compiles from every known chart.
"""

from __future__ import annotations

from typing import Any

import pytest

from workerclass.chart.gotext import SPRIG, Block, TemplateError, Text, compile_define, compile_template
from workerclass.chart.talos_job_spec import JOB_SPEC_DEFINE, JOB_TEMPLATE

from ..shared import UPSTREAM_CHARTS, given_chart


def _render(text: str, dot: Any = None, **functions: Any) -> str:
    return compile_template(text, "t.yaml").render(dot or {}, functions={**SPRIG, **functions})


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a  {{- .x }}  b", "a1  b"),
        ("a  {{ .x -}}  b", "a  1b"),
        ("a\n  {{- .x -}}\n  b", "a1b"),
        ("a {{/* gone */}} b", "a  b"),
        ("a\n{{- /* gone */}}\nb", "a\nb"),
        ("a\n{{- /* gone */ -}}\nb", "ab"),
        ("{{ .missing }}|{{ .x }}", "|1"),
        ("{{ `raw {{ x }}` }}", "raw {{ x }}"),
        ('{{ "}}" }}', "}}"),
    ],
    ids=["trim-left", "trim-right", "trim-both-and-newlines", "comment", "comment-trim-left", "comment-trim-both",
         "missing-prints-nothing", "raw-string", "braces-in-a-string"],
)  # fmt: skip
def test_text_actions_and_trimming(text: str, expected: str) -> None:
    assert _render(text, {"x": 1}) == expected


@pytest.mark.parametrize(
    ("dot", "expected"),
    [({"on": True, "m": {"k": "v"}}, "yes v"), ({"on": False, "m": {}}, "no none"), ({}, "no none")],
    ids=["true", "false", "absent"],
)
def test_if_else_and_with(dot: dict[str, Any], expected: str) -> None:
    text = "{{ if .on }}yes{{ else }}no{{ end }} {{ with .m }}{{ .k }}{{ else }}none{{ end }}"
    assert _render(text, dot) == expected


def test_variables_pipelines_and_functions() -> None:
    text = (
        '{{- $base := printf "%s-%s" .a .b }}{{ $base }} {{ .v | replace "$" "\\\\$" | quote }} '
        '{{ default "d" .none }} {{ .s | trimSuffix "/" }} {{ ne .a "x" }} {{ (.y | default "z") | quote }}'
        "{{ .list | toYaml | nindent 2 }}"
    )
    dot = {"a": "one", "b": "two", "v": "a$b", "s": "repo/", "list": ["p", "q"]}
    assert _render(text, dot) == 'one-two "a\\\\$b" d repo true "z"\n  - p\n  - q'


def test_a_method_is_called_with_its_arguments() -> None:
    class Files:
        def Get(self, path: str) -> str:  # Helm's name for it
            return f"<{path}>\n"

    assert _render('{{ $.Files.Get "images/x.tag" | trim }}', {"Files": Files()}) == "<images/x.tag>"


def test_include_is_the_callers() -> None:
    assert _render('{{ include "name" . }}', {"x": 2}, include=lambda name, data: f"{name}:{data['x']}") == "name:2"


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("line one\n{{ range .x }}{{ end }}", "t.yaml:2"),
        ("{{ if .x }}", "t.yaml:1"),
        ("{{ end }}", "t.yaml:1"),
        ("{{ .x", "t.yaml:1"),
        ("a\nb\n{{ nosuchfunction .x }}", "t.yaml:3"),
    ],
    ids=["range", "unclosed-block", "stray-end", "unclosed-action", "unknown-function"],
)
def test_what_the_reader_does_not_know_is_named_with_its_line(text: str, where: str) -> None:
    with pytest.raises(TemplateError, match=f"^{where}"):
        _render(text, {"x": [1]})


def test_a_define_is_found_with_its_nested_blocks() -> None:
    text = (
        '{{- define "other" }}no{{ end }}\n'
        '{{- define "wanted" -}}\nA{{ if .x }}B{{ with .y }}C{{ end }}{{ end }}D\n{{- end }}\nafter'
    )
    template = compile_define(text, "wanted", "t.yaml")
    assert template.render({"x": 1, "y": 1}, functions=SPRIG) == "ABCD"
    with pytest.raises(TemplateError, match="no define 'absent'"):
        compile_define(text, "absent", "t.yaml")


def test_a_node_prints_what_the_caller_puts_in_its_place() -> None:
    template = compile_template("a{{ if .x }}b{{ end }}c", "t.yaml")
    (block,) = template.find(lambda node: isinstance(node, Block))
    (text,) = template.find(lambda node: isinstance(node, Text) and node.text == "c")
    assert template.render({"x": 1}, functions=SPRIG, replace={id(block): "[B]", id(text): ""}) == "a[B]"


@pytest.mark.parametrize("name", ["main", "pr3315"])
def test_the_known_charts_job_spec_compiles(name: str) -> None:
    chart = given_chart(name)
    template = compile_define(chart.text(JOB_TEMPLATE, what="this test"), JOB_SPEC_DEFINE, JOB_TEMPLATE)
    assert template.nodes
    assert name in UPSTREAM_CHARTS
