"""How current a source of cluster state is, and where a failure happened: shared by the adapters
that keep a State current (the cluster cache, the STATE folder) and the webhook that reports it.

Its edge: plain values. A :class:`SyncReport` is what ``sync_reports()`` of a state source returns
(the webhook exports them as metrics); :func:`where` locates a bug in a log line without quoting
any value the failing code held.
"""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass

__all__ = ["SyncReport", "age_report", "where"]


@dataclass(frozen=True, slots=True)
class SyncReport:
    """How current one part of a source is: a watched resource, or the folder."""

    name: str
    #: Unix time the part was last known current, ``None`` before its first sync
    last_sync: float | None
    #: seconds since then, ``None`` before the first sync
    staleness: float | None
    failures: int
    #: objects not read (beyond :mod:`workerclass.api.bounds`): said by a warning, never a stalled source
    skipped: int = 0


def age_report(name: str, fresh_at: float | None, failures: int, now: float) -> SyncReport:
    """A report from a monotonic ``fresh_at`` (wall time derived from the age)."""
    if fresh_at is None:
        return SyncReport(name, None, None, failures)
    age = max(0.0, now - fresh_at)
    return SyncReport(name, time.time() - age, age, failures)


def where(error: BaseException) -> str:
    """The last frames of a traceback as ``file:line`` (locates a bug without quoting any value)."""
    frames = traceback.extract_tb(error.__traceback__)[-3:]
    return " <- ".join(f"{frame.filename.rsplit('/', 1)[-1]}:{frame.lineno}" for frame in reversed(frames))
