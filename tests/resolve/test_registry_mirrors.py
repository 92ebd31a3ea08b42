"""Registry mirrors are Talos ``machine.registries.mirrors`` passed through: every mirror key a class
or pool writes (``skipFallback``, ``overridePath``...) reaches resolution and the render intact."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from tests.builders import make_class, make_pool, make_state
from workerclass.render import render
from workerclass.resolve import resolve

CLASS_MIRRORS = {
    "docker.io": {"endpoints": ["https://mirror.example.com"], "skipFallback": True, "overridePath": True},
    "ghcr.io": {"endpoints": ["https://ghcr-mirror.example.com", "https://ghcr-2.example.com"]},
}
POOL_MIRRORS = {"quay.io": {"endpoints": ["https://quay-mirror.example.com"], "skipFallback": False}}


def _talos_config(objects: list[dict[str, Any]]) -> dict[str, Any]:
    (template,) = [obj for obj in objects if obj["kind"] == "TalosConfigTemplate"]
    data = yaml.safe_load(template["spec"]["template"]["spec"]["data"])
    assert isinstance(data, dict)
    return data


@pytest.mark.usefixtures("chart_text")
def test_a_class_mirror_map_reaches_resolution_and_the_render_intact() -> None:
    pool = make_pool("a", workerClassName="mirrored")
    state = make_state([pool], classes=[make_class("mirrored", talos={"registryMirrors": CLASS_MIRRORS})])
    effective = resolve(state, pool)
    assert effective.origins["talos.registryMirrors"] == "class mirrored"
    assert effective.talos is not None
    assert effective.talos.as_dict()["registryMirrors"] == CLASS_MIRRORS
    config = _talos_config(render(effective, talos_config_template=True))
    assert config["machine"]["registries"]["mirrors"] == CLASS_MIRRORS


@pytest.mark.usefixtures("chart_text")
def test_a_pool_mirror_map_replaces_the_class_map_whole() -> None:
    pool = make_pool("a", workerClassName="mirrored", talos={"registryMirrors": POOL_MIRRORS})
    state = make_state([pool], classes=[make_class("mirrored", talos={"registryMirrors": CLASS_MIRRORS})])
    effective = resolve(state, pool)
    assert effective.origins["talos.registryMirrors"] == "pool"
    assert effective.talos is not None
    assert effective.talos.as_dict()["registryMirrors"] == POOL_MIRRORS
    config = _talos_config(render(effective, talos_config_template=True))
    assert config["machine"]["registries"]["mirrors"] == POOL_MIRRORS


def test_the_effective_map_is_a_copy_of_what_was_written() -> None:
    written = json.loads(json.dumps(CLASS_MIRRORS))
    pool = make_pool("a", talos={"registryMirrors": written})
    state = make_state([pool])
    effective = resolve(state, pool)
    assert effective.talos is not None
    shown = effective.talos.as_dict()["registryMirrors"]
    shown["docker.io"]["skipFallback"] = False
    assert effective.talos.as_dict()["registryMirrors"] == CLASS_MIRRORS
