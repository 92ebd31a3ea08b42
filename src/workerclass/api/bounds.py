"""How deep and how large an object workerclass reads may be, measured without recursion.

A tenant writes pools and HelmReleases; the API server stores JSON nested up to 10,000 levels
(Go's ``encoding/json`` limit). Every walk of an object in Python that recurses (YAML and JSON
codecs, deep copies, our own rules) fails with ``RecursionError`` near 1,000 levels, so one deep
object would stop every decision that reads it, and a cache that lists it. The bounds here are far
above any real object (a pool's values nest under ten levels; an object with its managed fields
under thirty) and far below Python's recursion limit: an object beyond them is refused at
admission (``ObjectTooLarge``) and skipped, said, by every reader, before anything walks it.

:func:`measure` walks iteratively and stops as soon as a bound is crossed, so measuring a hostile
object costs no more than the bound.
"""

from __future__ import annotations

from dataclasses import dataclass

from .frozen import fast_init

__all__ = ["MAX_BYTES", "MAX_DEPTH", "MAX_SHARED_INPUT_TEXT", "MAX_SHARED_TEXT", "Excess", "excess", "measure"]

#: levels of nesting (a mapping or a list is one level)
MAX_DEPTH = 64
#: the JSON size of an object, in bytes (etcd stores at most 1.5 MiB; a pool is a few KiB)
MAX_BYTES = 1024 * 1024
#: the longest canonical text of a pool's values a cache shared between pools is keyed by: a pool is
#: a few KiB; a larger one is computed each time, so that a tenant's large pools cannot make such a
#: cache's keys hold more than its entries times this
MAX_SHARED_TEXT = 16 * 1024
#: the same for a cache that keeps a pool's chart input beside its key (the values as Python objects,
#: up to some 25 times their text for values dense in small containers): such caches are also kept
#: small (128 entries), so that they hold some tens of MiB at most
MAX_SHARED_INPUT_TEXT = 8 * 1024


@fast_init
@dataclass(frozen=True, slots=True)
class Excess:
    """Why an object is beyond the bounds, said without quoting it."""

    reason: str  # "depth" or "size"
    message: str


def measure(value: object, *, max_depth: int = MAX_DEPTH, max_bytes: int = MAX_BYTES) -> tuple[int, int]:
    """``(depth, approximate JSON bytes)`` of ``value``, each counted up to just past its bound."""
    depth = 0
    size = 0
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            depth = max(depth, level)
            size += 2 + len(item)
            for key, child in item.items():
                size += len(key) + 3 if isinstance(key, str) else 8
                stack.append((child, level + 1))
        elif isinstance(item, list | tuple):
            depth = max(depth, level)
            size += 2 + len(item)
            stack.extend((child, level + 1) for child in item)
        elif isinstance(item, str):
            size += len(item) + 2
        else:
            size += 8
        if depth > max_depth or size > max_bytes:
            break
    return depth, size


def excess(value: object, *, max_depth: int = MAX_DEPTH, max_bytes: int = MAX_BYTES) -> Excess | None:
    """Why ``value`` is beyond the bounds, or ``None`` when it is within them."""
    depth, size = measure(value, max_depth=max_depth, max_bytes=max_bytes)
    if depth > max_depth:
        return Excess(
            "depth",
            f"nests deeper than {max_depth} levels: no pool, class or platform needs that, and workerclass "
            "reads nothing that deep",
        )
    if size > max_bytes:
        return Excess("size", f"is larger than {max_bytes // 1024} KiB as JSON: workerclass reads nothing that large")
    return None
