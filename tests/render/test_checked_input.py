"""A pool's render reads what resolution's chart checks established: the same objects, the same
refusals, and never an input the settings no longer hold.

Resolution runs the chart's checks on the pool's values as the chart sees them; a classless pool's
render builds that very input again and runs the same checks. The effective settings keep the
checked input (:attr:`~workerclass.resolve.effective.Effective.chart_input`), and the render reads it
only while the settings still hold what it was built from. A classified pool's render builds its
own input (the class's Talos settings in place of the pool's) and runs only the checks that read
what the class wrote (:func:`~workerclass.chart.passes_rest_as`).
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest

from workerclass.chart import render as chart_render
from workerclass.render import RenderError, render, template_hash
from workerclass.resolve import resolve_pool
from workerclass.resolve.effective import Effective

from .builders import (
    CA,
    CLUSTER,
    FIXED_REFERENCE,
    NAMESPACE,
    SSH_KEY,
    effective_of,
    identity,
    parent,
    pool,
    release,
    state_of,
    worker_class,
)

pytestmark = pytest.mark.usefixtures("chart_text")


@pytest.fixture(autouse=True)
def _checks_not_shared(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test resolves and renders its pools afresh: no checks or inputs shared from another test's pools."""
    from workerclass.render import manifests
    from workerclass.resolve import chart

    monkeypatch.setattr(chart, "_SHARED_CHECKS", type(chart._SHARED_CHECKS)())
    monkeypatch.setattr(chart, "_SHARED_PASSES", type(chart._SHARED_PASSES)())
    monkeypatch.setattr(manifests, "_SHARED_INPUTS", type(manifests._SHARED_INPUTS)())


#: classless pools over the chart's value space: plain, sized, GPUs, kubelet and mirrors, a HelmRelease
CLASSLESS: dict[str, dict[str, Any]] = {
    "plain": pool("plain"),
    "sized": pool("sized", resources={"cpu": "3", "memory": "6Gi"}, podCpu="2", minReplicas=1, maxReplicas=4),
    "gpus": pool("gpus", instanceType="u1.xlarge", gpus=[{"name": "nvidia.com/GA102GL_A10"}]),
    "kubelet": pool(
        "kubelet",
        kubelet={"systemReserved": {"cpu": "250m"}, "evictionHard": {"memory.available": "300Mi"}},
        talos={"registryMirrors": {"docker.io": {"endpoints": ["https://mirror.example.com"]}}},
        nodeLabels={"role": "batch"},
    ),
    "release": release("fromflux", instanceType="u1.large", maxReplicas=3),
}


def _without_kept(effective: Effective) -> Effective:
    return dataclasses.replace(effective, chart_input=None)


class _Runs:
    """The chart's checks, counted: each run's release and whether only the rewritten ones ran."""

    def __init__(self) -> None:
        self.exact = chart_render.chart_failures  # the one function every module imported
        self.calls: list[tuple[str, bool]] = []

    def __call__(self, inp: Any, **kwargs: Any) -> Any:
        self.calls.append((inp.release, bool(kwargs.get("rest_passed", False))))
        return self.exact(inp, **kwargs)

    def watch(self, monkeypatch: pytest.MonkeyPatch, *modules: Any) -> _Runs:
        for module in modules:
            monkeypatch.setattr(module, "chart_failures", self)
        return self


@pytest.mark.parametrize("name", sorted(CLASSLESS))
def test_a_classless_pool_renders_the_same_from_the_input_resolution_checked(name: str) -> None:
    effective = effective_of(CLASSLESS[name])
    assert effective.chart_input is not None, "resolution keeps the input its checks passed on"
    kept = effective.chart_input.input
    before = copy.deepcopy(dict(kept.values))
    for talos_config_template in (False, True):
        fresh = render(_without_kept(effective), talos_config_template=talos_config_template)
        assert render(effective, talos_config_template=talos_config_template) == fresh
        assert render(effective, talos_config_template=talos_config_template) == fresh  # read, not changed
    assert template_hash(effective) == template_hash(_without_kept(effective))
    assert dict(kept.values) == before, "a render must not change the input it shares"


