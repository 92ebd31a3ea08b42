"""No pool takes over another release's objects, on any path (issue: a direct HelmRelease named
after the parent app's default node group).

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

import pytest

from tests.builders import NAMESPACE, make_cluster, make_release, make_state
from tests.shared import chart_path
from workerclass import admit
from workerclass.ops.workers import desired_workers


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
