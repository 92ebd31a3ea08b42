"""The CLI's text table: a row of plain one-line strings, kept as given, lays out exactly as the
same texts given as styled cells (each cell's lines and styles), with or without colour."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from workerclass.cli.output import Styled, Table

_TEXT = st.text(alphabet=st.sampled_from(list("ab -:é\t")), max_size=12)
_ROWS = st.lists(st.lists(_TEXT, min_size=3, max_size=3), max_size=6)


def _tables(rows: list[list[str]], styled: set[int]) -> tuple[Table, Table]:
    plain, general = Table("SETTING", "VALUE", "WHY", title="t"), Table("SETTING", "VALUE", "WHY", title="t")
    for index, row in enumerate(rows):
        plain.add_row(*row)
        # a list of pieces is never the plain row: each cell's lines and styles
        general.add_row(*([Styled(text, "red" if index in styled else "")] for text in row))
    return plain, general


@settings(max_examples=400, deadline=None, database=None)
@given(_ROWS)
def test_a_plain_row_lays_out_as_the_same_cells_styled_without_colour(rows: list[list[str]]) -> None:
    plain, general = _tables(rows, set())
    assert plain.lines() == general.lines()
    assert plain.lines(colour_on=True) == general.lines(colour_on=True)


@settings(max_examples=200, deadline=None, database=None)
@given(_ROWS, st.sets(st.integers(0, 5)))
def test_plain_rows_beside_painted_ones_share_the_widths(rows: list[list[str]], styled: set[int]) -> None:
    plain, general = _tables(rows, styled)
    assert plain.lines() == general.lines()  # no colour: the styles do not show
    painted = general.lines(colour_on=True)
    assert len(painted) == len(plain.lines(colour_on=True))


def test_multi_line_and_short_rows_keep_their_layout() -> None:
    table = Table("A", "B", "C")
    table.add_row("x", "one\ntwo", "z")
    table.add_row("long cell")
    table.add_row("p", "q", "r")
    assert table.lines() == [
        "A          B    C",
        "x          one  z",
        "           two",
        "long cell",
        "p          q    r",
    ]
