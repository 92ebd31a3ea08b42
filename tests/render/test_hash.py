"""Hash versions: a bump of our hash rule renames no template that runs; a real change still rolls.

The templates we name (Kairos, Talos on Proxmox) carry the rule's version and their hash; the
chart's (Talos on KubeVirt, classless or classified) carry nothing of ours. A bump is simulated as
the change it would be in the code: a new ``HASH_VERSION`` and another canonical form, so every
content hash moves. "What runs" is what the worker controller applied: the rendered objects before
the bump.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from workerclass.render import HASH_VERSION, HASH_VERSION_ANNOTATION, TEMPLATE_HASH_ANNOTATION, keep_running
from workerclass.render import hash as hash_rule

from .builders import by_kind, render_pool
from .variants import rendered, variants

#: Talos pools render the talos-reconcile Job from the chart's own text: the mirror's gated main chart
pytestmark = pytest.mark.usefixtures("chart_text")

#: the variants whose templates we name, and the kinds named
OURS = {
    "kairos-platform": ("KubevirtMachineTemplate", "Secret"),
    "kairos-fixed-ssh": ("KubevirtMachineTemplate", "Secret"),
    "talos-proxmox": ("ProxmoxMachineTemplate",),
    "talos-proxmox-resources": ("ProxmoxMachineTemplate",),
}
CHARTS = sorted(set(variants()) - set(OURS))


def _bump(monkeypatch: pytest.MonkeyPatch) -> None:
    """The next rule: another version, another canonical text (so every content hash changes)."""
    monkeypatch.setattr(hash_rule, "HASH_VERSION", "v-next")
    monkeypatch.setattr(
        hash_rule, "canonical_text", lambda document: json.dumps(document, sort_keys=True, indent=1) + "\n"
    )


def _references(objects: list[dict[str, Any]]) -> dict[str, str]:
    machine = by_kind(objects)["MachineDeployment"]["spec"]["template"]["spec"]
    refs = (machine["infrastructureRef"], machine["bootstrap"].get("configRef") or {})
    out = {ref["kind"]: ref["name"] for ref in refs if ref}
    if "dataSecretName" in machine["bootstrap"]:
        out["Secret"] = machine["bootstrap"]["dataSecretName"]
    return out


def _content(obj: dict[str, Any]) -> Any:
    """What the machines boot from: a template's spec, a bootstrap Secret's text."""
    return obj["stringData"] if obj["kind"] == "Secret" else obj["spec"]


def _names(objects: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(obj["kind"], obj["metadata"]["name"]) for obj in objects]


@pytest.mark.parametrize("name", sorted(OURS), ids=sorted(OURS))
def test_our_templates_carry_the_rule_and_their_hash(name: str) -> None:
    objects = by_kind(rendered(name))
    for kind in OURS[name]:
        metadata = objects[kind]["metadata"]
        assert metadata["annotations"] == {
            HASH_VERSION_ANNOTATION: HASH_VERSION,
            TEMPLATE_HASH_ANNOTATION: metadata["name"].rsplit("-", 1)[1],
        }


@pytest.mark.parametrize("name", CHARTS, ids=CHARTS)
def test_the_charts_templates_carry_nothing_of_ours(name: str) -> None:
    for obj in rendered(name):
        annotations = obj["metadata"].get("annotations") or {}
        assert HASH_VERSION_ANNOTATION not in annotations and TEMPLATE_HASH_ANNOTATION not in annotations


@pytest.mark.parametrize("name", sorted(OURS), ids=sorted(OURS))
def test_a_bump_renames_nothing_that_runs(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    running = rendered(name)
    _bump(monkeypatch)
    after = rendered(name)
    # the bump alone would rename every template we name (so keeping them is what the test proves)
    moved = {
        kind
        for kind in OURS[name]
        if by_kind(after)[kind]["metadata"]["name"] != by_kind(running)[kind]["metadata"]["name"]
    }
    assert moved == set(OURS[name])
    kept = keep_running(after, running)
    assert _names(kept) == _names(running)
    assert _references(kept) == _references(running)
    for kind in OURS[name]:
        template, was = by_kind(kept)[kind], by_kind(running)[kind]
        assert _content(template) == _content(was)  # the machines' template, unchanged
        assert template["metadata"]["annotations"] == {
            HASH_VERSION_ANNOTATION: "v-next",
            TEMPLATE_HASH_ANNOTATION: by_kind(after)[kind]["metadata"]["annotations"][TEMPLATE_HASH_ANNOTATION],
        }
    # once re-stamped, the same settings keep the same names under the new rule
    assert _names(keep_running(rendered(name), kept)) == _names(running)


def test_a_real_change_after_a_bump_still_rolls(monkeypatch: pytest.MonkeyPatch) -> None:
    name = "kairos-fixed-ssh"
    running = rendered(name)
    _bump(monkeypatch)
    kept = keep_running(rendered(name), running)
    pool_object, objects, infrastructure = variants()[name]
    changed_pool = copy.deepcopy(pool_object)
    changed_pool["spec"]["diskSize"] = "77Gi"  # in the machine template, not the bootstrap
    changed = render_pool(changed_pool, *objects, infrastructure=infrastructure)
    rolled = keep_running(changed, kept)
    assert (
        _references(rolled)["KubevirtMachineTemplate"]
        == by_kind(changed)["KubevirtMachineTemplate"]["metadata"]["name"]
    )
    assert _references(rolled)["KubevirtMachineTemplate"] != _references(kept)["KubevirtMachineTemplate"]
    assert _references(rolled)["Secret"] == _references(kept)["Secret"]


def test_without_a_bump_nothing_changes_and_a_change_rolls() -> None:
    name = "talos-proxmox"
    running = rendered(name)
    assert keep_running(rendered(name), running) == running
    assert keep_running(rendered(name), []) == running  # nothing runs yet
    pool_object, objects, infrastructure = variants()[name]
    changed_pool = copy.deepcopy(pool_object)
    changed_pool["spec"]["diskSize"] = "77Gi"
    changed = render_pool(changed_pool, *objects, infrastructure=infrastructure)
    assert keep_running(changed, running) == changed


def test_a_template_from_before_the_stamp_is_a_v2_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """Templates applied before the annotations existed: named by v2, their hash in their name."""
    running = rendered("talos-proxmox")
    for obj in running:
        obj["metadata"].pop("annotations", None)
    assert keep_running(rendered("talos-proxmox"), running) == rendered("talos-proxmox")
    _bump(monkeypatch)
    assert _names(keep_running(rendered("talos-proxmox"), running)) == _names(running)
