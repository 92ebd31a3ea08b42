"""The chart port's fast paths equal the exact paths they stand in for.

- sprig's decimal ``mulf``/``addf``/``subf``/``divf`` in integer arithmetic equal the exact
  ``fractions.Fraction`` implementation on every float64 (incl. exponent forms, subnormals,
  negative zero, infinities and NaN spellings, strings and ints as the values hold them);
- the KubevirtMachineTemplate's ``spec.template`` built directly (the platform's constraints
  included) equals what the define's text parses to (Kubernetes' reading), key order included,
  over the chart's value space;
- the Job's command script cut in one replace equals the line-by-line reading of the block;
- one match of the pasted texts joined equals :func:`plain_safe` of each;
- on an input that agrees with one every check passed on where :func:`passes_rest_as` looks, the
  rewritten checks alone (``rest_passed``) find what all of them find, whatever the other keys hold;
- an input every check passed on passes them all under any other release :func:`release_free`
  admits (the pools that differ only in name share one run of the checks).
"""

from __future__ import annotations

import dataclasses
import json
import math
from decimal import Decimal
from fractions import Fraction
from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from workerclass.api.schema import CLASS_ERA_KEYS
from workerclass.chart import (
    REST_KEYS,
    chart_defaults,
    chart_failures,
    chart_input,
    golden_disk,
    kubevirtmachinetemplate,
    kubevirtmachinetemplate_text,
    passes_rest_as,
    release_free,
    sizing,
)
from workerclass.chart import quantity as q
from workerclass.chart.kubeyaml import k8s_load, plain_scalar
from workerclass.chart.nodegroup import Disk, _scalar, all_plain_safe, plain_safe, tpl
from workerclass.chart.talos_job_spec import _SCRIPT_END, _SCRIPT_START, command_script

from .cases import free_pools, make_input, pools

_DECIMALS = st.builds(
    lambda digits, places: round(digits / 10**places, places),
    st.integers(-(10**12), 10**12),
    st.integers(0, 9),
)
OPERANDS: st.SearchStrategy[Any] = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(min_value=-1e7, max_value=1e7),
    _DECIMALS,
    st.integers(-(2**70), 2**70),
    st.sampled_from([0.05, 1e-3, 1e-9, 2.0**30, 1048576.0, 1e21, 1e23, 5e-324, -0.0, 2.0**53, 2.0**53 + 2]),
    st.sampled_from(["8Gi", "0.5", "1e3", "-1.5e-7", "nan", "-Inf", "x", "", "0x1p-2", "1_0"]),
    st.booleans(),
    st.none(),
)


# The reference: shopspring/decimal's arithmetic on the exact decimal each float64 prints as, in
# Fractions (slow and obviously right); the chart port computes the same in integer arithmetic.


def _decimal(value: Any) -> Fraction:
    f = q.to_float64(value)
    if math.isnan(f) or math.isinf(f):
        return Fraction(0)  # decimal panics here; the port stays total (0), checks reports it
    return Fraction(Decimal(repr(f)))


def exact_mulf(a: Any, b: Any) -> float:
    return float(_decimal(a) * _decimal(b))


def exact_addf(a: Any, b: Any) -> float:
    return float(_decimal(a) + _decimal(b))


def exact_subf(a: Any, b: Any) -> float:
    return float(_decimal(a) - _decimal(b))


def exact_divf(a: Any, b: Any) -> float:
    """``Div``: the quotient rounded half away from zero to 16 decimal places (0 for a zero divisor)."""
    divisor = _decimal(b)
    if divisor == 0:
        return 0.0
    scaled = _decimal(a) / divisor * 10**16
    n, r = divmod(abs(scaled.numerator), scaled.denominator)
    n += 2 * r >= scaled.denominator
    return float(Fraction(-n if scaled < 0 else n, 10**16))


def _outcome(function: Any, a: Any, b: Any) -> tuple[str, float | None]:
    try:
        value = function(a, b)
    except (OverflowError, ZeroDivisionError) as exc:
        return type(exc).__name__, None
    return "ok", value


