"""Pure analyses over States: ``plan`` (which machines a change replaces, and why),
``restore`` (legacy-layout values of classified Talos pools, with the template-hash proof, in
:mod:`workerclass.ops.restore`) and ``preflight`` (whether the installed webhooks are safe to
rely on, in :mod:`workerclass.ops.preflight`)."""

from __future__ import annotations

from .plan import REBUILD_ONLY, Plan, PlanRow, plan

__all__ = ["REBUILD_ONLY", "Plan", "PlanRow", "plan"]
