"""Frozen records built at the cost of plain ones.

A frozen dataclass's ``__init__`` sets each field through ``object.__setattr__`` (its own
``__setattr__`` refuses every write): about 120 ns a field, against 20 for a plain store. The
records a decision or a resolution builds per pool (its parse, its effective settings, the chart's
input and sizing, the decision itself) hold some hundred fields between them, so that is several
microseconds of every request.

:func:`fast_init` keeps the class exactly as :func:`dataclasses.dataclass` made it (frozen, slotted,
the same fields, equality, hash, repr and ``replace``) and gives it an ``__init__`` that lends the
new instance, for the time of its stores, to a twin class with the same slots and no
``__setattr__`` of its own: the stores are plain ones, then the instance is the frozen class's
again, before ``__post_init__`` and before anyone else sees it. What the generated ``__init__``
does not reproduce exactly (an ``InitVar``, a base class, a metaclass, a weakref slot, a field
named ``self`` or with a leading underscore) leaves the class with the dataclass's own.

Its edge: a class in, the same class out.
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Any, TypeVar

__all__ = ["fast_init"]

_T = TypeVar("_T")


class _Factory:
    """The default of a parameter whose field has a ``default_factory`` (the factory runs when
    it is passed): shown as the dataclass shows it."""

    def __repr__(self) -> str:
        return "<factory>"


_FACTORY = _Factory()


def fast_init(cls: type[_T]) -> type[_T]:
    """``cls`` (a ``@dataclass(frozen=True, slots=True)`` class) with the fast ``__init__``
    described above, or unchanged when its shape is one the generated one would not reproduce.

    The generated ``__init__`` is made as the dataclass makes its own: in the class's module
    globals (its annotations resolve as the dataclass's do), the defaults and factories bound in a
    closure. An instance of a subclass is built by the dataclass's own ``__init__`` (the twin lends
    the record's layout, not the subclass's)."""
    params = getattr(cls, "__dataclass_params__", None)
    own = cls.__dict__.get("__slots__")
    if params is None or not params.frozen or not params.init or own is None or cls.__bases__ != (object,):
        return cls
    if type(cls) is not type or "__weakref__" in own:
        return cls  # CPython refuses __class__ assignment between classes with a weakref slot
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    declared = getattr(cls, "__dataclass_fields__", {})
    if len(declared) != len(fields):
        return cls  # an InitVar or ClassVar pseudo-field
    if any(field.name == "self" or field.name.startswith("_") for field in fields):
        return cls  # a name the generated text could not take as a parameter of its own
    original = cls.__init__
    twin = type(f"_{cls.__name__}Stores", (), {"__slots__": own, "__module__": cls.__module__})
    bound: dict[str, Any] = {
        "_twin": twin,
        "_cls": cls,
        "_set": object.__setattr__,
        "_FACTORY": _FACTORY,
        "_original": original,
    }
    positional: list[str] = []  # the parameters, as written in the signature
    keyword: list[str] = []
    passed: list[str] = []  # the same, as passed on to the dataclass's own __init__
    body = ["        _set(self, '__class__', _twin)"]
    for field in fields:
        name = field.name
        if not field.init:  # set as the dataclass sets it: its default, its factory's, else not at all
            if field.default is not dataclasses.MISSING:
                bound[f"_default_{name}"] = field.default
                body.append(f"        self.{name} = _default_{name}")
            elif field.default_factory is not dataclasses.MISSING:
                bound[f"_factory_{name}"] = field.default_factory
                body.append(f"        self.{name} = _factory_{name}()")
            continue
        if field.default is not dataclasses.MISSING:
            bound[f"_default_{name}"] = field.default
            parameter = f"{name}=_default_{name}"
        elif field.default_factory is not dataclasses.MISSING:
            bound[f"_factory_{name}"] = field.default_factory
            parameter = f"{name}=_FACTORY"
            body.append(f"        if {name} is _FACTORY: {name} = _factory_{name}()")
        else:
            parameter = name
        (keyword if field.kw_only else positional).append(parameter)
        passed.append(f"{name}={name}")
        body.append(f"        self.{name} = {name}")
    body.append("        self.__class__ = _cls")
    if hasattr(cls, "__post_init__"):
        body.append("        self.__post_init__()")
    parameters = [*positional, *(["*", *keyword] if keyword else [])]
    source = (
        f"def __create_fn__({', '.join(bound)}):\n"
        f"    def __init__({', '.join(['self', *parameters])}):\n"
        "        if type(self) is not _cls:\n"
        f"            return _original(self, {', '.join(passed)})\n" + "\n".join(body) + "\n"
        "    return __init__\n"
    )
    module = sys.modules.get(cls.__module__)
    scope: dict[str, Any] = {}
    exec(source, module.__dict__ if module is not None else {}, scope)
    init = scope["__create_fn__"](**bound)
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__doc__ = original.__doc__
    init.__annotations__ = dict(original.__annotations__)  # the same signature, shown alike
    init._dataclass_init = original  # the dataclass's own, for the tests that compare them
    cls.__init__ = init  # type: ignore[method-assign]
    return cls
