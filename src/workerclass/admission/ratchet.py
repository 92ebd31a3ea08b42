"""Ratcheting of UPDATEs, as Kubernetes' CRD validation ratcheting does: validate what changed.

An UPDATE of a pool whose stored values no longer validate (its class removed by force, a
platform edit that dropped its minor, a rule added since it was stored) must still go through
when it leaves those values as stored: a label, an annotation, a finalizer removed from a pool
being deleted, a scale-up beside an unchanged broken field. Refusing it strands the pool (in
Terminating, with ``failurePolicy: Fail``).

Kubernetes' rule (KEP-4008, ``apiextensions-apiserver``'s ratcheting validator): an error at a
field whose value is unchanged from the old object's correlated value is dropped; maps correlate
by key, atomic lists as a whole (an element of a list is unchanged only when the whole list is).
Our rules also read other objects (classes, the platform, the parent cluster) and sibling fields,
so a denial is let through only when both hold:

- the stored object already gets it, judged against the same State (same code, field and
  message): the refusal is not this UPDATE's doing;
- what it judges is unchanged: the value at its field (an atomic list whole) in the values the
  tenant supplied; for a denial outside the values (the object's name or namespace, which the
  chart judges against the values), the whole values.

Each such denial becomes a warning that says so. Only pool kinds ratchet (KubernetesNodes, a pool
HelmRelease, ComputePlane node groups); a WorkerClass has its own rule (its spec is immutable).
Its edge: decisions in, decisions out; the rules are the validators'.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from ..api.paths import is_within
from ..violations import Violation

__all__ = ["MISSING", "RATCHETED_KINDS", "Outcome", "ratchet", "value_at"]

#: the kinds whose UPDATEs ratchet (the pools and the parents whose node groups are pools: the
#: kinds a tenant writes and Cozystack renders)
RATCHETED_KINDS = frozenset({"KubernetesNodes", "HelmRelease", "ComputePlane", "Kubernetes"})

#: what :func:`value_at` finds where a path leads nowhere
MISSING: Any = object()
_INDEX = re.compile(r"\[(\d+)\]")
#: a path segment a warning shows: a field name, a DNS label (a node group, a registry host part)
_SHOWN_SEGMENT = re.compile(r"[a-z][A-Za-z0-9]{0,39}|[a-z0-9]([-a-z0-9]{0,28}[a-z0-9])?")

Outcome = tuple[list[Violation], list[str]]


def value_at(root: Any, field: str, indexes: dict[int, dict[str, Any]] | None = None) -> Any:
    """The value at a field path in ``root``, or the atomic list that holds it; ``MISSING`` when
    the path leads nowhere. Map keys may hold dots (``docker.io``): the longest key that the
    rest of the path starts with is taken (of keys with the same text, the first).

    ``indexes``: where a caller that reads many paths of the same objects keeps each wide
    mapping's keys by their text (by the mapping's ``id``: the caller holds the objects meanwhile),
    so that a path costs its length rather than the keys beside it; a mapping of 10,000 refused
    labels would otherwise cost 10,000 scans of 10,000 keys."""
    rest, value = field, root
    while rest:
        if isinstance(value, list):
            return value  # atomic: an element is unchanged only when the whole list is
        if not isinstance(value, Mapping):
            return MISSING
        match = None
        if indexes is not None and len(value) > _SCANNED:
            match = _longest_key(value, rest, indexes)
        else:
            longest = -1
            for key in value:
                text = key if key.__class__ is str else str(key)
                # the key whole, or followed by a dot or a bracket (read without building either text)
                if (
                    rest.startswith(text)
                    and len(text) > longest
                    and (len(rest) == len(text) or rest[len(text)] in ".[")
                ):
                    match, longest = key, len(text)
        if match is None:  # (a key that is None is never taken: a path cannot tell it)
            return MISSING
        value = value[match]
        rest = rest[len(str(match)) :]
        if rest.startswith("["):  # an index below the key: the list itself decides
            return value if isinstance(value, list) else MISSING
        rest = rest.removeprefix(".")
    return value


#: mappings of at most this many keys are scanned (an index costs more than it saves)
_SCANNED = 8
_BREAKS = re.compile(r"[.\[]")


def _longest_key(mapping: Mapping[Any, Any], rest: str, indexes: dict[int, dict[str, Any]]) -> Any:
    """:func:`value_at`'s key of ``mapping`` for ``rest`` through the mapping's index (made on
    first use), the scan's answer; None when no key fits."""
    index = indexes.get(id(mapping))
    if index is None:
        index = {}
        for key in mapping:
            index.setdefault(str(key), key)  # the first key of a text, as the scan keeps it
        indexes[id(mapping)] = index
    # the texts a key may have: ``rest`` whole, or cut before one of its dots or brackets; longest first
    for end in [len(rest), *reversed([found.start() for found in _BREAKS.finditer(rest)])]:
        text = rest[:end]
        if text in index:
            return index[text]
    return None