def _same(x: tuple[str, float | None], y: tuple[str, float | None]) -> bool:
    if x[0] != y[0]:
        return False
    if x[1] is None or y[1] is None:
        return x[1] is y[1]
    if math.isnan(x[1]):
        return math.isnan(y[1])
    return x[1] == y[1] and math.copysign(1.0, x[1]) == math.copysign(1.0, y[1])


@settings(max_examples=3000, deadline=None, database=None)
@given(OPERANDS, OPERANDS)
def test_fast_decimal_arithmetic_equals_the_exact_one(a: Any, b: Any) -> None:
    for fast, exact in ((q.mulf, exact_mulf), (q.addf, exact_addf), (q.subf, exact_subf), (q.divf, exact_divf)):
        assert _same(_outcome(fast, a, b), _outcome(exact, a, b)), (fast.__name__, a, b)


DISKS = st.sampled_from(
    [None, golden_disk("abc", "v1.13.6"), Disk.http("https://m.example/image/x/v1/openstack-amd64.raw.xz", "ca-cm")]
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
@given(st.one_of(pools(), free_pools()), DISKS)
def test_direct_kmt_template_equals_the_parsed_text(
    case: tuple[dict[str, Any], str, str, Any], disk: Disk | None
) -> None:
    inp = make_input(*case)
    if chart_failures(inp):
        return
    size = sizing(inp)
    text = kubevirtmachinetemplate_text(inp, size, disk)
    template = kubevirtmachinetemplate(inp, size, disk)["spec"]["template"]
    parsed = k8s_load(text)
    assert template == parsed
    assert json.dumps(template) == json.dumps(parsed)  # the same key order as the text's


def _command_script_by_lines(spec_text: str) -> str:
    """The line-by-line reading of the ``- |`` block (the reference for the one-replace path)."""
    start = spec_text.index(_SCRIPT_START) + len(_SCRIPT_START)
    body = [line[14:] for line in spec_text[start : spec_text.index(_SCRIPT_END, start)].split("\n")]
    while body and not body[-1]:
        body.pop()
    return "\n".join(body) + "\n"


_LINES = st.lists(
    st.one_of(
        st.just(""),
        st.builds(lambda n, t: " " * n + t, st.integers(0, 20), st.text(st.sampled_from("ab $\t\r"), max_size=6)),
    ),
    max_size=8,
)


@settings(max_examples=500, deadline=None, database=None)
@given(_LINES)
def test_command_script_equals_the_line_by_line_reading(lines: list[str]) -> None:
    text = "spec:" + _SCRIPT_START + "\n".join(lines) + _SCRIPT_END + "x"
    assert command_script(text) == _command_script_by_lines(text)


#: texts near the plain-safe edge: safe characters, each indicator, whitespace and control characters
_PASTED = st.text(alphabet=st.sampled_from(list("ab1.-/_:#'\"[]{},&*!|>%@`\\ \t\n\x00\x1f\x7fé")), max_size=6)


@settings(max_examples=2000, deadline=None, database=None)
@given(st.lists(_PASTED, max_size=8))
def test_all_plain_safe_equals_each_text_plain_safe(texts: list[str]) -> None:
    assert all_plain_safe([("f", text) for text in texts]) is all(plain_safe(text) for text in texts)


#: every key a pool's values may hold but those the checks but the rewritten ones read
_OTHER_KEYS = sorted(
    (set(chart_defaults()) | set(CLASS_ERA_KEYS) | {"images", "talos", "gpus", "extra"}) - set(REST_KEYS)
)
_JSON: st.SearchStrategy[Any] = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-3, 10**6),
        st.text(max_size=6),
        st.sampled_from(["a b", "x: y", "{", '"', "\n", "v1.13.6", "https://f.example/ #", "8Gi", "50%"]),
    ),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)),
    max_leaves=8,
)


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    database=None,
)
@given(
    pools(),
    pools(),
    st.dictionaries(st.sampled_from(_OTHER_KEYS), _JSON, max_size=4),
    st.sampled_from(["main", "pr3571"]),
)
def test_the_rewritten_checks_alone_find_what_all_find_where_the_rest_passed(
    passing: tuple[dict[str, Any], str, str, dict[str, Any] | None],
    other: tuple[dict[str, Any], str, str, dict[str, Any] | None],
    free: dict[str, Any],
    variant: Any,
) -> None:
    values, release, namespace, platform = passing
    passed = chart_input(values, namespace=namespace, release=release, cluster_values=platform, variant=variant)
    assume(not chart_failures(passed))
    # the keys the rest reads kept, every other one dropped, taken from another pool or made up
    rewritten = {key: value for key, value in values.items() if key in REST_KEYS}
    rewritten |= {key: value for key, value in other[0].items() if key not in REST_KEYS}
    rewritten |= free
    inp = chart_input(
        rewritten,
        namespace=namespace,
        release=release,
        cluster_values=platform,
        instancetypes=passed.instancetypes,
        variant=variant,
    )
    assert passes_rest_as(inp, passed)
    assert sizing(inp) == sizing(passed)
    assert chart_failures(inp, rest_passed=True) == chart_failures(inp)


