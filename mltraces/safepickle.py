"""A restricted unpickler for AcmeTrace's processed utilization curves (``util_pkl``).

Unpickling runs code: any global a pickle names is imported and may be called,
and even allowed numpy objects can be told to build arrays over uninitialised
memory, to allocate gigabytes or to nest beyond the interpreter's stack. The
``util_pkl`` files only need numpy arrays and dtypes inside lists, plus, in
``util_gpu_pai.pkl``, a pandas Series pickled by pandas 1.x with an
``Int64Index`` (a class pandas 2 removed, so a plain ``pickle.load`` fails even
when one trusts the file).

So this module does not hand the bytes to :mod:`pickle` at all. It runs its own
small stack machine over the ~40 opcodes those files use, in which the allowed
globals are inert stand-ins that only record state. Nothing is ever imported,
no numpy object is ever told to ``__setstate__``, and every array is copied out
of the pickle's own bytes once its shape and plain numeric dtype are checked.
Every count that could grow is bounded by a module constant (``MAX_*`` below);
anything beyond one raises :class:`~mltraces.errors.UnsafePickleError` naming
the file, the value and the limit.

>>> from mltraces.safepickle import safe_loads
>>> import pickle, numpy as np
>>> safe_loads(pickle.dumps([np.arange(3.0)]))
[array([0., 1., 2.])]
>>> safe_loads(pickle.dumps(print))  # doctest: +IGNORE_EXCEPTION_DETAIL
Traceback (most recent call last):
UnsafePickleError: ...
"""

from __future__ import annotations

import math
import os
import pickle
import pickletools
import stat
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mltraces.errors import UnsafePickleError

__all__ = [
    "ALLOWED_GLOBALS",
    "MAX_ARRAY_ELEMENTS",
    "MAX_ARRAY_NDIM",
    "MAX_DEPTH",
    "MAX_INT_BYTES",
    "MAX_OPCODES",
    "MAX_PICKLE_BYTES",
    "MAX_RESULT_ITEMS",
    "PickledSeries",
    "safe_load",
    "safe_loads",
]

# ----------------------------------------------------------------------------- limits
# The real files are at most 81 KB, run at most 400 opcodes and hold 1-d arrays of
# 74 or 1000 points nested one list deep. Each limit leaves ample room for that
# and keeps the worst hostile input at a few MB and a few milliseconds.

#: Largest pickle read, in bytes (12x the largest real file); checked before reading.
MAX_PICKLE_BYTES = 1 << 20
#: Opcodes executed per pickle. Each creates at most one object or reference, so
#: this bounds the objects, memo entries and stack, and the time spent.
MAX_OPCODES = 50_000
#: Nesting of lists/tuples in the result (the real files nest one level).
MAX_DEPTH = 32
#: Items in the result, counting each repeated reference to a shared list again:
#: a list holding the same list twice, 40 times over, would expand to 2**40.
MAX_RESULT_ITEMS = 50_000
#: Elements of one array (the real curves have 1000 points).
MAX_ARRAY_ELEMENTS = 100_000
#: Dimensions of one array (the real curves are 1-d).
MAX_ARRAY_NDIM = 2
#: Length of an integer written with LONG1/LONG4 (no real file needs more than 64 bits).
MAX_INT_BYTES = 8

