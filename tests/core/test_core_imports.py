"""The core imports no operator framework, HTTP server, Kubernetes client or CLI library.

Checked in a fresh interpreter so that modules the test session itself loaded do not count.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

CORE = [
    "workerclass",
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
