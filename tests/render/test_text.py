"""The YAML writer: whatever it writes, PyYAML reads back as the same JSON data."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from workerclass.render.text import manifests_yaml, yaml_document

from .variants import rendered, variants

TRICKY = [
    "",
    " ",
    "yes",
    "No",
    "on",
    "null",
    "~",
    "0",
    "0123",
    "1.5",
    "1e3",
    "0x1f",
    "2026-11-29",
    "50%",
    "-",
    "- a",
    "a: b",
    "a:",
    ":a",
    "a #b",
    "#a",
    "?",
    "=",
    "<<",
    "*a",
    "&a",
    "!a",
    "|",
    ">",
    "'q'",
    '"q"',
    "[a]",
    "{a}",
    "a,b",
    "@a",
    "`a",
    "%a",
    "a\tb",
    "a\nb",
    "a\n",
    "\na",
    "a\n\nb\n",
    " a\nb",
    "a \nb",
    "µs",
    "\u2028",
    "\x00",
    "https://factory.talos.dev/image/x/v1.13.6/openstack-amd64.raw.xz",
    "NVreg_NvLinkDisable=1",
    "registry.example/kairos@sha256:" + "a" * 64,
]

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False)
    | st.sampled_from(TRICKY)
    | st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
)
json_data = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.sampled_from(TRICKY) | st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=25,
)


def _read(text: str) -> Any:
    return yaml.safe_load(text)


@given(json_data)
@settings(max_examples=300, deadline=None)
def test_any_json_data_round_trips(value: Any) -> None:
    assert _read(yaml_document(value)) == value


def test_a_document_of_one_string_that_reads_as_a_document_end_is_quoted() -> None:
    for text in ("...", "...a", "..../x", ".", "./a"):
        assert _read(yaml_document(text)) == text, repr(text)
        assert _read(yaml_document([text])) == [text], repr(text)


def test_tricky_strings_round_trip_as_keys_and_values() -> None:
    for text in TRICKY:
        document = {text or "empty": text, "list": [text, {"k": text}], "nested": {"deeper": [[text]]}}
        assert _read(yaml_document(document)) == document, repr(text)


@pytest.mark.usefixtures("chart_text")
def test_every_rendered_variant_round_trips() -> None:
    for name in variants():
        manifests = rendered(name)
        assert list(yaml.safe_load_all(manifests_yaml(manifests))) == manifests, name


def test_style_is_block_with_sorted_keys_and_indentless_lists() -> None:
    document = {"b": [{"y": 1, "x": "a"}, "c"], "a": {"k": []}, "ca": "line one\nline two\n"}
    # "y" is quoted: kubectl's go-yaml v2 would read a plain y as the boolean true
    assert yaml_document(document) == ('a:\n  k: []\nb:\n- x: a\n  "y": 1\n- c\nca: |\n  line one\n  line two\n')


@pytest.mark.parametrize(
    "text", ["y", "Y", "n", "N", "yes", "off", "1e3", "1e+3", "-2.5e-3", "0o17", "0x1F", "0b101", "1_000", ".inf"]
)
def test_strings_other_yaml_readers_take_for_booleans_or_numbers_are_quoted(text: str) -> None:
    assert yaml_document({"label": text}) == f'label: "{text}"\n'


@pytest.mark.parametrize("text", ["abc", "v1.35", "nvme_tcp", "1Gi", "500m", "u1.medium", "yak", "nope"])
def test_ordinary_strings_stay_plain(text: str) -> None:
    assert yaml_document({"label": text}) == f"label: {text}\n"


@pytest.mark.usefixtures("chart_text")
def test_streamed_list_json_equals_one_json_document() -> None:
    import json

    from workerclass.render.text import iter_list_json, manifests_json

    for items in ([], rendered("talos-factory-ca"), [{"a": "µ", "b": [1, {}]}]):
        streamed = "".join(iter_list_json(items))
        assert streamed == manifests_json({"apiVersion": "v1", "kind": "List", "items": items})
        assert json.loads(streamed)["items"] == items
