"""A cache of a function whose arguments a tenant writes keeps short calls only."""

from __future__ import annotations

from workerclass.api.caching import SHORT_TEXT, is_short, short_cache


def test_short_calls_are_kept_and_long_ones_computed_each_time() -> None:
    calls: list[tuple[object, ...]] = []

    @short_cache(maxsize=8)
    def double(text: str, times: int = 2) -> str:
        calls.append((text, times))
        return text * min(times, 3)

    long = "x" * (SHORT_TEXT + 1)
    assert double("ab") == double("ab") == "abab"
    assert double(long) == double(long) == long * 2
    assert double("ab", times=3) == double("ab", times=3) == "ababab"
    assert double("a", times=2**70) == double("a", times=2**70) == "aaa"  # computed, never kept
    assert calls.count(("a", 2**70)) == 2
    assert calls.count(("ab", 2)) == 1 and calls.count((long, 2)) == 2 and calls.count(("ab", 3)) == 1
    assert double.cache_info().currsize == 2  # type: ignore[attr-defined]
    double.cache_clear()  # type: ignore[attr-defined]
    assert double.cache_info().currsize == 0  # type: ignore[attr-defined]


def test_what_counts_as_short() -> None:
    assert is_short("x" * SHORT_TEXT) and not is_short("x" * (SHORT_TEXT + 1))
    assert is_short(((True, "a"), ("b", 1.5), None)) and not is_short((("a", "x" * 1000),))
    assert is_short(2**63) and not is_short(2**64) and not is_short(-(2**64))
    assert not is_short(["a"]) and not is_short(object())  # only what cannot hold much
