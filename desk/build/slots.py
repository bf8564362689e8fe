"""Makers of frozen, slotted dataclasses that set each slot directly, for the reader of
the saved state, which makes a record of each of 100,000 stories on every build.

A frozen dataclass's `__init__` sets each field through `object.__setattr__` (its own
`__setattr__` refuses), three to four times the cost of the slot's own setter: at
100,000 stories, 0.5 s of an hourly build went to that alone. A maker takes every field
in order, positionally, and makes the same object: equal, hashing the same, as frozen.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def slot_maker(cls: type[T]) -> Callable[..., T]:
    """A function of every field of `cls`, in order, that makes the object its
    `__init__` would: for a frozen dataclass with slots and no `__post_init__` (raises
    TypeError for any other class)."""
    params = getattr(cls, "__dataclass_params__", None)
    if (params is None or not params.frozen or "__slots__" not in cls.__dict__
            or hasattr(cls, "__post_init__")):
        raise TypeError(f"{cls.__name__} is not a frozen, slotted dataclass")
    names = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
    scope: dict[str, Any] = {"new": object.__new__, "cls": cls}
    for i, name in enumerate(names):
        scope[f"set{i}"] = cls.__dict__[name].__set__  # the slot's own setter
    # Written out field by field (as dataclasses writes __init__): a loop over the
    # setters costs twice as much.
    lines = [f"def make({', '.join(f'v{i}' for i in range(len(names)))}):",
             "    obj = new(cls)",
             *(f"    set{i}(obj, v{i})" for i in range(len(names))),
             "    return obj"]
    exec("\n".join(lines), scope)  # noqa: S102 - made from field positions only
    maker: Callable[..., T] = scope["make"]
    return maker
