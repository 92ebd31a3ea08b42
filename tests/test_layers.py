"""The layers: the import-linter contracts hold, no module imports a package above it, and the core
imports no operator framework, HTTP server, Kubernetes client or CLI library.

The contracts are ``[tool.importlinter]`` in ``pyproject.toml`` (the layers of README's layout
section, the pure core, no cycles between siblings). The import checks run in a fresh interpreter
so that modules the test session itself loaded do not count.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]

CORE = [
    "workerclass",
    "workerclass.api",
    "workerclass.builtin",
    "workerclass.crds",
    "workerclass.rules",
    "workerclass.chart",
    "workerclass.model",
    "workerclass.state",
    "workerclass.resolve",
    "workerclass.admission",
    "workerclass.violations",
    "workerclass.render",
    "workerclass.ops",
]
FORBIDDEN = [
    "kopf",
    "aiohttp",
    "lightkube",
    "typer",
    "click",
    "rich",
    "starlette",
    "uvicorn",
    "httpx",
    "kubernetes",
    "kr8s",
]

PROBE = """
import importlib, importlib.util, json, sys
loaded = []
for name in {core!r}:
    try:
        spec = importlib.util.find_spec(name)
    except ModuleNotFoundError:
        spec = None
    if spec is None:
        continue  # an optional core package that does not exist (yet)
    importlib.import_module(name)
    loaded.append(name)
print(json.dumps({{"loaded": loaded, "modules": sorted(sys.modules)}}))
"""


@pytest.fixture(scope="module")
def imported() -> dict[str, list[str]]:
    result = subprocess.run(
        [sys.executable, "-c", PROBE.format(core=CORE)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def test_the_core_packages_import(imported: dict[str, list[str]]) -> None:
    for required in ("workerclass.model", "workerclass.state", "workerclass.resolve", "workerclass.admission"):
        assert required in imported["loaded"]


@pytest.mark.parametrize("library", FORBIDDEN)
def test_the_core_does_not_import(imported: dict[str, list[str]], library: str) -> None:
    offenders = [m for m in imported["modules"] if m == library or m.startswith(library + ".")]
    assert offenders == [], f"importing the core loaded {offenders}"


def test_the_core_does_not_import_the_doors(imported: dict[str, list[str]]) -> None:
    doors = [
        m
        for m in imported["modules"]
        if m.startswith(("workerclass.cli", "workerclass.webhook", "workerclass.controller"))
    ]
    assert doors == []


def test_the_import_linter_contracts_are_kept() -> None:
    """``lint-imports`` over ``pyproject.toml``: the layers, the pure core, no sibling cycles."""
    command = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run(
        [str(command), str(ROOT / "pyproject.toml"), "--no-cache"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_no_module_imports_a_package_that_contains_it() -> None:
    """A package's ``__init__`` may re-export its modules; a module never imports its own package
    (nor a package above it), so no package and its modules import each other (no lazy cycles)."""
    graph = grimp.build_graph("workerclass")
    offenders = sorted(
        f"{importer} -> {imported}"
        for importer in graph.modules
        for imported in graph.find_modules_directly_imported_by(importer)
        if imported != "workerclass" and importer.startswith(imported + ".")
    )
    assert offenders == []


def test_the_module_import_graph_has_no_cycle() -> None:
    """No cycle at all between modules, lazy imports included (grimp sees function-level imports):
    no direct import ``a -> b`` while ``b`` reaches ``a`` back."""
    graph = grimp.build_graph("workerclass")
    in_cycles = sorted(
        f"{importer} -> {imported}"
        for importer in graph.modules
        for imported in graph.find_modules_directly_imported_by(importer)
        if graph.chain_exists(importer=imported, imported=importer)
    )
    assert in_cycles == []
