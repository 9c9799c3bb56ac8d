"""The little of ``cython`` that :mod:`.cachecore` uses at run time, for when Cython is absent.

Cython is a build requirement only: an installation whose extension could not
be built runs :mod:`.cachecore` as Python, and without Cython installed its
decorators and type names come from here (they change nothing). The
scheduling engine carries the same stand-in for its cores; this one is the
prefix cache's own, so the two engines import nothing from each other.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

compiled = False


def _unchanged(function: Any) -> Any:
    return function


def _with_options(*args: Any, **kwargs: Any) -> Callable[[Any], Any]:
    return _unchanged


cfunc = ccall = inline = cclass = final = _unchanged
locals = exceptval = boundscheck = wraparound = cdivision = _with_options


def declare(kind: Any, value: Any = None, **options: Any) -> Any:
    """A typed constant: its value (a ``cclass`` field: None until ``__init__`` sets it)."""
    return value


def typedef(kind: Any, name: str | None = None) -> Any:
    """A named type: only annotations, which are never evaluated, use it."""
    return kind


def __getattr__(name: str) -> Any:
    """Type names (``cython.longlong``): placeholders nothing reads."""
    if name.startswith("__"):
        raise AttributeError(name)
    return name
