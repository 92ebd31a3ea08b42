"""Our render against golden files the oracle produced (scripts/regen-chart-golden.py).

Runs without the oracle: each file holds a pool's values in and the real chart's objects (or
its refusal and the README's code for it) out. On a mismatch the differing field paths print.
Our nodegroup.yaml objects are compared on their own, and then the whole ``render_chart`` list
(which includes A2's dashboard RBAC and talos-reconcile Job) kind for kind and in order.
Where the oracle is present, a last test checks that the files are still what it renders.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from workerclass.chart import ChartRefused, chart_failures, chart_input, nodegroup_objects, render_chart, sizing

from .cases import NODEGROUP_KINDS, chart_message_free, chart_text_free
from .oracle import ABSENT, available, diff_paths, get_oracle

GOLDEN = sorted((Path(__file__).parent / "golden").glob("*.json"))


def _load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def _input(g: dict[str, Any]) -> Any:
    return chart_input(g["values"], namespace=g["namespace"], release=g["release"], cluster_values=g["cluster_values"])


def test_golden_files_exist() -> None:
    assert len(GOLDEN) >= 5


@pytest.mark.parametrize("path", GOLDEN, ids=[p.stem for p in GOLDEN])
def test_nodegroup_objects_match_golden(path: Path) -> None:
    g = _load(path)
    inp = _input(g)
    failures = chart_failures(inp)
    if "error" in g:
        assert failures, f"the chart refused ({g['error']}) but we render"
        assert failures[0].code == g["code"], failures
        return
    assert not failures, failures
    theirs = {o["kind"]: o for o in g["objects"] if o["kind"] in NODEGROUP_KINDS}
    problems: list[str] = []
    for ours in nodegroup_objects(inp, sizing(inp)):
        problems += [f"{ours['kind']}: {d}" for d in diff_paths(ours, theirs[ours["kind"]])]
    assert not problems, "\n".join(problems)


@pytest.mark.usefixtures("chart_text")
@pytest.mark.parametrize("path", GOLDEN, ids=[p.stem for p in GOLDEN])
def test_render_chart_matches_golden(path: Path) -> None:
    g = _load(path)
    inp = _input(g)
    if "error" in g:
        with pytest.raises(ChartRefused):
            render_chart(inp)
        return
    ours = chart_text_free(render_chart(inp, talos_config_template=g["talos_config_template"]))
    assert [o["kind"] for o in ours] == [o["kind"] for o in g["objects"]]
    problems: list[str] = []
    for i, (a, b) in enumerate(zip(ours, g["objects"], strict=True)):
        problems += [f"[{i}] {a['kind']}: {d}" for d in diff_paths(a, b)]
    assert not problems, "\n".join(problems[:30])


@pytest.mark.skipif(not available(), reason=ABSENT)
@pytest.mark.parametrize("path", GOLDEN, ids=[p.stem for p in GOLDEN])
def test_golden_files_are_what_the_oracle_renders_now(path: Path) -> None:
    g = _load(path)
    result = get_oracle().render(
        g["values"],
        release=g["release"],
        namespace=g["namespace"],
        cluster_values=g["cluster_values"],
        talos_config_template=g["talos_config_template"],
    )
    if "error" in g:
        assert not result.ok and chart_message_free(result.error) == g["error"]
    else:
        assert result.ok and chart_text_free(result.objects) == g["objects"], "stale: run scripts/regen-chart-golden.py"
