"""numba's ``njit`` when numba is installed, else a decorator that changes nothing.

The compiled cores (:mod:`.efcore`, :mod:`.gandivacore`) are written so that
the same source runs as plain Python with the same results, only slower;
``NUMBA_DISABLE_JIT=1`` does the same with numba installed, which is how the
tests compare the two.

Also :func:`borrowed` and :func:`keep_alive`, for loops that pass arrays
around. Compiled code counts references to every array it hands to a
function, unpacks from a tuple or slices a row of, and each count is an
atomic instruction: they were over half of ElasticFlow's planner (``perf``
on the Philly replay, 57 % of samples in ``NRT_incref``/``NRT_decref``).
A borrowed view is the same array without an owner, so nothing counts it;
the function that lends it keeps the owner alive until it is done.
"""

from __future__ import annotations

from pathlib import Path

try:  # pragma: no cover - exercised by whichever environment runs the tests
    from numba import config, njit
    from numba.core import cgutils, types
    from numba.extending import intrinsic
    from numba.np.arrayobj import make_array

    if config.DISABLE_JIT:  # intrinsics exist only in compiled code
        intrinsic = None
except ImportError:  # pragma: no cover
    intrinsic = None

    def njit(*args, **kwargs):
        """No numba: run the functions as plain Python."""
        if len(args) == 1 and callable(args[0]) and not kwargs:
            return args[0]
        return lambda function: function


def _lendable(typ) -> bool:
    """Arrays, and tuples (nested) of nothing but arrays."""
    if isinstance(typ, types.Array):
        return True
    return isinstance(typ, types.BaseTuple) and all(_lendable(t) for t in typ)


def _lend(context, builder, typ, value):
    """``value`` with every array's owner (meminfo) and parent object set to null."""
    if isinstance(typ, types.Array):
        source = make_array(typ)(context, builder, value=value)
        view = make_array(typ)(context, builder)
        for field in ("nitems", "itemsize", "data", "shape", "strides"):
            setattr(view, field, getattr(source, field))
        view.meminfo = cgutils.get_null_value(source.meminfo.type)
        view.parent = cgutils.get_null_value(source.parent.type)
        return view._getvalue()
    for i, item in enumerate(typ):
        lent = _lend(context, builder, item, builder.extract_value(value, i))
        value = builder.insert_value(value, lent, i)
    return value


if intrinsic is None:  # plain Python has no reference counts to save

    def borrowed(arrays):
        """The arrays themselves."""
        return arrays

    def keep_alive(owned) -> None:
        """Nothing to do."""

else:

    @intrinsic
    def borrowed(typingctx, arrays):
        """Views of ``arrays`` (an array or a nested tuple of them) that nothing counts.

        Only while their owner lives: the caller keeps it (a function's own
        arguments live until it returns; anything it allocates must reach a
        :func:`keep_alive` after the views' last use). Never return one.
        """
        if not _lendable(arrays):
            return None

        def codegen(context, builder, signature, args):
            return _lend(context, builder, arrays, args[0])

        return arrays(arrays), codegen

    @intrinsic
    def keep_alive(typingctx, owned):
        """Use ``owned`` here, so compiled code releases it no earlier (see :func:`borrowed`)."""

        def codegen(context, builder, signature, args):
            return context.get_dummy_value()

        return types.none(owned), codegen


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


__all__ = ["borrowed", "in_cache", "keep_alive", "njit"]
