"""The outcome of one admission request, shown the same way by every door."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..violations import Violation


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
        """The ``admit -o json`` shape of API.md section 4."""
        return {
            "allowed": self.allowed,
            "operation": self.operation,
            "patch": list(self.patch),
            "object": self.object,
            "warnings": list(self.warnings),
            "denials": [violation.as_dict() for violation in self.denials],
        }
