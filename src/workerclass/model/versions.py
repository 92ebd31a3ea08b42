"""Version arithmetic on the API's version strings (``vX.Y.Z``, ``vX.Y``): cached, a hot path.

Its edge: strings that already matched their pattern (:mod:`workerclass.api.patterns`).
"""

from __future__ import annotations

from ..api.caching import short_cache

__all__ = ["minor_of", "version_tuple"]


@short_cache(maxsize=1024)
def version_tuple(version: str) -> tuple[int, ...]:
    """``v1.35.6`` -> ``(1, 35, 6)``; a pre-release suffix is ignored. Cached: a hot path."""
    core = version.lstrip("v").split("-", 1)[0]
    return tuple(_number(part) for part in core.split("."))


#: a version number past any real one: a part of more digits reads as this (the patterns bound no
#: digit count, and ``int`` refuses a text of more than 4,300 digits: the decision would fail)
HUGE = 10**18


def _number(part: str) -> int:
    digits = part.lstrip("0")
    return int(digits or "0") if len(digits) <= 18 else HUGE


@short_cache(maxsize=1024)
def minor_of(version: str) -> str:
    """``v1.35.6`` -> ``v1.35``."""
    major, minor = version_tuple(version)[:2]
    return f"v{major}.{minor}"