def _same(left: Any, right: Any) -> bool:
    """Equal values (a ``true`` is not a ``1``; a ``3.0`` is the JSON number ``3``); values nested
    too deep to compare are not the same."""
    if isinstance(left, bool) is not isinstance(right, bool):
        return False
    try:
        return bool(left == right)
    except RecursionError:
        return False


def _shown(field: str) -> str:
    """``field`` cut before a segment that is not a field name or a DNS label (a map key taken from
    the request may be anything: a warning is plain text every door prints as it is)."""
    shown: list[str] = []
    for segment in field.split("."):
        if not _SHOWN_SEGMENT.fullmatch(_INDEX.sub("", segment)):
            return ".".join(shown) + ".(a key that is not shown)" if shown else "(a key that is not shown)"
        shown.append(segment)
    return field


def ratchet(
    denials: list[Violation],
    *,
    new: Mapping[str, Any],
    old: Mapping[str, Any],
    values: str,
    stored: Callable[[], list[Violation]],
) -> Outcome:
    """``(denials kept, warnings)``: each denial the stored object already gets (``stored()``,
    called only when there is a denial) whose field is unchanged between ``new`` and ``old`` (the
    objects as supplied) becomes a warning. ``values``: the field path of the object's values.

    Whether each denial's field is unchanged is settled first: when none is, nothing can become a
    warning, and the stored object is not judged at all (the usual denied UPDATE changes what is
    refused, and judging the stored object is a whole second validation)."""
    if not denials:
        return denials, []
    all_values_same: bool | None = None
    unchanged: list[bool] = []
    # Denials under one list or wide map read the same values again: each mapping's keys are
    # indexed once, and each pair of values found is compared once (by identity: both objects
    # are held for the call), so 10,000 denials in one list cost one comparison of it, not 10,000.
    indexes: dict[int, dict[str, Any]] = {}
    compared: dict[tuple[int, int], bool] = {}
    for violation in denials:
        if is_within(violation.field, values) or violation.field.startswith(values + "["):
            left, right = value_at(new, violation.field, indexes), value_at(old, violation.field, indexes)
            same = compared.get((id(left), id(right)))
            if same is None:
                same = compared[(id(left), id(right))] = _same(left, right)
            unchanged.append(same)
        else:
            if all_values_same is None:
                all_values_same = _same(value_at(new, values), value_at(old, values))
            unchanged.append(all_values_same)
    if not any(unchanged):
        return denials, []
    before = set(stored())
    if not before:
        return denials, []
    kept: list[Violation] = []
    said: list[str] = []
    for violation, same in zip(denials, unchanged, strict=True):
        if violation in before and same:
            said.append(
                f"{violation.code} {_shown(violation.field)}: {violation.message} (allowed: the stored object is "
                "refused for this already, and this update leaves what it judges as stored)"
            )
            continue
        kept.append(violation)
    return kept, said
