"""Our chart gate as data, and putting it on exactly the chart it was derived for.

Owns :class:`ChartGate` (the guard lines of one known ungated chart, where each goes, and the known
gated identity the result must be), :func:`parse_gate_patch` (a zero-context, add-only patch of
``deploy/chart-gate/`` into those insertions), :func:`gates` (the gates the generated facts carry,
key ``gates``) and :func:`gate_chart` (files in: which identity they are, and the gated files, or why
not: :class:`GateOutcome`).

Why the gate is applied here and not by ``patch``: the patches carry no context lines (no text of
the chart is copied into workerclass), so ``patch --fuzz=0`` and ``git apply --unidiff-zero`` place
their hunks by line number alone and apply with exit 0 to a chart they were not derived for, and
the result breaks every classified render. Here the chart is identified by its digest first, only
the guards of that identity are inserted, and the result is accepted only when its digest is the
known gated identity's; anything else is refused, naming the charts that are known.

Its edge: a ``Mapping[str, bytes]`` in (as :func:`~.identity.chart_digest` takes it), plain values
out; pure apart from reading its package data. Reading and writing the chart on disk is
``workerclass.adapters.chart_gate``'s.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ..api.frozen import fast_init
from .facts import facts
from .identity import ChartIdentity, by_name, chart_digest, identify, known_identities

__all__ = ["ChartGate", "GateError", "GateOutcome", "gate_chart", "gate_for", "gates", "parse_gate_patch"]

#: A hunk of a zero-context, add-only unified diff: ``@@ -N,0 +M[,K] @@`` (insert K lines after line N).
_HUNK = re.compile(r"^@@ -(\d+),0 \+(\d+)(?:,(\d+))? @@")


class GateError(ValueError):
    """A gate patch that is not a zero-context, add-only patch, or a chart its insertions do not fit."""


@fast_init
@dataclass(frozen=True, slots=True)
class ChartGate:
    """The gate of one known ungated chart.

    ``chart``: the name of the ungated identity it applies to (``main``, ``pr3315``); ``gated``: the
    name of the identity the result must be (``main+gate``); ``patch``: the file of
    ``deploy/chart-gate/`` it was read from; ``insertions``: per template path, ``(after, lines)``
    pairs in file order: insert ``lines`` (each without its line end) after line ``after`` of the
    ungated file (0: at its top).
    """

    chart: str
    gated: str
    patch: str
    insertions: Mapping[str, tuple[tuple[int, tuple[str, ...]], ...]]

    def guard_lines(self) -> int:
        """How many lines the gate adds (``grep -c "workerclass chart gate"`` of the result)."""
        return sum(len(lines) for hunks in self.insertions.values() for _, lines in hunks)

    def apply(self, files: Mapping[str, bytes]) -> dict[str, bytes]:
        """``files`` with the guard lines inserted (every other file as it is); :class:`GateError`
        when a file the gate names is missing or shorter than an insertion point."""
        out = dict(files)
        for path, hunks in self.insertions.items():
            if path not in files:
                raise GateError(f"{path}: not in the chart")
            lines = files[path].decode("utf-8").splitlines(keepends=True)
            ending = "\r\n" if lines and lines[0].endswith("\r\n") else "\n"
            if lines and not lines[-1].endswith(("\n", "\r")):
                lines[-1] += ending  # an insertion after the last line starts a line of its own
            result: list[str] = []
            taken = 0
            for after, added in hunks:
                if after > len(lines) or after < taken:
                    raise GateError(f"{path}: has {len(lines)} lines, the gate inserts after line {after}")
                result += lines[taken:after]
                result += [line + ending for line in added]
                taken = after
            result += lines[taken:]
            out[path] = "".join(result).encode("utf-8")
        return out

    def as_dict(self) -> dict[str, Any]:
        return {
            "chart": self.chart,
            "gated": self.gated,
            "patch": self.patch,
            "insertions": {
                path: [[after, list(lines)] for after, lines in hunks] for path, hunks in self.insertions.items()
            },
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ChartGate:
        return cls(
            chart=str(data["chart"]),
            gated=str(data["gated"]),
            patch=str(data["patch"]),
            insertions={
                str(path): tuple((int(after), tuple(str(line) for line in lines)) for after, lines in hunks)
                for path, hunks in (data.get("insertions") or {}).items()
            },
        )


def parse_gate_patch(text: str) -> dict[str, tuple[tuple[int, tuple[str, ...]], ...]]:
    """The insertions of a gate patch: per file (``b/`` path), ``(after, lines)`` in order.

    Only what our patches are is read: a free-text preamble, then per file ``diff --git``, ``---``,
    ``+++`` and hunks ``@@ -N,0 +M[,K] @@`` of K added lines each; any removed or context line, or a
    hunk whose new line number does not follow from the lines added before it, is a :class:`GateError`.
    """
    insertions: dict[str, list[tuple[int, tuple[str, ...]]]] = {}
    path: str | None = None
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        if line.startswith("+++ "):
            target = line[4:].strip()
            if not target.startswith("b/"):
                raise GateError(f"line {index}: {target!r} is not a b/ path")
            path = target[2:]
            insertions.setdefault(path, [])
            continue
        match = _HUNK.match(line)
        if match is None:
            if path is not None and line[:1] in {"+", "-", " "} and not line.startswith(("--- ", "+++ ")):
                raise GateError(f"line {index}: a line outside a zero-context, add-only hunk")
            continue
        if path is None:
            raise GateError(f"line {index}: a hunk before any file")
        after, new, count = int(match[1]), int(match[2]), int(match[3] or "1")
        added_before = sum(len(added) for _, added in insertions[path])
        if new != after + added_before + 1:
            raise GateError(f"line {index}: hunk {match[0]} does not follow from the lines added before it")
        added = tuple(text_line[1:] for text_line in lines[index : index + count])
        if len(added) != count or any(not text_line.startswith("+") for text_line in lines[index : index + count]):
            raise GateError(f"line {index}: hunk {match[0]} does not add {count} lines")
        insertions[path].append((after, added))
        index += count
    return {name: tuple(hunks) for name, hunks in insertions.items() if hunks}


@functools.cache
def gates() -> tuple[ChartGate, ...]:
    """The gate of every known ungated chart, as ``scripts/sync-upstream.py`` wrote them."""
    return tuple(ChartGate.from_dict(entry) for entry in facts().get("gates", ()))


def gate_for(chart: str) -> ChartGate | None:
    """The gate of the known ungated identity named ``chart`` (None: there is none)."""
    return next((gate for gate in gates() if gate.chart == chart), None)


GateStatus = Literal["gated", "applied", "unknown", "mismatch"]


@fast_init
@dataclass(frozen=True, slots=True)
class GateOutcome:
    """What gating a chart's files came to.

    ``status``: ``gated`` (already a known gated identity: nothing to do), ``applied`` (a known
    ungated identity; ``files`` is the result, verified to be ``gated``), ``unknown`` (no known
    identity has its digest, or a known one has no gate: refused), ``mismatch`` (the result's digest
    is not the gated identity's: refused; never expected for a known chart). ``identity``: what the
    files are (None when unknown); ``gated``: the gated identity (for ``gated`` and ``applied``);
    ``digest``: the files' digest; ``files``: the gated files (``applied`` only); ``changed``: the
    paths the gate changed.
    """

    status: GateStatus
    digest: str
    identity: ChartIdentity | None = None
    gated: ChartIdentity | None = None
    files: Mapping[str, bytes] | None = None
    changed: tuple[str, ...] = ()
    reason: str = ""

    @property
    def ok(self) -> bool:
        return self.status in {"gated", "applied"}


def known_charts() -> str:
    """``main, main+gate, pr3315, pr3315+gate``, each with its source: for refusals."""
    return "; ".join(f"{identity.name} ({identity.source}, {identity.digest[:19]})" for identity in known_identities())


def gate_chart(files: Mapping[str, bytes]) -> GateOutcome:
    """Identify ``files`` by digest and gate them with exactly their identity's gate, verified.

    A known gated identity is ``gated`` as it is; a known ungated one gets its gate's insertions and
    is ``applied`` only if the result's digest is the gate's gated identity's; anything else is
    refused (``unknown``, ``mismatch``) with a reason that names the known charts.
    """
    digest = chart_digest(files)
    identity = identify(files)
    if identity is None:
        return GateOutcome(
            "unknown",
            digest,
            reason=f"not a chart workerclass knows (its digest {digest}); known: {known_charts()}. The gate is "
            "derived for each chart version: re-derive it for this one rather than forcing a patch onto it",
        )
    if identity.gated:
        return GateOutcome("gated", digest, identity, identity, reason=f"already gated: {identity.describe()}")
    gate = gate_for(identity.name)
    if gate is None:
        return GateOutcome("unknown", digest, identity, reason=f"{identity.describe()}: workerclass has no gate for it")
    target = by_name(gate.gated)
    try:
        gated_files = gate.apply(files)
    except (GateError, UnicodeDecodeError) as error:
        reason = f"the gate of {identity.name} does not fit: {error}"
        return GateOutcome("mismatch", digest, identity, target, reason=reason)
    result = identify(gated_files)
    if result is None or result.name != target.name:
        return GateOutcome(
            "mismatch",
            digest,
            identity,
            target,
            reason=f"the gated result has digest {chart_digest(gated_files)}, not {target.name}'s {target.digest}",
        )
    return GateOutcome(
        "applied",
        digest,
        identity,
        result,
        files=gated_files,
        changed=tuple(sorted(gate.insertions)),
        reason=f"gated {identity.name} into {result.describe()}",
    )
