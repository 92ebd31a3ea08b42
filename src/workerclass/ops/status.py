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
depend on them." :func:`~workerclass.rules.usage.deletion_blocker` (re-exported here) says why a class must be
kept, or ``None`` once no pool selects it; :data:`~workerclass.rules.classes.BUILTIN_FAMILIES` (re-exported
here) names the built-in classes, which the controller leaves alone.

Its edge: a State and a class name in, plain values out; no I/O, no clock (conditions carry no
``lastTransitionTime``, which API.md leaves out of the shape).
"""

from __future__ import annotations

from typing import Any

from ..resolve.classes import class_problems, class_rule_violations
from ..rules.classes import BUILTIN_FAMILIES
from ..rules.usage import SHOWN_POOLS, deletion_blocker, in_use_message, pool_list, selecting
from ..state import State

__all__ = ["BUILTIN_FAMILIES", "SHOWN_POOLS", "class_status", "deletion_blocker", "in_use_message"]


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
    pools = selecting(state, name)
    if pools:
        in_use = {
            "type": "InUse",
            "status": "True",
            "reason": "PoolsSelectClass",
            "message": f"{len(pools)} live pool(s) select this class: {pool_list(pools)}",
        }
    else:
        in_use = {"type": "InUse", "status": "False", "reason": "NoPools", "message": "no live pool selects this class"}
    conditions: list[dict[str, Any]] = [accepted, in_use]
    if generation is not None:
        for condition in conditions:
            condition["observedGeneration"] = generation
    return {"conditions": conditions, "pools": len(pools)}
