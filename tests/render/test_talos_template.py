"""A classified Talos pool's TalosConfigTemplate: its name, the Job that applies it under that name,
the MachineDeployment that follows it, and what runs kept (render.talos_template)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from workerclass.chart.kubeyaml import k8s_load
from workerclass.chart.talos_job import expand_heredoc
from workerclass.chart.talos_job_spec import _HEREDOC
from workerclass.render.talos_template import as_applied, configured_template, keep_running_template, same_content

from .builders import CA, by_kind, pool, render_pool

pytestmark = pytest.mark.usefixtures("chart_text")

STABLE = "kubernetes-example-workers"

#: classified pools whose class changes the machine config (a template of their own content), and
#: one whose class adds nothing to it (the chart's own objects, the stable name)
POOLS: dict[str, dict[str, Any]] = {
    "kernel-modules": {"workerClassName": "talos", "kernelModules": [{"name": "nvme_tcp"}]},
    "kernel-modules-and-ca": {
        "workerClassName": "talos",
        "kernelModules": [{"name": "dm_thin_pool"}],
        "talos": {"imageFactoryCA": CA},
    },
    "charts-own": {
        "workerClassName": "talos",
        "talos": {"registryMirrors": {"docker.io": {"endpoints": ["https://m.example"]}}},
    },
    "classless": {},
}


def applied_by_job(objects: list[dict[str, Any]]) -> str:
    """The name the talos-reconcile Job's own script applies the template under, as its shell would
    expand it (the Job's RELEASE, NS and GROUP_NAME from its environment)."""
    (job,) = [obj for obj in objects if obj["kind"] == "Job"]
    container = job["spec"]["template"]["spec"]["containers"][0]
    env = {item["name"]: item["value"] for item in container["env"] if "value" in item}
    match = _HEREDOC.search(container["command"][2])
    assert match is not None
    document = k8s_load(expand_heredoc(match.group(1) + "\n", env))
    assert document["kind"] == "TalosConfigTemplate"
    return str(document["metadata"]["name"])


def consistent(objects: list[dict[str, Any]]) -> bool:
    """The Job applies the template the MachineDeployment names, and it is the one rendered."""
    rendered = by_kind(objects)["TalosConfigTemplate"]["metadata"]["name"]
    return applied_by_job(objects) == configured_template(objects) == rendered


@pytest.mark.parametrize("name", sorted(POOLS), ids=sorted(POOLS))
def test_the_job_applies_the_template_the_machine_deployment_names(name: str) -> None:
    objects = render_pool(pool(**POOLS[name]))
    assert consistent(objects)
    named = configured_template(objects)
    if name.startswith("kernel-modules"):
        assert named is not None and named.startswith(f"{STABLE}-") and len(named) == len(STABLE) + 7
    else:
        assert named == STABLE  # the chart's objects, byte for byte elsewhere (tests/render/test_parity.py)


def test_a_deliberately_wrong_config_ref_is_caught() -> None:
    objects = render_pool(pool(**POOLS["kernel-modules"]))
    wrong = copy.deepcopy(objects)
    (deployment,) = [obj for obj in wrong if obj["kind"] == "MachineDeployment"]
    deployment["spec"]["template"]["spec"]["bootstrap"]["configRef"]["name"] = STABLE
    assert consistent(objects) and not consistent(wrong)


def test_the_name_follows_the_content_and_no_secret_enters_it() -> None:
    one = configured_template(render_pool(pool(**POOLS["kernel-modules"])))
    two = configured_template(render_pool(pool(workerClassName="talos", kernelModules=[{"name": "nbd"}])))
    again = configured_template(render_pool(pool(**POOLS["kernel-modules"])))
    assert one == again and one != two
    template = by_kind(render_pool(pool(**POOLS["kernel-modules"])))["TalosConfigTemplate"]
    assert "${TALOS_TOKEN}" in str(template["spec"])  # the run-time inputs stay placeholders


# --------------------------------------------------------------------------- what runs


def filled(template: dict[str, Any]) -> dict[str, Any]:
    """The template as the Job leaves it in the cluster: its run-time inputs filled in (they differ
    from run to run: the comparison must not care)."""
    live = copy.deepcopy(template)
    live["spec"] = _replaced(template["spec"], {"${TALOS_TOKEN}": "abc.def", "${CLUSTER_ID}": "id-1"})
    return live


def _replaced(value: Any, fills: dict[str, str]) -> Any:
    if isinstance(value, dict):
        return {key: _replaced(item, fills) for key, item in value.items()}
    if isinstance(value, list):
        return [_replaced(item, fills) for item in value]
    if isinstance(value, str):
        for placeholder, text in fills.items():
            value = value.replace(placeholder, text)
    return value


def test_same_content_reads_the_run_time_inputs_as_any_text() -> None:
    template = by_kind(render_pool(pool(**POOLS["kernel-modules"])))["TalosConfigTemplate"]
    assert same_content(template["spec"], filled(template)["spec"])
    other = by_kind(render_pool(pool(workerClassName="talos", kernelModules=[{"name": "nbd"}])))["TalosConfigTemplate"]
    assert not same_content(template["spec"], filled(other)["spec"])
    assert not same_content({"a": "x-${T}-y"}, {"a": "x-1-z"}) and same_content({"a": "x-${T}-y"}, {"a": "x-1-y"})
    assert not same_content({"a": 1}, {"a": "1"}) and not same_content({"a": [1]}, {"a": [1, 2]})


def test_a_handoff_whose_class_reproduces_the_config_keeps_the_stable_name() -> None:
    """The classless pool's template runs under the chart's name; the class renders the same content."""
    classless = render_pool(pool())
    stable = filled(by_kind(classless)["TalosConfigTemplate"])
    classified = render_pool(pool(workerClassName="talos"))
    template = by_kind(classified)["TalosConfigTemplate"]
    applied = as_applied(classified, template, stable, stable)
    assert configured_template(applied) == STABLE and consistent(applied)


def test_a_change_where_another_content_runs_under_the_stable_name_is_named_by_its_content() -> None:
    stable = filled(by_kind(render_pool(pool()))["TalosConfigTemplate"])
    changed = render_pool(pool(**POOLS["charts-own"]))
    assert configured_template(changed) == STABLE  # the render is the chart's
    template = by_kind(changed)["TalosConfigTemplate"]
    applied = as_applied(changed, template, stable, stable)
    assert configured_template(applied) != STABLE and applied_by_job(applied) == configured_template(applied)
    # nothing runs under the stable name yet: the chart's name stands (the provider takes a new one)
    assert configured_template(as_applied(changed, template, None, None)) == STABLE


def test_a_running_template_of_the_same_content_is_kept_under_its_name() -> None:
    objects = render_pool(pool(**POOLS["kernel-modules"]))
    template = by_kind(objects)["TalosConfigTemplate"]
    running = filled(template)
    running["metadata"]["name"] = f"{STABLE}-0ld0ld"
    kept = keep_running_template(objects, template, running)
    assert configured_template(kept) == f"{STABLE}-0ld0ld" and applied_by_job(kept) == f"{STABLE}-0ld0ld"
    other = filled(
        by_kind(render_pool(pool(workerClassName="talos", kernelModules=[{"name": "nbd"}])))["TalosConfigTemplate"]
    )
    other["metadata"]["name"] = f"{STABLE}-0ld0ld"
    assert keep_running_template(objects, template, other) is objects  # another content: it rolls


def test_the_name_hash_is_the_content_hash_rule() -> None:
    from workerclass.render.hash import content_hash

    objects = render_pool(pool(**POOLS["kernel-modules"]))
    template = by_kind(objects)["TalosConfigTemplate"]
    assert configured_template(objects) == f"{STABLE}-{content_hash(template['spec'])}"
