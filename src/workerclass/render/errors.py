"""The renderer's one error: a pool whose objects cannot be rendered (the chart refused, or no disk)."""

from __future__ import annotations

from collections.abc import Sequence

from ..violations import Violation

__all__ = ["RenderError"]


class RenderError(ValueError):
    """The pool cannot be rendered; ``failures`` holds the chart's refusals when it refused."""

    def __init__(self, message: str, failures: Sequence[Violation] = ()) -> None:
        super().__init__(message)
        self.failures = tuple(failures)
