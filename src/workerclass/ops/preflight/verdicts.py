"""Verdicts as values: one :class:`Check` per finding, the whole :class:`Preflight`, and the order
checks are reported in. Its edge: no knowledge of what is checked."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["CHECK_ORDER", "Check", "Preflight", "Verdict"]

Verdict = Literal["ok", "warn", "fail"]

#: the order checks are reported in (within a name: the order objects were found)
CHECK_ORDER = (
    "matching",
    "path",
    "admissionReviewVersions",
    "sideEffects",
    "timeoutSeconds",
    "selectors",
    "failurePolicy",
    "outage",
    "otherWebhooks",
    "caBundle",
    "service",
    "readiness",
    "replicas",
    "disruptionBudget",
    "chart",
    "kairosProvider",
)


@dataclass(frozen=True, slots=True)
class Check:
    """One verdict: which check, ok/warn/fail, on which object and field, and why."""

    check: str
    verdict: Verdict
    message: str
    object: str | None = None
    field: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "verdict": self.verdict,
            "object": self.object,
            "field": self.field,
            "message": self.message,
        }


@dataclass(frozen=True, slots=True)
class Preflight:
    checks: tuple[Check, ...]

    @property
    def safe(self) -> bool:
        """Safe when no check fails; warnings do not count."""
        return all(check.verdict != "fail" for check in self.checks)

    def of(self, name: str) -> tuple[Check, ...]:
        return tuple(check for check in self.checks if check.check == name)

    def as_dict(self) -> dict[str, Any]:
        return {"safe": self.safe, "checks": [check.as_dict() for check in self.checks]}
