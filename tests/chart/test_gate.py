"""The chart gate as data: its insertions read from ``deploy/chart-gate/``, and gating by identity.

The first tests need no mirror: the facts' gates are exactly the patches' insertions, a patch that
is not zero-context and add-only is refused, and insertions land after the line they name (a file
without a final line end included). The others use the mirror's charts: main and PR 3315 each
become their known gated identity, byte for byte what ``patch`` makes of them; a gated chart is left
alone; PR 3315's chart with main's patch forced onto it (``patch`` exits 0 there) and a copy with one
changed character are unknown and refused, naming the known charts.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.shared import ROOT, chart_path, writable_copy
from workerclass.adapters.chart import read_chart
from workerclass.chart.gate import ChartGate, GateError, gate_chart, gate_for, gates, parse_gate_patch
from workerclass.chart.identity import by_name, known_identities

GATE = ROOT / "deploy" / "chart-gate"


@pytest.mark.parametrize("name", ["main", "pr3315"])
def test_the_facts_carry_each_patch_as_insertions(name: str) -> None:
    gate = gate_for(name)
    assert gate is not None and gate.gated == f"{name}+gate" and gate.patch == f"kubernetes-nodes-{name}.patch"
    assert dict(gate.insertions) == parse_gate_patch((GATE / gate.patch).read_text())
    assert gate.guard_lines() == {"main": 15, "pr3315": 18}[name]
    assert all(line.endswith("{{- /* workerclass chart gate */}}") or "workerclass chart gate:" in line
               for hunks in gate.insertions.values() for _, lines in hunks for line in lines)  # fmt: skip


def test_every_ungated_identity_has_a_gate_and_no_gated_one_does() -> None:
    ungated = {identity.name for identity in known_identities() if not identity.gated}
    assert {gate.chart for gate in gates()} == ungated
    assert all(by_name(gate.gated).gated and by_name(gate.gated).upstream == gate.chart for gate in gates())


@pytest.mark.parametrize(
    "patch",
    [
        "+++ b/t.yaml\n@@ -1,1 +1,2 @@\n x\n+y\n",  # a context line
        "+++ b/t.yaml\n@@ -1,0 +2 @@\n-x\n",  # a removed line
        "+++ b/t.yaml\n@@ -1,0 +5 @@\n+y\n",  # a new line number that does not follow
        "+++ b/t.yaml\n@@ -1,0 +2,2 @@\n+y\n",  # fewer lines than it says
        "@@ -1,0 +2 @@\n+y\n",  # a hunk before any file
    ],
    ids=["context", "removal", "numbering", "short", "no-file"],
)
def test_a_patch_that_is_not_zero_context_and_add_only_is_refused(patch: str) -> None:
    with pytest.raises(GateError):
        parse_gate_patch(patch)


def test_insertions_land_after_the_line_they_name() -> None:
    gate = ChartGate("x", "x+gate", "x.patch", {"t.yaml": ((0, ("top",)), (2, ("mid", "mid2")), (3, ("end",)))})
    assert gate.apply({"t.yaml": b"a\nb\nc", "o": b"o"}) == {"t.yaml": b"top\na\nb\nmid\nmid2\nc\nend\n", "o": b"o"}
    with pytest.raises(GateError, match="inserts after line 3"):
        gate.apply({"t.yaml": b"a\nb\n"})
    with pytest.raises(GateError, match="not in the chart"):
        gate.apply({"o": b""})


def test_an_unknown_chart_is_refused_naming_the_known_ones() -> None:
    outcome = gate_chart({"Chart.yaml": b"apiVersion: v2\nname: kubernetes-nodes\nversion: 0.0.0\n"})
    assert outcome.status == "unknown" and not outcome.ok and outcome.files is None
    assert all(identity.name in outcome.reason for identity in known_identities())
    assert outcome.digest in outcome.reason


# ------------------------------------------------------------------ the real charts


@pytest.mark.parametrize("name", ["main", "pr3315"])
def test_a_known_chart_becomes_its_gated_identity_as_patch_makes_it(name: str) -> None:
    outcome = gate_chart(read_chart(chart_path(name)))
    assert outcome.status == "applied" and outcome.identity == by_name(name)
    assert outcome.gated is not None and outcome.gated.name == f"{name}+gate"
    patched = read_chart(chart_path(f"{name}+gate"))
    assert outcome.files == patched
    assert set(outcome.changed) == set(gate_for(name).insertions)  # type: ignore[union-attr]


@pytest.mark.parametrize("name", ["main+gate", "pr3315+gate"])
def test_a_gated_chart_is_left_as_it_is(name: str) -> None:
    outcome = gate_chart(read_chart(chart_path(name)))
    assert outcome.status == "gated" and outcome.ok and outcome.files is None and "already gated" in outcome.reason


def test_the_other_versions_patch_forced_onto_a_chart_is_refused(tmp_path: Path) -> None:
    copy = writable_copy(chart_path("pr3315"), tmp_path)
    patch = GATE / "kubernetes-nodes-main.patch"
    subprocess.run(["patch", "-p1", "--fuzz=0", "--quiet", "-i", str(patch)], cwd=copy, check=True)  # exit 0
    outcome = gate_chart(read_chart(copy))
    assert outcome.status == "unknown" and "not a chart workerclass knows" in outcome.reason


def test_a_changed_copy_of_a_known_chart_is_refused(tmp_path: Path) -> None:
    copy = writable_copy(chart_path("main"), tmp_path)
    values = copy / "values.yaml"
    values.write_text(values.read_text() + "# one more line\n")
    assert gate_chart(read_chart(copy)).status == "unknown"
