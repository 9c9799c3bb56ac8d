"""A restricted unpickler for AcmeTrace's processed utilization curves (``util_pkl``).

Unpickling runs code: any global a pickle names is imported and may be called.
The ``util_pkl`` files only need numpy arrays and dtypes inside lists, plus, in
``util_gpu_pai.pkl``, a pandas Series pickled by pandas 1.x with an
``Int64Index`` (a class pandas 2 removed, so a plain ``pickle.load`` fails even
when one trusts the file). This module allows exactly those globals and maps
the pandas ones to inert stand-ins that only record state; every other global
is refused *before* it is imported, so nothing outside the allow-list ever
executes.

>>> from mltraces.safepickle import safe_loads
>>> import pickle, numpy as np
>>> safe_loads(pickle.dumps([np.arange(3.0)]))
[array([0., 1., 2.])]
>>> safe_loads(pickle.dumps(print))  # doctest: +IGNORE_EXCEPTION_DETAIL
Traceback (most recent call last):
UnsafePickleError: ...
"""

from __future__ import annotations

import io
import pickle
from pathlib import Path
from typing import Any

import numpy as np

from mltraces.errors import UnsafePickleError

__all__ = ["ALLOWED_GLOBALS", "PickledSeries", "safe_load", "safe_loads"]

# Numeric array kinds we accept: bool, signed/unsigned int, float.
_NUMERIC_KINDS = frozenset("biuf")
# numpy pickles an array as ``_reconstruct(ndarray, (0,), b"b")`` then sets its real
# shape and bytes; a large placeholder shape only serves to exhaust memory.
_MAX_RECONSTRUCT_LENGTH = 1


class _NdarrayMarker:
    """Stands for ``numpy.ndarray`` in a pickle: only ever the subtype of ``_reconstruct``.

    Handing out the real class would let a pickle *call* it, and
    ``ndarray(shape, "O", buffer)`` turns arbitrary bytes into object pointers.
    """


def _reconstruct(subtype: Any, shape: Any, dtype: Any) -> np.ndarray:
    """numpy's array constructor for pickles, limited to plain numeric ``ndarray``."""
    if subtype is not _NdarrayMarker:
        raise UnsafePickleError(f"array subtype {subtype!r} is not numpy.ndarray")
    if not isinstance(shape, tuple) or not all(
        type(n) is int and 0 <= n <= _MAX_RECONSTRUCT_LENGTH for n in shape
    ):
        raise UnsafePickleError(f"array shape {shape!r} is not numpy's (0,) placeholder")
    if isinstance(dtype, bytes):
        dtype = dtype.decode("ascii", "replace")
    return np.ndarray.__new__(np.ndarray, shape, _dtype(dtype))


def _dtype(spec: Any, align: Any = False, copy: Any = False) -> np.dtype:
    """numpy.dtype for pickles, refusing object dtypes (they embed arbitrary objects)."""
    if not isinstance(spec, str):
        raise UnsafePickleError(f"dtype spec {spec!r} is not a type code string")
    result = np.dtype(spec, align=bool(align), copy=bool(copy))
    if result.hasobject:
        raise UnsafePickleError(f"dtype {spec!r} holds Python objects; refused")
    return result


class _Int64IndexMarker:
    """Stands for pandas 1.x ``Int64Index``; only ever passed to ``_new_Index``."""


def _new_index(cls: Any, state: Any) -> np.ndarray:
    """pandas' index factory, reduced to returning the index values as an array."""
    if cls is not _Int64IndexMarker or not isinstance(state, dict):
        raise UnsafePickleError(f"unexpected index reconstruction {cls!r}")
    return _numeric_array(state.get("data"), "index data")


class _BlockManagerStub:
    """Records the state pandas 1.x pickles for a ``SingleBlockManager``."""

    def __setstate__(self, state: Any) -> None:
        self.state = state

    def values_and_index(self) -> tuple[np.ndarray, np.ndarray]:
        """The single block's values and the axis labels, from either state layout."""
        state = self.state
        if isinstance(state, tuple) and state and isinstance(state[-1], dict):
            layout = state[-1].get("0.14.1")
            if isinstance(layout, dict):
                axes = layout.get("axes") or []
                blocks = layout.get("blocks") or []
                if len(axes) == 1 and len(blocks) == 1 and isinstance(blocks[0], dict):
                    return (
                        _numeric_array(blocks[0].get("values"), "series values"),
                        _numeric_array(axes[0], "series index"),
                    )
        if isinstance(state, tuple) and len(state) >= 2:
            axes, values = state[0], state[1]
            if isinstance(axes, list) and isinstance(values, list) and len(values) == 1:
                return _numeric_array(values[0], "series values"), _numeric_array(axes[0], "index")
        raise UnsafePickleError("pandas SingleBlockManager state has an unexpected layout")


