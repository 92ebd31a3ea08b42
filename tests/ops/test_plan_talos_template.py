"""``plan`` on a changed TalosConfigTemplate: what the Talos provider (CABPT) does with it.

CABPT's webhook refuses every change of a TalosConfigTemplate's spec. On a chart whose Job applies
the template under its stable name (main, PR 3315) the change is refused and reaches no machine: a
blocking row (``refused: [TalosConfigImmutable]``, exit 1 under ``--detailed-exitcode``). On a chart
whose Job names the template by its content (PR 3523's shape, derived here from the mirror's main
chart, since no such chart is in the mirror) the change is a rollout.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from tests.ops.test_plan import LEGACY, legacy, rows, state
from tests.shared import given_chart
from workerclass.chart.identity import chart_digest
from workerclass.chart.source import ChartSource
from workerclass.chart.talos_naming import STABLE_NAME, talos_template_naming
from workerclass.ops import plan
from workerclass.ops.plan import REFUSED_BY_TALOS, TALOS_CONFIG_IMMUTABLE
from workerclass.ops.restore import restore
from workerclass.state import State

#: the talos-reconcile Job and its template are the chart's own text: the mirror's chart is given
pytestmark = pytest.mark.usefixtures("chart_text")

JOB = "templates/talos-reconcile-job.yaml"
POOL = "tenant-example/example-talos"


def content_named(chart: ChartSource) -> ChartSource:
    """``chart`` with its Job applying the TalosConfigTemplate under ``<cluster>-<pool>-${TCT_HASH}``
    (PR 3523's naming), everything else the same (its identity too: the port renders it)."""
    assert chart.files is not None
    text = chart.files[JOB].decode()
    stable = f"name: {STABLE_NAME}\n                namespace: ${{NS}}"
    assert text.count(stable) == 1, "the main chart's heredoc names the template once"
    derived = text.replace(stable, stable.replace(STABLE_NAME, STABLE_NAME + "-${TCT_HASH}"))
    files = {**chart.files, JOB: derived.encode()}
    # its own digest: what the port caches per chart (the compiled Job text) is keyed by it
    return dataclasses.replace(chart, files=files, digest=chart_digest(files), _texts={})


def mirrors(obj: dict[str, Any]) -> None:
    obj["spec"]["talos"]["registryMirrors"] = {"docker.io": {"endpoints": ["https://mirror.example"]}}


def minor(obj: dict[str, Any]) -> None:
    obj["spec"]["version"] = "v1.34"


def on(chart: ChartSource, **edits: Any) -> State:
    return state(**edits).with_chart(chart)


@pytest.mark.parametrize(
    "name", ["main", "main+gate", "pr3315", "pr3571"], ids=["main", "main-gated", "pr3315", "pr3571"]
)
def test_the_mirrors_charts_apply_the_template_under_its_stable_name(name: str) -> None:
    assert talos_template_naming(given_chart(name)) == "stable"


def test_the_shipped_facts_say_stable_and_a_hash_named_job_says_content() -> None:
    assert talos_template_naming(ChartSource.shipped()) == "stable"
    assert talos_template_naming(content_named(given_chart("main+gate"))) == "content"


@pytest.mark.parametrize("name", ["main+gate", "pr3315"], ids=["main", "pr3315"])
def test_a_changed_template_under_its_stable_name_is_refused_and_reaches_no_machine(name: str) -> None:
    """A classless pool: the chart's Job applies its template (a classified pool's is ours to name:
    tests/ops/test_plan.py, a rollout)."""
    chart = given_chart(name)
    result = plan(on(chart), on(chart, **legacy(mirrors)))
    row = rows(result)[LEGACY]
    assert (row.action, row.replace, row.refused, row.new_machines_only) == (
        "update",
        False,
        (TALOS_CONFIG_IMMUTABLE,),
        (),
    )
    assert (
        "registry mirrors: none -> docker.io=https://mirror.example (refused by the Talos provider: reaches no machine)"
        in row.reasons
    )
    refusal = [reason for reason in row.reasons if reason.startswith(REFUSED_BY_TALOS)]
    assert refusal == [
        f"{REFUSED_BY_TALOS} ({TALOS_CONFIG_IMMUTABLE}) TalosConfigTemplate kubernetes-example-legacy: the Talos "
        "bootstrap provider's webhook refuses every change of a TalosConfigTemplate's spec, and the "
        "talos-reconcile Job applies it under this same name: the Job fails and the change reaches no machine, "
        "running or new"
    ]
    assert not any("machines created afterwards" in reason for reason in row.reasons)
    assert result.detailed_exit_code() == 1
    document = row.as_dict()
    assert (document["refused"], document["newMachinesOnly"]) == ([TALOS_CONFIG_IMMUTABLE], [])
    others = [other for other in result.rows if other.pool != LEGACY]
    assert all(other.refused == () for other in others)


def test_a_rollout_that_also_changes_the_template_is_refused_and_says_the_new_machines_boot_the_old_config() -> None:
    chart = given_chart("main+gate")
    result = plan(on(chart), on(chart, **legacy(minor)))
    row = rows(result)[LEGACY]
    assert (row.action, row.replace, row.refused) == ("replace", True, (TALOS_CONFIG_IMMUTABLE,))
    assert any(reason.endswith("the machines this rollout creates boot the old config") for reason in row.reasons)
    assert result.detailed_exit_code() == 1


def test_an_unchanged_template_is_not_refused() -> None:
    chart = given_chart("main+gate")
    result = plan(on(chart), on(chart))
    assert all(row.refused == () for row in result.rows)
    assert result.detailed_exit_code() == 0


def test_on_a_content_named_chart_the_change_is_a_rollout() -> None:
    chart = content_named(given_chart("main+gate"))
    result = plan(on(chart), on(chart, **{"example-talos": mirrors}))
    row = rows(result)[POOL]
    assert (row.action, row.replace, row.refused, row.new_machines_only) == ("replace", True, (), ())
    assert any(
        reason.startswith("machines replaced: TalosConfigTemplate kubernetes-example-talos-${TCT_HASH} spec.")
        and "the MachineDeployment's bootstrap.configRef follows it" in reason
        for reason in row.reasons
    )
    assert result.detailed_exit_code() == 2


# --------------------------------------------------------------------------- restore says the same


@pytest.mark.parametrize(
    ("naming", "expected"), [("stable", "refused"), ("content", "rollout")], ids=["stable", "content"]
)
def test_restore_of_a_different_template_says_what_the_talos_provider_does(naming: str, expected: str) -> None:
    """The example loads ``nvme_tcp``: the main chart's Job would apply a template without it."""
    chart = given_chart("main+gate")
    chart = content_named(chart) if naming == "content" else chart
    row = {row.pool: row for row in restore(state().with_chart(chart)).rows}[POOL]
    assert row.status == "rollout", row.reasons
    said = [
        reason for reason in row.reasons if "kubernetes-example-talos" in reason and "TalosConfigTemplate" in reason
    ]
    if expected == "refused":
        assert len(said) == 1 and said[0].startswith(f"{REFUSED_BY_TALOS} ({TALOS_CONFIG_IMMUTABLE}) "), row.reasons
        assert "no machine gets the restored config" in said[0]
    else:
        assert len(said) == 1 and "Cluster API replaces the machines" in said[0], row.reasons


def test_restore_of_an_equal_template_says_nothing_of_the_talos_provider() -> None:
    def no_modules(obj: dict[str, Any]) -> None:
        obj["spec"].pop("kernelModules", None)

    chart = given_chart("main+gate")
    restored = restore(state(**{"talos-example-r1": no_modules, "example-talos": no_modules}).with_chart(chart))
    row = {row.pool: row for row in restored.rows}[POOL]
    assert row.status == "restorable", row.reasons
    assert not any(TALOS_CONFIG_IMMUTABLE in reason for reason in row.reasons)
