"""Run the oracle (``shared/tools/cozystack-render``) for many renders in one process.

The oracle re-executes itself inside a cached venv with helm-python-sdk. Starting it per render
costs ~0.4 s, most of it process start and ``Chart.load``; here a small driver runs inside that
venv, imports the oracle script as a module, loads each chart once and renders requests read as
JSON lines from stdin (values, release, namespace, platform values, chart variant), answering
each with the oracle's ``-o json`` objects (parsed as go-yaml v2 reads them) or the refusal
message the oracle prints on stderr.

``ORACLE`` is ``tools/cozystack-render`` of the upstream mirror (``$WORKERCLASS_SHARED``, else
``../shared`` beside the repository: :mod:`tests.shared`). Tests that need it call
:func:`require_oracle` (the whole module skips with a reason naming ``WORKERCLASS_SHARED`` when
it is absent, and fails under ``CI=true``), then :func:`get_oracle`.
"""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.shared import ROOT, require, shared_dir

REPO_ROOT = ROOT
ORACLE = shared_dir() / "tools" / "cozystack-render"

_DRIVER = r"""
import importlib.machinery, importlib.util, json, sys, copy, traceback
path = sys.argv[1]
loader = importlib.machinery.SourceFileLoader("cozystack_render", path)
spec = importlib.util.spec_from_loader("cozystack_render", loader)
mod = importlib.util.module_from_spec(spec)
loader.exec_module(mod)
default_table = mod.load_instancetypes(mod.DEFAULT_INSTANCETYPES)
renderers = {}
out = sys.stdout
for line in sys.stdin:
    req = json.loads(line)
    try:
        chart = req.get("chart", "main")
        if chart not in renderers:
            renderers[chart] = mod.Renderer(mod.resolve_chart(chart), default_table)
        r = renderers[chart]
        table = req.get("instancetypes")
        r.table = default_table if table is None else table
        cv = req.get("cluster_values")
        cv = copy.deepcopy(mod.DEFAULT_CLUSTER_VALUES) if cv is None else cv
        values = mod.deep_merge(cv, req["values"])
        try:
            docs = r.render(values, req["release"], req["namespace"])
        except mod.Refused as exc:
            resp = {"ok": False, "error": str(exc)}
        else:
            if req.get("order") == "install":
                docs = mod.install_order(docs)
            if req.get("talos_config_template"):
                tct = mod.talos_config_template(docs)
                if tct:
                    docs.append(tct)
            resp = {"ok": True, "objects": [d["object"] for d in docs],
                    "texts": [d["text"] for d in docs]}
    except Exception:
        resp = {"ok": False, "error": "driver: " + traceback.format_exc(), "crash": True}
    out.write(json.dumps(resp, allow_nan=False) + "\n")
    out.flush()
for r in renderers.values():
    r.close()
"""


class _Exec(Exception):
    def __init__(self, py: str, env: Mapping[str, str]) -> None:
        super().__init__(py)
        self.py = py
        self.env = dict(env)


def oracle_python() -> tuple[str, dict[str, str]]:
    """The oracle venv's interpreter (built by the oracle itself on first use) and its env."""
    import importlib.machinery
    import importlib.util

    loader = importlib.machinery.SourceFileLoader("cozystack_render_probe", str(ORACLE))
    spec = importlib.util.spec_from_loader("cozystack_render_probe", loader)
    assert spec is not None
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    if mod._has_exact_deps():
        return sys.executable, dict(os.environ)
    real_execve = os.execve

    def capture(py: str, argv: list[str], env: Mapping[str, str]) -> None:
        raise _Exec(py, env)

    os.execve = capture  # type: ignore[assignment]
    try:
        mod.ensure_venv()
    except _Exec as exc:
        return exc.py, exc.env
    finally:
        os.execve = real_execve
    raise RuntimeError("cozystack-render: could not locate its venv")


@dataclass
class OracleResult:
    ok: bool
    objects: list[dict[str, Any]] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    error: str = ""

    def kinds(self, kind: str) -> list[dict[str, Any]]:
        return [o for o in self.objects if o.get("kind") == kind]

    def one(self, kind: str) -> dict[str, Any]:
        found = self.kinds(kind)
        assert len(found) == 1, f"{len(found)} objects of kind {kind}"
        return found[0]


def heredoc_newline(obj: dict[str, Any]) -> dict[str, Any]:
    """The oracle's ``--talos-config-template`` cuts the Job's heredoc before its last newline, which
    the shell passes on: run for real (``tests/e2e/test_talos_job_script.py``, the Job's script with
    kubectl), the applied template's ``data`` ends in a newline. The oracle's object gets it back."""
    spec = obj.get("spec", {}).get("template", {}).get("spec", {}) if obj.get("kind") == "TalosConfigTemplate" else {}
    data = spec.get("data") if isinstance(spec, dict) else None
    if isinstance(data, str) and not data.endswith("\n"):
        spec["data"] = data + "\n"
    return obj


