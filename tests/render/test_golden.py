"""Golden files: the specification's three examples, classless pools, and the renderer alone.

A classless pool's templates must not change when WorkerClass support changes: these files pin
them. Regenerate on purpose with ``UPDATE_GOLDEN=1 pytest tests/render`` and review the diff.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path
from typing import Any

import pytest

from workerclass.render import render
from workerclass.render.text import manifests_yaml
from workerclass.resolve import resolve_pool
from workerclass.state import State

from .builders import make_effective, replace, with_pool, with_talos
from .schemas import REPO

GOLDEN = Path(__file__).parent / "golden"
EXAMPLES = REPO / "examples"
LEGACY = Path(__file__).parent / "states" / "legacy"


def assert_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.write_text(text, encoding="utf-8")
        return
    assert path.is_file(), f"missing golden {path}; run with UPDATE_GOLDEN=1 to create it"
    expected = path.read_text(encoding="utf-8")
    if text != expected:
        diff = "".join(
            difflib.unified_diff(
                expected.splitlines(keepends=True),
                text.splitlines(keepends=True),
                fromfile=f"golden/{name}",
                tofile="rendered",
            )
        )
        pytest.fail(f"rendered output differs from golden/{name} (UPDATE_GOLDEN=1 regenerates):\n{diff}", pytrace=False)


def _render_pool(state: State, identity: str) -> list[dict[str, Any]]:
    record = state.pool(identity)
    assert record is not None, identity
    effective, denials, _ = resolve_pool(state, record)
    assert effective is not None, denials
    return render(effective)


EXAMPLE_POOLS = {
    "tenant-example/example-kairos": "example-kairos.yaml",
    "tenant-example/example-talos": "example-talos.yaml",
    "tenant-example/example-custom-kairos": "example-custom-kairos.yaml",
    "tenant-example/example-legacy": "example-legacy-classless-helmrelease.yaml",
}
LEGACY_POOLS = {
    "tenant-legacy/old-workers": "legacy-classless-kubernetesnodes.yaml",
    "tenant-legacy/plane-md0": "legacy-computeplane-md0.yaml",
    "tenant-legacy/plane-gpu": "legacy-computeplane-gpu.yaml",
}


@pytest.mark.parametrize("identity", sorted(EXAMPLE_POOLS), ids=sorted(EXAMPLE_POOLS))
def test_specification_examples(identity: str) -> None:
    assert_golden(EXAMPLE_POOLS[identity], manifests_yaml(_render_pool(State.load(EXAMPLES), identity)))


@pytest.mark.parametrize("identity", sorted(LEGACY_POOLS), ids=sorted(LEGACY_POOLS))
def test_classless_pools(identity: str) -> None:
    assert_golden(LEGACY_POOLS[identity], manifests_yaml(_render_pool(State.load(LEGACY), identity)))


def test_classless_render_from_effective_settings_alone() -> None:
    """The renderer's legacy layout pinned without resolution in between."""
    effective = with_pool(
        with_talos(
            replace(make_effective(), kind="HelmRelease", class_name=None, name="legacy"),
            registry_mirrors={"docker.io": ("https://mirror.example",)},
        ),
        min_replicas=1,
        max_replicas=2,
        instance_type="u1.medium",
        roles=("ingress-nginx",),
    )
    assert_golden("renderer-classless.yaml", manifests_yaml(render(effective)))
