"""The cluster cache as the controllers read it: no State until the chart the pools run is known.

Its edge: reads of the cache's ``state``, ``published``, ``changed``, ``generation``,
``changed_since`` and its chart follower's ``settled``; no I/O of its own.
"""

from __future__ import annotations

from typing import Any

from ..state import State

__all__ = ["ChartRead"]


class ChartRead:
    """A :class:`StateSource` over the cluster cache that shows no State until the chart the pools run
    has been read once (the cache's chart follower has settled; at once with ``--chart``).

    Before that read a Talos pool needs the chart's own text the State does not have yet: a pass
    would report every Talos pool refused, post Events for it and flip class statuses, and take it
    all back a moment later. Nothing is decided until the chart is known."""

    def __init__(self, cache: Any) -> None:
        self._cache = cache

    @property
    def state(self) -> State | None:
        charts = getattr(self._cache, "charts", None)
        if charts is not None and not charts.settled:
            return None
        state: State | None = self._cache.state
        return state

    @property
    def published(self) -> int:
        published: int = self._cache.published
        return published

    async def changed(self, after: int) -> int:
        changed: int = await self._cache.changed(after)
        return changed

    @property
    def generation(self) -> int | None:
        """The cache's generation (read with :attr:`state`: what :meth:`changed_since` takes next);
        ``None`` where the cache keeps none, and the worker controller then takes the whole pass."""
        generation = getattr(self._cache, "generation", None)
        return generation if isinstance(generation, int) else None

    def changed_since(self, after: int) -> set[tuple[str, str, str]] | None:
        """What changed in the cache since generation ``after`` (the cache's own answer), so that the
        worker controller reconciles only the pools a change touches; ``None``: it cannot be told."""
        since = getattr(self._cache, "changed_since", None)
        if since is None:
            return None
        changed: set[tuple[str, str, str]] | None = since(after)
        return changed
