"""A poison object stops only itself: a pool or HelmRelease nested or sized beyond the bounds of
:mod:`workerclass.api.bounds` is refused at admission (``ObjectTooLarge``), skipped and said by the
cluster cache and the STATE reader, and a failure of one pool in the worker controller's desired
state is that pool's. Each case was a whole-service failure before: a 600-deep list failed every
controller pass (RecursionError escaped), a 1,100-deep HelmRelease failed the cache's list for ever
(the webhook unready, every tenant's writes refused), and one deep file crashed ``render`` of a folder.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.builders import NAMESPACE, make_pool, make_release, make_state
from tests.shared import chart_path
from workerclass import admit
from workerclass.adapters.kube import ClusterCache
from workerclass.api import by_kind
from workerclass.api.bounds import MAX_DEPTH, excess, measure
from workerclass.ops import workers as workers_module
from workerclass.ops.workers import desired_workers
from workerclass.webhook import Target, decode


def nested(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


def deep_json(depth: int) -> str:
    return "[" * depth + '"x"' + "]" * depth


def test_the_bounds_are_measured_without_recursion() -> None:
    assert measure(nested(5_000))[0] > MAX_DEPTH  # stops just past the bound, never recurses
    assert excess(make_pool()) is None
    assert excess({"a": nested(MAX_DEPTH + 1)}) is not None
    assert excess({"a": "x" * (2 * 1024 * 1024)}) is not None


@pytest.mark.parametrize("depth", [100, 600])
@pytest.mark.parametrize("shape", ["KubernetesNodes", "HelmRelease"])
def test_a_deep_object_is_refused_before_any_rule_reads_it(depth: int, shape: str) -> None:
    obj = make_pool("md1") if shape == "KubernetesNodes" else make_release("md1", workerClassName="talos")
    spec = obj["spec"] if shape == "KubernetesNodes" else obj["spec"]["values"]
    spec["labels"] = {"a": nested(depth)}
    decision = admit(make_state(), "CREATE", obj)
    assert not decision.allowed
    assert [(v.code, v.field) for v in decision.denials] == [
        ("ObjectTooLarge", "spec" if shape == "KubernetesNodes" else "spec.values")
    ]


def test_a_stored_deep_object_can_be_replaced_by_a_sound_one() -> None:
    stored = make_release("md1")
    stored["spec"]["values"]["x"] = nested(600)
    sound = make_release("md1")
    assert admit(make_state(), "UPDATE", sound, old=stored).allowed


def test_the_webhook_reads_a_review_deeper_than_orjson_and_answers_a_denial() -> None:
    pool = json.dumps(make_pool("md1"))
    body = (
        '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u1",'
        '"kind":{"group":"apps.cozystack.io","version":"v1alpha1","kind":"KubernetesNodes"},'
        '"resource":{"group":"apps.cozystack.io","version":"v1alpha1","resource":"kubernetesnodes"},'
        f'"operation":"CREATE","namespace":"{NAMESPACE}","object":' + pool[:-1] + ', "x": ' + deep_json(1_100) + "}}}"
    )
    limit = sys.getrecursionlimit()
    from workerclass.cli.commands_serve import read_deep_answers

    try:
        read_deep_answers()
        review = decode(body.encode(), Target("KubernetesNodes", "apps.cozystack.io", "v1alpha1"))
        assert review.obj is not None
        decision = admit(make_state(), "CREATE", review.obj)
    finally:
        sys.setrecursionlimit(limit)
    assert [v.code for v in decision.denials] == ["ObjectTooLarge"]


def test_the_cache_skips_an_object_beyond_the_bounds_and_says_so(caplog: pytest.LogCaptureFixture) -> None:
    cache = ClusterCache(object())
    watched = by_kind("HelmRelease")
    deep = make_release("deep")
    deep["spec"]["values"]["x"] = nested(1_100)
    assert cache._normalized(watched, deep) is None
    assert cache._normalized(watched, make_release("fine")) is not None
    assert cache.skipped == {(watched.name, "depth"): 1}
    assert any("kubernetes-nodes-example-deep is skipped" in record.message for record in caplog.records)
    assert "x" not in "".join(record.message for record in caplog.records).split("skipped")[0][-3:]
    (report,) = [report for report in cache.sync_reports() if report.name == watched.name]
    assert report.skipped == 1


def _desired(**poison_values: Any) -> dict[str, Any]:
    """The controller's desired state of two classified pools, ``poison`` (with ``poison_values``) and ``healthy``."""
    poison = make_release("poison", workerClassName="talos")
    poison["spec"]["values"].update(poison_values)
    healthy = make_release("healthy", workerClassName="talos")
    for obj, uid in ((poison, "u1"), (healthy, "u2")):
        obj["metadata"]["uid"] = uid
    return {pool.identity.rsplit("-", 1)[-1]: pool for pool in desired_workers(make_state([poison, healthy]))}


@pytest.mark.usefixtures("chart_text")
def test_a_deep_pool_is_refused_by_the_controller_and_the_others_are_applied() -> None:
    pools = _desired(x=nested(600))  # no webhook sees a HelmRelease: the bounds apply here too
    assert {name: pool.state for name, pool in pools.items()} == {"poison": "refused", "healthy": "ready"}
    assert "ObjectTooLarge" in pools["poison"].message
    assert pools["poison"].objects == () and pools["healthy"].objects


@pytest.mark.usefixtures("chart_text")
def test_one_pools_failure_in_the_controllers_desired_state_is_that_pools(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any exception inside one pool's resolution (a RecursionError a reader did not foresee, say)
    leaves that pool "failing" and the others as they are."""
    real = workers_module.resolve_pool

    def resolve(state: Any, record: Any) -> Any:
        if record.name.endswith("poison"):
            raise RecursionError("maximum recursion depth exceeded")
        return real(state, record)

    monkeypatch.setattr(workers_module, "resolve_pool", resolve)
    pools = _desired()
    assert {name: pool.state for name, pool in pools.items()} == {"poison": "failing", "healthy": "ready"}
    assert "RecursionError" in pools["poison"].message


def test_one_deep_file_is_an_error_of_its_own_and_the_rest_is_rendered(tmp_path: Path) -> None:
    (tmp_path / "parent.json").write_text(
        json.dumps(
            {
                "apiVersion": "apps.cozystack.io/v1alpha1",
                "kind": "Kubernetes",
                "metadata": {"name": "example", "namespace": NAMESPACE},
                "spec": {"version": "v1.35"},
            }
        )
    )
    (tmp_path / "pool.json").write_text(json.dumps(make_pool("ok")))
    release = json.dumps(make_release("deep"))
    (tmp_path / "deep.json").write_text(release[:-2] + ', "x": ' + deep_json(1_100) + "}}")
    yaml_release = tmp_path / "deep.yaml"
    yaml_release.write_text(
        "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n"
        f"  name: kubernetes-nodes-example-deep2\n  namespace: {NAMESPACE}\n"
        "  labels: {apps.cozystack.io/application.kind: KubernetesNodes}\n"
        f"spec:\n  values:\n    cluster: example\n    x: {deep_json(600)}\n"
    )
    chart = str(chart_path("main+gate"))
    for command in ("check", "resolve", "render"):
        done = subprocess.run(
            [sys.executable, "-m", "workerclass", command, str(tmp_path), "--chart", chart],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 2, (command, done.stderr)
        assert "Traceback" not in done.stderr
        assert "deep.json: an object nests too deep to read" in done.stderr
        assert "deep.yaml:1: the HelmRelease nests deeper than" in done.stderr
        assert "example-ok" in done.stdout, (command, done.stdout)
