"""The outcome of one admission request, shown the same way by every door."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..api.frozen import fast_init
from ..violations import Violation


@fast_init
@dataclass(frozen=True, slots=True)
class Decision:
    """``allowed``, an RFC 6902 ``patch``, the ``object`` after the patch, warnings and all denials."""

    allowed: bool
    operation: str
    patch: list[dict[str, Any]] = field(default_factory=list)
    object: Mapping[str, Any] | None = None
    warnings: list[str] = field(default_factory=list)
    denials: list[Violation] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """The decision for ``admit -o json`` and ``check -o json``: allowed, operation, patch,
        warnings and denials. Never :attr:`object`: an object's values may hold a secret (a private
        key pasted in ``sshKeys``), and a JSON answer ends up in CI artifacts; the patch says what
        admission changes, and the object is the caller's already."""
        return {
            "allowed": self.allowed,
            "operation": self.operation,
            "patch": list(self.patch),
            "warnings": list(self.warnings),
            "denials": [violation.as_dict() for violation in self.denials],
        }
