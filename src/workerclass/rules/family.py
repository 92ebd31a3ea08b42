"""The bootstrap family of a class and of a pool: one lookup for admission, resolution and restore.

A pool without a class is Talos (the legacy path). A pool whose class is missing, or whose class
names no readable family, has no known family: admission leaves family rules to the denial that
already says so (``ClassNotFound``, the class's ``Invalid``), and resolution, which must still
produce an answer, assumes Talos (:func:`assumed_family`).
"""

from __future__ import annotations

from ..api.names import Family, is_family
from ..model import WorkerClassSpec
from ..state import State

__all__ = ["assumed_family", "class_family", "family_of"]


def class_family(spec: WorkerClassSpec | None) -> Family | None:
    """The family a class spec names, or ``None`` when it has none that parses."""
    bootstrap = spec.bootstrap if spec is not None else None
    return bootstrap if is_family(bootstrap) else None


def family_of(state: State, class_name: str | None) -> Family | None:
    """A pool's family: Talos without a class, its class's family, ``None`` when that is unknown."""
    if not class_name:
        return "talos"
    record = state.worker_class(class_name)
    return class_family(record.spec) if record is not None else None


def assumed_family(state: State, class_name: str | None) -> Family:
    """A pool's family as resolution and restore take it: an unknown family is Talos."""
    return family_of(state, class_name) or "talos"
