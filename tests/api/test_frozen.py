"""Frozen records built at the cost of plain ones: the generated ``__init__`` makes what the
dataclass's own makes (fields, defaults, factories, keyword-only fields, fields left out of
``__init__``, ``__post_init__``), the class stays frozen, and a shape it would not reproduce keeps
the dataclass's ``__init__``. Every frozen, slotted record of the core has it."""

from __future__ import annotations

import copy
import dataclasses
import importlib
import inspect
import pkgutil
import typing
import weakref
from dataclasses import FrozenInstanceError, InitVar, dataclass, field
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import workerclass
from workerclass.api.frozen import fast_init


def _shape() -> type[Any]:
    @dataclass(frozen=True, slots=True)
    class Shape:
        name: str
        count: int = 3
        tags: tuple[str, ...] = ()
        extra: dict[str, int] = field(default_factory=dict)
        derived: str = field(init=False, repr=False, compare=False)
        marker: int = field(init=False, default=7)
        listed: list[int] = field(init=False, default_factory=list)
        flag: bool = field(default=False, kw_only=True)

        def __post_init__(self) -> None:
            object.__setattr__(self, "derived", f"{self.name}:{self.count}")

    return Shape


Plain = _shape()
Fast = fast_init(_shape())

_ARGS = st.fixed_dictionaries(
    {"name": st.text(max_size=5)},
    optional={
        "count": st.integers(),
        "tags": st.tuples(st.text(max_size=3)),
        "extra": st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
        "flag": st.booleans(),
    },
)


def _state(obj: Any) -> dict[str, Any]:
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}


def _is_fast(cls: type[Any]) -> bool:
    return "_twin" in cls.__init__.__code__.co_freevars


def test_the_generated_init_is_the_one_in_use() -> None:
    assert _is_fast(Fast) and not _is_fast(Plain)
    assert str(inspect.signature(Fast)) == str(inspect.signature(Plain))
    assert typing.get_type_hints(Fast.__init__) == typing.get_type_hints(Plain.__init__)


@given(_ARGS)
def test_it_makes_what_the_dataclass_makes(args: dict[str, Any]) -> None:
    fast, plain = Fast(**args), Plain(**args)
    assert type(fast) is Fast
    assert _state(fast) == _state(plain)
    assert repr(fast).replace("Shape", "") == repr(plain).replace("Shape", "")
    assert fast == Fast(**args)
    assert dataclasses.replace(fast, count=1) == Fast(**{**args, "count": 1})


def test_each_default_factory_runs_per_instance_unless_a_value_is_passed() -> None:
    first, second = Fast("a"), Fast("b")
    assert first.extra == {} and first.extra is not second.extra
    assert first.listed == [] and first.listed is not second.listed
    given_extra = {"k": 1}
    assert Fast("c", extra=given_extra).extra is given_extra


def test_it_stays_frozen_hashes_and_copies_as_before() -> None:
    @fast_init
    @dataclass(frozen=True, slots=True)
    class Point:
        x: int
        y: int = 0

    assert hash(Point(1, 2)) == hash((1, 2)) and Point(1) == Point(1, 0) and Point(1) != Point(2)
    obj = Fast("a", 2, flag=True)
    with pytest.raises(FrozenInstanceError):
        obj.name = "b"  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        del obj.count  # type: ignore[misc]
    assert copy.deepcopy(obj) == obj
    with pytest.raises(TypeError):
        Fast()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Fast("a", 1, (), {}, True)  # type: ignore[misc]  # flag is keyword-only


def test_a_shape_it_would_not_reproduce_keeps_the_dataclass_init() -> None:
    @dataclass(frozen=True, slots=True)
    class WithInitVar:
        a: int
        seed: InitVar[int] = 0

        def __post_init__(self, seed: int) -> None:
            pass

    @dataclass(frozen=True, slots=True)
    class Base:
        a: int

    @dataclass(frozen=True, slots=True)
    class Derived(Base):
        b: int = 0

    @dataclass(frozen=True)
    class Unslotted:
        a: int

    @dataclass(slots=True)
    class Mutable:
        a: int

    @dataclass(frozen=True, slots=True, weakref_slot=True)
    class Weak:  # CPython refuses __class__ assignment between classes with a weakref slot
        a: int

    for cls in (WithInitVar, Derived, Unslotted, Mutable, Weak):
        before = cls.__init__
        assert fast_init(cls) is cls and cls.__init__ is before
    weak = Weak(1)
    assert weakref.ref(weak)() is weak


def test_a_subclass_instance_is_built_by_the_dataclass_init() -> None:
    class Slotted(Fast):  # type: ignore[misc,valid-type]
        __slots__ = ()

    class Unslotted(Fast):  # type: ignore[misc,valid-type]
        pass

    for cls in (Slotted, Unslotted):
        obj = cls("a", 2, extra={"k": 1}, flag=True)
        assert type(obj) is cls
        assert _state(obj) == _state(Fast("a", 2, extra={"k": 1}, flag=True))
        with pytest.raises(FrozenInstanceError):
            obj.name = "b"


def _core_records() -> list[type[Any]]:
    core = ("api", "chart", "model", "state", "rules", "resolve", "render", "admission", "violations")
    found = []
    for info in pkgutil.walk_packages(workerclass.__path__, "workerclass."):
        if info.name.split(".")[1] not in core:
            continue
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if isinstance(value, type) and value.__module__ == info.name and dataclasses.is_dataclass(value):
                params = value.__dataclass_params__  # type: ignore[attr-defined]
                if params.frozen and "__slots__" in value.__dict__:
                    found.append(value)
    return found


def test_every_frozen_slotted_record_of_the_core_is_built_by_plain_stores() -> None:
    records = _core_records()
    assert len(records) > 40
    slow = [cls.__qualname__ for cls in records if not _is_fast(cls)]
    assert slow == []
    for cls in records:  # each takes what the dataclass's own took, typed alike
        original = cls.__init__._dataclass_init
        assert str(inspect.signature(cls.__init__)) == str(inspect.signature(original)), cls
        assert _defaults(cls.__init__) == _defaults(original), cls
        assert typing.get_type_hints(cls.__init__) == typing.get_type_hints(original), cls


def _defaults(init: Any) -> tuple[Any, ...]:
    """An ``__init__``'s defaults, a factory's sentinel (each generator has its own) named alike."""

    def shown(value: Any) -> Any:
        return "<factory>" if repr(value) == "<factory>" else value

    keyword = tuple((name, shown(value)) for name, value in (init.__kwdefaults__ or {}).items())
    return tuple(shown(value) for value in init.__defaults__ or ()), keyword


def test_a_module_record_pickles_and_compares_as_before() -> None:
    import pickle

    from workerclass.violations import Violation

    violation = Violation("Invalid", "spec.version", "is not a Kubernetes minor")
    assert pickle.loads(pickle.dumps(violation)) == violation
    assert copy.copy(violation) == violation and hash(copy.copy(violation)) == hash(violation)
