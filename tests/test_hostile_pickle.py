"""Hostile pickles against the restricted unpickler (issue 10, item 5).

Each attack is written opcode by opcode below. They all run once, in a child
process whose address space is capped at 1 GiB, one file after another through
``safe_load``; each must be refused with a one-line ``UnsafePickleError`` that
names the file, the refused value and the limit, using little memory (tracemalloc
peak) and little CPU time. Before the fix, the same inputs returned heap memory
as data, reserved 6.2 GB, ran for minutes, or raised ``RecursionError``.
"""

from __future__ import annotations

import json
import os
import pickle
import re
import struct
import subprocess
import sys
import warnings
from typing import Any

import numpy as np
import pytest

import mltraces.safepickle as safepickle
from mltraces.errors import UnsafePickleError
from mltraces.safepickle import (
    MAX_ARRAY_ELEMENTS,
    MAX_DEPTH,
    MAX_OPCODES,
    MAX_PICKLE_BYTES,
    MAX_RESULT_ITEMS,
    safe_loads,
)

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs resource limits")

# ----------------------------------------------------------------------------- opcode builders


def _global(module: str, name: str) -> bytes:
    return b"c" + f"{module}\n{name}\n".encode()


def _str(text: str) -> bytes:
    raw = text.encode()
    return b"X" + struct.pack("<I", len(raw)) + raw


def _bytes(raw: bytes) -> bytes:
    return b"B" + struct.pack("<I", len(raw)) + raw


def _int(n: int) -> bytes:
    return b"J" + struct.pack("<i", n)


def _tuple(*items: bytes) -> bytes:
    return b"(" + b"".join(items) + b"t"


def _list(*items: bytes) -> bytes:
    return b"](" + b"".join(items) + b"e"


def _call(function: bytes, *args: bytes) -> bytes:
    return function + _tuple(*args) + b"R"


def _build(state: bytes) -> bytes:
    return state + b"b"


def _pickle(body: bytes) -> bytes:
    return b"\x80\x04" + body + b"."


RECONSTRUCT = _global("numpy.core.multiarray", "_reconstruct")
NDARRAY = _global("numpy", "ndarray")
DTYPE = _global("numpy", "dtype")
FALSE, TRUE, NONE = b"\x89", b"\x88", b"N"


def _dtype_state(order: str = "<", *, rest: tuple[bytes, ...] = (NONE, NONE, NONE),
                 sizes: tuple[int, int, int] = (-1, -1, 0), version: int = 3) -> bytes:
    """numpy's dtype state ``(3, order, subarray, names, fields, elsize, align, flags)``."""
    return _tuple(_int(version), _str(order), *rest, *(_int(n) for n in sizes))


def _dtype(code: str = "f8", state: bytes | None = None, args: tuple[bytes, ...] = (FALSE, TRUE)
           ) -> bytes:
    return _call(DTYPE, _str(code), *args) + _build(state or _dtype_state())


def _placeholder(shape: bytes = _tuple(_int(0)), code: bytes = b"b") -> bytes:
    return _call(RECONSTRUCT, NDARRAY, shape, b"C" + bytes([len(code)]) + code)


def _array(shape: tuple[Any, ...] | bytes, raw: bytes, dtype: bytes | None = None,
           fortran: bytes = FALSE, data: bytes | None = None) -> bytes:
    """numpy's array pickle: ``_reconstruct`` then BUILD ``(1, shape, dtype, fortran, data)``."""
    dims = shape if isinstance(shape, bytes) else _tuple(
        *(_int(n) if type(n) is int else n for n in shape))
    state = _tuple(_int(1), dims, dtype or _dtype(), fortran, data or _bytes(raw))
    return _placeholder() + _build(state)


def _pairs(levels: int) -> bytes:
    """A list holding the same memoised list twice, ``levels`` times over: 2**levels leaves."""
    body = b"]\x94"  # EMPTY_LIST, MEMOIZE as 0
    for level in range(levels):
        get = b"j" + struct.pack("<I", level)  # LONG_BINGET
        body += b"](" + get + get + b"e\x94"
    return body


def _deep_lists(depth: int) -> bytes:
    return b"]" * (depth + 1) + b"a" * depth