# Plain numeric dtypes, as numpy's ``dtype.__reduce__`` names them. Anything else
# (object, void, structured, subarray, strings, dates) is refused.
_DTYPE_CODES = frozenset({"b1", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f4", "f8"})
_SHOW_CHARS = 60


class _Refused(Exception):
    """A check failed; :func:`safe_loads` prefixes the file name and re-raises it."""


def _show(value: Any, depth: int = 1) -> str:
    """A short description of an untrusted value: never a huge or deeply recursive repr."""
    if value is None or isinstance(value, bool | int | float):
        text = repr(value)
        return text if len(text) <= _SHOW_CHARS else text[:_SHOW_CHARS] + "..."
    if isinstance(value, str | bytes):
        return repr(value[:_SHOW_CHARS]) + ("..." if len(value) > _SHOW_CHARS else "")
    if type(value) in (tuple, list) and (depth > 0 or not value) and len(value) <= 8:
        inner = ", ".join(_show(item, depth - 1) for item in value)
        if type(value) is list:
            return f"[{inner}]"
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, tuple | list | dict):
        return f"<{type(value).__name__} of {len(value)} items>"
    return f"<{getattr(value, 'what', type(value).__name__)}>"


# ----------------------------------------------------------------------------- stand-ins


@dataclass(frozen=True, eq=False)
class _Global:
    """An allowed global as the machine sees it: a name and the only calls it permits."""

    name: str
    call: Callable[[tuple[Any, ...]], Any] | None = None  # REDUCE
    new: Callable[[tuple[Any, ...]], Any] | None = None  # NEWOBJ

    @property
    def what(self) -> str:
        return self.name


class _Stub:
    """An inert object the machine builds; it accepts exactly one BUILD (its state)."""

    what = "object"
    built = False

    def build(self, state: Any, machine: _Machine) -> None:
        if self.built:
            raise _Refused(f"BUILD on a {self.what} whose state is already set; refused")
        self.built = True
        self.set_state(state, machine)

    def set_state(self, state: Any, machine: _Machine) -> None:
        raise NotImplementedError


class _DtypeStub(_Stub):
    """Stands for ``numpy.dtype(code)`` until BUILD supplies its byte order."""

    what = "numpy dtype"

    def __init__(self, code: str) -> None:
        self.code = code
        self.dtype: np.dtype | None = None

    def set_state(self, state: Any, machine: _Machine) -> None:
        """Accept only numpy's state for a plain type: the type code decides everything else."""
        plain = (type(state) is tuple and len(state) == 8 and state[0] == 3
                 and state[2] is None and state[3] is None and state[4] is None
                 and all(type(n) is int for n in state[5:]) and state[5:] == (-1, -1, 0))
        if not plain:
            raise _Refused(
                f"dtype {self.code!r} state {_show(state)} refused: only numpy's plain "
                "(3, byte order, None, None, None, -1, -1, 0) is allowed (no subarray, "
                "fields, sizes or flags)")
        dtype = np.dtype(self.code)
        orders = ("|",) if dtype.itemsize == 1 else ("<", ">")
        if state[1] not in orders:
            raise _Refused(f"dtype {self.code!r} byte order {_show(state[1])} refused: "
                           f"expected one of {', '.join(orders)}")
        self.dtype = dtype.newbyteorder(state[1])

    def resolved(self) -> np.dtype:
        if self.dtype is None:
            raise _Refused(f"dtype {self.code!r} was used before its state was set; refused")
        return self.dtype


class _ArrayStub(_Stub):
    """Stands for the array ``_reconstruct`` starts; BUILD fills it from the pickle's bytes."""

    what = "numpy array"

    def __init__(self) -> None:
        self.array: np.ndarray | None = None

    def set_state(self, state: Any, machine: _Machine) -> None:
        if type(state) is not tuple or len(state) != 5 or type(state[0]) is not int \
                or state[0] != 1:
            raise _Refused(f"array state {_show(state)} refused: expected numpy's "
                           "(1, shape, dtype, fortran_order, data)")
        _, shape, dtype, fortran, raw = state
        if not isinstance(dtype, _DtypeStub):
            raise _Refused(f"array dtype {_show(dtype)} refused: not a numpy dtype")
        resolved = dtype.resolved()
        count = _element_count(shape)
        if type(fortran) is not bool:
            raise _Refused(f"array order flag {_show(fortran)} refused: not a bool")
        if type(raw) is not bytes:
            raise _Refused(f"array data {_show(raw)} refused: not bytes from the pickle")
        need = count * resolved.itemsize
        if len(raw) != need:
            raise _Refused(
                f"array of shape {_show(shape)} and dtype {resolved.str} needs {need} bytes "
                f"but the pickle supplies {len(raw)}: refused, an array's buffer must come "
                "entirely from the pickle's own bytes")
        machine.charge_array(need)
        self.array = _materialise(raw, resolved, shape, fortran)

    def result(self) -> np.ndarray:
        if self.array is None:
            raise _Refused("numpy array without data (no BUILD gave it bytes); refused")
        return self.array


def _element_count(shape: Any) -> int:
    """Elements in ``shape``, refusing odd types, negative sizes and anything over the limits."""
    if type(shape) is not tuple:
        raise _Refused(f"array shape {_show(shape)} refused: not a tuple")
    if len(shape) > MAX_ARRAY_NDIM:
        raise _Refused(f"array shape with {len(shape)} dimensions exceeds the limit of "
                       f"{MAX_ARRAY_NDIM} (MAX_ARRAY_NDIM); refused")
    if not all(type(n) is int and n >= 0 for n in shape):
        raise _Refused(f"array shape {_show(shape)} refused: sizes must be integers >= 0")
    count = math.prod(shape)
    if count > MAX_ARRAY_ELEMENTS:
        raise _Refused(f"array shape {_show(shape)} holds {count} elements, more than the "
                       f"limit of {MAX_ARRAY_ELEMENTS} (MAX_ARRAY_ELEMENTS); refused")
    return count


def _materialise(raw: bytes, dtype: np.dtype, shape: tuple[int, ...], fortran: bool
                 ) -> np.ndarray:
    """A new native-order array copied from ``raw`` (sizes already checked)."""
    if dtype.kind == "b":  # any byte other than 0 would be a bool numpy never writes
        flat = np.frombuffer(raw, dtype=np.uint8) != 0
    else:
        flat = np.frombuffer(raw, dtype=dtype).astype(dtype.newbyteorder("="))
    return flat.reshape(shape, order="F" if fortran else "C")


class _BlockManagerStub(_Stub):
    """Records the state pandas 1.x pickles for a ``SingleBlockManager``."""

    what = "pandas SingleBlockManager"

    def set_state(self, state: Any, machine: _Machine) -> None:
        self.state = state

    def values_and_index(self) -> tuple[np.ndarray, np.ndarray]:
        """The single block's values and the axis labels, from either state layout."""
        state = getattr(self, "state", None)
        if type(state) is tuple and state and type(state[-1]) is dict:
            layout = state[-1].get("0.14.1")
            if type(layout) is dict:
                axes, blocks = layout.get("axes"), layout.get("blocks")
                if type(axes) is list and type(blocks) is list and len(axes) == 1 \
                        and len(blocks) == 1 and type(blocks[0]) is dict:
                    return (_numeric_array(blocks[0].get("values"), "series values"),
                            _numeric_array(axes[0], "series index"))
        if type(state) is tuple and len(state) >= 2:
            axes, values = state[0], state[1]
            if type(axes) is list and type(values) is list and len(axes) >= 1 \
                    and len(values) == 1:
                return (_numeric_array(values[0], "series values"),
                        _numeric_array(axes[0], "series index"))
        raise _Refused("pandas SingleBlockManager state has an unexpected layout")


class _SeriesStub(_Stub):
    """Records the state pandas 1.x pickles for a ``Series`` (built via NEWOBJ + BUILD)."""

    what = "pandas Series"

    def set_state(self, state: Any, machine: _Machine) -> None:
        if type(state) is not dict or not isinstance(state.get("_mgr"), _BlockManagerStub):
            raise _Refused("pandas Series state has an unexpected layout")
        self.state = state

    def to_public(self) -> PickledSeries:
        state = getattr(self, "state", None)
        if state is None:
            raise _Refused("pandas Series without state; refused")
        values, index = state["_mgr"].values_and_index()
        name = state.get("name")
        if name is not None and type(name) is not str:
            raise _Refused(f"Series name {_show(name)} is not a string")
        return PickledSeries(name, index, values)


class PickledSeries:
    """A pandas 1.x Series read back without pandas: name, index and values arrays."""

    def __init__(self, name: str | None, index: np.ndarray, values: np.ndarray) -> None:
        self.name = name
        self.index = index
        self.values = values

    def to_pandas(self) -> Any:
        """The equivalent ``pandas.Series`` under the installed pandas."""
        import pandas as pd

        return pd.Series(self.values, index=pd.Index(self.index), name=self.name)

    def __repr__(self) -> str:
        return f"PickledSeries(name={self.name!r}, n={len(self.values)})"


def _numeric_array(value: Any, what: str) -> np.ndarray:
    if not isinstance(value, _ArrayStub):
        raise _Refused(f"{what} is not a numeric numpy array ({_show(value)})")
    return value.result()


# ----------------------------------------------------------------------------- allowed calls


def _args(args: Any, name: str, low: int, high: int) -> tuple[Any, ...]:
    if type(args) is not tuple or not low <= len(args) <= high:
        raise _Refused(f"{name} called with arguments {_show(args)}; refused")
    return args


def _reconstruct(args: tuple[Any, ...]) -> _ArrayStub:
    """numpy's ``_reconstruct(ndarray, (0,), b'b')``: an empty array BUILD will fill."""
    subtype, shape, dtype = _args(args, "_reconstruct", 3, 3)
    if subtype is not _NDARRAY:
        raise _Refused(f"array subtype {_show(subtype)} is not numpy.ndarray")
    if type(shape) is not tuple or len(shape) != 1 or type(shape[0]) is not int or shape[0]:
        raise _Refused(f"array shape {_show(shape)} is not numpy's (0,) placeholder")
    if dtype not in (b"b", "b"):
        raise _Refused(f"array dtype {_show(dtype)} is not numpy's b'b' placeholder")
    return _ArrayStub()


def _dtype(args: tuple[Any, ...]) -> _DtypeStub:
    """``numpy.dtype(code, False, True)`` for the plain numeric codes only."""
    args = _args(args, "numpy.dtype", 1, 3)
    spec, flags = args[0], args[1:]  # (align, copy): numpy writes (code, False, True)
    if type(spec) is not str or spec not in _DTYPE_CODES:
        raise _Refused(f"dtype {_show(spec)} refused: only plain numeric dtypes are allowed "
                       f"({', '.join(sorted(_DTYPE_CODES))})")
    if not all(type(flag) is bool for flag in flags) or flags[:1] == (True,):
        raise _Refused(f"dtype {spec!r} with arguments {_show(args)} refused: numpy writes "
                       f"({spec!r}, False, True)")
    return _DtypeStub(spec)


def _slice(args: tuple[Any, ...]) -> slice:
    """``slice(start, stop, step)`` with integer or None bounds (pandas' mgr_locs)."""
    bounds = _args(args, "slice", 1, 3)
    if not all(b is None or type(b) is int for b in bounds):
        raise _Refused(f"slice{_show(bounds)} refused: bounds must be integers or None")
    return slice(*bounds)


def _new_index(args: tuple[Any, ...]) -> _ArrayStub:
    """pandas' index factory, reduced to the index values (an array checked later)."""
    cls, state = _args(args, "_new_Index", 2, 2)
    if cls is not _INT64INDEX or type(state) is not dict \
            or not isinstance(state.get("data"), _ArrayStub):
        raise _Refused(f"unexpected index reconstruction {_show(cls)}")
    return state["data"]


def _no_args(stub: type[_Stub]) -> Callable[[tuple[Any, ...]], _Stub]:
    def new(args: tuple[Any, ...]) -> _Stub:
        _args(args, stub.what, 0, 0)
        return stub()

    return new


_NDARRAY = _Global("numpy.ndarray")  # only ever _reconstruct's subtype: never called
_INT64INDEX = _Global("pandas Int64Index")  # only ever passed to _new_Index

# (module, name) -> the stand-in the machine uses. Both numpy 1.x and 2.x module
# paths are listed because the writer's numpy version decides the path.
ALLOWED_GLOBALS: dict[tuple[str, str], _Global] = {
    ("numpy.core.multiarray", "_reconstruct"): _Global("_reconstruct", call=_reconstruct),
    ("numpy._core.multiarray", "_reconstruct"): _Global("_reconstruct", call=_reconstruct),
    ("numpy", "ndarray"): _NDARRAY,
    ("numpy", "dtype"): _Global("numpy.dtype", call=_dtype),
    ("builtins", "slice"): _Global("slice", call=_slice),
    ("pandas.core.series", "Series"): _Global("Series", new=_no_args(_SeriesStub)),
    ("pandas.core.internals.managers", "SingleBlockManager"):
        _Global("SingleBlockManager", new=_no_args(_BlockManagerStub)),
    ("pandas.core.indexes.base", "_new_Index"): _Global("_new_Index", call=_new_index),
    ("pandas.core.indexes.numeric", "Int64Index"): _INT64INDEX,
}


def _find_global(module: str, name: str) -> _Global:
    try:
        return ALLOWED_GLOBALS[(module, name)]
    except KeyError:
        allowed = ", ".join(sorted(f"{m}.{n}" for m, n in ALLOWED_GLOBALS))
        raise _Refused(
            f"refusing to unpickle global {module[:_SHOW_CHARS]}.{name[:_SHOW_CHARS]} "
            f"(nothing was imported or executed). mltraces only allows: {allowed}. If this "
            "file really is an upstream util_pkl file, it changed: report it") from None


# ----------------------------------------------------------------------------- the machine


class _Machine:
    """The pickle stack machine, reduced to the opcodes numpy/pandas pickles of util_pkl use."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0
        self.stack: list[Any] = []
        self.marks: list[list[Any]] = []
        self.memo: dict[int, Any] = {}
        self.array_bytes = 0

    def run(self) -> Any:
        """Execute opcodes up to STOP and return the object on top of the stack."""
        for _ in range(MAX_OPCODES):
            if self.pos >= len(self.data):
                raise _Refused(f"not a readable pickle: it ends at byte {self.pos} without STOP")
            start, code = self.pos, self.data[self.pos]
            self.pos += 1
            if code == pickle.STOP[0]:
                return self.pop()
            handler = _OPCODES.get(code)
            if handler is None:
                op = pickletools.code2op.get(chr(code))
                raise _Refused(f"opcode {op.name if op else 'unknown'} ({code:#04x}) at byte "
                               f"{start} refused: util_pkl files never use it")
            handler(self)
        raise _Refused(f"more than {MAX_OPCODES} opcodes (MAX_OPCODES); refused")

    def take(self, n: int, what: str) -> bytes:
        """The next ``n`` bytes; a length beyond the data is refused before anything is built."""
        if n < 0 or n > len(self.data) - self.pos:
            raise _Refused(f"not a readable pickle: {what} at byte {self.pos} claims {n} bytes "
                           f"but only {len(self.data) - self.pos} remain")
        self.pos += n
        return self.data[self.pos - n:self.pos]

    def uint(self, n: int, what: str) -> int:
        return int.from_bytes(self.take(n, what), "little")

    def line(self, what: str) -> str:
        end = self.data.find(b"\n", self.pos)
        if end < 0:
            raise _Refused(f"not a readable pickle: {what} at byte {self.pos} has no newline")
        text = self.take(end - self.pos, what).decode("ascii")
        self.pos += 1
        return text

    def pop(self) -> Any:
        if not self.stack:
            raise _Refused(f"not a readable pickle: stack underflow at byte {self.pos - 1}")
        return self.stack.pop()

    def pop_n(self, n: int) -> list[Any]:
        if len(self.stack) < n:
            raise _Refused(f"not a readable pickle: stack underflow at byte {self.pos - 1}")
        items = self.stack[len(self.stack) - n:]
        del self.stack[len(self.stack) - n:]
        return items

    def top(self, kind: type, what: str) -> Any:
        if not self.stack or type(self.stack[-1]) is not kind:
            found = _show(self.stack[-1]) if self.stack else "an empty stack"
            raise _Refused(f"{what} at byte {self.pos - 1} on {found} refused: it only "
                           f"applies to a {kind.__name__}")
        return self.stack[-1]

    def pop_mark(self) -> list[Any]:
        if not self.marks:
            raise _Refused(f"not a readable pickle: no MARK for byte {self.pos - 1}")
        items, self.stack = self.stack, self.marks.pop()
        return items

    def put(self, index: int) -> None:
        if index > MAX_OPCODES:
            raise _Refused(f"memo index {index} exceeds the limit of {MAX_OPCODES} "
                           "(MAX_OPCODES); refused")
        if not self.stack:
            raise _Refused(f"not a readable pickle: memo store on an empty stack at byte "
                           f"{self.pos - 1}")
        self.memo[index] = self.stack[-1]

    def get(self, index: int) -> None:
        if index not in self.memo:
            raise _Refused(f"not a readable pickle: memo index {index} was never stored")
        self.stack.append(self.memo[index])

    def charge_array(self, size: int) -> None:
        """Arrays may not hold more bytes than the pickle has: no bytes object serves twice."""
        self.array_bytes += size
        if self.array_bytes > len(self.data):
            raise _Refused(f"arrays hold {self.array_bytes} bytes, more than the "
                           f"{len(self.data)}-byte pickle supplies; refused")


_OPCODES: dict[int, Callable[[_Machine], None]] = {}


def _op(*opcodes: bytes) -> Callable[[Callable[[_Machine], None]], Callable[[_Machine], None]]:
    def register(handler: Callable[[_Machine], None]) -> Callable[[_Machine], None]:
        for opcode in opcodes:
            _OPCODES[opcode[0]] = handler
        return handler

    return register


@_op(pickle.PROTO)
def _proto(m: _Machine) -> None:
    version = m.uint(1, "PROTO")
    if version > pickle.HIGHEST_PROTOCOL:
        raise _Refused(f"not a readable pickle: protocol {version}")


@_op(pickle.FRAME)
def _frame(m: _Machine) -> None:
    m.take(8, "FRAME")  # frames only batch reads; the whole pickle is in memory already


@_op(pickle.MARK)
def _mark(m: _Machine) -> None:
    m.marks.append(m.stack)
    m.stack = []


_CONSTANTS = {pickle.NONE[0]: None, pickle.NEWTRUE[0]: True, pickle.NEWFALSE[0]: False}


@_op(pickle.NONE, pickle.NEWTRUE, pickle.NEWFALSE)
def _constant(m: _Machine) -> None:
    m.stack.append(_CONSTANTS[m.data[m.pos - 1]])


_INT_BYTES = {pickle.BININT[0]: 4, pickle.BININT1[0]: 1, pickle.BININT2[0]: 2}


@_op(pickle.BININT, pickle.BININT1, pickle.BININT2)
def _binint(m: _Machine) -> None:
    size = _INT_BYTES[m.data[m.pos - 1]]
    m.stack.append(int.from_bytes(m.take(size, "integer"), "little", signed=size == 4))


@_op(pickle.LONG1, pickle.LONG4)
def _long(m: _Machine) -> None:
    if m.data[m.pos - 1] == pickle.LONG1[0]:
        size = m.uint(1, "LONG1")
    else:
        size = int.from_bytes(m.take(4, "LONG4"), "little", signed=True)
    if not 0 <= size <= MAX_INT_BYTES:
        raise _Refused(f"integer of {size} bytes exceeds the limit of {MAX_INT_BYTES} "
                       "(MAX_INT_BYTES); refused")
    m.stack.append(int.from_bytes(m.take(size, "integer"), "little", signed=True))


@_op(pickle.BINFLOAT)
def _binfloat(m: _Machine) -> None:
    m.stack.append(struct.unpack(">d", m.take(8, "BINFLOAT"))[0])


_LENGTH_BYTES = {
    pickle.SHORT_BINUNICODE[0]: 1, pickle.BINUNICODE[0]: 4, pickle.BINUNICODE8[0]: 8,
    pickle.SHORT_BINBYTES[0]: 1, pickle.BINBYTES[0]: 4, pickle.BINBYTES8[0]: 8,
}


@_op(pickle.SHORT_BINUNICODE, pickle.BINUNICODE, pickle.BINUNICODE8)
def _unicode(m: _Machine) -> None:
    size = m.uint(_LENGTH_BYTES[m.data[m.pos - 1]], "string length")
    m.stack.append(m.take(size, "string").decode("utf-8", "surrogatepass"))


@_op(pickle.SHORT_BINBYTES, pickle.BINBYTES, pickle.BINBYTES8)
def _bytes(m: _Machine) -> None:
    size = m.uint(_LENGTH_BYTES[m.data[m.pos - 1]], "bytes length")
    m.stack.append(m.take(size, "bytes"))


@_op(pickle.EMPTY_LIST)
def _empty_list(m: _Machine) -> None:
    m.stack.append([])


@_op(pickle.EMPTY_TUPLE)
def _empty_tuple(m: _Machine) -> None:
    m.stack.append(())


@_op(pickle.EMPTY_DICT)
def _empty_dict(m: _Machine) -> None:
    m.stack.append({})


@_op(pickle.TUPLE)
def _tuple(m: _Machine) -> None:
    items = m.pop_mark()
    m.stack.append(tuple(items))


_TUPLE_SIZES = {pickle.TUPLE1[0]: 1, pickle.TUPLE2[0]: 2, pickle.TUPLE3[0]: 3}


@_op(pickle.TUPLE1, pickle.TUPLE2, pickle.TUPLE3)
def _tuple_n(m: _Machine) -> None:
    m.stack.append(tuple(m.pop_n(_TUPLE_SIZES[m.data[m.pos - 1]])))


@_op(pickle.APPEND)
def _append(m: _Machine) -> None:
    value = m.pop()
    m.top(list, "APPEND").append(value)


@_op(pickle.APPENDS)
def _appends(m: _Machine) -> None:
    items = m.pop_mark()
    m.top(list, "APPENDS").extend(items)


def _set_items(m: _Machine, items: list[Any]) -> None:
    target = m.top(dict, "SETITEM")
    if len(items) % 2:
        raise _Refused(f"not a readable pickle: odd SETITEMS at byte {m.pos - 1}")
    for key, value in zip(items[::2], items[1::2], strict=True):
        if type(key) is not str:  # util_pkl dicts are pandas states: str keys only
            raise _Refused(f"dict key {_show(key)} refused: only string keys are allowed")
        target[key] = value


@_op(pickle.SETITEM)
def _setitem(m: _Machine) -> None:
    _set_items(m, m.pop_n(2))


@_op(pickle.SETITEMS)
def _setitems(m: _Machine) -> None:
    _set_items(m, m.pop_mark())


@_op(pickle.GLOBAL)
def _global(m: _Machine) -> None:
    module = m.line("GLOBAL module")
    m.stack.append(_find_global(module, m.line("GLOBAL name")))


@_op(pickle.STACK_GLOBAL)
def _stack_global(m: _Machine) -> None:
    module, name = m.pop_n(2)
    if type(module) is not str or type(name) is not str:
        raise _Refused(f"STACK_GLOBAL on {_show(module)}, {_show(name)}; refused")
    m.stack.append(_find_global(module, name))


@_op(pickle.REDUCE)
def _reduce(m: _Machine) -> None:
    function, args = m.pop_n(2)
    if not isinstance(function, _Global) or function.call is None:
        raise _Refused(f"calling {_show(function)} refused")
    m.stack.append(function.call(args))


@_op(pickle.NEWOBJ)
def _newobj(m: _Machine) -> None:
    cls, args = m.pop_n(2)
    if not isinstance(cls, _Global) or cls.new is None:
        raise _Refused(f"creating an instance of {_show(cls)} refused")
    m.stack.append(cls.new(args))


@_op(pickle.BUILD)
def _build(m: _Machine) -> None:
    state = m.pop()
    if not m.stack or not isinstance(m.stack[-1], _Stub):
        found = _show(m.stack[-1]) if m.stack else "an empty stack"
        raise _Refused(f"BUILD (setting state) on {found} refused: only numpy arrays and "
                       "dtypes and pandas Series parts take a state")
    m.stack[-1].build(state, m)


@_op(pickle.BINPUT, pickle.LONG_BINPUT, pickle.MEMOIZE)
def _put(m: _Machine) -> None:
    code = m.data[m.pos - 1]
    if code == pickle.MEMOIZE[0]:
        m.put(len(m.memo))
    else:
        m.put(m.uint(1 if code == pickle.BINPUT[0] else 4, "memo index"))


@_op(pickle.BINGET, pickle.LONG_BINGET)
def _get(m: _Machine) -> None:
    m.get(m.uint(1 if m.data[m.pos - 1] == pickle.BINGET[0] else 4, "memo index"))


# ----------------------------------------------------------------------------- results


class _Result:
    """Turns the machine's output into public objects, bounded in depth and in size.

    Shared lists are copied at every reference, so the count of items visited is
    also the size of what is returned: an exponentially shared structure hits
    :data:`MAX_RESULT_ITEMS` long before it costs anything, and callers only
    ever walk a tree of bounded size.
    """

    def __init__(self) -> None:
        self.items = 0

    def convert(self, obj: Any, depth: int) -> Any:
        self.items += 1
        if self.items > MAX_RESULT_ITEMS:
            raise _Refused(f"result holds more than {MAX_RESULT_ITEMS} items counting repeated "
                           "references (MAX_RESULT_ITEMS); refused")
        if type(obj) in (list, tuple):
            if depth >= MAX_DEPTH:
                raise _Refused(f"nesting depth {depth + 1} exceeds the limit of {MAX_DEPTH} "
                               "(MAX_DEPTH); refused")
            items = [self.convert(item, depth + 1) for item in obj]
            return items if type(obj) is list else tuple(items)
        if isinstance(obj, _ArrayStub):
            return obj.result()
        if isinstance(obj, _SeriesStub):
            return obj.to_public()
        if obj is None or type(obj) in (str, int, float, bool):
            return obj
        raise _Refused(f"unexpected object of type {getattr(obj, 'what', type(obj).__name__)}")


def safe_loads(data: bytes, *, label: str = "pickle", as_pandas: bool = False) -> Any:
    """Unpickle ``data`` allowing only numpy arrays in lists/tuples and pandas 1.x Series.

    Series come back as :class:`PickledSeries`, or as ``pandas.Series`` with
    ``as_pandas=True``. Anything else, or anything beyond the ``MAX_*`` limits,
    raises :class:`~mltraces.errors.UnsafePickleError` naming ``label``.
    """
    try:
        if len(data) > MAX_PICKLE_BYTES:
            raise _Refused(f"pickle of {len(data)} bytes exceeds the limit of "
                           f"{MAX_PICKLE_BYTES} bytes (MAX_PICKLE_BYTES); refused")
        result = _Result().convert(_Machine(bytes(data)).run(), 0)
    except _Refused as refusal:
        raise UnsafePickleError(f"{label}: {refusal}") from None
    except Exception as error:  # e.g. a string that is not UTF-8
        raise UnsafePickleError(
            f"{label}: not a readable pickle ({type(error).__name__}: {_show(str(error))})"
        ) from None
    return _to_pandas(result) if as_pandas else result


def _to_pandas(obj: Any) -> Any:
    if isinstance(obj, PickledSeries):
        return obj.to_pandas()
    if isinstance(obj, list):
        return [_to_pandas(item) for item in obj]
    if isinstance(obj, tuple):
        return tuple(_to_pandas(item) for item in obj)
    return obj


def _read_limited(path: Path) -> bytes:
    """The file's bytes, refusing a non-regular file or one over the limit before reading it."""
    # O_NONBLOCK: opening a FIFO for reading must not wait for a writer
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise UnsafePickleError(f"{path.name}: not a regular file; refused")
        if info.st_size > MAX_PICKLE_BYTES:
            raise UnsafePickleError(
                f"{path.name}: file size {info.st_size} bytes exceeds the limit of "
                f"{MAX_PICKLE_BYTES} bytes (MAX_PICKLE_BYTES); refused without reading it")
        data = handle.read(MAX_PICKLE_BYTES + 1)
    if len(data) > MAX_PICKLE_BYTES:  # the file grew after fstat
        raise UnsafePickleError(f"{path.name}: file grew past the limit of {MAX_PICKLE_BYTES} "
                                "bytes (MAX_PICKLE_BYTES) while being read; refused")
    return data


def safe_load(path: str | Path, *, as_pandas: bool = False) -> Any:
    """Read a ``util_pkl`` file with the restricted unpickler (see :func:`safe_loads`).

    Examples
    --------
    >>> curves = safe_load("util_gpu_seren.pkl")  # doctest: +SKIP
    >>> x, y = curves[0], curves[1]               # doctest: +SKIP
    """
    path = Path(path)
    return safe_loads(_read_limited(path), label=path.name, as_pandas=as_pandas)