#: classified pools: the platform's Talos class with the pool's own Talos settings, kernel modules,
#: a CA, a builtin disk; a Kairos class
FIXED = worker_class(
    "kairos-fixed-r1", bootstrap="kairos", image={"kubernetesVersion": "v1.35.6", "reference": FIXED_REFERENCE}
)
CLASSIFIED: dict[str, tuple[dict[str, Any], tuple[dict[str, Any], ...]]] = {
    "talos": (pool("talos", workerClassName="talos", instanceType="u1.large"), ()),
    "talos-own": (
        pool(
            "own",
            workerClassName="talos",
            resources={"cpu": "3", "memory": "6Gi"},
            talos={"version": "v1.13.2", "registryMirrors": {"docker.io": {"endpoints": ["https://m.example"]}}},
            kernelModules=[{"name": "nvme_tcp"}],
        ),
        (),
    ),
    "talos-ca-builtin": (
        pool("ca", workerClassName="talos", talos={"imageFactoryCA": CA}, kubevirt={"osImage": {"builtin": {}}}),
        (),
    ),
    "kairos": (pool("kairos", workerClassName="kairos-fixed-r1", sshKeys=[SSH_KEY]), (FIXED,)),
}


@pytest.mark.parametrize("name", sorted(CLASSIFIED))
def test_a_classified_pool_renders_the_same_running_only_the_rewritten_checks(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    obj, objects = CLASSIFIED[name]
    effective = effective_of(obj, *objects)
    assert effective.class_name is not None
    assert effective.chart_input is not None, "resolution keeps the input its checks passed on"
    assert effective.checked_input(effective.release or "") is None, "the class's render has its own input"
    fresh = render(_without_kept(effective)), template_hash(_without_kept(effective))
    from workerclass.render import manifests

    runs = _Runs().watch(monkeypatch, chart_render, manifests)
    assert (render(effective), template_hash(effective)) == fresh
    # the first read runs only the rewritten checks; the second is given the input they passed on
    assert [rest for _, rest in runs.calls] == [True], "both read what resolution's checks established"
    assert (render(effective), template_hash(effective)) == fresh
    assert [rest for _, rest in runs.calls] == [True]


def test_a_classified_render_still_runs_the_checks_of_what_the_class_wrote() -> None:
    """The rest passed on the stored values; a Talos setting the class wrote that breaks the text the
    chart pastes is still refused, as without what resolution kept."""
    effective = effective_of(CLASSIFIED["talos"][0])
    assert effective.talos is not None and effective.chart_input is not None
    broken = dataclasses.replace(effective, talos=dataclasses.replace(effective.talos, schematic_id="x: y\n  z: ["))
    with pytest.raises(RenderError) as without:
        template_hash(_without_kept(broken))
    with pytest.raises(RenderError) as kept:
        template_hash(broken)
    assert str(kept.value) == str(without.value)
    assert kept.value.failures == without.value.failures


@pytest.mark.parametrize(
    "change",
    [
        {"values": {"version": "v1.35"}},  # no cluster: the chart refuses
        {"values": {"cluster": CLUSTER, "version": "v1.35", "minReplicas": 5, "maxReplicas": 2}},
        {"release": f"kubernetes-nodes-{CLUSTER}-other"},
        {"cluster_values": {"_cluster": {"cluster-domain": "other.local"}}},
        {"instancetypes": {}},
    ],
    ids=["values-refused", "values-other", "release", "platform", "instancetypes"],
)
def test_the_kept_input_is_not_read_once_the_settings_no_longer_hold_it(change: dict[str, Any]) -> None:
    effective = effective_of(CLASSLESS["sized"])
    assert effective.chart_input is not None
    changed = dataclasses.replace(effective, **change)
    assert changed.chart_input is effective.chart_input  # carried along by replace ...
    assert changed.checked_input(changed.release or "kubernetes-nodes-" + changed.name) is None  # ... never read
    try:
        expected: list[dict[str, Any]] | str = render(_without_kept(changed))
    except RenderError as error:
        expected = str(error)
    try:
        got: list[dict[str, Any]] | str = render(changed)
    except RenderError as error:
        got = str(error)
    assert got == expected
    if "values" in change and "minReplicas" not in change["values"]:
        assert isinstance(got, str) and "refuses" in got


def test_a_pool_whose_checks_found_anything_keeps_no_input_and_the_render_still_refuses() -> None:
    """Resolution leaves a pool name the chart refuses to admission's CREATE; the render must
    still refuse it, so no input is kept when any check failed."""
    obj = {
        "apiVersion": "apps.cozystack.io/v1alpha1",
        "kind": "KubernetesNodes",
        "metadata": {"name": "elsewhere-workers", "namespace": NAMESPACE},  # not <cluster>-...
        "spec": {"cluster": CLUSTER, "version": "v1.35"},
    }
    state = state_of(obj, parent())
    record = state.pool(identity(obj))
    assert record is not None
    effective, denials, _ = resolve_pool(state, record)
    assert effective is not None, denials
    assert effective.chart_input is None
    with pytest.raises(RenderError, match=r"InvalidPoolName|refuses"):
        render(effective)


def test_values_cut_for_the_checks_keep_no_input() -> None:
    """Values deeper than the checks read are cut for them: that input is not the render's."""
    deep: Any = "leaf"
    for _ in range(70):
        deep = {"d": deep}
    state = state_of(pool("deep", nodeLabels={"a": "b"}, extra=deep))
    record = state.pool(f"{NAMESPACE}/{CLUSTER}-deep")
    assert record is not None
    effective, _, _ = resolve_pool(state, record)
    if effective is not None:  # refused for its key or not: never with the cut input
        assert effective.chart_input is None


def _renamed(obj: dict[str, Any], name: str) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    out["metadata"]["name"] = name
    return out


@pytest.mark.parametrize("name", ["sized", "kubelet", "talos", "talos-own", "kairos"])
def test_pools_that_differ_only_in_name_share_one_run_of_the_checks(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The second of two pools with the same values runs no chart check in resolution: it is given
    the first's checked input under its own release, and renders and hashes as it would alone."""
    obj, objects = CLASSIFIED[name] if name in CLASSIFIED else (CLASSLESS[name], ())
    twin = _renamed(obj, obj["metadata"]["name"] + "-twin")
    state = state_of(twin, obj, *objects)
    from workerclass.resolve import chart

    runs = _Runs().watch(monkeypatch, chart)
    first = state.pool(identity(obj))
    second = state.pool(identity(twin))
    assert first is not None and second is not None
    resolved = [resolve_pool(state, record)[0] for record in (first, second)]
    assert len(runs.calls) == 1, runs.calls
    for effective in resolved:
        assert effective is not None and effective.chart_input is not None
        assert effective.chart_input.input.release == (effective.release or f"kubernetes-nodes-{effective.name}")
    first_effective, twin_effective = resolved
    assert first_effective is not None and twin_effective is not None
    from workerclass.render import manifests

    runs.watch(monkeypatch, manifests, chart_render)
    first_objects = render(first_effective)
    before = len(runs.calls)
    twin_objects = render(twin_effective), template_hash(twin_effective)
    assert len(runs.calls) == before, "the twin's render runs no chart check"
    monkeypatch.setattr(chart, "_SHARED_CHECKS", type(chart._SHARED_CHECKS)())
    monkeypatch.setattr(manifests, "_SHARED_INPUTS", type(manifests._SHARED_INPUTS)())
    alone = effective_of(twin, *objects)
    assert twin_objects == (render(alone), template_hash(alone))
    assert twin_objects == (render(_without_kept(twin_effective)), template_hash(_without_kept(twin_effective)))
    assert first_objects != twin_objects[0], "the names are the pools' own"


def test_a_pass_is_not_shared_with_a_pool_whose_name_the_checks_refuse() -> None:
    """Same values, but a name that is not ``<cluster>-<pool>``: its release fails the chart's
    release-name rule, whatever the first pool's checks found."""
    good = CLASSLESS["sized"]
    bad = _renamed(good, "elsewhere-workers")
    state = state_of(bad, good)
    for obj, refused in ((good, False), (bad, True)):
        record = state.pool(identity(obj))
        assert record is not None
        effective, _, _ = resolve_pool(state, record)
        assert effective is not None
        assert (effective.chart_input is None) is refused
        if refused:
            with pytest.raises(RenderError, match=r"InvalidPoolName|refuses"):
                render(effective)
        else:
            render(effective)


def test_pools_too_large_to_key_are_not_shared(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pool whose values' text is longer than MAX_SHARED_TEXT is checked and rendered on its own:
    the shared caches keep nothing of it (a tenant's large pools cannot fill them)."""
    from workerclass.api.bounds import MAX_SHARED_TEXT
    from workerclass.render import manifests
    from workerclass.resolve import chart

    for obj, objects in (
        (pool("large", extra={"note": "x" * MAX_SHARED_TEXT}), ()),
        (pool("large", workerClassName="talos", extra={"note": "x" * MAX_SHARED_TEXT}), ()),
    ):
        twin = _renamed(obj, obj["metadata"]["name"] + "-twin")
        state = state_of(twin, obj, *objects)
        for identity_ in (identity(obj), identity(twin)):
            record = state.pool(identity_)
            assert record is not None
            effective, denials, _ = resolve_pool(state, record)
            assert effective is not None and effective.chart_input is not None, denials
            assert render(effective) == render(_without_kept(effective))
        assert len(chart._SHARED_CHECKS) == 0
        assert len(manifests._SHARED_INPUTS) == 0


def test_a_decision_shares_a_pass_but_keeps_no_input(monkeypatch: pytest.MonkeyPatch) -> None:
    """Admission renders nothing: its checks are shared between pools that differ in name, but no
    chart input is built or kept for them (a review a tenant sends cannot fill a cache of inputs)."""
    from workerclass.resolve import chart, resolve_verdict

    obj = CLASSLESS["sized"]
    twin = _renamed(obj, obj["metadata"]["name"] + "-twin")
    state = state_of(twin, obj)
    runs = _Runs().watch(monkeypatch, chart)
    for obj_ in (obj, twin):
        record = state.pool(identity(obj_))
        assert record is not None
        denials, _ = resolve_verdict(state, record)
        assert denials == []
    assert len(runs.calls) == 1, runs.calls
    assert len(chart._SHARED_CHECKS) == 1 and len(chart._SHARED_PASSES) == 0
    rendering = state_of(twin, obj)  # a render's resolution (another State): it builds the input
    record = rendering.pool(identity(twin))
    assert record is not None
    effective = resolve_pool(rendering, record)[0]
    assert effective is not None and effective.chart_input is not None
    assert len(runs.calls) == 2 and len(chart._SHARED_PASSES) == 1
    assert render(effective) == render(_without_kept(effective))


def test_a_pass_of_values_too_long_to_keep_their_input_is_shared_without_it() -> None:
    """Values longer than MAX_SHARED_INPUT_TEXT (and within MAX_SHARED_TEXT): their pass is shared,
    their input is not kept, so a render's resolution of each builds its own."""
    from workerclass.api.bounds import MAX_SHARED_INPUT_TEXT
    from workerclass.resolve import chart

    obj = pool("long", extra={"note": "x" * MAX_SHARED_INPUT_TEXT})
    twin = _renamed(obj, obj["metadata"]["name"] + "-twin")
    state = state_of(twin, obj)
    resolved = []
    for obj_ in (obj, twin):
        record = state.pool(identity(obj_))
        assert record is not None
        resolved.append(resolve_pool(state, record)[0])
    assert len(chart._SHARED_CHECKS) == 1 and len(chart._SHARED_PASSES) == 0
    for effective in resolved:  # each built its own input (none was kept to share)
        assert effective is not None and effective.chart_input is not None
        assert effective.chart_input.input.release == f"kubernetes-nodes-{effective.name}"
        assert render(effective) == render(_without_kept(effective))
