"""The patterns tenant text meets read it in time linear in its length, with the written patterns' answers.

Tenant text (map keys, values) reaches :func:`~workerclass.api.patterns.looks_like_token` and
:func:`~workerclass.api.patterns.token_start` on every admission. :data:`~workerclass.api.patterns.TOKEN`
is the pattern they answer for; searched as it is, its JWT branch costs the square of a run of
``eyJ`` (a 90 KB key took 12 s). These hold the linear search to TOKEN's answers, and answer the
shapes that were quadratic (through TOKEN's own search they take minutes: the suite would hang).
"""

from __future__ import annotations

import math
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from workerclass.api.patterns import CREDENTIALS, TOKEN, looks_like_token, token_start
from workerclass.chart import quantity
from workerclass.model.versions import HUGE, minor_of, version_tuple

#: pieces that make the published shapes, and near misses of them, likely
_PIECES = st.sampled_from(
    ["eyJ", "eyJhbGci", ".", "..", "abcd", "AKIA", "ASIA", "ABCDEFGHIJKLMNOP", "ghp_", "glpat-", "xoxb-", "AIza",
     "sk_live_", "_", "-", "a1B2", "Zz9", "/", "+", "=", " ", "0123456789", "é"]
)  # fmt: skip
_TEXTS = st.lists(_PIECES, max_size=40).map("".join)

_SECRET_RUN = re.compile(r"[A-Za-z0-9+/=_-]{32,}")


def _published(text: str) -> bool:
    """:func:`looks_like_token` as its docstring states it, with TOKEN itself."""
    if TOKEN.search(text):
        return True
    return any(
        any(c.isupper() for c in run) and any(c.islower() for c in run) and any(c.isdigit() for c in run)
        for run in _SECRET_RUN.findall(text)
    )


@settings(max_examples=2000, deadline=None)
@given(text=_TEXTS)
def test_the_linear_search_answers_as_the_published_pattern(text: str) -> None:
    found = TOKEN.search(text)
    assert token_start(text) == (found.start() if found is not None else None)
    assert looks_like_token(text) == _published(text)


def test_a_long_run_of_jwt_headers_is_read_once() -> None:
    """``eyJ`` 30,000 times: TOKEN's search tries each to the run's end (about 10^9 steps, seconds);
    the linear search answers at once, and as TOKEN would (no dot: no JWT)."""
    text = "eyJ" * 30_000 + "b"
    assert token_start(text) is None and not looks_like_token(text)
    hidden = "eyJ" * 30_000 + "." + "abcd"
    assert token_start(hidden) == 0 and looks_like_token(hidden)
    # a run that starts before its first eyJ: the credential starts at the eyJ, as TOKEN's does
    behind = "x" * 50_000 + "-" + "eyJ" * 20_000 + ".abcd"
    assert token_start(behind) == 50_001
    # runs of eyJ with no dot before the one that has it: each is tried once
    runs = " ".join(["eyJ" * 5_000] * 10) + " eyJabcd.efgh"
    assert token_start(runs) == len(runs) - len("eyJabcd.efgh")


#: :data:`~workerclass.api.patterns.CREDENTIALS` as it was written before its look-ahead: the language it keeps
_CREDENTIALS_WRITTEN = re.compile(r"^[^/@]+:[^/@]*@|^[^/@]+@[^/]+/")


@settings(max_examples=3000, deadline=None)
@given(text=st.text(alphabet="a:/@b\n.", max_size=14))
def test_a_reference_holds_credentials_as_the_written_pattern_says(text: str) -> None:
    assert bool(CREDENTIALS.match(text)) == bool(_CREDENTIALS_WRITTEN.match(text))


def test_a_run_of_colons_is_read_once() -> None:
    """``a:`` 200,000 times: the written pattern rescans the rest at each colon (minutes)."""
    assert CREDENTIALS.match("a:" * 200_000) is None
    assert CREDENTIALS.match("a:" * 200_000 + "@registry/x") is not None


#: ``strconv.ParseFloat``'s syntax as written before its point became optional as a group
_GO_FLOAT_WRITTEN = re.compile(r"^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$")


@settings(max_examples=3000, deadline=None)
@given(text=st.text(alphabet="0123456789.eE+-x \n_", max_size=12))
def test_a_quantity_parses_as_the_written_syntax_says(text: str) -> None:
    assert bool(quantity._GO_FLOAT.match(text)) == bool(_GO_FLOAT_WRITTEN.match(text))
    if _GO_FLOAT_WRITTEN.match(text) and not math.isinf(float(text)):
        assert quantity.parse_float(text) == float(text)


def test_a_long_run_of_digits_that_is_no_number_is_refused_at_once() -> None:
    """20,000 digits and a letter: the written syntax split the digits every way first (13 s a decision)."""
    assert quantity.parse_float("1" * 20_000 + "x") is None
    assert quantity.parse_float("1" * 300) == float("1" * 300)


def test_a_version_of_thousands_of_digits_reads_past_every_real_one() -> None:
    """The patterns bound no digit count; ``int`` refuses 4,300 digits and more (the decision failed)."""
    assert version_tuple("v1." + "0" * 5000) == (1, 0)
    assert version_tuple("v1." + "7" * 5000) == (1, HUGE)
    assert version_tuple("v1.35.6-rc.1") == (1, 35, 6) and minor_of("v1.035.6") == "v1.35"
