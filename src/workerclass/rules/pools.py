"""The rules of a pool's change that need no resolution: it keeps its family and its parent cluster.

- :func:`family_switch`: a running pool never changes bootstrap family in place
  (``BootstrapFamilyChange``).
- :func:`cluster_move`: a pool never moves to another parent cluster (``Invalid``).
- :func:`shown_name`: how these messages (and the pool-name rules) quote a name.

Admission applies them to an UPDATE; ``plan`` gets them through admission.
"""

from __future__ import annotations

from ..api.names import Family
from ..api.patterns import DNS_1035
from ..violations import Violation

__all__ = ["DNS_1035", "cluster_move", "family_switch", "shown_name"]


def shown_name(name: str) -> str:
    """A name quoted only when it is a DNS label (one that is not may hold anything)."""
    return repr(name) if DNS_1035.fullmatch(name) and len(name) <= 63 else "(not shown: not a DNS label)"


def family_switch(
    before: Family | None,
    after: Family | None,
    old_class: str | None,
    field: str,
) -> Violation | None:
    """``BootstrapFamilyChange`` when both families are known and differ.

    ``before``/``after`` are the old and new pool's families (:func:`~workerclass.rules.family.family_of`:
    ``None`` when unknown, which other denials already explain); ``old_class`` the old pool's class.
    """
    if before is None or after is None or before == after:
        return None
    return Violation(
        "BootstrapFamilyChange",
        field,
        f"switching a running pool from {before} (class {old_class or 'none (legacy Talos)'}) to {after} in place "
        "is refused: create a second pool, verify worker join and workloads, then plan workload migration",
    )


def cluster_move(before: str | None, after: str | None, field: str) -> Violation | None:
    """``Invalid`` when a pool that had a parent cluster names another one."""
    if not before or not after or before == after:
        return None
    return Violation(
        "Invalid",
        field,
        f"a pool cannot move to another parent cluster ({shown_name(before)} -> {shown_name(after)}): its machines "
        f"would be recreated there; create a pool in cluster {shown_name(after)} instead",
    )
