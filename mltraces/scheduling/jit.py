"""numba's ``njit`` when numba is installed, else a decorator that changes nothing.

The compiled cores (:mod:`.efcore`, :mod:`.gandivacore`) are written so that
the same source runs as plain Python with the same results, only slower;
``NUMBA_DISABLE_JIT=1`` does the same with numba installed, which is how the
tests compare the two.
"""

from __future__ import annotations

from pathlib import Path

try:  # pragma: no cover - exercised by whichever environment runs the tests
    from numba import njit
except ImportError:  # pragma: no cover

    def njit(*args, **kwargs):
        """No numba: run the functions as plain Python."""
        if len(args) == 1 and callable(args[0]) and not kwargs:
            return args[0]
        return lambda function: function



def in_cache(*functions) -> bool:
    """Whether numba's on-disk cache already holds each of ``functions``.

    False means the next call compiles first, which the CLI says rather than
    look stuck. Plain Python (no numba, or ``NUMBA_DISABLE_JIT``) has nothing
    to compile, so that is True.
    """
    for function in functions:
        folder = getattr(getattr(function, "_cache", None), "cache_path", None)
        if folder is None:
            continue
        code = function.py_func
        stem = f"{code.__module__.rsplit('.', 1)[-1]}.{code.__name__}"
        if not any(Path(folder).glob(f"{stem}-*.nbi")):
            return False
    return True


__all__ = ["in_cache", "njit"]
