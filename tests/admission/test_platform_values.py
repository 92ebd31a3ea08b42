"""The platform's values are the platform's: a pool's ``_`` keys and a classified pool's Job image.

Cozystack injects ``_cluster`` and ``_namespace`` into every application's values and its
application API refuses ``_`` keys from tenants; the chart reads ``_cluster`` into the
talos-reconcile Job's shell script (unescaped) and into the VM's scheduling. A tenant's copy is
refused at admission (``PlatformValueInPool``) and never reaches a template; a classified pool's
``images.kubectl`` is refused (``PlatformImageOverride``) and never rendered.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from tests.builders import has_denial, make_pool, make_release, make_state
from workerclass import admit
from workerclass.chart.values import chart_input, kubectl_image
from workerclass.render.legacy import legacy_values
from workerclass.render.manifests import chart_input_for

from ..render.builders import effective_of, pool

HOSTILE_DOMAIN = "x$(id>/tmp/pwned)`whoami`"

PLATFORM_KEYS = [
    ("cluster-domain", {"_cluster": {"cluster-domain": HOSTILE_DOMAIN}}),
    (
        "cluster-scheduling",
        {
            "_cluster": {
                "scheduling": {
                    "globalAppTopologySpreadConstraints": [
                        {"maxSkew": 1, "topologyKey": "node-role.kubernetes.io/control-plane"}
                    ]
                }
            }
        },
    ),
    ("namespace", {"_namespace": {"host": "evil.example"}}),
    ("any-underscore-key", {"_anything": "x"}),
]


@pytest.mark.parametrize(("values"), [row[1] for row in PLATFORM_KEYS], ids=[row[0] for row in PLATFORM_KEYS])
@pytest.mark.parametrize("shape", ["KubernetesNodes", "HelmRelease-classless", "HelmRelease-classified"])
def test_a_pools_platform_key_is_refused(values: dict[str, Any], shape: str) -> None:
    if shape == "KubernetesNodes":
        obj, field = make_pool("md1", **values), "spec"
    elif shape == "HelmRelease-classless":
        obj, field = make_release("md1", **values), "spec.values"
    else:
        obj, field = make_release("md1", workerClassName="talos", **values), "spec.values"
    key = next(iter(values))
    decision = admit(make_state(), "CREATE", obj)
    assert not decision.allowed
    assert has_denial(decision.denials, "PlatformValueInPool", f"{field}.{key}"), [str(v) for v in decision.denials]
    # said as a refusal, never as an unknown key that "has no effect"
    assert not any(key in warning for warning in decision.warnings), decision.warnings


def test_a_stored_platform_key_ratchets_on_a_metadata_update() -> None:
    """A legacy release stored with a ``_`` key still takes a label (CRD validation ratcheting)."""
    stored = make_release("md1", _cluster={"cluster-domain": "x"})
    state = make_state([stored])
    labelled = {**stored, "metadata": {**stored["metadata"], "labels": {**stored["metadata"]["labels"], "a": "b"}}}
    decision = admit(state, "UPDATE", labelled, old=stored)
    assert decision.allowed, [str(v) for v in decision.denials]
    changed = make_release("md1", _cluster={"cluster-domain": "y"})
    assert not admit(state, "UPDATE", changed, old=stored).allowed


def test_the_platform_values_win_in_what_the_templates_see() -> None:
    platform = {"_cluster": {"cluster-domain": "cozy.local"}}
    tenant = {"cluster": "example", "_cluster": {"cluster-domain": HOSTILE_DOMAIN, "scheduling": {"x": 1}}, "_n": 1}
    inp = chart_input(
        tenant, namespace="tenant-example", release="kubernetes-nodes-example-md1", cluster_values=platform
    )
    assert inp.values["_cluster"] == {"cluster-domain": "cozy.local"}
    assert "_n" not in inp.values
    # Helm's engine gets the same values
    assert all(not str(key).startswith("_") or key == "_cluster" for key in inp.supplied_values or {"_cluster": 1})


def test_a_classified_pools_job_image_is_refused() -> None:
    image = {"images": {"kubectl": "registry.example/tenant/kubectl:evil"}}
    decision = admit(make_state(), "CREATE", make_pool("md1", **image))  # defaulted to the talos class
    assert has_denial(decision.denials, "PlatformImageOverride", "spec.images.kubectl")
    explicit = admit(make_state(), "CREATE", make_release("md1", workerClassName="talos", **image))
    assert has_denial(explicit.denials, "PlatformImageOverride", "spec.values.images.kubectl")
    # classless: the chart's behaviour (the contract says what it keeps)
    assert admit(make_state(), "CREATE", make_release("md1", **image)).allowed
    # empty is no override
    assert admit(make_state(), "CREATE", make_pool("md1", images={"kubectl": ""})).allowed


def test_a_classified_pool_renders_the_platforms_job_image_whatever_is_stored() -> None:
    effective = effective_of(pool(workerClassName="talos"))
    stored = dict(effective.values or effective.pool.values)
    stored["images"] = {"kubectl": "registry.example/tenant/kubectl:evil"}
    tampered = dataclasses.replace(effective, values=stored)
    assert "images" not in legacy_values(tampered)
    assert chart_input_for(tampered).values["images"]["kubectl"] in ("", kubectl_image())
