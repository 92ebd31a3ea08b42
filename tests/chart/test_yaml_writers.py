"""The KubevirtMachineTemplate's ``toYaml`` text against the oracle for unusual platform constraints.

The template's name is ``sha256[:6]`` of its ``spec.template`` text, which holds ``toYaml`` of the
platform's ``globalAppTopologySpreadConstraints`` (after ``fromYaml``) and of the pod resources.
Helm's ``toYaml`` is go-yaml v2 (:mod:`workerclass.chart.goyaml`): its key order (digit runs by
value, non-letters before letters), folding past column 80, literal blocks for multi-line strings,
plain non-ASCII, double-quoted tabs, complex keys past 128 bytes and a quoted ``%x``. Each case
here is a constraint string whose text depends on one of those; the oracle renders every one, and
our text, name, objects and (empty) failures must equal its.
"""

from __future__ import annotations

from typing import Any

import pytest

from workerclass.chart import (
    chart_failures,
    chart_input,
    kubevirtmachinetemplate_text,
    nodegroup_objects,
    sizing,
)
from workerclass.chart.goyaml import to_yaml
from workerclass.chart.kubeyaml import from_yaml

from .cases import NODEGROUP_KINDS, pool_release
from .oracle import OracleResult, diff_paths, get_oracle, require_oracle

require_oracle()

R = pool_release()
NS = "tenant-x"
LIST = "topologySpreadConstraints:\n- maxSkew: 1\n  topologyKey: zone\n  whenUnsatisfiable: ScheduleAnyway\n"

CASES: dict[str, str] = {
    "digit-run-order": "a10: x\na9: z\n" + LIST,
    "underscore-before-letters": "A: x\n_: z\n" + LIST,
    "fold-past-80": "a: " + " ".join(["word"] * 30) + "\n" + LIST,
    "multi-line": 'a: "line one\\nline two"\n' + LIST,
    "multi-line-in-constraint": 'topologySpreadConstraints:\n- maxSkew: 1\n  topologyKey: "a\\nb\\n"\n',
    "e-acute": "a: é\n" + LIST,
    "ellipsis": "a: …\n" + LIST,
    "tab": 'a: "x\\ty"\n' + LIST,
    "long-key": "k" * 130 + ": v\n" + LIST,
    "percent": "a: '%x'\n" + LIST,
    "percent-in-constraint": "topologySpreadConstraints:\n- maxSkew: 1\n  topologyKey: '%x'\n",
}
POOLS: list[dict[str, Any]] = [
    {"cluster": "example"},
    {"cluster": "example", "instanceType": "", "resources": {"cpu": 2, "memory": "4Gi"}, "podCpuLimit": "1500m"},
]


def _oracle_kmt_text(result: OracleResult) -> str:
    (i,) = [n for n, o in enumerate(result.objects) if o.get("kind") == "KubevirtMachineTemplate"]
    lines = result.texts[i].split("\n")
    start = lines.index("  template:") + 1
    return "\n".join(line[4:] for line in lines[start:])


@pytest.mark.parametrize("pool", POOLS, ids=["defaults", "resources"])
@pytest.mark.parametrize("constraints", list(CASES.values()), ids=list(CASES))
def test_constraint_text_name_and_objects_match_the_oracle(constraints: str, pool: dict[str, Any]) -> None:
    platform = {"_cluster": {"scheduling": {"globalAppTopologySpreadConstraints": constraints}}}
    result = get_oracle().render(pool, release=R, namespace=NS, cluster_values=platform)
    assert result.ok, result.error
    inp = chart_input(pool, namespace=NS, release=R, cluster_values=platform)
    assert [(f.code, f.field) for f in chart_failures(inp)] == []
    size = sizing(inp)
    assert kubevirtmachinetemplate_text(inp, size) == _oracle_kmt_text(result)
    ours = {o["kind"]: o for o in nodegroup_objects(inp, size)}
    problems = [f"{kind}: {p}" for kind in NODEGROUP_KINDS for p in diff_paths(ours[kind], result.one(kind))]
    assert not problems, "\n".join(problems[:20])


@pytest.mark.parametrize("constraints", list(CASES.values()), ids=list(CASES))
def test_the_writer_is_go_yaml(constraints: str) -> None:
    """The define's constraint lines are go-yaml's ``toYaml`` of the parsed string, indented by 10."""
    platform = {"_cluster": {"scheduling": {"globalAppTopologySpreadConstraints": constraints}}}
    inp = chart_input({"cluster": "example"}, namespace=NS, release=R, cluster_values=platform)
    text = kubevirtmachinetemplate_text(inp, sizing(inp))
    block = "\n".join("          " + line for line in to_yaml(from_yaml(constraints)).split("\n"))
    assert "\n" + block + "\n            labelSelector:" in text