class _SeriesStub:
    """Records the state pandas 1.x pickles for a ``Series`` (built via NEWOBJ + BUILD)."""

    def __setstate__(self, state: Any) -> None:
        if not isinstance(state, dict) or not isinstance(state.get("_mgr"), _BlockManagerStub):
            raise UnsafePickleError("pandas Series state has an unexpected layout")
        self.state = state


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
    if not isinstance(value, np.ndarray) or value.dtype.kind not in _NUMERIC_KINDS:
        raise UnsafePickleError(f"{what} is not a numeric numpy array ({type(value).__name__})")
    return value


# (module, name) -> the object the unpickler hands out. Both numpy 1.x and 2.x
# module paths are listed because the writer's numpy version decides the path.
ALLOWED_GLOBALS: dict[tuple[str, str], Any] = {
    ("numpy.core.multiarray", "_reconstruct"): _reconstruct,
    ("numpy._core.multiarray", "_reconstruct"): _reconstruct,
    ("numpy", "ndarray"): _NdarrayMarker,
    ("numpy", "dtype"): _dtype,
    ("builtins", "slice"): slice,
    ("pandas.core.series", "Series"): _SeriesStub,
    ("pandas.core.internals.managers", "SingleBlockManager"): _BlockManagerStub,
    ("pandas.core.indexes.base", "_new_Index"): _new_index,
    ("pandas.core.indexes.numeric", "Int64Index"): _Int64IndexMarker,
}


class _RestrictedUnpickler(pickle.Unpickler):
    """Resolves only :data:`ALLOWED_GLOBALS`; refuses everything else unimported."""

    def __init__(self, stream: io.BufferedIOBase, label: str) -> None:
        super().__init__(stream)
        self._label = label

    def find_class(self, module: str, name: str) -> Any:
        try:
            return ALLOWED_GLOBALS[(module, name)]
        except KeyError:
            allowed = ", ".join(sorted(f"{m}.{n}" for m, n in ALLOWED_GLOBALS))
            raise UnsafePickleError(
                f"{self._label}: refusing to unpickle global {module}.{name} (nothing was "
                f"imported or executed). mltraces only allows: {allowed}. If this file "
                "really is an upstream util_pkl file, it changed: report it"
            ) from None

    def persistent_load(self, pid: Any) -> Any:
        raise UnsafePickleError(f"{self._label}: persistent ids are not allowed")


def _finish(obj: Any, label: str) -> Any:
    """Replace stand-ins with public objects and check every leaf is allowed."""
    if isinstance(obj, _SeriesStub):
        values, index = obj.state["_mgr"].values_and_index()
        name = obj.state.get("name")
        if name is not None and not isinstance(name, str):
            raise UnsafePickleError(f"{label}: Series name {name!r} is not a string")
        return PickledSeries(name, index, values)
    if isinstance(obj, list):
        return [_finish(item, label) for item in obj]
    if isinstance(obj, tuple):
        return tuple(_finish(item, label) for item in obj)
    if isinstance(obj, np.ndarray):
        return _numeric_array(obj, f"{label}: array")
    if isinstance(obj, str | int | float | bool) or obj is None:
        return obj
    raise UnsafePickleError(f"{label}: unexpected object of type {type(obj).__name__}")


def safe_loads(data: bytes, *, label: str = "pickle", as_pandas: bool = False) -> Any:
    """Unpickle ``data`` allowing only numpy arrays in lists/tuples and pandas 1.x Series.

    Series come back as :class:`PickledSeries`, or as ``pandas.Series`` with
    ``as_pandas=True``. Anything else raises :class:`~mltraces.errors.UnsafePickleError`.
    """
    try:
        obj = _RestrictedUnpickler(io.BytesIO(data), label).load()
    except UnsafePickleError:
        raise
    except Exception as error:  # truncated or malformed stream
        raise UnsafePickleError(f"{label}: not a readable pickle ({error})") from error
    result = _finish(obj, label)
    return _to_pandas(result) if as_pandas else result


def _to_pandas(obj: Any) -> Any:
    if isinstance(obj, PickledSeries):
        return obj.to_pandas()
    if isinstance(obj, list):
        return [_to_pandas(item) for item in obj]
    if isinstance(obj, tuple):
        return tuple(_to_pandas(item) for item in obj)
    return obj


def safe_load(path: str | Path, *, as_pandas: bool = False) -> Any:
    """Read a ``util_pkl`` file with the restricted unpickler (see :func:`safe_loads`).

    Examples
    --------
    >>> curves = safe_load("util_gpu_seren.pkl")  # doctest: +SKIP
    >>> x, y = curves[0], curves[1]               # doctest: +SKIP
    """
    path = Path(path)
    return safe_loads(path.read_bytes(), label=path.name, as_pandas=as_pandas)
