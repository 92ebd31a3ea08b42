"""Bounded caches of pure functions whose arguments a tenant writes.

``functools.lru_cache`` bounds how many calls it keeps, not how large: a cache of 4,096 entries
keyed by strings of a request (a map key, a quantity, an image) keeps up to 4,096 requests' worth of
text, 4 GiB at a megabyte each, for the life of the webhook or the controller that every tenant
shares. :func:`short_cache` keeps only calls whose arguments are short (strings of at most
:data:`SHORT_TEXT` characters, integers within 64 bits, floats, booleans, None, and tuples of such);
any other call is computed and not kept. The usual arguments (field names, quantities, versions) are
a few characters, so the cache serves them as before, and it holds at most ``maxsize`` entries of a
few hundred bytes each.

Its edge: caching only; whether a function is pure is its author's claim.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar, cast

__all__ = ["SHORT_TEXT", "is_short", "short_cache"]

#: the longest string a cached call keeps (a label key's 317 characters aside, every key the
#: rules cache is a field name, a quantity, a version or an image of a few dozen)
SHORT_TEXT = 256
_SMALL = 1 << 64

F = TypeVar("F", bound=Callable[..., Any])


def is_short(value: object) -> bool:
    """Whether ``value`` may be kept as a cache's key (see the module's docstring)."""
    kind = value.__class__
    if kind is str:
        return len(cast(str, value)) <= SHORT_TEXT
    if kind is int:
        return -_SMALL < cast(int, value) < _SMALL
    if kind is tuple:
        items = cast(tuple[object, ...], value)
        return len(items) <= SHORT_TEXT and all(is_short(item) for item in items)
    return value is None or kind is bool or kind is float


def short_cache(maxsize: int) -> Callable[[F], F]:
    """``functools.lru_cache(maxsize)`` for the calls whose arguments are all short (:func:`is_short`);
    the others are computed each time. ``cache_info`` and ``cache_clear`` are the cache's.

    A function of one or two parameters, called positionally (every one these caches serve), gets
    a wrapper of its own arity: the check then costs about 40 ns a call beside the cache's 80,
    where a wrapper of ``*args, **kwargs`` costs 220."""

    def decorate(function: F) -> F:
        cached = functools.lru_cache(maxsize=maxsize)(function)
        parameters = inspect.signature(function).parameters.values()
        plain = all(
            parameter.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD and parameter.default is inspect.Parameter.empty
            for parameter in parameters
        )
        arity = len(parameters) if plain else None
        make = _one if arity == 1 else _two if arity == 2 else _any
        call = make(function, cached)
        wrapper: Any = functools.update_wrapper(call, function)
        wrapper.cache_info = cached.cache_info
        wrapper.cache_clear = cached.cache_clear
        return cast(F, wrapper)

    return decorate


def _one(function: Callable[..., Any], cached: Callable[..., Any]) -> Callable[..., Any]:
    def call(arg: Any, /) -> Any:
        if (arg.__class__ is str and len(arg) <= SHORT_TEXT) or is_short(arg):
            return cached(arg)
        return function(arg)

    return call


def _two(function: Callable[..., Any], cached: Callable[..., Any]) -> Callable[..., Any]:
    def call(first: Any, second: Any, /) -> Any:
        if ((first.__class__ is str and len(first) <= SHORT_TEXT) or is_short(first)) and (
            (second.__class__ is str and len(second) <= SHORT_TEXT) or is_short(second)
        ):
            return cached(first, second)
        return function(first, second)

    return call


def _any(function: Callable[..., Any], cached: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        for arg in args:
            if not (arg.__class__ is str and len(arg) <= SHORT_TEXT) and not is_short(arg):
                return function(*args, **kwargs)
        for arg in kwargs.values():
            if not is_short(arg):
                return function(*args, **kwargs)
        return cached(*args, **kwargs)

    return call
