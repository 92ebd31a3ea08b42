"""Where the webhook reads its State from: a fixed state, a STATE folder, or the cluster cache.

Its edge: a source owns keeping a :class:`~workerclass.state.State` current and saying whether it
can be trusted yet. ``state`` is ``None`` until the first complete load (the server then fails
closed and tells why through ``reason``); after that it is replaced whole, never edited, so a
request always decides against one consistent snapshot.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from ..adapters.folder import iter_yaml_files
from ..state import LoadError, State

logger = logging.getLogger("workerclass.webhook")


class StateSource(Protocol):
    """What the server needs from a state source."""

    @property
    def state(self) -> State | None:
        """The current snapshot, or ``None`` while not synced."""
        ...

    @property
    def reason(self) -> str:
        """Why ``state`` is ``None`` (or ``""`` once synced)."""
        ...

    async def start(self) -> None:
        """Begin loading or watching; returns without waiting for the first sync."""
        ...

    async def stop(self) -> None: ...


class StaticSource:
    """A fixed state (tests, benchmarks, embedding)."""

    def __init__(self, state: State | None, *, reason: str = "no state was given") -> None:
        self._state = state
        self._reason = "" if state is not None else reason

    @property
    def state(self) -> State | None:
        return self._state

    @property
    def reason(self) -> str:
        return self._reason

    def replace(self, state: State | None, *, reason: str = "no state was given") -> None:
        self._state = state
        self._reason = "" if state is not None else reason

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None


Fingerprint = tuple[tuple[str, int, int, int], ...]


def folder_fingerprint(root: Path) -> Fingerprint:
    """``(path, mtime_ns, size, inode)`` of every YAML file the loader would read, in a stable order."""
    if root.is_file():
        paths = [root]
    elif root.is_dir():
        paths = list(iter_yaml_files(root))
    else:
        return ()
    out: list[tuple[str, int, int, int]] = []
    for path in paths:
        try:
            stat = path.stat()
        except OSError:
            continue  # removed between listing and stat: the next poll sees the new listing
        out.append((str(path), stat.st_mtime_ns, stat.st_size, stat.st_ino))
    return tuple(out)


class FolderSource:
    """A STATE folder, reloaded when its YAML files change (polled: works for ConfigMap mounts too).

    The first load decides readiness: until a load succeeds, ``state`` is ``None`` and ``reason``
    carries the loader's error. A later failed reload (a half-saved file) keeps the last good
    state and logs the error: a broken edit does not take admission down, and is never half-applied.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        interval: float = 1.0,
        loader: Callable[[Path], State] = State.load,
    ) -> None:
        self.path = Path(path)
        self.interval = interval
        self._loader = loader
        self._state: State | None = None
        self._reason = f"the STATE folder {self.path} has not been loaded yet"
        self._fingerprint: Fingerprint | None = None
        self._task: asyncio.Task[None] | None = None
        self.loads = 0
        self.failures = 0
        self.last_error = ""

    @property
    def state(self) -> State | None:
        return self._state

    @property
    def reason(self) -> str:
        return self._reason

    async def reload(self) -> bool:
        """Load the folder if its files changed since the last attempt; ``True`` when a new state was built."""
        fingerprint = await asyncio.to_thread(folder_fingerprint, self.path)
        if fingerprint == self._fingerprint:
            return False
        self._fingerprint = fingerprint
        try:
            state = await asyncio.to_thread(self._loader, self.path)
        except Exception as error:
            if isinstance(error, LoadError):
                message = str(error)
                logger.error("STATE folder %s not loaded: %s", self.path, message)
            else:  # a loader bug: keep its traceback in the log, not in answers
                message = f"the loader failed unexpectedly ({type(error).__name__})"
                logger.exception("STATE folder %s not loaded", self.path)
            self.failures += 1
            self.last_error = message
            if self._state is None:
                self._reason = f"the STATE folder cannot be loaded: {message}"
            return False
        self._state = state
        self._reason = ""
        self.loads += 1
        self.last_error = ""
        logger.info("STATE folder %s loaded (%d objects)", self.path, len(state.objects))
        return True

    async def _poll(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            try:
                await self.reload()
            except OSError as error:  # the folder itself vanished or is unreadable: try again next poll
                logger.error("STATE folder %s: %s", self.path, error)

    async def start(self) -> None:
        await self.reload()
        self._task = asyncio.create_task(self._poll(), name="workerclass-state-folder")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
