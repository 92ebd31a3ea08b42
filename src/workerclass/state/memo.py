"""Memo: the derived facts one State snapshot has computed about itself.

A State is immutable; working out some facts from it costs more than a request should pay twice
(the chart checks of a pool's stored values, the class rules a class breaks, the pools by name).
Whoever computes such a fact keeps it in the snapshot's memo under a key that names it:

- ``"pool-names"``: ``(namespace, name)`` -> the kinds of the pools with that name (seeded by the
  State from the index it keeps incrementally, so no reader rebuilds it);
- ``("chart-checks", kind, namespace, name)``: ``(values, violations, (kind, namespace, name))`` of
  one of the snapshot's own pools (resolve); ``("chart-checks", "request")``: the same of the last
  pool checked that is not the snapshot's (a request's): one slot, so a snapshot that serves
  reviews for hours holds one request's values, not every request's;
- ``("class-problems", class)``: the class rules the class breaks (resolve).

Its edge: it stores and answers; what a key means is its writer's. The memo is the one mutable
part of a State, and that is safe: every fact is a pure function of its snapshot (computing it
twice gives the same value, so a race between two readers only computes it twice), every
snapshot gets a memo of its own (never one shared with the State it came from, which may hold
facts that no longer hold), and nothing in a result says whether it came from the memo.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["POOL_NAMES", "Memo", "MemoKey"]

#: a memo key: a fact's name, or its name and what it is about
MemoKey = str | tuple[str, ...]

#: the key of the pools-by-name index the State seeds its memo with
POOL_NAMES = "pool-names"


class Memo(dict[MemoKey, Any]):
    """The facts derived from one snapshot, by key (a dict: ``get``, ``[key] = value``, ``setdefault``).

    A dict subclass with nothing overridden, so a lookup costs what a dict lookup costs (resolve
    and admission consult it on every request).
    """

    __slots__ = ()

    @classmethod
    def seeded(cls, pool_names: Mapping[tuple[str, str], tuple[str, ...]]) -> Memo:
        """A fresh memo holding only the snapshot's pools-by-name index."""
        memo = cls()
        memo[POOL_NAMES] = pool_names
        return memo
