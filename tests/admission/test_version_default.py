"""A pool's omitted Kubernetes minor on CREATE (the design page: the parent's minor goes first).

Both charts default ``version`` and most real pools leave it out, so an omitted minor is never a
refusal. A CREATE that gets or names a class has the parent's minor written by the mutation
(with a warning); where the parent states none (or is missing), the chart's default. A pool
without a class stays as written: the chart renders it with its own default. Every row runs
the mutation twice to prove it idempotent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.builders import ABSENT, apply_patch, make_cluster, make_pool, make_release, make_state
from workerclass import admit, resolve
from workerclass.admission import mutate

PATH = "/spec/version"


def _parent_without_version() -> dict[str, Any]:
    cluster = make_cluster()
    del cluster["spec"]["version"]
    return cluster


@dataclass(frozen=True)
class Row:
    id: str
    request: dict[str, Any]
    parent: str | None = "v1.34"  # the parent's spec.version; None: the parent states none
    written: str | None = None  # the minor the mutation writes; None: no version op
    warned: str = ""  # a word the warning must hold


ROWS = [
    Row(
        "omitted-class-omitted-takes-parent",
        {"version": ABSENT, "workerClassName": ABSENT},
        written="v1.34",
        warned="parent",
    ),
    Row(
        "omitted-class-named-takes-parent",
        {"version": ABSENT, "workerClassName": "talos"},
        written="v1.34",
        warned="parent",
    ),
    Row("empty-takes-parent", {"version": "", "workerClassName": "kairos"}, written="v1.34", warned="parent"),
    Row("null-takes-parent", {"version": None}, written="v1.34", warned="parent"),
    Row("parent-states-none-takes-chart-default", {"version": ABSENT}, parent=None, written="v1.35", warned="chart"),
    Row("set-is-kept", {"version": "v1.33"}, written=None),
]


def _state(parent: str | None) -> Any:
    cluster = make_cluster(version=parent) if parent is not None else _parent_without_version()
    return make_state(clusters=[cluster])


@pytest.mark.parametrize("row", ROWS, ids=[row.id for row in ROWS])
def test_create_writes_the_minor(row: Row) -> None:
    state = _state(row.parent)
    pool = make_pool(**row.request)
    decision = admit(state, "CREATE", pool)
    assert decision.allowed, [str(v) for v in decision.denials]
    ops = [op for op in decision.patch if op["path"] == PATH]
    if row.written is None:
        assert ops == []
        return
    assert ops == [{"op": "add", "path": PATH, "value": row.written}]
    patched = apply_patch(pool, decision.patch)
    assert patched["spec"]["version"] == row.written
    assert decision.object is not None and decision.object["spec"]["version"] == row.written
    said = [w for w in decision.warnings if "spec.version" in w]
    assert len(said) == 1 and row.written in said[0] and row.warned in said[0]
    again = admit(state, "CREATE", patched)
    assert again.patch == [] and again.allowed
    assert resolve(state, patched).kubernetes_version.startswith(row.written + ".")


def test_classless_pool_stays_as_written() -> None:
    """A CREATE that stays classless (a HelmRelease writer: nothing mutates it) keeps no version."""
    state = _state("v1.34")
    release = make_release(version=ABSENT)
    decision = admit(state, "CREATE", release)
    assert decision.allowed and decision.patch == []


def test_update_is_not_given_a_minor() -> None:
    """Only a CREATE writes the minor: a stored pool's values are not rewritten on UPDATE."""
    state = _state("v1.34")
    pool = make_pool(version=ABSENT)
    decision = mutate(state, "UPDATE", pool, pool)
    assert all(op["path"] != PATH for op in decision.patch)


@dataclass(frozen=True)
class Stored:
    id: str
    obj: dict[str, Any] = field(default_factory=dict)


STORED = [
    Stored("classified-pool", make_pool(version=ABSENT)),
    Stored("classified-release", make_release(version=ABSENT, workerClassName="talos")),
    Stored("kairos-pool", make_pool(version=ABSENT, workerClassName="kairos")),
]


@pytest.mark.parametrize("case", STORED, ids=[case.id for case in STORED])
def test_omitted_minor_is_never_refused(case: Stored) -> None:
    """Stored without a minor under a parent that states none: the chart's default, never ``Invalid``."""
    state = make_state([case.obj], clusters=[_parent_without_version()])
    decision = admit(state, "UPDATE", case.obj, case.obj)
    assert not [v for v in decision.denials if v.field.endswith(".version")], [str(v) for v in decision.denials]
    assert resolve(state, case.obj).kubernetes_version.startswith("v1.35.")
