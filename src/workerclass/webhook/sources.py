"""Where the webhook reads its State from: a fixed state, a STATE folder, or the cluster cache.

Its edge: a source owns keeping a :class:`~workerclass.state.State` current and saying whether it
can be trusted yet. ``state`` is ``None`` until the first complete load (the server then fails
closed and tells why through ``reason``); after that it is replaced whole, never edited, so a
request always decides against one consistent snapshot.

``reason`` is also how a source that *has* a snapshot says it cannot be trusted any more (a
folder that failed to reload, a watch that broke or went silent for longer than the source's
bound): the server then reports not ready and says why, while requests are still answered from
the last good snapshot (a stale read, as client-go informers give, rather than an outage of every
write; readiness moves traffic to a replica that is current). Sources that can say when each of
their parts was last known current offer ``sync_reports()`` (exported as metrics). Sources that
can tell a snapshot that is not fully current (a broken watch being listed again, an optional API
read as empty) offer ``staleness()``: warning lines the server adds to every answer it decides
while that holds (:func:`staleness`), so a decision made on old data says so even while the
source is still ready. The report
type, :func:`age_report` and :func:`where` live in :mod:`workerclass.adapters.sync` (the cluster
cache makes reports too, and adapters sit below the webhook); they are re-exported here.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

from ..adapters.folder import iter_yaml_files, load_state
from ..adapters.sync import SyncReport, age_report, where
from ..state import LoadError, State
from .logtext import escaped

__all__ = [
    "FolderSource",
    "StateSource",
    "StaticSource",
    "SyncReport",
    "age_report",
    "folder_fingerprint",
    "source_absent",
    "staleness",
    "sync_reports",
    "where",
]

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


def source_notes(source: object) -> tuple[str, ...]:
    """What the source says about a ready state worth a person's attention (``notes``, e.g. that no
    chart is known), or nothing for a source without them."""
    notes = getattr(source, "notes", ())
    return tuple(note for note in notes if isinstance(note, str) and note)


def source_absent(source: object) -> dict[str, str]:
    """The optional resources the source reads as empty (``absent``: name to ``not_served`` or
    ``forbidden``), or nothing for a source without them."""
    absent = getattr(source, "absent", None)
    if not isinstance(absent, Mapping):
        return {}
    return {name: reason for name, reason in absent.items() if isinstance(name, str) and isinstance(reason, str)}


def sync_reports(source: object) -> Sequence[SyncReport]:
    """The source's ``sync_reports()``, or nothing for a source without parts (a fixed state)."""
    reports = getattr(source, "sync_reports", None)
    if reports is None:
        return ()
    result: Sequence[SyncReport] = reports()
    return result


#: a staleness line is cut to this many characters (the API server may cut an AdmissionReview warning
#: over 256 and recommends 120), and at most this many lines are given
WARNING_LIMIT = 256
MAX_STALENESS_LINES = 16


def staleness(source: object) -> list[str]:
    """The source's ``staleness()`` lines (``() -> Sequence[str]``: why answers decided now rest on
    data that is not fully current; empty while it is), each cut to :data:`WARNING_LIMIT`
    characters, at most :data:`MAX_STALENESS_LINES` of them; nothing for a source without the
    method (a fixed state, a folder). The lines are the source's own text (resource names, ages,
    status codes), never a request's or a server's message."""
    method = getattr(source, "staleness", None)
    if method is None:
        return []
    lines: Sequence[object] = method()
    return [line[:WARNING_LIMIT] for line in lines[:MAX_STALENESS_LINES] if isinstance(line, str) and line]


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

    Until a load succeeds, ``state`` is ``None`` and ``reason`` carries the loader's error. A
    later failed reload (a half-saved file) keeps the last good state for answers, never a half
    applied one, and makes ``reason`` say so until the files load again: the replica is reported
    not ready. So does a folder that has not been checked for ``stale_after`` seconds (the poller
    stopped, or the folder cannot be read).
    """

    def __init__(
        self,
        path: str | Path,
        *,
        interval: float = 1.0,
        stale_after: float = 60.0,
        loader: Callable[[Path], State] = load_state,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.path = Path(path)
        self.interval = interval
        self.stale_after = stale_after
        self._loader = loader
        self._clock = clock
        self._state: State | None = None
        self._fingerprint: Fingerprint | None = None
        self._task: asyncio.Task[None] | None = None
        self._fresh_at: float | None = None
        self.loads = 0
        self.failures = 0
        self.last_error = ""

    @property
    def state(self) -> State | None:
        return self._state

    @property
    def reason(self) -> str:
        if self._state is None:
            if self.last_error:
                return f"the STATE folder cannot be loaded: {self.last_error}"
            return f"the STATE folder {self.path} has not been loaded yet"
        if self.last_error:
            return f"the STATE folder failed to reload (answering from the last good state): {self.last_error}"
        if self._fresh_at is not None:
            age = self._clock() - self._fresh_at
            if age > self.stale_after:
                return f"the STATE folder has not been checked for {age:.0f}s (bound {self.stale_after:g}s)"
        return ""

    def sync_reports(self) -> Sequence[SyncReport]:
        return (age_report("folder", self._fresh_at, self.failures, self._clock()),)

    async def reload(self) -> bool:
        """Load the folder if its files changed since the last attempt; ``True`` when a new state was built."""
        try:
            fingerprint = await asyncio.to_thread(folder_fingerprint, self.path)
        except OSError as error:
            self.failures += 1
            self.last_error = f"{self.path}: cannot be read ({error.strerror or type(error).__name__})"
            raise
        if fingerprint == self._fingerprint:
            if not self.last_error:
                self._fresh_at = self._clock()
            return False
        self._fingerprint = fingerprint
        try:
            state = await asyncio.to_thread(self._loader, self.path)
        except Exception as error:
            if isinstance(error, LoadError):
                message = escaped(str(error), 400)
                logger.error("STATE folder %s not loaded: %s", self.path, message)
            else:  # a loader bug: its type and where, never its message (it may quote the files)
                message = f"the loader failed unexpectedly ({type(error).__name__})"
                logger.error("STATE folder %s not loaded: %s at %s", self.path, message, where(error))
            self.failures += 1
            self.last_error = message
            return False
        self._state = state
        self._fresh_at = self._clock()
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
                logger.error("STATE folder %s: %s", self.path, error.strerror or type(error).__name__)

    async def start(self) -> None:
        try:
            await self.reload()
        except OSError as error:
            logger.error("STATE folder %s: %s", self.path, error.strerror or type(error).__name__)
        self._task = asyncio.create_task(self._poll(), name="workerclass-state-folder")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
