"""PMap: the persistent mapping a State's indexes are kept in.

Its edge: a generic read-only mapping with copy-on-write :meth:`PMap.set` and
:meth:`PMap.delete`; it knows nothing of Kubernetes objects.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

__all__ = ["EMPTY", "PMap", "as_pmap"]

_FAN = 64  # a PMap is 64 x 64 small dicts


class PMap(Mapping[Any, Any]):
    """A read-only mapping whose :meth:`set` and :meth:`delete` return a new map in O(1) at any size.

    The keys are spread by hash over a two-level tree of 64 x 64 small dicts; a change copies the
    one dict it touches (about ``len / 4096`` entries) and the two 64-slot tuples above it, and
    shares everything else with the map it came from, so a snapshot handed to a request never
    changes under it (copy-on-write, no lock). Equal to any mapping with the same items.
    """

    __slots__ = ("_len", "_tree")

    def __init__(self, items: Mapping[Any, Any] | Iterable[tuple[Any, Any]] = ()) -> None:
        tree: list[list[dict[Any, Any]]] = [[{} for _ in range(_FAN)] for _ in range(_FAN)]
        pairs = items.items() if isinstance(items, Mapping) else items
        for key, value in pairs:
            code = hash(key)
            tree[code % _FAN][(code // _FAN) % _FAN][key] = value
        self._tree: tuple[tuple[Mapping[Any, Any], ...], ...] = tuple(tuple(row) for row in tree)
        self._len = sum(len(leaf) for row in tree for leaf in row)

    @classmethod
    def _of(cls, tree: tuple[tuple[Mapping[Any, Any], ...], ...], length: int) -> PMap:
        new = cls.__new__(cls)
        new._tree, new._len = tree, length
        return new

    def _leaf(self, key: Any) -> Mapping[Any, Any]:
        code = hash(key)
        return self._tree[code % _FAN][(code // _FAN) % _FAN]

    def __getitem__(self, key: Any) -> Any:
        return self._leaf(key)[key]

    def get(self, key: Any, default: Any = None) -> Any:
        return self._leaf(key).get(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self._leaf(key)

    def __iter__(self) -> Iterator[Any]:
        for row in self._tree:
            for leaf in row:
                yield from leaf

    def __len__(self) -> int:
        return self._len

    def __repr__(self) -> str:
        return f"PMap({dict(self.items())!r})"

    def _with_leaf(self, code: int, leaf: Mapping[Any, Any], length: int) -> PMap:
        i, j = code % _FAN, (code // _FAN) % _FAN
        row = self._tree[i]
        row = (*row[:j], leaf, *row[j + 1 :])
        return PMap._of((*self._tree[:i], row, *self._tree[i + 1 :]), length)

    def set(self, key: Any, value: Any) -> PMap:
        code = hash(key)
        leaf = dict(self._tree[code % _FAN][(code // _FAN) % _FAN])
        grown = key not in leaf
        leaf[key] = value
        return self._with_leaf(code, leaf, self._len + grown)

    def delete(self, key: Any) -> PMap:
        code = hash(key)
        leaf = self._tree[code % _FAN][(code // _FAN) % _FAN]
        if key not in leaf:
            return self
        smaller = dict(leaf)
        del smaller[key]
        return self._with_leaf(code, smaller, self._len - 1)

    def put(self, key: Any, value: Any | None) -> PMap:
        """:meth:`set`, or :meth:`delete` for ``None``."""
        return self.delete(key) if value is None else self.set(key, value)


def as_pmap(mapping: Mapping[Any, Any]) -> PMap:
    """``mapping`` itself when it is a PMap, else a PMap of its items (to change it by copy-on-write)."""
    return mapping if isinstance(mapping, PMap) else PMap(mapping)


#: the empty PMap, shared (it cannot change, and building one costs 4,096 small dicts)
EMPTY = PMap()
