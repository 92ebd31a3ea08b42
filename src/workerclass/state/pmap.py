"""PMap: the persistent mapping a State's indexes are kept in.

Its edge: a generic read-only mapping with copy-on-write :meth:`PMap.set` and
:meth:`PMap.delete`; it knows nothing of Kubernetes objects.

Why ``immutables.Map`` underneath (a hash array mapped trie, the structure CPython's
``contextvars`` use, as a C extension): a change copies only the O(log32 n) nodes on one key's
path and shares the rest, and its size follows its items. The hand-made tree it replaces was 64 x 64
small dicts for every map, about 291 KiB even for one item, and a State keeps one map per class
(the pools that select it): 1,000 classes of one pool each took ~290 MiB (``bench/state_bench.py``).
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterable, Iterator, KeysView, Mapping, ValuesView
from typing import Any

import immutables

__all__ = ["EMPTY", "PMap", "as_pmap"]


class PMap(Mapping[Any, Any]):
    """A read-only mapping whose :meth:`set` and :meth:`delete` return a new map, sharing the rest.

    A snapshot handed to a request never changes under it (copy-on-write, no lock). Equal to any
    mapping with the same items (``immutables.Map`` itself is equal only to another Map, and cannot
    be subclassed, hence this thin wrapper).
    """

    __slots__ = ("_map",)

    def __init__(self, items: Mapping[Any, Any] | Iterable[tuple[Any, Any]] = ()) -> None:
        self._map: immutables.Map[Any, Any] = immutables.Map(items)

    @classmethod
    def _of(cls, inner: immutables.Map[Any, Any]) -> PMap:
        new = cls.__new__(cls)
        new._map = inner
        return new

    def __getitem__(self, key: Any) -> Any:
        return self._map[key]

    def get(self, key: Any, default: Any = None) -> Any:
        return self._map.get(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self._map

    def __iter__(self) -> Iterator[Any]:
        return iter(self._map)

    def __len__(self) -> int:
        return len(self._map)

    def keys(self) -> KeysView[Any]:
        return _Keys(self)

    def values(self) -> ValuesView[Any]:
        return _Values(self)

    def items(self) -> ItemsView[Any, Any]:
        return _Items(self)

    def __repr__(self) -> str:
        return f"PMap({dict(self._map.items())!r})"

    def set(self, key: Any, value: Any) -> PMap:
        return PMap._of(self._map.set(key, value))

    def delete(self, key: Any) -> PMap:
        if key not in self._map:
            return self
        return PMap._of(self._map.delete(key))

    def put(self, key: Any, value: Any | None) -> PMap:
        """:meth:`set`, or :meth:`delete` for ``None``."""
        return self.delete(key) if value is None else self.set(key, value)


# The views of collections.abc (set-like keys and items, as a dict's), iterating with the
# trie's own C iterators instead of a Python ``__getitem__`` per key (immutables' views are
# neither set-like nor registered as views).


class _Keys(KeysView[Any]):
    __slots__ = ()
    _mapping: PMap

    def __iter__(self) -> Iterator[Any]:
        return iter(self._mapping._map)


class _Values(ValuesView[Any]):
    __slots__ = ()
    _mapping: PMap

    def __iter__(self) -> Iterator[Any]:
        return iter(self._mapping._map.values())


class _Items(ItemsView[Any, Any]):
    __slots__ = ()
    _mapping: PMap

    def __iter__(self) -> Iterator[tuple[Any, Any]]:
        return iter(self._mapping._map.items())


def as_pmap(mapping: Mapping[Any, Any]) -> PMap:
    """``mapping`` itself when it is a PMap, else a PMap of its items (to change it by copy-on-write)."""
    return mapping if isinstance(mapping, PMap) else PMap(mapping)


#: the empty PMap, shared (it cannot change)
EMPTY = PMap()
