"""Pure analyses over States: plan (which machines a change replaces, and why)."""

from __future__ import annotations

from .plan import REBUILD_ONLY, Plan, PlanRow, plan

__all__ = ["REBUILD_ONLY", "Plan", "PlanRow", "plan"]