def test_builders_write_what_numpy_writes() -> None:
    """The builders are right, so each refusal below is about the attack, not a typo."""
    raw = np.arange(4.0).tobytes()
    data = _pickle(_list(_array((4,), raw), _array((2, 2), raw)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # numpy 2 renamed numpy.core
        trusted = pickle.loads(data)
    for loaded in (trusted, safe_loads(data)):
        assert np.array_equal(loaded[0], np.arange(4.0))
        assert np.array_equal(loaded[1], np.arange(4.0).reshape(2, 2))
    assert pickle.loads(_pickle(_pairs(3))) == [[[[], []]] * 2] * 2


# ----------------------------------------------------------------------------- the attacks

HEAP = _placeholder(b")", b"(1000,)f8")  # the attack as reported: no BUILD at all
SIX_GB = _list(*[_placeholder(b")", b"(200000000,)f8")] * 4)  # reserved 6.2 GB before

# name -> (pickle bytes, regular expression the refusal message must match)
HOSTILE: dict[str, tuple[bytes, str]] = {
    # 1. arrays over memory the pickle did not supply
    "heap-subarray-on-empty-shape": (_pickle(HEAP), r"shape \(\) is not numpy's \(0,\) "),
    "heap-subarray-placeholder-dtype": (
        _pickle(_placeholder(code=b"(1000,)f8")), r"dtype b'\(1000,\)f8' is not numpy's b'b'"),
    "heap-subarray-dtype-in-state": (
        _pickle(_array((), b"", _call(DTYPE, _str("(1000,)f8"), FALSE, TRUE))),
        r"dtype '\(1000,\)f8' refused: only plain numeric dtypes are allowed \(b1, f4, f8"),
    "heap-subarray-in-dtype-state": (
        _pickle(_array((), b"", _dtype(state=_dtype_state(rest=(
            _tuple(_dtype(), _tuple(_int(1000))), NONE, NONE))))),
        r"dtype 'f8' state \(3, '<', <tuple of 2 items>, None, None, -1, -1, 0\) refused"),
    "heap-array-without-build": (_pickle(_list(_placeholder())), r"array without data"),
    "short-buffer": (_pickle(_array((4,), b"\0" * 8)),
                     r"shape \(4,\) and dtype <f8 needs 32 bytes but the pickle supplies 8"),
    "long-buffer": (_pickle(_array((1,), b"\0" * 16)), r"needs 8 bytes but the pickle supplies 16"),
    "buffer-reused-for-many-arrays": (  # one memoised 8000-byte buffer behind 200 arrays
        _pickle(_bytes(b"\0" * 8000) + b"\x94"
                + _list(*[_array((1000,), b"", data=b"h\x00")] * 200)),
        r"arrays hold \d+ bytes, more than the \d+-byte pickle supplies"),
    "data-not-bytes": (_pickle(_array((1,), b"", data=_list(NONE))),
                       r"array data \[None\] refused: not bytes from the pickle"),
    # plain numeric dtypes only, in numpy's own state layout
    "object-dtype": (_pickle(_array((1,), b"A" * 8, _dtype("O"))), r"dtype 'O' refused"),
    "void-dtype": (_pickle(_array((1,), b"A" * 8, _dtype("V8"))), r"dtype 'V8' refused"),
    "structured-dtype": (_pickle(_dtype("f8,i8")), r"dtype 'f8,i8' refused"),
    "string-dtype": (_pickle(_dtype("U2")), r"dtype 'U2' refused"),
    "datetime-dtype": (_pickle(_dtype("M8[s]")),  # crashed the interpreter (SIGSEGV)
                       r"dtype 'M8\[s\]' refused"),
    "byte-order-in-code": (_pickle(_dtype(">f8")), r"dtype '>f8' refused"),
    "dtype-flags-hasobject": (_pickle(_array((1,), b"A" * 8, _dtype(
        state=_dtype_state(sizes=(-1, -1, 0x3F))))), r"state \(3, '<', .*, 63\) refused"),
    "dtype-elsize": (_pickle(_dtype(state=_dtype_state(sizes=(800, -1, 0)))),
                     r"state \(3, '<', None, None, None, 800, -1, 0\) refused"),
    "dtype-fields": (_pickle(_dtype(state=_dtype_state(rest=(NONE, _tuple(_str("a")), NONE)))),
                     r"state .* refused: only numpy's plain"),
    "dtype-state-version": (_pickle(_dtype(state=_dtype_state(version=4))), r"state \(4, "),
    "dtype-native-order-marker": (_pickle(_dtype(state=_dtype_state("|"))),
                                  r"byte order '\|' refused: expected one of <, >"),
    "dtype-bool-with-order": (_pickle(_dtype("b1", _dtype_state("<"))),
                              r"byte order '<' refused: expected one of \|"),
    "dtype-align": (_pickle(_dtype(args=(TRUE, TRUE))),
                    r"dtype 'f8' with arguments \('f8', True, True\) refused"),
    "dtype-copy-not-bool": (_pickle(_dtype(args=(FALSE, _int(1)))),
                            r"arguments \('f8', False, 1\)"),
    "dtype-set-twice": (_pickle(_dtype() + _build(_dtype_state(">"))),
                        r"BUILD on a numpy dtype whose state is already set"),
    "array-set-twice": (_pickle(_array((1,), b"\0" * 8) + _build(_tuple(_int(1)))),
                        r"BUILD on a numpy array whose state is already set"),
    # shapes
    "negative-shape": (_pickle(_array((-1,), b"")), r"shape \(-1,\) refused: sizes must be"),
    "bool-shape": (_pickle(_array((TRUE,), b"\0" * 8)), r"shape \(True,\) refused"),
    "shape-not-tuple": (_pickle(_array(b"]", b"\0" * 8)), r"shape \[\] refused: not a tuple"),
    "three-dimensions": (_pickle(_array((1, 1, 1), b"\0" * 8)),
                         r"shape with 3 dimensions exceeds the limit of 2 \(MAX_ARRAY_NDIM\)"),
    "fortran-flag-not-bool": (_pickle(_array((1,), b"\0" * 8, fortran=_int(1))),
                              r"order flag 1 refused"),
    # 2. tiny pickles that allocated gigabytes
    "alloc-subarray-6gb": (_pickle(SIX_GB), r"is not numpy's \(0,\) placeholder"),
    "alloc-shape-1e9": (_pickle(_array((10**9,), b"\0" * 8)),
                        rf"shape \(1000000000,\) holds 1000000000 elements, more than the limit "
                        rf"of {MAX_ARRAY_ELEMENTS} \(MAX_ARRAY_ELEMENTS\)"),
    "alloc-shape-product": (_pickle(_array((60_000, 60_000), b"\0" * 8)),
                            r"holds 3600000000 elements, more than the limit"),
    "alloc-binbytes8": (_pickle(b"\x8e" + struct.pack("<Q", 6_400_000_000) + b"x" * 16),
                        r"bytes at byte 11 claims 6400000000 bytes but only 17 remain"),
    "alloc-binunicode8": (_pickle(b"\x8d" + struct.pack("<Q", 2**63) + b"x"),
                          r"claims 9223372036854775808 bytes but only 2 remain"),
    "alloc-long4": (_pickle(b"\x8b" + struct.pack("<i", 2**31 - 1) + b"\x01" * 16),
                    r"integer of 2147483647 bytes exceeds the limit of 8 \(MAX_INT_BYTES\)"),
    "alloc-long1": (_pickle(b"\x8a\x09" + b"\x01" * 9), r"integer of 9 bytes exceeds the limit"),
    "alloc-memo-index": (_pickle(NONE + b"r\xff\xff\xff\x7f"),
                         rf"memo index 2147483647 exceeds the limit of {MAX_OPCODES}"),
    "memo-never-stored": (_pickle(b"j\xff\xff\xff\x7f"), r"memo index 2147483647 was never stored"),
    "alloc-opcodes": (_pickle(NONE * (MAX_OPCODES + 1)),
                      rf"more than {MAX_OPCODES} opcodes \(MAX_OPCODES\)"),
    # 3. shared structure that expands exponentially
    "pairs-40-levels": (_pickle(_pairs(40)), rf"nesting depth 33 exceeds the limit of {MAX_DEPTH}"),
    "pairs-20-levels": (_pickle(_pairs(20)),
                        rf"result holds more than {MAX_RESULT_ITEMS} items counting repeated "
                        r"references \(MAX_RESULT_ITEMS\)"),
    "array-referenced-100k-times": (  # 100 references to a list of 1000 references
        _pickle(_array((1,), b"\0" * 8) + b"\x94" + _list(*[b"h\x00"] * 1000) + b"\x94"
                + _list(*[b"h\x01"] * 100)),
        rf"result holds more than {MAX_RESULT_ITEMS} items"),
    "self-containing-list": (_pickle(b"]\x94h\x00a"), r"nesting depth 33 exceeds the limit"),
    # 4. deep nesting: one line, no RecursionError
    "deep-100k-lists": (_pickle(_deep_lists(100_000)), rf"more than {MAX_OPCODES} opcodes"),
    "deep-20k-lists": (_pickle(_deep_lists(20_000)), r"nesting depth 33 exceeds the limit of 32"),
    "deep-20k-tuples": (_pickle(b")" + b"\x85" * 20_000), r"nesting depth 33 exceeds the limit"),
    "deep-tuple-as-dict-key": (_pickle(b"}" + b")" + b"\x85" * 20_000 + NONE + b"s"),
                               r"dict key \(<tuple of 1 items>,\) refused: only string keys"),
    # other holes: calls, BUILD and opcodes outside what numpy/pandas write
    "build-on-allowed-function": (  # rewrote numpy.dtype's defaults for the whole process
        _pickle(DTYPE + _build(_tuple(NONE, b"}" + _str("__defaults__") + _tuple(TRUE) + b"s"))),
        r"BUILD \(setting state\) on <numpy.dtype> refused"),
    "build-on-class-marker": (_pickle(NDARRAY + _build(b"}")), r"BUILD .* on <numpy.ndarray>"),
    "build-on-list": (_pickle(b"]" + _build(b"}")), r"BUILD .* on \[\] refused"),
    "call-ndarray": (_pickle(_call(NDARRAY, _tuple(_int(1)), _str("O"), _bytes(b"A" * 8))),
                     r"calling <numpy.ndarray> refused"),
    "call-int64index": (_pickle(_call(_global("pandas.core.indexes.numeric", "Int64Index"))),
                        r"calling <pandas Int64Index> refused"),
    "newobj-on-function": (_pickle(RECONSTRUCT + b")\x81"), r"instance of <_reconstruct> refused"),
    "newobj-with-args": (_pickle(_global("pandas.core.series", "Series") + _tuple(NONE) + b"\x81"),
                         r"pandas Series called with arguments \(None,\)"),
    "reconstruct-subtype": (_pickle(_call(RECONSTRUCT, DTYPE, _tuple(_int(0)), b"C\x01b")),
                            r"array subtype <numpy.dtype> is not numpy.ndarray"),
    "slice-with-list": (_pickle(_call(_global("builtins", "slice"), b"]")),
                        r"slice\(\[\],\) refused"),
    "append-to-tuple": (_pickle(b")" + NONE + b"a"), r"APPEND at byte \d+ on \(\) refused"),
    "setitem-on-list": (_pickle(b"]" + _str("k") + NONE + b"s"), r"SETITEM .* on \[\] refused"),
    "forbidden-global-long-name": (_pickle(_global("os", "system" + "x" * 500_000)),
                                   r"refusing to unpickle global os\.systemx+ \(nothing was"),
    "opcode-inst": (_pickle(b"(ios\nsystem\n"), r"opcode INST \(0x69\) at byte 3 refused"),
    "opcode-obj": (_pickle(b"(" + DTYPE + b"o"), r"opcode OBJ"),
    "opcode-ext1": (_pickle(b"\x82\x01"), r"opcode EXT1"),
    "opcode-persid": (_pickle(b"P1\n"), r"opcode PERSID"),
    "opcode-binpersid": (_pickle(NONE + b"Q"), r"opcode BINPERSID"),
    "opcode-newobj-ex": (_pickle(DTYPE + b")}\x92"), r"opcode NEWOBJ_EX"),
    "opcode-bytearray8": (_pickle(b"\x96" + struct.pack("<Q", 2**40)), r"opcode BYTEARRAY8"),
    "opcode-next-buffer": (_pickle(b"\x97"), r"opcode NEXT_BUFFER"),
    "opcode-long-text": (_pickle(b"L" + b"9" * 100_000 + b"L\n"), r"opcode LONG"),
    "opcode-pop": (_pickle(NONE + b"0" + NONE), r"opcode POP"),
    "stack-underflow": (_pickle(b"a"), r"stack underflow"),
    "no-stop": (b"\x80\x04" + NONE, r"ends at byte 3 without STOP"),
    "non-ascii-global": (_pickle(b"cnumpy\xff\ndtype\n"), r"not a readable pickle \(Unicode"),
    "length-beyond-the-data": (_pickle(_bytes(b"\0" * 100)[:5]),
                               r"bytes at byte 7 claims 100 bytes but only 1 remain"),
}


@pytest.fixture(scope="module")
def hostile_results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Every hostile file through ``safe_load`` in one child capped at 1 GiB of address space."""
    folder = tmp_path_factory.mktemp("hostile")
    for name, (data, _) in HOSTILE.items():
        (folder / f"{name}.pkl").write_bytes(data)
    with open(folder / "huge-file.pkl", "wb") as handle:  # sparse: no disk used
        handle.truncate(3 << 30)
    os.mkfifo(folder / "fifo.pkl")  # before the fix, opening it waited for a writer forever
    (folder / "directory.pkl").mkdir()
    try:
        done = subprocess.run([sys.executable, "-c", _RUNNER, str(folder), str(1 << 30)],
                              capture_output=True, text=True, timeout=120, check=False)
    except subprocess.TimeoutExpired as error:
        pytest.fail(f"hostile pickles ran for over 120 s; output so far: {error.stdout!r}")
    records = [json.loads(line) for line in done.stdout.splitlines()]
    finished = records[-1]["name"] if records else "none"
    assert done.returncode == 0, (f"child exited with {done.returncode} after {finished} "
                                  f"(1 GiB address space, 60 s CPU): {done.stderr[-2000:]}")
    return {record["name"]: record for record in records}


_RUNNER = """
import json, resource, sys, time, tracemalloc
from pathlib import Path
folder, limit = Path(sys.argv[1]), int(sys.argv[2])
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
resource.setrlimit(resource.RLIMIT_CPU, (60, 60))
from mltraces.errors import UnsafePickleError
from mltraces.safepickle import safe_load
for path in sorted(folder.iterdir()):
    tracemalloc.start()
    cpu = time.process_time()
    try:
        safe_load(path)
        outcome, message = "loaded", ""
    except UnsafePickleError as error:
        outcome, message = "refused", str(error)
    except BaseException as error:
        outcome, message = type(error).__name__, str(error)[:500]
    cpu = time.process_time() - cpu
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    print(json.dumps({"name": path.name, "outcome": outcome, "message": message,
                      "cpu": cpu, "peak": peak}), flush=True)
"""

# Generous bounds: the real costs are ~1-5 MB and well under 0.5 s of CPU.
PEAK_BYTES = 64 << 20
CPU_SECONDS = 2.0


def _check(record: dict[str, Any], pattern: str) -> None:
    message = record["message"]
    assert record["outcome"] == "refused", record
    assert message.startswith(f"{record['name']}: "), message
    assert "\n" not in message and len(message) < 1000, message
    assert re.search(pattern, message), message
    assert record["peak"] < PEAK_BYTES, f"peak {record['peak']} bytes: {message}"
    assert record["cpu"] < CPU_SECONDS, f"{record['cpu']:.2f} s CPU: {message}"


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_pickle_is_refused_cheaply(name: str, hostile_results: dict[str, Any]) -> None:
    _check(hostile_results[f"{name}.pkl"], HOSTILE[name][1])


def test_multi_gigabyte_file_is_refused_before_reading(hostile_results: dict[str, Any]) -> None:
    _check(hostile_results["huge-file.pkl"],
           rf"file size 3221225472 bytes exceeds the limit of {MAX_PICKLE_BYTES} bytes "
           r"\(MAX_PICKLE_BYTES\); refused without reading it")


def test_fifo_and_directory_are_refused(hostile_results: dict[str, Any]) -> None:
    _check(hostile_results["fifo.pkl"], r"not a regular file")
    assert hostile_results["directory.pkl"]["outcome"] in ("refused", "IsADirectoryError")


def test_oversized_bytes_are_refused() -> None:
    with pytest.raises(UnsafePickleError, match=rf"pickle of {MAX_PICKLE_BYTES + 3} bytes "
                                                rf"exceeds the limit of {MAX_PICKLE_BYTES}"):
        safe_loads(_pickle(NONE * MAX_PICKLE_BYTES))


# ----------------------------------------------------------------------------- what still loads


def test_byte_order_fortran_order_and_bool_bytes_load_faithfully() -> None:
    big = np.arange(5.0).astype(">f8")
    fortran = np.asfortranarray(np.arange(6, dtype=np.int16).reshape(2, 3))
    loaded_big, loaded_fortran = safe_loads(pickle.dumps([big, fortran], protocol=4))
    assert np.array_equal(loaded_big, big) and loaded_big.dtype == np.float64
    assert loaded_big.dtype.isnative and loaded_big.flags.writeable
    assert np.array_equal(loaded_fortran, fortran) and loaded_fortran.dtype == np.int16
    bools = safe_loads(_pickle(_array((3,), b"\x00\x02\x01", _dtype("b1", _dtype_state("|")))))
    assert bools.tolist() == [False, True, True] and bools.view(np.uint8).max() == 1


def test_loaded_arrays_own_a_copy_of_the_bytes() -> None:
    data = pickle.dumps(np.arange(3.0))
    loaded = safe_loads(data)
    assert loaded.flags.writeable  # numpy views over ``bytes`` are read-only
    loaded[0] = 42.0
    assert safe_loads(data)[0] == 0.0


def test_shared_references_come_back_as_a_bounded_tree() -> None:
    array = np.arange(3.0)
    inner = [array, array]
    loaded = safe_loads(pickle.dumps([inner, inner, (inner,)]))
    assert loaded[0] is not loaded[1] and loaded[0][0] is loaded[0][1]  # lists copied, arrays not
    assert isinstance(loaded[2], tuple) and loaded[2][0] is not loaded[0]
    assert all(np.array_equal(a, array) for a in loaded[1])


def test_refused_build_leaves_the_allowed_globals_untouched() -> None:
    before = {key: (value.call, value.new) for key, value in safepickle.ALLOWED_GLOBALS.items()}
    with pytest.raises(UnsafePickleError):
        safe_loads(HOSTILE["build-on-allowed-function"][0])
    assert {k: (v.call, v.new) for k, v in safepickle.ALLOWED_GLOBALS.items()} == before
    assert safe_loads(pickle.dumps([np.arange(2.0)]))[0].tolist() == [0.0, 1.0]
    assert np.dtype("f8").isnative and np.arange(2.0).tolist() == [0.0, 1.0]


def test_a_100k_deep_pickle_is_one_line_on_the_cli(tmp_path, isolated_cache, capsys) -> None:
    """Through ``--local`` (the util_pkl reader) the refusal is one line, not a traceback."""
    from mltraces.catalog import build
    from mltraces.cli import main

    folder = tmp_path / "util_pkl"
    folder.mkdir()
    for spec in build.get_schema("acme.util_cdf").sources:
        (folder / spec.file.rsplit("/", 1)[-1]).write_bytes(_pickle(_deep_lists(100_000)))
    query = ["sql", "SELECT count(*) FROM acme.util_cdf", "--local", f"acme.util_cdf={folder}"]
    assert main(query) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err, err
    assert re.search(rf"\.pkl: more than {MAX_OPCODES} opcodes \(MAX_OPCODES\); refused", err)
    assert main(["validate", "acme.util_cdf", "--local", f"acme.util_cdf={folder}"]) == 1
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and f"more than {MAX_OPCODES} opcodes" in captured.out
