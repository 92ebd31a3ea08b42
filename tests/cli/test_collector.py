"""The collector pause of the one-shot commands: the collector is on again afterwards, nothing is
left frozen, and what the command built is not scanned as young on the way out."""

from __future__ import annotations

import gc
from typing import Any

import pytest

from workerclass.cli.output import collector_paused


def _after(build: int) -> tuple[list[int], bool, int]:
    """The young counts each collection started with from the pause's end, and the collector's
    state just after a pause that built ``build`` tracked containers."""
    started: list[int] = []

    def seen(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            started.append(gc.get_count()[0])

    held: list[list[int]] = []
    with collector_paused():
        held = [[index] for index in range(build)]
        gc.callbacks.append(seen)
    try:
        more = [[index] for index in range(5_000)]  # allocations that reach the young threshold
        enabled, frozen = gc.isenabled(), gc.get_freeze_count()
    finally:
        gc.callbacks.remove(seen)
    del held, more
    return started, enabled, frozen


def test_what_a_command_built_is_not_scanned_as_young_on_the_way_out() -> None:
    assert gc.isenabled()
    started, enabled, frozen = _after(200_000)
    assert enabled
    assert frozen == 0  # moved to the oldest generation, not left frozen
    assert started  # the collector runs again
    # every collection after the pause begins with a young generation of normal size, not the
    # 200,000 containers the pause left (each would be scanned)
    assert max(started) < 10_000, started


def test_objects_frozen_by_someone_else_stay_frozen() -> None:
    gc.freeze()
    try:
        before = gc.get_freeze_count()
        _, enabled, frozen = _after(1_000)
        assert enabled
        assert frozen == before
    finally:
        gc.unfreeze()


def test_the_collector_is_back_after_an_error() -> None:
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("boom")
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0
