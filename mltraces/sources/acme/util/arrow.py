"""numpy ↔ pyarrow without importing pandas, and without copying.

pyarrow imports pandas, when it is installed, the first time ``pa.array()``,
``pa.scalar()`` or ``Array.to_numpy()`` is called (to check for pandas types):
about 0.5 s of CPU and 60 MB per process, a fifth of converting 100 MB. These
helpers build arrays from buffers instead, which never does.
"""

from __future__ import annotations

import numpy as np

__all__ = ["TIMESTAMP_US", "array", "int64s", "mask", "strings", "timestamps"]

TIMESTAMP_US = ("us", "UTC")  # the stored time type: pa.timestamp(*TIMESTAMP_US)


def array(values: np.ndarray, type=None, valid: np.ndarray | None = None):  # -> pa.Array
    """A pyarrow array over a numpy array's memory; ``valid`` False marks nulls."""
    import pyarrow as pa

    values = np.ascontiguousarray(values)
    type = type or pa.from_numpy_dtype(values.dtype)
    bitmap = None if valid is None else pa.py_buffer(np.packbits(valid, bitorder="little"))
    nulls = -1 if valid is None else len(valid) - int(np.count_nonzero(valid))
    return pa.Array.from_buffers(type, len(values), [bitmap, pa.py_buffer(values)], nulls)


def timestamps(micros: np.ndarray):  # -> pa.TimestampArray
    """µs since the epoch as a ``timestamp[us, tz=UTC]`` array."""
    import pyarrow as pa

    return array(micros.astype(np.int64, copy=False), pa.timestamp(*TIMESTAMP_US))


def mask(selected: np.ndarray):  # -> pa.BooleanArray
    """A numpy bool array as a pyarrow one (for ``filter``)."""
    import pyarrow as pa

    bits = pa.py_buffer(np.packbits(selected, bitorder="little"))
    return pa.Array.from_buffers(pa.bool_(), len(selected), [None, bits], 0)


def strings(values: list[str]):  # -> pa.StringArray
    """Python strings as a pyarrow string array."""
    import pyarrow as pa

    encoded = [v.encode() for v in values]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int32)
    np.cumsum([len(e) for e in encoded], out=offsets[1:])
    buffers = [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))]
    return pa.Array.from_buffers(pa.string(), len(values), buffers, 0)


def int64s(values) -> np.ndarray:
    """A null-free 64-bit pyarrow array (or chunked array, or timestamps) as numpy int64."""
    import pyarrow as pa

    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    if values.null_count:
        raise ValueError("int64s() needs an array without nulls")
    if not len(values):
        return np.array([], dtype=np.int64)
    return np.frombuffer(values.buffers()[1], np.int64, len(values), values.offset * 8)
