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

import collections
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from ..resolve.classes import class_problems, class_rule_violations
from ..rules.classes import BUILTIN_FAMILIES
from ..rules.usage import LIST_POOLS, SHOWN_POOLS, counted_as, deletion_blocker, in_use_message, selecting
from ..state import PoolRecord, State

__all__ = [
    "BUILTIN_FAMILIES",
    "SHOWN_POOLS",
    "WORKER_REASONS",
    "ClassUsage",
    "PoolStates",
    "Usage",
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


#: a class's pools counted: how many, and in how many namespaces
Count = tuple[int, int]


def _count(identities: Iterable[str]) -> Count:
    listed = list(identities)
    return len(listed), len({identity.split("/", 1)[0] for identity in listed})


def workers_condition(pools: list[str], workers: Mapping[str, str]) -> dict[str, Any]:
    """The ``WorkersApplied`` condition of a class ``pools`` select, from each pool's worker state
    (``workers``: pool identity -> state; a pool not there has not been reconciled yet)."""
    by_state: dict[str, list[str]] = {}
    for pool in pools:
        by_state.setdefault(workers.get(pool, "pending"), []).append(pool)
    return _workers_condition(len(pools), {state: _count(found) for state, found in by_state.items()})


def _workers_condition(pools: int, by_state: Mapping[str, Count]) -> dict[str, Any]:
    """:func:`workers_condition` of ``pools`` pools counted by worker state (``pending``: none yet)."""
    if not pools:
        return {"type": "WorkersApplied", "status": "True", "reason": "NoPools", "message": "no live pool selects it"}
    pressing = [state for state in WORKER_REASONS if state in by_state]
    if not pressing and "pending" not in by_state:
        return {
            "type": "WorkersApplied",
            "status": "True",
            "reason": "Applied",
            "message": f"the machines of {pools} pool(s) are applied as rendered",
        }
    parts = [f"{counted_as(*by_state[state])} {WORKER_REASONS[state][1]}" for state in pressing]
    if "pending" in by_state:
        parts.append(f"{counted_as(*by_state['pending'])} not reconciled yet")
    if "applied" in by_state:
        parts.append(f"{by_state['applied'][0]} applied")
    reason = WORKER_REASONS[pressing[0]][0] if pressing else "Pending"
    return {"type": "WorkersApplied", "status": "False", "reason": reason, "message": "; ".join(parts)}


class PoolStates(Protocol):
    """What :class:`ClassUsage` reads of the worker controller: each pool's last state, and which
    pools' states changed since a change number."""

    @property
    def state_serial(self) -> int: ...

    def states_changed_since(self, serial: int) -> set[str] | None: ...

    def pool_state(self, identity: str) -> str | None: ...


@dataclass(frozen=True)
class Usage:
    """One class's live pools as its status counts them (:func:`class_status`'s ``usage``)."""

    pools: Count
    #: worker state (``pending``: none yet) -> its pools; ``None`` where no worker controller runs
    states: Mapping[str, Count] | None


class _Members:
    """The live pools of one class: each pool's member records and the worker state counted."""

    __slots__ = ("namespaces", "pools", "states", "totals")

    def __init__(self) -> None:
        self.pools: dict[str, list[Any]] = {}  # identity -> [records, worker state counted]
        self.namespaces: collections.Counter[str] = collections.Counter()
        self.states: dict[str, collections.Counter[str]] = {}  # worker state -> namespace -> pools
        self.totals: collections.Counter[str] = collections.Counter()  # worker state -> pools

    def add(self, identity: str, state: str) -> None:
        entry = self.pools.get(identity)
        if entry is not None:
            entry[0] += 1
            return
        self.pools[identity] = [1, state]
        namespace = identity.split("/", 1)[0]
        self.namespaces[namespace] += 1
        self._count(state, namespace)

    def remove(self, identity: str) -> bool:
        """One member record of ``identity`` gone; whether the pool is gone from the class."""
        entry = self.pools[identity]
        entry[0] -= 1
        if entry[0]:
            return False
        del self.pools[identity]
        namespace = identity.split("/", 1)[0]
        _drop(self.namespaces, namespace)
        self._uncount(entry[1], namespace)
        return True

    def restate(self, identity: str, state: str) -> None:
        entry = self.pools[identity]
        if entry[1] == state:
            return
        namespace = identity.split("/", 1)[0]
        self._uncount(entry[1], namespace)
        self._count(state, namespace)
        entry[1] = state

    def _count(self, state: str, namespace: str) -> None:
        self.states.setdefault(state, collections.Counter())[namespace] += 1
        self.totals[state] += 1

    def _uncount(self, state: str, namespace: str) -> None:
        _drop(self.states, state, namespace)
        _drop(self.totals, state)

    def usage(self, workers: bool) -> Usage:
        """The counts (at the cost of the worker states in use, not of the pools or namespaces)."""
        states = {state: (self.totals[state], len(found)) for state, found in self.states.items()}
        return Usage((len(self.pools), len(self.namespaces)), states if workers else None)


def _drop(counts: Any, key: str, namespace: str | None = None) -> None:
    """One less under ``key`` (and ``namespace`` within it), emptied entries removed."""
    if namespace is not None:
        inner = counts[key]
        _drop(inner, namespace)
        if not inner:
            del counts[key]
        return
    counts[key] -= 1
    if not counts[key]:
        del counts[key]


class ClassUsage:
    """Each class's live pools and their worker states, kept up by change: what class status
    counts (:class:`Usage`), at the cost of what changed since the last :meth:`fold` rather than
    of every pool. Where the State or the worker controller cannot say what changed (a batch
    read, another fold, too many changes since), it reads every pool again; the counts are the
    ones :func:`class_status` makes from the State and the states alone either way."""

    def __init__(self) -> None:
        self._state: State | None = None
        self._workers: PoolStates | None = None
        self._serial = 0
        self._member: dict[tuple[str, str, str], tuple[str, str]] = {}  # pool key -> (class, identity)
        self._classes: dict[str, _Members] = {}
        self._of: dict[str, set[str]] = {}  # identity -> the classes counting it
        #: whole reads so far (tests and the bench see that a change does not make one)
        self.reads = 0

    def fold(self, state: State, workers: PoolStates | None = None) -> None:
        """Bring the counts up to ``state`` and ``workers``' states as they are now."""
        changed = state.pools_changed_since(self._state) if self._state is not None else None
        restated: set[str] | None = set()
        if workers is not None:
            restated = workers.states_changed_since(self._serial) if workers is self._workers else None
        if changed is None or restated is None:
            self._read(state, workers)
        else:
            for key in changed:
                self._pool(key, state.pools.get(key), workers)
            for identity in restated:
                self._restate(identity, workers)
        self._state, self._workers = state, workers
        self._serial = workers.state_serial if workers is not None else 0

    def of(self, name: str) -> Usage:
        """Class ``name``'s pools as of the last :meth:`fold`."""
        members = self._classes.get(name)
        if members is None:
            return Usage((0, 0), {} if self._workers is not None else None)
        return members.usage(self._workers is not None)

    def _read(self, state: State, workers: PoolStates | None) -> None:
        self.reads += 1
        self._member, self._classes, self._of = {}, {}, {}
        for members in state.pools_by_class.values():
            for key, pool in members.items():
                self._pool(key, pool, workers)

    def _pool(self, key: tuple[str, str, str], pool: PoolRecord | None, workers: PoolStates | None) -> None:
        now = (pool.class_name, pool.identity) if pool is not None and pool.class_name is not None else None
        before = self._member.get(key)
        if before == now:
            return
        if before is not None:
            del self._member[key]
            name, identity = before
            if self._classes[name].remove(identity):
                self._of[identity].discard(name)
                if not self._of[identity]:
                    del self._of[identity]
                if not self._classes[name].pools:
                    del self._classes[name]
        if now is not None:
            self._member[key] = now
            name, identity = now
            found = workers.pool_state(identity) if workers is not None else None
            self._classes.setdefault(name, _Members()).add(identity, found or "pending")
            self._of.setdefault(identity, set()).add(name)

    def _restate(self, identity: str, workers: PoolStates | None) -> None:
        found = (workers.pool_state(identity) if workers is not None else None) or "pending"
        for name in self._of.get(identity, ()):
            self._classes[name].restate(identity, found)


def class_status(
    state: State,
    name: str,
    generation: int | None = None,
    workers: Mapping[str, str] | None = None,
    *,
    usage: Usage | None = None,
) -> dict[str, Any] | None:
    """The ``status`` of WorkerClass ``name`` in ``state``; ``None`` if the state has no such class.
    ``workers``: each classified pool's worker state (the worker controller's), for ``WorkersApplied``.
    ``usage``: the class's pools already counted (:class:`ClassUsage`, the controller's), in place
    of counting the State's pools and ``workers`` here."""
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
    if usage is None:
        pools = selecting(state, name)
        by_state = None
        if workers is not None:
            found: dict[str, list[str]] = {}
            for pool in pools:
                found.setdefault(workers.get(pool, "pending"), []).append(pool)
            by_state = {worker: _count(listed) for worker, listed in found.items()}
        usage = Usage(_count(pools), by_state)
    if usage.pools[0]:
        in_use = {
            "type": "InUse",
            "status": "True",
            "reason": "PoolsSelectClass",
            "message": f"{counted_as(*usage.pools, 'live pool(s)')} select this class ({LIST_POOLS})",
        }
    else:
        in_use = {"type": "InUse", "status": "False", "reason": "NoPools", "message": "no live pool selects this class"}
    conditions: list[dict[str, Any]] = [accepted, in_use]
    if usage.states is not None:
        conditions.append(_workers_condition(usage.pools[0], usage.states))
    if generation is not None:
        for condition in conditions:
            condition["observedGeneration"] = generation
    return {"conditions": conditions, "pools": usage.pools[0]}


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
