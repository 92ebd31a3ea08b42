"""WorkerClass status and deletion: what the controller writes and when it lets a class go.

The contract (``docs/contract.md``, section 1) fixes the status shape::

    status:
      conditions: [{type: Accepted|InUse|WorkersApplied, status, reason, message, observedGeneration,
                    lastTransitionTime}]
      pools: <int>              # live pools that select this class

* ``Accepted`` is ``True`` when the class passes the class rules (the same rules the validating
  webhook applies on CREATE, including its baseline against the platform); ``False`` carries the
  first violation's code as ``reason`` and every violation in ``message``. A class can reach the
  cluster without them (GitOps while the webhook was down); pools selecting it are refused.
* ``InUse`` is ``True`` while live pools (KubernetesNodes and KubernetesNodes HelmReleases) select
  the class; ``pools`` counts them, and the message counts their namespaces (no names).
* ``WorkersApplied`` (only where the worker controller runs and reports, ``workers``): ``True`` when
  the machines of every pool that selects the class are applied as rendered (reason ``Applied``, or
  ``NoPools``); else ``False`` with the most pressing state as ``reason`` (:data:`WORKER_REASONS`, in
  that order: ``Refused``, ``NotResolvable``, ``ApplyFailed``, ``WaitingForRelease``,
  ``WaitingForRollout``) and each state's pools in ``message`` (counts of pools and namespaces,
  never names or values: a class is readable by every tenant that picks it). The tenant reads its
  own pools' states as Events on each pool's HelmRelease; the hoster finds the names against the
  cluster.

The design page: "Retain custom classes and the worker controller while live classified pools
depend on them." :func:`~workerclass.rules.usage.deletion_blocker` (re-exported here) says why a class must be
kept, or ``None`` once no pool selects it; :data:`~workerclass.rules.classes.BUILTIN_FAMILIES` (re-exported
here) names the built-in classes, which the controller leaves alone.

Each condition carries ``lastTransitionTime`` (metav1.Condition's, which ``kubectl wait`` and
dashboards read): :func:`with_transitions` keeps the time of a condition whose ``status`` did not
change and gives the others the time passed in, so an unchanged status is the status already
written (no write).

Its edge: a State and a class name in, plain values out; no I/O, no clock (the controller passes
the time in).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..resolve.classes import class_problems, class_rule_violations
from ..rules.classes import BUILTIN_FAMILIES
from ..rules.usage import LIST_POOLS, SHOWN_POOLS, counted, deletion_blocker, in_use_message, selecting
from ..state import State

__all__ = [
    "BUILTIN_FAMILIES",
    "SHOWN_POOLS",
    "WORKER_REASONS",
    "class_status",
    "deletion_blocker",
    "in_use_message",
    "with_transitions",
    "workers_condition",
]

#: a worker state (the controller's) -> the condition reason and how a message says it, most pressing first
WORKER_REASONS: dict[str, tuple[str, str]] = {
    "refused": ("Refused", "refused (see the Events on each pool's HelmRelease)"),
    "not-resolvable": ("NotResolvable", "no longer resolvable, left as they are"),
    "failing": ("ApplyFailed", "failing to apply, retried"),
    "waiting-for-release": ("WaitingForRelease", "waiting for their HelmRelease"),
    "waiting-for-rollout": ("WaitingForRollout", "rolling out their machines"),
}


def workers_condition(pools: list[str], workers: Mapping[str, str]) -> dict[str, Any]:
    """The ``WorkersApplied`` condition of a class ``pools`` select, from each pool's worker state
    (``workers``: pool identity -> state; a pool not there has not been reconciled yet)."""
    if not pools:
        return {"type": "WorkersApplied", "status": "True", "reason": "NoPools", "message": "no live pool selects it"}
    by_state: dict[str, list[str]] = {}
    for pool in pools:
        by_state.setdefault(workers.get(pool, "pending"), []).append(pool)
    pressing = [state for state in WORKER_REASONS if state in by_state]
    if not pressing and "pending" not in by_state:
        return {
            "type": "WorkersApplied",
            "status": "True",
            "reason": "Applied",
            "message": f"the machines of {len(pools)} pool(s) are applied as rendered",
        }
    parts = [f"{counted(by_state[state])} {WORKER_REASONS[state][1]}" for state in pressing]
    if "pending" in by_state:
        parts.append(f"{counted(by_state['pending'])} not reconciled yet")
    if "applied" in by_state:
        parts.append(f"{len(by_state['applied'])} applied")
    reason = WORKER_REASONS[pressing[0]][0] if pressing else "Pending"
    return {"type": "WorkersApplied", "status": "False", "reason": reason, "message": "; ".join(parts)}


def class_status(
    state: State, name: str, generation: int | None = None, workers: Mapping[str, str] | None = None
) -> dict[str, Any] | None:
    """The ``status`` of WorkerClass ``name`` in ``state``; ``None`` if the state has no such class.
    ``workers``: each classified pool's worker state (the worker controller's), for ``WorkersApplied``."""
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
    pools = selecting(state, name)
    if pools:
        in_use = {
            "type": "InUse",
            "status": "True",
            "reason": "PoolsSelectClass",
            "message": f"{counted(pools, 'live pool(s)')} select this class ({LIST_POOLS})",
        }
    else:
        in_use = {"type": "InUse", "status": "False", "reason": "NoPools", "message": "no live pool selects this class"}
    conditions: list[dict[str, Any]] = [accepted, in_use]
    if workers is not None:
        conditions.append(workers_condition(pools, workers))
    if generation is not None:
        for condition in conditions:
            condition["observedGeneration"] = generation
    return {"conditions": conditions, "pools": len(pools)}


def with_transitions(status: Mapping[str, Any], current: Mapping[str, Any], now: str) -> dict[str, Any]:
    """``status`` with each condition's ``lastTransitionTime``: the current condition's of the same
    type when its ``status`` is the same (and it has one), else ``now`` (an RFC 3339 time)."""
    seen = {
        str(condition.get("type")): condition
        for condition in current.get("conditions") or ()
        if isinstance(condition, Mapping)
    }
    conditions = []
    for condition in status.get("conditions") or ():
        before = seen.get(str(condition.get("type")))
        kept = before.get("lastTransitionTime") if before is not None else None
        same = before is not None and before.get("status") == condition.get("status") and kept
        conditions.append({**condition, "lastTransitionTime": kept if same else now})
    return {**status, "conditions": conditions}
