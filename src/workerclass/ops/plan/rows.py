"""The plan as values: one :class:`PlanRow` per pool, the class and platform refusals (:class:`Refusal`),
the whole :class:`Plan`, the words reasons start or end with, and one side of a pool's change
(:class:`Side`: its record, effective settings, denials and rendered objects).

Its edge: plain data; nothing here decides.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ...resolve.effective import Effective
from ...state import PoolRecord
from ...violations import Violation

__all__ = [
    "ACTIONS",
    "IN_PLACE",
    "IN_PLACE_SETTINGS",
    "NEW_MACHINES_ONLY",
    "NOT_RENDERED",
    "REACHES_NO_MACHINE",
    "REBUILD_ONLY",
    "REFUSED",
    "REFUSED_BY_TALOS",
    "TALOS_CONFIG_IMMUTABLE",
    "UNPREDICTED",
    "Plan",
    "PlanRow",
    "Refusal",
    "Side",
]

#: The first words of the reason that flags a replacement caused only by a platform rebuild.
REBUILD_ONLY = "platform image rebuild only"
#: The first words of a reason saying the admission webhooks would refuse the change.
REFUSED = "refused by admission"
#: The first words of a change Cluster API applies without replacing machines.
IN_PLACE = "in place:"
#: The words ending a change that reaches only machines created afterwards.
NEW_MACHINES_ONLY = "(new machines only)"
#: The first words of a reason saying the Talos bootstrap provider refuses the changed template.
REFUSED_BY_TALOS = "refused by the Talos provider"
#: The row's ``refused`` code for a TalosConfigTemplate changed under its unchanged name.
TALOS_CONFIG_IMMUTABLE = "TalosConfigImmutable"
#: The words ending a changed setting that only a refused TalosConfigTemplate carries.
REACHES_NO_MACHINE = "(refused by the Talos provider: reaches no machine)"
#: The words ending a changed setting that changes none of the rendered objects.
NOT_RENDERED = "(no rendered object changes)"
#: a pool whose release runs another chart than the one emulated: no prediction
UNPREDICTED = "unpredicted"
ACTIONS = ("create", "delete", "replace", "update", "unchanged", UNPREDICTED)
#: Pool settings that only change the MachineDeployment's replicas/annotations or the health check.
IN_PLACE_SETTINGS = frozenset(
    {
        "class",
        "minReplicas",
        "maxReplicas",
        "maxUnhealthy",
        "nodeStartupTimeout",
        "readyUnknownTimeout",
        "readyFalseTimeout",
        "maxNodeProvisionTime",
    }
)


@dataclass(frozen=True, slots=True)
class PlanRow:
    """One pool's verdict (API.md section 4 ``plan -o json`` row)."""

    pool: str
    kind: str
    action: str
    #: None: not predicted (the pool's release runs another chart than the one emulated)
    replace: bool | None
    reasons: tuple[str, ...]
    refused: tuple[str, ...] = ()
    rebuild_only: bool = False
    new_machines_only: tuple[str, ...] = ()
    hash_before: str | None = None
    hash_after: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "pool": self.pool,
            "action": self.action,
            "replace": self.replace,
            "refused": list(self.refused),
            "rebuildOnly": self.rebuild_only,
            "newMachinesOnly": list(self.new_machines_only),
            "reasons": list(self.reasons),
        }


@dataclass(frozen=True, slots=True)
class Refusal:
    """A change to a class or the platform that admission refuses (also named on the pools it touches)."""

    kind: str
    name: str
    denials: tuple[Violation, ...]

    @property
    def refused(self) -> tuple[str, ...]:
        """The codes, each once, in the order of the denials."""
        return tuple(dict.fromkeys(denial.code for denial in self.denials))

    def as_dict(self) -> dict[str, Any]:
        """A row of ``plan -o json``'s ``refusals``: ``{"kind", "name", "refused", "denials"}``."""
        return {
            "kind": self.kind,
            "name": self.name,
            "refused": list(self.refused),
            "denials": [denial.as_dict() for denial in self.denials],
        }


@dataclass(frozen=True, slots=True)
class Plan:
    rows: tuple[PlanRow, ...] = field(default_factory=tuple)
    refusals: tuple[Refusal, ...] = ()
    #: the chart the plan emulates (the contract's chart object), None when not said
    chart: Mapping[str, Any] | None = None

    @property
    def replacing(self) -> tuple[PlanRow, ...]:
        return tuple(row for row in self.rows if row.replace)

    @property
    def deleting(self) -> tuple[PlanRow, ...]:
        return tuple(row for row in self.rows if row.action == "delete")

    @property
    def refused(self) -> tuple[PlanRow, ...]:
        return tuple(row for row in self.rows if row.refused)

    @property
    def unpredicted(self) -> tuple[PlanRow, ...]:
        return tuple(row for row in self.rows if row.action == UNPREDICTED)

    def detailed_exit_code(self) -> int:
        """1 a change refused, a pool denied or not predicted; 2 machines replaced or deleted; else 0."""
        if self.refused or self.refusals or self.unpredicted:
            return 1
        if self.replacing or self.deleting:
            return 2
        return 0

    def as_dict(self) -> dict[str, Any]:
        """``plan -o json``: ``{"chart", "pools": [rows], "refusals": [class and platform changes refused]}``."""
        return {
            "chart": dict(self.chart) if self.chart is not None else None,
            "pools": [row.as_dict() for row in self.rows],
            "refusals": [r.as_dict() for r in self.refusals],
        }


@dataclass(frozen=True, slots=True)
class Side:
    record: PoolRecord
    effective: Effective | None
    denials: tuple[Violation, ...]
    objects: dict[tuple[str, str], dict[str, Any]]
