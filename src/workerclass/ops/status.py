"""WorkerClass status and deletion: what the controller writes and when it lets a class go.

API.md section 1 fixes the status shape::

    status:
      conditions: [{type: Accepted|InUse, status, reason, message, observedGeneration}]
      pools: <int>              # live pools that select this class

* ``Accepted`` is ``True`` when the class passes the class rules (the same rules the validating
  webhook applies on CREATE, including its baseline against the platform); ``False`` carries the
  first violation's code as ``reason`` and every violation in ``message``. A class can reach the
  cluster without them (GitOps while the webhook was down); pools selecting it are refused.
* ``InUse`` is ``True`` while live pools (KubernetesNodes and KubernetesNodes HelmReleases) select
  the class; ``pools`` counts them.

The design page: "Retain custom classes and the worker controller while live classified pools
depend on them." :func:`deletion_blocker` says why a class must be kept, or ``None`` once no pool
selects it.

Its edge: a State and a class name in, plain values out; no I/O, no clock (conditions carry no
``lastTransitionTime``, which API.md leaves out of the shape).
"""

from __future__ import annotations

from typing import Any

from ..resolve import class_problems
from ..resolve.classes import class_rule_violations
from ..state import State

__all__ = ["SHOWN_POOLS", "class_status", "deletion_blocker", "in_use_message"]

#: how many pool identities a message lists before "..."
SHOWN_POOLS = 5


def _pool_list(identities: list[str]) -> str:
    shown = ", ".join(identities[:SHOWN_POOLS])
    return shown + (f", ... ({len(identities) - SHOWN_POOLS} more)" if len(identities) > SHOWN_POOLS else "")


def _selecting(state: State, name: str) -> list[str]:
    """``NS/NAME`` of the live pools that select ``name``, each once (a KubernetesNodes and a
    HelmRelease of the same name are one pool seen twice when a STATE holds both)."""
    return sorted({pool.identity for pool in state.pools_selecting(name)})


def class_status(state: State, name: str, generation: int | None = None) -> dict[str, Any] | None:
    """The ``status`` of WorkerClass ``name`` in ``state``; ``None`` if the state has no such class."""
    record = state.worker_class(name)
    if record is None:
        return None
    raw = record.obj.get("spec")
    # What pools fail closed on, and what only the baseline on its own breaks (pools may override it).
    hard = list(class_problems(state, record))
    violations = hard or class_rule_violations(state.platform, record.spec, raw, name=name)
    if violations:
        consequence = (
            "pools that select this class are refused; publish a corrected class under another name"
            if hard
            else "the baseline on its own does not resolve against the platform: only pools whose own "
            "settings make disk and installer agree resolve; publish a corrected class under another name"
        )
        accepted = {
            "type": "Accepted",
            "status": "False",
            "reason": violations[0].code,
            "message": "; ".join(str(violation) for violation in violations) + ": " + consequence,
        }
    else:
        accepted = {
            "type": "Accepted",
            "status": "True",
            "reason": "Valid",
            "message": f"the {record.spec.bootstrap} baseline passes the class rules",
        }
    pools = _selecting(state, name)
    if pools:
        in_use = {
            "type": "InUse",
            "status": "True",
            "reason": "PoolsSelectClass",
            "message": f"{len(pools)} live pool(s) select this class: {_pool_list(pools)}",
        }
    else:
        in_use = {"type": "InUse", "status": "False", "reason": "NoPools", "message": "no live pool selects this class"}
    conditions: list[dict[str, Any]] = [accepted, in_use]
    if generation is not None:
        for condition in conditions:
            condition["observedGeneration"] = generation
    return {"conditions": conditions, "pools": len(pools)}


def in_use_message(name: str, pools: list[str]) -> str:
    """Why WorkerClass ``name`` cannot go while ``pools`` (``NS/NAME``) select it: the webhook's
    ``ClassInUse`` message and the controller's reason for holding a deletion."""
    return (
        f"{len(pools)} live pool(s) select WorkerClass {name}: {_pool_list(pools)}; "
        "move or remove them before deleting the class"
    )


def deletion_blocker(state: State, name: str) -> str | None:
    """Why WorkerClass ``name`` must be retained, or ``None`` when no live pool selects it."""
    pools = _selecting(state, name)
    return in_use_message(name, pools) if pools else None