def test_inputs_that_differ_where_the_rest_looks_do_not_pass_as_each_other() -> None:
    base = {"cluster": "example", "version": "v1.35", "instanceType": "u1.medium"}
    release = "kubernetes-nodes-example-md1"
    passed = chart_input(base, namespace="tenant-x", release=release)
    assert not chart_failures(passed)
    same = chart_input(
        {**base, "talos": {"version": "v1.12.0"}},
        namespace="tenant-x",
        release=release,
        instancetypes=passed.instancetypes,
    )
    assert passes_rest_as(same, passed)
    for key in REST_KEYS:
        # ``_cluster`` is the platform's: the pool's own is dropped
        values, platform = (
            ({**base}, {"_cluster": {"cluster-domain": "other.local"}})
            if key == "_cluster"
            else (
                {**base, key: "changed"},
                None,
            )
        )
        changed = chart_input(
            values, namespace="tenant-x", release=release, cluster_values=platform, instancetypes=passed.instancetypes
        )
        assert not passes_rest_as(changed, passed), key
    for name, inp in {
        "release": chart_input(base, namespace="tenant-x", release=release + "x", instancetypes=passed.instancetypes),
        "namespace": chart_input(base, namespace="tenant-y", release=release, instancetypes=passed.instancetypes),
        "instance types": chart_input(base, namespace="tenant-x", release=release),  # another table
        "variant": chart_input(
            base, namespace="tenant-x", release=release, instancetypes=passed.instancetypes, variant="pr3571"
        ),
        "lookup": chart_input(
            base,
            namespace="tenant-x",
            release=release,
            instancetypes=passed.instancetypes,
            existing_machinedeployment_release="another",
        ),
    }.items():
        assert not passes_rest_as(inp, passed), name


