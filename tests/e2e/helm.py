"""Helm's real engine against the test API server: install, upgrade and uninstall of a chart folder.

helm-python-sdk (Helm's Go SDK over a C ABI, the package's ``helm`` extra) is driven by a short
script in a process of its own for each action, so a crash of the SDK cannot take the session down.
Values are merged over the platform values Cozystack injects (``_cluster``), as Flux's
helm-controller passes them from the ``cozystack-values`` Secret.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

from tests.chart.oracle import helm_interpreter

_DRIVER = r"""
import json, sys
import helm_python as helm
request = json.loads(sys.stdin.read())
config = helm.Config(kubeconfig_path=request["kubeconfig"], namespace=request["namespace"])
op = request["op"]
if op == "install":
    release = config.install(
        request["chart"], request["release"], request["values"], namespace=request["namespace"], timeout=60
    )
elif op == "upgrade":
    release = config.upgrade(
        request["chart"], request["release"], request["values"], namespace=request["namespace"], timeout=60
    )
elif op == "uninstall":
    release = config.uninstall(request["release"], timeout=60)
else:
    raise SystemExit("unknown op " + op)
print(json.dumps({"ok": True, "manifest": (release.get("manifest") if isinstance(release, dict) else None)}))
"""

PLATFORM_VALUES = {"_cluster": {"cluster-domain": "cozy.local"}, "_namespace": {}}


def gated_chart(upstream: Path, patch: Path, folder: Path) -> Path:
    """A copy of ``upstream`` with our chart gate applied (``patch -p1``)."""
    target = folder / "kubernetes-nodes"
    shutil.copytree(upstream, target)
    subprocess.run(["patch", "-p1", "--fuzz=0", "-s", "-i", str(patch)], cwd=target, check=True)
    return target


def helm(op: str, *, kubeconfig: Path, release: str, namespace: str, chart: Path | None = None,
         values: dict[str, Any] | None = None) -> dict[str, Any]:  # fmt: skip
    python, env = helm_interpreter()  # without the helm extra the test skips (fails under CI=true)
    merged = {**PLATFORM_VALUES, **(values or {})}
    request = {
        "op": op,
        "kubeconfig": str(kubeconfig),
        "release": release,
        "namespace": namespace,
        "chart": str(chart) if chart else None,
        "values": merged,
    }
    out = subprocess.run(
        [python, "-c", _DRIVER], input=json.dumps(request), capture_output=True, text=True, env=env, timeout=180
    )
    if out.returncode != 0:
        raise RuntimeError(f"helm {op} {release} failed: {out.stderr.strip()[-2000:]}")
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result
