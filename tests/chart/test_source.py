"""The chart in effect: the shipped facts' chart without its text, or a given chart, known or not."""

from __future__ import annotations

import pytest

from workerclass.chart.identity import ChartRules, by_name, default_identity
from workerclass.chart.source import GIVE_THE_CHART, ChartSource, ChartTextMissing

from ..shared import given_chart

SAMPLE = {"Chart.yaml": b"apiVersion: v2\nname: sample\nversion: 1.0.0\n", "templates/a.yaml": b"kind: A\n"}


def test_the_shipped_chart_has_no_text_and_says_how_to_give_it() -> None:
    shipped = ChartSource.shipped()
    assert shipped.identity == default_identity() and not shipped.given
    assert shipped.as_dict() == {
        "name": "main",
        "source": "cozystack main 3c780acd4",
        "version": "0.0.0",
        "digest": default_identity().digest,
        "gated": False,
        "text": False,
    }
    with pytest.raises(ChartTextMissing) as missing:
        shipped.text("templates/talos-reconcile-job.yaml", what="the talos-reconcile Job")
    assert str(missing.value).startswith("the talos-reconcile Job needs the chart's own text")
    assert GIVE_THE_CHART in str(missing.value) and "--chart DIR|TGZ" in GIVE_THE_CHART


def test_an_unknown_chart_is_named_by_its_digest() -> None:
    unknown = ChartSource.from_files(SAMPLE, origin="--chart sample")
    assert not unknown.known and unknown.given and unknown.name == "unknown"
    assert unknown.rules == ChartRules() and unknown.upstream == "main"
    assert unknown.version == "1.0.0" and unknown.digest.startswith("sha256:")
    assert unknown.describe() == f"an unknown chart (--chart sample), version 1.0.0, {unknown.digest}"
    assert unknown.text("templates/a.yaml", what="x") == "kind: A\n"


@pytest.mark.parametrize("name", ["main", "pr3315"])
def test_a_given_known_chart_carries_its_identity_and_rules(name: str) -> None:
    chart = given_chart(name)
    assert chart.known and chart.given and chart.identity == by_name(name)
    assert chart.rules == by_name(name).rules and chart.upstream == name
    assert chart == ChartSource.from_files(dict(chart.files or {}))
    assert chart != ChartSource.shipped() or name != "main"  # the same digest, but the text is given
