"""``@record``: a frozen, typed result class without importing ``dataclasses``.

The repeat inspection (``elfcache``) must come back in a few milliseconds in a new process, and
``import dataclasses`` alone measured 17-29 ms on the 2-core development machine (it imports
``inspect``), ``import typing`` 17 ms. The result classes on that path (``Release``, ``ElfInfo``,
``GpuCode`` and theirs) are therefore named tuples built from the class's annotations: immutable,
hashable, picklable, with the class's own methods and properties. Type checkers see them as frozen
dataclasses (PEP 681 ``dataclass_transform``); ``report.to_jsonable`` turns them into objects.
Everything else in cudnnload uses frozen dataclasses.
"""

from __future__ import annotations

from collections import namedtuple

TYPE_CHECKING = False  # typing is not imported at run time; type checkers treat this name as true
if TYPE_CHECKING:
    from typing import TypeVar, dataclass_transform

    T = TypeVar("T")
else:
    def dataclass_transform(**_: object) -> object:
        return lambda function: function


@dataclass_transform(frozen_default=True, order_default=True)
def record(cls: type[T]) -> type[T]:
    """Turn ``cls`` (annotated fields, optional defaults, methods) into a named-tuple class."""
    names = tuple(cls.__dict__.get("__annotations__", {}))
    defaults = [cls.__dict__[name] for name in names if name in cls.__dict__]
    if any(name not in cls.__dict__ for name in names[len(names) - len(defaults):]):
        raise TypeError(f"{cls.__name__}: fields with defaults must come last")
    base = namedtuple(cls.__name__, names, defaults=defaults or None)  # type: ignore[misc]
    # __annotations__ stays: the field types, which cachedir.revive checks what it reads against
    namespace = {key: value for key, value in cls.__dict__.items()
                 if key not in names and key not in ("__dict__", "__weakref__")}
    namespace["__slots__"] = ()
    made = type(cls.__name__, (base,), namespace)
    made.__qualname__, made.__module__ = cls.__qualname__, cls.__module__
    return made  # type: ignore[return-value]


def is_record(value: object) -> bool:
    return isinstance(value, tuple) and hasattr(value, "_fields")
