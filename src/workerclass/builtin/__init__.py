"""The package's embedded data: the built-in WorkerClasses and the embedded WorkerPlatform.

``classes.yaml`` and ``platform.yaml`` are read once; the platform is completed with Cozystack's
own defaults from the chart port's verbatim data (its version map and Talos values), so that the
file holds only what the chart has no data file for. Its edge: package data in, plain dicts out;
parsing them is :mod:`workerclass.model`'s, indexing them :mod:`workerclass.state`'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import Any

import yaml

from ..chart.values import chart_defaults, version_map

__all__ = ["CLASSES_ORIGIN", "PLATFORM_ORIGIN", "builtin_classes", "embedded_platform", "embedded_platform_spec"]

CLASSES_ORIGIN = "builtin/classes.yaml"
PLATFORM_ORIGIN = "builtin/platform.yaml"


def _read(name: str) -> list[dict[str, Any]]:
    text = resources.files(__name__).joinpath(name).read_text("utf-8")
    return [document for document in yaml.safe_load_all(text) if isinstance(document, dict)]


def _complete(obj: Mapping[str, Any]) -> dict[str, Any]:
    """``platform.yaml`` completed with the chart's version map and Talos defaults (never hand-copied)."""
    spec = dict(obj.get("spec") or {})
    if "kubernetesVersions" not in spec:
        spec["kubernetesVersions"] = {minor: {"patch": patch} for minor, patch in version_map().items()}
    chart_talos = chart_defaults().get("talos")
    talos = dict(spec.get("talos") or {})
    if isinstance(chart_talos, dict):
        for key in ("version", "schematicID", "imageFactoryURL", "installerRepository"):
            if key not in talos and isinstance(chart_talos.get(key), str):
                talos[key] = chart_talos[key]
    spec["talos"] = talos
    return {**obj, "spec": spec}


@cache
def builtin_classes() -> tuple[dict[str, Any], ...]:
    """The built-in WorkerClass objects, in file order."""
    return tuple(_read("classes.yaml"))


@cache
def embedded_platform() -> dict[str, Any]:
    """The embedded WorkerPlatform object (``default``), completed with the chart's defaults."""
    return _complete(_read("platform.yaml")[0])


def embedded_platform_spec() -> Mapping[str, Any]:
    """The embedded platform's spec: what a WorkerPlatform's left-out keys fall back to."""
    spec = embedded_platform().get("spec")
    return spec if isinstance(spec, Mapping) else {}
