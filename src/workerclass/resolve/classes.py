"""A WorkerClass as resolution reads it: its own rules plus its baseline against the platform.

The rules of a class on its own need no resolution and live in :mod:`workerclass.rules.classes`;
what this module adds is the baseline: a Talos class's disk source, resolved
with nothing from a pool, must agree with its installer. :func:`class_problems` is what pools
that select the class fail closed on, once per State and class.
"""

from __future__ import annotations

from typing import Any, cast

from ..model import Platform, WorkerClassSpec
from ..rules.classes import class_spec_violations
from ..state import ClassRecord, State
from ..violations import Violation
from .image import resolve_kubevirt_image
from .resolution import Resolution
from .talos import resolve_talos

__all__ = ["class_problems", "class_rule_violations"]


def class_rule_violations(
    platform: Platform,
    spec: WorkerClassSpec,
    raw: Any,
    field: str = "spec",
    *,
    name: str | None = None,
    baseline: bool = True,
) -> list[Violation]:
    """Rules of one WorkerClass spec on its own, and (``baseline``) its baseline against the platform.

    The baseline check resolves the class with nothing from a pool; a pool that selects the class
    gets the same compatibility check after its own overrides, so pool resolution leaves it out.
    It runs only for a Talos class that selects a disk source and breaks no rule of its own.
    """
    denials = class_spec_violations(spec, raw, field, name=name)
    os_image = spec.os.os_image
    if baseline and not denials and spec.bootstrap == "talos" and os_image is not None:
        # The baseline on its own (a pool that supplies nothing) must resolve to a compatible disk.
        result = Resolution([], [], {})
        talos = resolve_talos(platform, None, spec.os.talos, baseline_origin="class", origins={}, baseline_values=raw)
        if talos.version and talos.schematic_id:
            resolve_kubevirt_image(platform, talos, os_image, values=field, result=result)
        denials.extend(result.denials)
    return denials


def class_problems(state: State, record: ClassRecord) -> tuple[Violation, ...]:
    """Every class rule the record breaks, computed once per state and class."""
    key = ("class-problems", record.name)
    cached = state.memo.get(key)
    if cached is None:
        rules = class_rule_violations(
            state.platform, record.spec, record.obj.get("spec"), name=record.name, baseline=False
        )
        cached = (*record.violations, *rules)
        state.memo[key] = cached
    return cast(tuple[Violation, ...], cached)
