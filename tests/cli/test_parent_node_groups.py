"""A parent Kubernetes app's node groups are counted in ``check`` and ``resolve`` as classless
pools of the parent chart: never "no pools in STATE" for a folder that has some."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from workerclass.cli.main import _register, app

_register()

PARENT = """\
apiVersion: apps.cozystack.io/v1alpha1
kind: Kubernetes
metadata: {name: example, namespace: tenant-example}
spec:
  version: v1.35
  nodeGroups:
    md1: {minReplicas: 0, maxReplicas: 2, instanceType: u1.medium, diskSize: 20Gi}
"""


def _run(tmp_path: Path, *args: str) -> tuple[int, str]:
    (tmp_path / "parent.yaml").write_text(PARENT)
    result = CliRunner().invoke(app, [*args, str(tmp_path)])
    return result.exit_code, result.stdout


def test_resolve_counts_the_node_groups(tmp_path: Path) -> None:
    code, out = _run(tmp_path, "resolve")
    assert code == 0 and "no pools in STATE" not in out
    assert "tenant-example/example-md0" in out and "tenant-example/example-md1" in out
    assert "classless pool of the parent kubernetes chart" in out
    code, out = _run(tmp_path, "resolve", "-o", "json")
    groups = json.loads(out)["nodeGroups"]
    assert [(g["pool"], g["parent"], g["group"], g["class"]) for g in groups] == [
        ("tenant-example/example-md0", "tenant-example/example", "md0", None),
        ("tenant-example/example-md1", "tenant-example/example", "md1", None),
    ]


def test_check_counts_the_node_groups(tmp_path: Path) -> None:
    code, out = _run(tmp_path, "check")
    assert code == 0 and "2 node groups" in out and "classless pools of the parent kubernetes chart" in out
    code, out = _run(tmp_path, "check", "-o", "json")
    assert [g["pool"] for g in json.loads(out)["nodeGroups"]] == [
        "tenant-example/example-md0",
        "tenant-example/example-md1",
    ]
