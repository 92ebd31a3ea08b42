"""Honest exit codes and reports: what STATE holds that cannot be read, or that workerclass does
not read, is never a success; pipes are read; ``-n`` namespaces documents without one; and
``check --stored`` judges each object as the webhook judges an UPDATE of the stored object."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest
import yaml

from tests.cli.test_commands_core import EXAMPLES, pool, run, write

NAMESPACE = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "tenant-example"}}


@pytest.fixture
def state(tmp_path: Path) -> Path:
    target = tmp_path / "state"
    shutil.copytree(EXAMPLES, target)
    return target


@pytest.mark.parametrize("command", ["check", "resolve", "render", "restore"])
def test_a_state_of_only_objects_not_read_exits_2(tmp_path: Path, command: str) -> None:
    write(tmp_path / "ns.yaml", NAMESPACE)
    result = run(command, str(tmp_path / "ns.yaml"))
    assert result.exit_code == 2, result.stdout + result.stderr
    assert "no object workerclass reads" in result.stderr


def _broken(state: Path) -> Path:
    path = state / "broken.yaml"
    path.write_text("a: [\n")
    return path


def test_check_json_carries_unreadable_files(state: Path) -> None:
    _broken(state)
    result = run("check", str(state), "-o", "json")
    assert result.exit_code == 2
    data = json.loads(result.stdout)
    assert data["allowed"] is False
    assert len(data["errors"]) == 1 and "broken.yaml" in data["errors"][0]


def test_check_junit_carries_unreadable_files_as_errors(state: Path) -> None:
    _broken(state)
    result = run("check", str(state), "-o", "junit")
    assert result.exit_code == 2
    suite = ElementTree.fromstring(result.stdout).find("testsuite")
    assert suite is not None and suite.get("errors") == "1"
    errors = [case for case in suite.iter("testcase") if case.find("error") is not None]
    assert len(errors) == 1
    assert "broken.yaml" in (errors[0].find("error").get("message") or "")  # type: ignore[union-attr]
    assert suite.get("tests") == str(len(list(suite.iter("testcase"))))


def test_a_state_path_that_is_a_pipe_is_read(tmp_path: Path) -> None:
    """``check <(cat pools.yaml)``: the shell passes ``/dev/fd/N``, a pipe, not a regular file."""
    text = "".join((EXAMPLES / part).read_text() + "\n---\n" for part in ("tenant-example/cluster.yaml",))
    read, write_end = os.pipe()
    os.write(write_end, text.encode())
    os.close(write_end)
    try:
        result = subprocess.run(
            [sys.executable, "-m", "workerclass", "check", f"/dev/fd/{read}", "-o", "json"],
            pass_fds=(read,),
            capture_output=True,
            text=True,
            check=False,
        )
    finally:
        os.close(read)
    assert result.returncode == 0, result.stderr
    assert [o["kind"] for o in json.loads(result.stdout)["objects"]] == ["Kubernetes"]


def _without_namespace(obj: dict[str, Any]) -> dict[str, Any]:
    out = json.loads(json.dumps(obj))
    out["metadata"].pop("namespace", None)
    return out


def test_namespace_option_gives_documents_without_one_a_namespace(tmp_path: Path) -> None:
    cluster = yaml.safe_load((EXAMPLES / "tenant-example" / "cluster.yaml").read_text())
    write(tmp_path / "s" / "all.yaml", _without_namespace(cluster), _without_namespace(pool("example-md9")))
    plain = run("check", str(tmp_path / "s"), "-o", "json")
    assert plain.exit_code == 1  # no namespace: not a tenant pool
    result = run("check", str(tmp_path / "s"), "-n", "tenant-example", "-o", "json")
    assert result.exit_code == 0, result.stdout
    assert {o["namespace"] for o in json.loads(result.stdout)["objects"]} == {"tenant-example"}


def test_namespace_option_refuses_a_document_of_another_namespace(tmp_path: Path) -> None:
    """As kubectl: a document's own namespace that is not ``-n``'s is an error, not overridden."""
    write(tmp_path / "s" / "pool.yaml", pool("example-md9"))
    result = run("check", str(tmp_path / "s"), "-n", "tenant-other")
    assert result.exit_code == 2
    assert "tenant-other" in result.stderr and "tenant-example" in result.stderr


def test_check_stored_judges_as_the_webhook_judges_an_update(state: Path) -> None:
    """A stored pool with a kubelet reservation the chart refuses is ratcheted by an UPDATE of
    itself (``admit --operation UPDATE``); ``check --stored`` gives it the same decision."""
    bad = pool("example-md9", workerClassName="talos", kubelet={"systemReservedMemory": "0"})
    path = write(state / "tenant-example" / "bad.yaml", bad)
    admitted = json.loads(run("admit", str(state), "-f", str(path), "--operation", "UPDATE", "-o", "json").stdout)
    assert admitted["allowed"] is True
    assert any("InvalidKubeletReservation" in w for w in admitted["warnings"])
    result = run("check", str(state), "--stored", "-o", "json")
    (item,) = [o for o in json.loads(result.stdout)["objects"] if o["name"] == "example-md9"]
    assert {key: item[key] for key in ("allowed", "patch", "denials", "warnings")} == {
        key: admitted[key] for key in ("allowed", "patch", "denials", "warnings")
    }
    assert result.exit_code == 0
