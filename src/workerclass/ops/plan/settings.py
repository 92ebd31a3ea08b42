"""The changed settings, for people: the effective settings and pool values in the words reasons
use, shown so a secret is never printed, the chart's defaults (an absent value means the default),
and whether a replacement is a platform image rebuild only.

Its edge: two sides' settings in, words out; it compares no rendered object.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from functools import cache
from typing import Any

from ...api.schema import OS_KEYS
from ...chart.values import chart_defaults
from ...resolve.effective import Effective
from .rows import IN_PLACE_SETTINGS, Side

__all__ = ["is_rebuild_only", "setting_changes", "short"]


def short(value: Any) -> str:
    if value is None:
        return "none"
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, separators=(",", ":"))
    return text if len(text) <= 80 else text[:77] + "..."


_EFFECTIVE: tuple[tuple[str, str], ...] = (
    ("bootstrap", "bootstrap family"),
    ("cluster", "parent cluster"),
    ("infrastructure", "infrastructure"),
    ("kubernetesVersion", "Kubernetes version"),
    ("image.source", "image source"),
    ("image.reference", "image reference"),
    ("image.version", "image version"),
    ("image.schematicID", "image schematic"),
    ("image.templateTags", "Proxmox template tags"),
    ("talos.version", "Talos version"),
    ("talos.schematicID", "schematic"),
    ("talos.imageFactoryURL", "Image Factory URL"),
    ("talos.installerRepository", "installer repository"),
    ("installerImage", "installer image"),
    ("talos.registryMirrors", "registry mirrors"),
    ("kernelModules", "kernel modules"),
    ("talos.imageFactoryCA", "Image Factory CA"),
)
#: Pool values the effective settings already cover (the class, its Talos-only blocks, the minor and
#: the parent cluster) or that only the admission rules read.
_COVERED = frozenset({"workerClassName", "version", "cluster"}) | OS_KEYS
_WORDS = {"instanceType": "instance type", "sshKeys": "SSH key"}
_SECRET_LIKE = frozenset({"sshKeys", "talos.imageFactoryCA"})


def _effective_settings(effective: Effective) -> dict[str, Any]:
    talos = effective.talos.as_dict() if effective.talos is not None else {}
    image = effective.image.as_dict()
    out: dict[str, Any] = {
        "bootstrap": effective.bootstrap,
        "cluster": effective.cluster,
        "infrastructure": effective.infrastructure,
        "kubernetesVersion": effective.kubernetes_version,
        "installerImage": effective.installer_image,
        "kernelModules": [module.as_dict() for module in effective.kernel_modules],
    }
    out.update({f"image.{key}": value for key, value in image.items()})
    out.update({f"talos.{key}": value for key, value in talos.items()})
    return out


def _taint(taint: Any) -> str:
    if not isinstance(taint, Mapping):
        return str(taint)
    return f"{taint.get('key')}={taint.get('value', '')}:{taint.get('effect')}"


@cache
def _defaults() -> Mapping[str, Any]:
    """The chart's default values, once (an absent pool value means the default, not none)."""
    return chart_defaults()


def _show(setting: str, value: Any) -> str:
    if value in (None, [], {}, ""):
        return "none"
    if setting in _SECRET_LIKE:
        return "set"
    if setting == "talos.registryMirrors" and isinstance(value, Mapping):
        return ", ".join(
            f"{registry}={'|'.join(str(e) for e in (mirror or {}).get('endpoints', []))}"
            for registry, mirror in sorted(value.items())
        )
    if setting == "kernelModules" and isinstance(value, list):
        return ", ".join(
            str(module.get("name")) + (f"({' '.join(module['parameters'])})" if module.get("parameters") else "")
            for module in value
        )
    if setting == "taints" and isinstance(value, list):
        return ", ".join(_taint(taint) for taint in value)
    if isinstance(value, str | int | float):
        return str(value)
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return ", ".join(value)
    if isinstance(value, Mapping) and all(isinstance(item, str | int | float | bool) for item in value.values()):
        return ", ".join(f"{key}={item}" for key, item in value.items())
    return short(value)


def setting_changes(old: Side, new: Side) -> list[tuple[str, str, str, str]]:
    """``(setting, words, before, after)`` for each changed effective setting and pool value."""
    assert old.effective is not None and new.effective is not None
    out: list[tuple[str, str, str, str]] = []
    before, after = _effective_settings(old.effective), _effective_settings(new.effective)
    for setting, words in _EFFECTIVE:
        shown_before, shown_after = _show(setting, before.get(setting)), _show(setting, after.get(setting))
        if before.get(setting) != after.get(setting) and shown_before != shown_after:
            out.append((setting, words, shown_before, shown_after))
    old_values, new_values, defaults = old.record.values, new.record.values, _defaults()
    for key in sorted((set(old_values) | set(new_values)) - _COVERED, key=str):
        was, becomes = old_values.get(key, defaults.get(key)), new_values.get(key, defaults.get(key))
        if was != becomes and _show(key, was) != _show(key, becomes):
            out.append((key, _WORDS.get(key, key), _show(key, was), _show(key, becomes)))
    old_class, new_class = old.effective.class_name, new.effective.class_name
    if old_class != new_class:
        out.append(("class", "class", old_class or "none (legacy)", new_class or "none (legacy)"))
    return out


def is_rebuild_only(old: Effective, new: Effective, settings: Iterable[tuple[str, str, str, str]]) -> bool:
    if not (old.bootstrap == new.bootstrap == "kairos" and old.image.source == new.image.source == "platform"):
        return False
    if old.kubernetes_version != new.kubernetes_version or old.image.reference == new.image.reference:
        return False
    return all(setting == "image.reference" or setting in IN_PLACE_SETTINGS for setting, *_ in settings)
