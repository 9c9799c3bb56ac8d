"""What Cython's pure Python mode asks of ``cython`` at run time, for when Cython is absent.

The compiled cores (see :mod:`mltraces.compiled`) are Cython's pure-Python-mode source:
type annotations (never evaluated: the modules use postponed annotations) and
a few decorators. Compiled, none of this is used; interpreted, the decorators
must exist and change nothing. Cython is a build requirement only, so an
installation whose extensions could not be built runs the cores with this
stand-in instead of the real ``cython`` module (which behaves the same).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

compiled = False


def _unchanged(function: Any) -> Any:
    return function


def _with_options(*args: Any, **kwargs: Any) -> Callable[[Any], Any]:
    return _unchanged


# decorators that mark a function or class for the compiler
cfunc = ccall = inline = cclass = final = _unchanged
# decorators that take arguments first (cython.locals(x=...), cython.boundscheck(False), ...)
locals = exceptval = boundscheck = wraparound = cdivision = _with_options


def declare(kind: Any, value: Any = None, **options: Any) -> Any:
    """A typed module-level constant (``FREE = cython.declare(i64, 0)``): its value; a
    field of a ``cclass`` (``x = cython.declare(i64, visibility="public")``): None until
    ``__init__`` sets it."""
    return value


def typedef(kind: Any, name: str | None = None) -> Any:
    """A named type (``i64 = cython.typedef(cython.longlong)``): only annotations use it."""
    return kind


def __getattr__(name: str) -> Any:
    """Type names (``cython.longlong``, ``cython.double``): placeholders nothing reads."""
    if name.startswith("__"):
        raise AttributeError(name)
    return name
