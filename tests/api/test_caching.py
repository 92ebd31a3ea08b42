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


def test_the_wrappers_of_one_and_two_parameters_keep_short_calls_only() -> None:
    seen: list[object] = []

    @short_cache(maxsize=8)
    def one(text: str) -> int:
        seen.append(text)
        return len(text)

    @short_cache(maxsize=8)
    def two(text: str, other: tuple[str, ...]) -> int:
        seen.append((text, other))
        return len(text) + len(other)

    long = "y" * (SHORT_TEXT + 1)
    assert [one("ab"), one("ab"), one(long), one(long)] == [2, 2, SHORT_TEXT + 1, SHORT_TEXT + 1]
    assert [two("a", ("b",)), two("a", ("b",)), two("a", (long,)), two("a", (long,))] == [2, 2, 2, 2]
    assert seen == ["ab", long, long, ("a", ("b",)), ("a", (long,)), ("a", (long,))]
    assert one.cache_info().currsize == 1 and two.cache_info().currsize == 1  # type: ignore[attr-defined]
    assert one.__name__ == "one" and two.__doc__ is None