class Oracle:
    """One long-lived driver process rendering the real chart."""

    def __init__(self) -> None:
        py, env = oracle_python()
        fd, self._driver = tempfile.mkstemp(prefix="oracle-driver-", suffix=".py")
        with os.fdopen(fd, "w") as fh:
            fh.write(_DRIVER)
        self._proc = subprocess.Popen(
            [py, self._driver, str(ORACLE)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.renders = 0

    def render(
        self,
        values: Mapping[str, Any],
        *,
        release: str,
        namespace: str,
        cluster_values: Mapping[str, Any] | None = None,
        chart: str = "main",
        instancetypes: Mapping[str, Any] | None = None,
        talos_config_template: bool = False,
        order: str = "chart",
    ) -> OracleResult:
        req = {
            "values": values,
            "release": release,
            "namespace": namespace,
            "cluster_values": cluster_values,
            "chart": chart,
            "instancetypes": instancetypes,
            "talos_config_template": talos_config_template,
            "order": order,
        }
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._proc.stdin.write(json.dumps(req) + "\n")
        self._proc.stdin.flush()
        line = self._proc.stdout.readline()
        if not line:
            raise RuntimeError("oracle driver exited")
        resp = json.loads(line)
        if resp.get("crash"):
            raise RuntimeError(resp["error"])
        self.renders += 1
        return OracleResult(
            ok=resp["ok"],
            objects=[heredoc_newline(obj) for obj in resp.get("objects", [])],
            texts=resp.get("texts", []),
            error=resp.get("error", ""),
        )

    def close(self) -> None:
        if self._proc.poll() is None:
            assert self._proc.stdin is not None
            self._proc.stdin.close()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
        Path(self._driver).unlink(missing_ok=True)


_SHARED: Oracle | None = None


def available() -> bool:
    """Whether the oracle is there; without it under ``CI=true``, the calling test fails instead."""
    if not ORACLE.is_file() and os.environ.get("CI") == "true":
        require("tools", "cozystack-render")  # fails, naming WORKERCLASS_SHARED
    return ORACLE.is_file()


#: the reason of a test that skips without the oracle
ABSENT = f"the oracle {ORACLE} is absent (set WORKERCLASS_SHARED to the upstream mirror)"


def require_oracle() -> None:
    """Skip the calling test module when the oracle is absent (fail under ``CI=true``)."""
    require("tools", "cozystack-render", module=True)


def need_oracle() -> None:
    """Skip the calling test when the oracle is absent; under CI=true that is a failure."""
    require("tools", "cozystack-render")


_MODULE: Any = None


def oracle_module() -> Any:
    """The oracle script imported as a module (its YAML reader ``load_docs`` needs only PyYAML)."""
    global _MODULE
    need_oracle()
    if _MODULE is None:
        import importlib.machinery
        import importlib.util

        loader = importlib.machinery.SourceFileLoader("cozystack_render_module", str(ORACLE))
        spec = importlib.util.spec_from_loader("cozystack_render_module", loader)
        assert spec is not None
        _MODULE = importlib.util.module_from_spec(spec)
        loader.exec_module(_MODULE)
    return _MODULE


def oracle_read(text: str) -> list[Any]:
    """The documents of ``text`` as the oracle reads its input (Kubernetes' reading: go-yaml v2, then JSON)."""
    return list(oracle_module().load_docs(text, "<text>"))


def get_oracle() -> Oracle:
    """The session's shared driver (started on first use, closed at exit)."""
    global _SHARED
    if _SHARED is None:
        _SHARED = Oracle()
        atexit.register(_SHARED.close)
    return _SHARED


def diff_paths(ours: Any, theirs: Any, path: str = "") -> list[str]:
    """Field paths where two parsed objects differ (type-strict: 1 vs "1" differ)."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        out: list[str] = []
        for k in sorted(set(ours) | set(theirs)):
            p = f"{path}.{k}" if path else k
            if k not in ours:
                out.append(f"{p}: missing in ours (oracle {theirs[k]!r:.80})")
            elif k not in theirs:
                out.append(f"{p}: extra in ours ({ours[k]!r:.80})")
            else:
                out += diff_paths(ours[k], theirs[k], p)
        return out
    if isinstance(ours, list) and isinstance(theirs, list):
        if len(ours) != len(theirs):
            return [f"{path}: {len(ours)} items in ours, {len(theirs)} in the oracle"]
        out = []
        for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            out += diff_paths(a, b, f"{path}[{i}]")
        return out
    if type(ours) is not type(theirs) or ours != theirs:
        return [f"{path}: ours {ours!r:.80} != oracle {theirs!r:.80}"]
    return []
