"""Typed field paths: ``spec.talos.version``, ``spec.gpus[0].vgpu``.

A :class:`FieldPath` is a ``str`` (so a violation's field prints, compares and serialises as the
text API.md shows) that also knows its segments, so that code asks a path for its parent or its
place under a prefix instead of taking the text apart again. Its edge: no knowledge of resources.
"""

from __future__ import annotations

from .patterns import looks_private

__all__ = ["FieldPath", "Segment", "is_within"]

#: a key (``talos``) or a list index (``0``)
Segment = str | int


class FieldPath(str):
    """A field path built from segments; a key that holds private key material is never added."""

    _segments: tuple[Segment, ...]

    def __new__(cls, *segments: Segment) -> FieldPath:
        text = ""
        for segment in segments:
            text = _join(text, segment)
        path = super().__new__(cls, text)
        path._segments = segments
        return path

    @classmethod
    def parse(cls, text: str) -> FieldPath:
        """A path from its dotted text (keys with dots in them cannot be told apart: use segments)."""
        if isinstance(text, FieldPath):
            return text
        segments: list[Segment] = []
        for part in text.split(".") if text else ():
            name, _, rest = part.partition("[")
            if name:
                segments.append(name)
            while rest:
                index, _, rest = rest.partition("]")
                segments.append(int(index))
                rest = rest.removeprefix("[")
        return cls(*segments)

    @property
    def segments(self) -> tuple[Segment, ...]:
        return self._segments

    def child(self, key: object) -> FieldPath:
        """``self.key`` (``self`` for a key that looks like private key material)."""
        if isinstance(key, str) and looks_private(key):
            return self
        return FieldPath(*self._segments, key if isinstance(key, int) else str(key))

    def __truediv__(self, key: object) -> FieldPath:
        return self.child(key)

    def at(self, index: int) -> FieldPath:
        """``self[index]``."""
        return FieldPath(*self._segments, index)

    @property
    def parent(self) -> FieldPath:
        return FieldPath(*self._segments[:-1])

    @property
    def leaf(self) -> Segment | None:
        return self._segments[-1] if self._segments else None

    def under(self, prefix: FieldPath) -> bool:
        """Whether this path is ``prefix`` or inside it."""
        return self._segments[: len(prefix.segments)] == prefix.segments

    def relative_to(self, prefix: FieldPath) -> tuple[Segment, ...]:
        """The segments below ``prefix``. Raises ``ValueError`` when the path is not under it."""
        if not self.under(prefix):
            raise ValueError(f"{self} is not under {prefix}")
        return self._segments[len(prefix.segments) :]


def is_within(path: str, prefix: str) -> bool:
    """Whether the field path ``path`` is ``prefix`` or a key below it (``prefix.``...): text only,
    for the loops that test every denial against a prefix (no :class:`FieldPath` is built).

    A key boundary, not a text prefix: ``spec.talosx`` is not within ``spec.talos``. An index right
    below (``prefix[0]``) does not count, as the callers always read it: in text, a key that holds
    brackets (a node group named ``a[0]``) cannot be told from an index, and counting it would give
    one group's denials to another. :meth:`FieldPath.under` is the structural test.
    """
    return path == prefix or path.startswith(prefix + ".")


def _join(text: str, segment: Segment) -> str:
    if isinstance(segment, int):
        return f"{text}[{segment}]"
    return f"{text}.{segment}" if text else segment
