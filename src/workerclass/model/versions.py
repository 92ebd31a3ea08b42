"""Version arithmetic on the API's version strings (``vX.Y.Z``, ``vX.Y``): cached, a hot path.

Its edge: strings that already matched their pattern (:mod:`workerclass.api.patterns`).
"""

from __future__ import annotations

from functools import lru_cache

__all__ = ["minor_of", "version_tuple"]


@lru_cache(maxsize=1024)
def version_tuple(version: str) -> tuple[int, ...]:
    """``v1.35.6`` -> ``(1, 35, 6)``; a pre-release suffix is ignored. Cached: a hot path."""
    core = version.lstrip("v").split("-", 1)[0]
    return tuple(int(part) for part in core.split("."))


@lru_cache(maxsize=1024)
def minor_of(version: str) -> str:
    """``v1.35.6`` -> ``v1.35``."""
    major, minor = version_tuple(version)[:2]
    return f"v{major}.{minor}"
