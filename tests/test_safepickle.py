"""The restricted unpickler: the real util_pkl files load, nothing else runs."""

from __future__ import annotations

import os
import pickle
import pickletools
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mltraces.errors import UnsafePickleError
from mltraces.safepickle import PickledSeries, safe_load, safe_loads

ACME_PKL = ("raw.githubusercontent.com/InternLM/AcmeTrace/6d6ac9cd15f3b01151ac6ba00ecddd9156f0dc73/"
            "data/utilization/util_pkl")
CURVES_PER_FILE = {
    "gpu_power_kalos.pkl": 1, "gpu_power_seren.pkl": 1, "gpu_temp_kalos.pkl": 2,
    "gpu_temp_seren.pkl": 2, "ib_seren.pkl": 2, "server_power.pkl": 2,
    "util_cpu_mem_kalos.pkl": 2, "util_cpu_mem_seren.pkl": 2, "util_gpu_kalos.pkl": 2,
    "util_gpu_kalos_full.pkl": 5, "util_gpu_philly.pkl": 1, "util_gpu_seren.pkl": 5,
}


def test_numpy_lists_round_trip() -> None:
    arrays = [np.linspace(0, 1, 5), np.arange(3, dtype=np.int32), np.array([True, False])]
    for protocol in (3, 4):  # the files use 4; 2 and 5 need globals the files never use
        loaded = safe_loads(pickle.dumps(arrays, protocol=protocol))
        for original, copy in zip(arrays, loaded, strict=True):
            assert np.array_equal(original, copy) and original.dtype == copy.dtype
    assert safe_loads(pickle.dumps((np.zeros(2), [np.ones(1)])))[1][0][0] == 1.0


def test_real_util_pkl_files_load(upstream_dir: Path) -> None:
    folder = upstream_dir / ACME_PKL
    for name, curves in CURVES_PER_FILE.items():
        content = safe_load(folder / name)
        assert isinstance(content, list) and len(content) == 2 * curves, name
        assert all(a.shape == (1000,) and a.dtype == np.float64 for a in content), name


def test_pandas1_series_loads_under_current_pandas(upstream_dir: Path) -> None:
    path = upstream_dir / ACME_PKL / "util_gpu_pai.pkl"
    with pytest.raises(Exception):  # noqa: B017 - why the restricted loader maps these classes
        pickle.loads(path.read_bytes())
    x, y = safe_load(path)
    assert isinstance(x, PickledSeries) and (x.name, y.name) == ("ali_gpuutil_x", "ali_gpuutil_y")
    assert len(x.values) == len(y.values) == 74
    series = safe_load(path, as_pandas=True)
    assert all(isinstance(s, pd.Series) for s in series)
    assert series[0].index.tolist() == list(range(74))
    assert series[1].iloc[0] == pytest.approx(36.0738)


class _Payload:
    """Pickles as a call to os.system: the classic malicious pickle."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_forbidden_global_is_refused_without_running(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    data = pickle.dumps([np.zeros(2), _Payload(marker)])
    with pytest.raises(UnsafePickleError) as caught:
        safe_loads(data, label="evil.pkl")
    message = str(caught.value)
    assert "evil.pkl" in message and "system" in message and "nothing was" in message
    assert not marker.exists()


def test_refused_module_is_never_imported() -> None:
    assert "this" not in sys.modules  # importing `this` prints the Zen of Python
    data = b"\x80\x04c" + b"this\ns\n" + b"."  # PROTO 4, GLOBAL 'this s', STOP
    assert [op.name for op, _, _ in pickletools.genops(data)] == ["PROTO", "GLOBAL", "STOP"]
    with pytest.raises(UnsafePickleError):
        safe_loads(data)
    assert "this" not in sys.modules


@pytest.mark.parametrize(
    "payload",
    [
        pytest.param(np.array([1, "a"], dtype=object), id="object-array"),
        pytest.param(np.ma.masked_array([1, 2], mask=[0, 1]), id="ndarray-subclass"),
        pytest.param(pd.Series([1.0, 2.0]), id="pandas-3-series"),
        pytest.param({"a": np.zeros(1)}, id="dict"),
        pytest.param(_Payload, id="class-object"),
    ],
)
def test_anything_else_is_refused(payload) -> None:
    with pytest.raises(UnsafePickleError):
        safe_loads(pickle.dumps(payload))


def _object_array_over(pointer_bytes: bytes) -> bytes:
    """Opcodes calling ``numpy.ndarray((1,), "O", pointer_bytes)``: raw bytes as object pointers."""
    return (b"cnumpy\nndarray\n(K\x01\x85X\x01\x00\x00\x00OC\x08" + pointer_bytes + b"tR")


def test_ndarray_cannot_be_called_to_forge_object_pointers() -> None:
    # numpy.ndarray must be resolvable (it is _reconstruct's subtype), but calling it
    # with an object dtype and a buffer makes pointers from bytes; passing such an
    # array as a shape made the interpreter dereference 0x4141... and crash
    forged = _object_array_over(b"A" * 8)
    as_shape = (b"cnumpy.core.multiarray\n_reconstruct\n(cnumpy\nndarray\n" + forged
                + b"X\x01\x00\x00\x00btR")
    for body in (forged, as_shape):
        with pytest.raises(UnsafePickleError):
            safe_loads(b"\x80\x04" + body + b".")


def test_placeholder_shape_cannot_allocate_memory() -> None:
    data = (b"\x80\x04cnumpy.core.multiarray\n_reconstruct\n(cnumpy\nndarray\n"
            b"J\xff\xff\xff\x7f\x85X\x01\x00\x00\x00btR.")  # shape (2**31 - 1,)
    with pytest.raises(UnsafePickleError, match="placeholder"):
        safe_loads(data)


def test_truncated_pickle_is_a_clear_error() -> None:
    data = pickle.dumps([np.arange(10.0)])[:-20]
    with pytest.raises(UnsafePickleError, match="not a readable pickle"):
        safe_loads(data, label="cut.pkl")