#: pool names the chart pastes: DNS names YAML might read as another type, or that are not names
_GROUPS = st.one_of(
    st.from_regex(r"\A[a-z0-9]([-a-z0-9.]{0,20}[a-z0-9])?\Z", fullmatch=True),
    st.sampled_from(
        [
            "true",
            "null",
            "1e3",
            "0x1f",
            "0.5",
            "1-2",
            "a..b",
            "y",
            "no",
            "md1",
            "A",
            "a_b",
            "-a",
            "a:",
            "a: b",
            "a #b",
            "x\ny",
            "'q",
            "[a]",
        ]
    ),
)
#: what a tenant pastes into the roles: plain, or text the chart's YAML may or may not survive
_ROLES = st.lists(
    st.one_of(st.sampled_from(["worker", "ingress-nginx"]), st.text(" #:{}[],'\"|>&*!%@`ab\n", max_size=6)), max_size=3
)


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    database=None,
)
@given(st.one_of(pools(), free_pools()), st.one_of(st.none(), _ROLES), _GROUPS, st.sampled_from(["main", "pr3571"]))
def test_a_pass_holds_under_every_release_the_checks_read_only_as_a_name(
    case: tuple[dict[str, Any], str, str, dict[str, Any] | None], roles: list[str] | None, group: str, variant: Any
) -> None:
    values, release, namespace, platform = case
    if roles is not None:
        values = {**values, "roles": roles}
    cluster = values.get("cluster")
    passed = chart_input(values, namespace=namespace, release=release, cluster_values=platform, variant=variant)
    assume(release_free(release, cluster) and not chart_failures(passed))
    other = f"kubernetes-nodes-{cluster}-{group}"
    renamed = chart_input(
        values,
        namespace=namespace,
        release=other,
        cluster_values=platform,
        instancetypes=passed.instancetypes,
        variant=variant,
    )
    if release_free(other, cluster):
        assert chart_failures(renamed) == []
        assert chart_failures(dataclasses.replace(passed, release=other)) == []
        assert sizing(renamed) == sizing(passed)


def test_release_free_admits_only_the_chart_s_own_release_shape() -> None:
    assert release_free("kubernetes-nodes-example-md1", "example")
    assert release_free("kubernetes-nodes-example-a.b-1", "example")
    for release, cluster in (
        ("kubernetes-nodes-example-md1", "other"),  # another cluster's release: the release-name rule
        ("example-md1", "example"),  # a release not named by the chart
        ("kubernetes-nodes-example-", "example"),  # no pool
        ("kubernetes-nodes-example-MD1", "example"),  # not a DNS name
        ("kubernetes-nodes-example-md1:", "example"),
        ("kubernetes-nodes-example-md 1", "example"),  # pasted, it breaks the chart's YAML
        ("kubernetes-nodes--md1", ""),
        ("kubernetes-nodes-example-md1", None),
        ("kubernetes-nodes-example-md1", ["example"]),
    ):
        assert not release_free(release, cluster), (release, cluster)
    # the release-name rule fails the first two where every other check passes
    base = {"cluster": "example", "version": "v1.35", "instanceType": "u1.medium"}
    for release in ("kubernetes-nodes-other-md1", "example-md1"):
        assert [f.code for f in chart_failures(chart_input(base, namespace="tenant-x", release=release))] == [
            "InvalidPoolName"
        ]


def test_plain_json_text_is_one_text_per_plain_value_and_none_for_the_rest() -> None:
    from workerclass.chart.schema import plain_json_text

    class Text(str):
        pass

    assert plain_json_text({"b": 1, "a": [1.5, True, "x"]}) == b'{"a":[1.5,true,"x"],"b":1}'
    assert plain_json_text({"b": 1, "a": 2}) == plain_json_text({"a": 2, "b": 1})
    assert plain_json_text([1]) != plain_json_text([1.0]) != plain_json_text([True])
    for value in ({"a": None}, [math.nan], [math.inf], [Text("x")], {1: "a"}, [2**70]):
        assert plain_json_text(value) is None, value


def _scalar_by_text(value: Any) -> Any:
    """An unquoted ``{{ value }}`` read back from its printed text, as the parse of the document does."""
    text = tpl(value)
    if plain_safe(text):
        return plain_scalar(text)
    loaded = k8s_load(f"v: {text}")
    return loaded.get("v") if isinstance(loaded, dict) else text


@settings(max_examples=1000, deadline=None, database=None)
@given(
    st.one_of(
        st.integers(-1_100_000, 1_100_000), st.integers(), st.booleans(), st.floats(allow_nan=False), st.text("1e+-0")
    )
)
def test_a_scalar_taken_as_it_is_reads_as_its_printed_text(value: Any) -> None:
    fast, slow = _scalar(value), _scalar_by_text(value)
    assert (fast, type(fast)) == (slow, type(slow))
