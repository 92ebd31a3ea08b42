"""No pool takes over another release's objects, on any path: a direct HelmRelease named
after the parent app's default node group is refused wherever it is read.

A tenant can write a HelmRelease ``kubernetes-nodes-<cluster>-md0`` beside its ``Kubernetes`` app,
whose chart renders the node group ``md0``: no webhook sees a HelmRelease, so the rule must hold
where the pool is read (resolution, the controller's desired state, the CLI's ``render``). The
controller's refusal of a live object it does not own is tested with its fake API
(tests/controller/test_workers.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.builders import NAMESPACE, make_cluster, make_pool, make_release, make_state
from tests.shared import chart_path
from workerclass import admit, render, resolve
from workerclass.ops.workers import desired_workers
from workerclass.resolve import resolve_all


def _md0() -> dict[str, object]:
    release = make_release("md0", workerClassName="talos")
    release["metadata"]["uid"] = "u-md0"
    return release


def test_a_helmrelease_on_the_parents_node_group_is_refused_at_admission() -> None:
    decision = admit(make_state(clusters=[make_cluster()]), "CREATE", _md0())
    assert not decision.allowed
    assert any(v.code == "InvalidPoolName" and "still manages nodeGroup 'md0'" in v.message for v in decision.denials)


@pytest.mark.usefixtures("chart_text")
def test_the_controller_applies_nothing_for_it() -> None:
    healthy = make_release("md1", workerClassName="talos")
    healthy["metadata"]["uid"] = "u-md1"
    pools = {pool.identity: pool for pool in desired_workers(make_state([_md0(), healthy], clusters=[make_cluster()]))}
    taken = pools[f"{NAMESPACE}/kubernetes-nodes-example-md0"]
    assert taken.state == "not-resolvable" and "InvalidPoolName" in taken.message
    assert taken.objects == ()
    assert pools[f"{NAMESPACE}/kubernetes-nodes-example-md1"].state == "ready"


def test_render_refuses_it_and_renders_the_rest(tmp_path: Path) -> None:
    (tmp_path / "parent.json").write_text(json.dumps(make_cluster()))
    (tmp_path / "md0.json").write_text(json.dumps(_md0()))
    (tmp_path / "md1.json").write_text(json.dumps(make_release("md1")))
    done = subprocess.run(
        [sys.executable, "-m", "workerclass", "render", str(tmp_path), "--chart", str(chart_path("main+gate"))],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode != 0
    assert "InvalidPoolName" in done.stderr + done.stdout
    assert "Traceback" not in done.stderr
    assert "kubernetes-example-md0" not in done.stdout  # the parent's MachineDeployment is not rendered
    assert "kubernetes-example-md1" in done.stdout


def _nested_tenants() -> tuple[dict[str, Any], dict[str, Any]]:
    """``tenant-a/b-kubernetes-nodes-c-d`` and ``tenant-a-kubernetes-nodes-b/c-d``: both render the
    ClusterRole ``tenant-a-kubernetes-nodes-b-kubernetes-nodes-c-d-talos-reconcile-coredns``."""
    outer = make_pool("b-kubernetes-nodes-c-d", namespace="tenant-a", cluster="b")
    inner = make_pool("c-d", namespace="tenant-a-kubernetes-nodes-b", cluster="c")
    outer["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
    inner["metadata"]["creationTimestamp"] = "2026-06-01T00:00:00Z"
    return outer, inner


def _parents() -> list[dict[str, Any]]:
    return [make_cluster("b", namespace="tenant-a"), make_cluster("c", namespace="tenant-a-kubernetes-nodes-b")]


@pytest.mark.usefixtures("chart_text")
def test_two_tenants_pools_whose_cluster_scoped_names_collide_the_later_is_refused() -> None:
    outer, inner = _nested_tenants()
    alone = [make_state([pool], clusters=_parents()) for pool in (outer, inner)]
    roles = [_cluster_roles(state, pool) for state, pool in zip(alone, (outer, inner), strict=True)]
    assert roles[0] and roles[0] == roles[1]  # the collision is real: the chart renders one name twice
    state = make_state([outer, inner], clusters=_parents())
    refused = {record.identity: denials for record, _, denials, _ in resolve_all(state)}
    assert refused["tenant-a/b-kubernetes-nodes-c-d"] == []
    (denial,) = refused["tenant-a-kubernetes-nodes-b/c-d"]
    assert denial.code == "InvalidPoolName" and "created before it" in denial.message
    assert "tenant-a/" not in denial.message  # the other tenant's pool is not named
    # a new pool with the taken name is refused at admission, however its tenant spells the request
    fresh = make_pool("c-d", namespace="tenant-a-kubernetes-nodes-b", cluster="c")
    decision = admit(make_state([outer], clusters=_parents()), "CREATE", fresh)
    assert any(v.code == "InvalidPoolName" and "created before it" in v.message for v in decision.denials)


def _cluster_roles(state: Any, pool: dict[str, Any]) -> set[str]:
    objects = render(resolve(state, pool))
    return {obj["metadata"]["name"] for obj in objects if obj["kind"] in ("ClusterRole", "ClusterRoleBinding")}
