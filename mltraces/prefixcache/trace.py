"""A request trace as flat arrays, checked once and remapped to dense block ids.

The replay takes what an Arrow list column holds: every request's block ids
concatenated in arrival order (``blocks``), where each request starts
(``offsets``, one more entry than requests), and each request's input tokens.
Block ids are arbitrary integers (Mooncake numbers them from 0, Qwen/Bailian
remaps its hashes to integers, another trace may carry 64-bit hashes): they are
replaced once by dense ids ``0 … distinct - 1`` in order of first appearance,
so that every cache structure is an array indexed by block.

Bad input is refused in one line naming the argument and the first bad row:
offsets that do not start at 0, end at ``len(blocks)`` or never decrease; a
request with more blocks than ``max_request_blocks``; input tokens that are
negative, NaN, infinite or fractional; a block size that is not a positive
integer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from mltraces.prefixcache import native

#: most blocks one request may have unless the caller says otherwise (2**20 blocks is
#: 512 M tokens in Mooncake's 512-token blocks, 16 M in Qwen's 16-token ones)
MAX_REQUEST_BLOCKS = 1 << 20
#: largest block size accepted (tokens per block)
MAX_BLOCK_SIZE = 1 << 31
#: largest total of input tokens (sums stay exact in int64)
MAX_TOTAL_TOKENS = 1 << 62


@dataclass(frozen=True)
class RequestBlocks:
    """A checked trace: ``blocks`` (dense ids, int64), ``offsets`` (int64, requests + 1),
    ``input_tokens`` (int64), ``block_size``, ``distinct`` (how many dense ids), and the
    caller's ``ids`` (the original block ids, which prefix-affinity routing hashes)."""

    blocks: np.ndarray
    offsets: np.ndarray
    input_tokens: np.ndarray
    block_size: int
    distinct: int
    ids: np.ndarray

    @property
    def requests(self) -> int:
        return len(self.input_tokens)

    @classmethod
    def from_arrays(cls, blocks: Any, offsets: Any, input_tokens: Any, block_size: int, *,
                    max_request_blocks: int = MAX_REQUEST_BLOCKS) -> RequestBlocks:
        """Check the flat arrays and remap the block ids (see the module's docstring)."""
        size = _block_size(block_size)
        limit = _positive_int(max_request_blocks, "max_request_blocks")
        ids = _integers(blocks, "blocks")
        tokens = _tokens(input_tokens)
        starts = _offsets(offsets, len(tokens), len(ids), limit)
        dense, distinct = dense_ids(ids)
        return cls(dense, starts, tokens, size, distinct, ids)

    @classmethod
    def from_lists(cls, block_lists: Any, input_tokens: Any, block_size: int, *,
                   max_request_blocks: int = MAX_REQUEST_BLOCKS) -> RequestBlocks:
        """From one list of block ids per request (small traces, examples, tests)."""
        counts = [len(row) for row in block_lists]
        offsets = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        flat = [block for row in block_lists for block in row]
        values = np.asarray(flat) if flat else np.zeros(0, dtype=np.int64)  # checked below
        return cls.from_arrays(values, offsets, input_tokens, block_size,
                               max_request_blocks=max_request_blocks)

    @classmethod
    def from_arrow(cls, column: Any, input_tokens: Any, block_size: int, *,
                   max_request_blocks: int = MAX_REQUEST_BLOCKS) -> RequestBlocks:
        """From an Arrow list column of block ids (a ``ListArray``, ``LargeListArray`` or a
        ``ChunkedArray`` of them): its values and offsets, without a copy per request;
        ``input_tokens`` an Arrow numeric column or anything numpy reads."""
        values, offsets = arrow_lists(column)
        if _is_arrow(input_tokens):
            input_tokens = arrow_numbers(input_tokens, "input_tokens")
        return cls.from_arrays(values, offsets, input_tokens, block_size,
                               max_request_blocks=max_request_blocks)


def _is_arrow(value: Any) -> bool:
    return type(value).__module__.startswith("pyarrow")


def arrow_lists(column: Any) -> tuple[np.ndarray, np.ndarray]:
    """The values and offsets (from 0) of an Arrow list column; null lists or ids refused."""
    import pyarrow as pa

    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if not (pa.types.is_list(column.type) or pa.types.is_large_list(column.type)):
        raise ValueError(f"blocks: expected an Arrow list column, got {column.type}")
    row = _first_null(column)
    if row is not None:
        raise ValueError(f"blocks: request {row} has no block list (null)")
    offsets = _buffer(column.offsets).astype(np.int64)
    values = column.values.slice(offsets[0], offsets[-1] - offsets[0])
    at = _first_null(values)
    if at is not None:
        row = int(np.searchsorted(offsets, offsets[0] + at, side="right")) - 1
        raise ValueError(f"blocks: request {row} has a null block id")
    if not pa.types.is_integer(values.type):
        raise ValueError(f"blocks: expected integer block ids, got {values.type}")
    return _buffer(values), offsets - offsets[0]


def arrow_numbers(column: Any, name: str) -> np.ndarray:
    """An Arrow integer or floating-point column as numpy; nulls refused."""
    import pyarrow as pa

    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if not (pa.types.is_integer(column.type) or pa.types.is_floating(column.type)):
        raise ValueError(f"{name}: expected numbers, got {column.type}")
    row = _first_null(column)
    if row is not None:
        raise ValueError(f"{name}: request {row} is null")
    return _buffer(column)


def _first_null(array: Any) -> int | None:
    """The index of the first null of an Arrow array, None without nulls."""
    if not array.null_count:
        return None
    return next(i for i, valid in enumerate(array.is_valid().to_pylist()) if not valid)


def _buffer(array: Any) -> np.ndarray:
    """A numeric Arrow array without nulls, viewed as numpy from its data buffer
    (pyarrow's own ``to_numpy`` imports pandas, a third of a second)."""
    import pyarrow as pa

    kind = "f" if pa.types.is_floating(array.type) else \
        "i" if pa.types.is_signed_integer(array.type) else "u"
    dtype = np.dtype(f"{kind}{array.type.bit_width // 8}")
    return np.frombuffer(array.buffers()[1], dtype=dtype, count=len(array),
                         offset=array.offset * dtype.itemsize)


def dense_ids(ids: np.ndarray) -> tuple[np.ndarray, int]:
    """Dense ids in order of first appearance, and how many there are: one pass of the
    compiled core (a table indexed by id when the ids span a range not much longer than
    they are, a hash table otherwise), no import of pandas on the way to a replay."""
    if ids.dtype == np.uint64:
        ids = ids.view(np.int64)  # the same 64 bits: distinct stays distinct
    ids = np.ascontiguousarray(ids, dtype=np.int64)
    if not ids.flags.writeable:  # Arrow's buffers: the core's typed views want writable ones
        ids = ids.copy()
    codes = np.empty(len(ids), dtype=np.int64)
    if len(ids) == 0:
        return codes, 0
    low, high = int(ids.min()), int(ids.max())
    if high - low < 4 * len(ids) + 1024:  # a table indexed by id costs no more than the ids
        distinct = native.core().factorize_range(ids, low, high, codes)
    else:
        distinct = native.core().factorize(ids, codes)
    return codes, int(distinct)


def _block_size(value: Any) -> int:
    size = _positive_int(value, "block_size")
    if size > MAX_BLOCK_SIZE:
        raise ValueError(f"block_size: {size} tokens per block is more than {MAX_BLOCK_SIZE}")
    return size


def _positive_int(value: Any, name: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name}: expected a positive integer, got {value!r}")
    if value < 1:
        raise ValueError(f"{name}: expected a positive integer, got {value}")
    return int(value)


def _integers(values: Any, name: str) -> np.ndarray:
    """A 1-D integer array (an empty sequence is an empty int64 array)."""
    array = np.asarray(values)
    if array.ndim != 1:
        raise ValueError(f"{name}: expected a 1-D array, got {array.ndim} dimensions")
    if array.size == 0:
        return np.zeros(0, dtype=np.int64)
    if array.dtype.kind not in "iu":
        raise ValueError(f"{name}: expected integers, got {array.dtype}")
    return array


def _offsets(values: Any, requests: int, total: int, limit: int) -> np.ndarray:
    """Offsets checked against the requests and blocks they describe."""
    offsets = _integers(values, "offsets")
    if len(offsets) != requests + 1:
        raise ValueError(f"offsets: {len(offsets)} entries for {requests} requests "
                         f"(expected len(input_tokens) + 1 = {requests + 1})")
    offsets = offsets.astype(np.int64)
    if offsets[0] != 0:
        raise ValueError(f"offsets: offsets[0] is {offsets[0]}, expected 0")
    if offsets[-1] != total:
        raise ValueError(f"offsets: offsets[{requests}] is {offsets[-1]} but blocks has "
                         f"{total} ids")
    counts = np.diff(offsets)
    if requests and counts.min() < 0:
        row = int(np.argmax(counts < 0))
        raise ValueError(f"offsets: request {row} ends before it starts (offsets[{row}] = "
                         f"{offsets[row]} > offsets[{row + 1}] = {offsets[row + 1]})")
    if requests and counts.max() > limit:
        row = int(np.argmax(counts > limit))
        raise ValueError(f"blocks: request {row} has {counts[row]} blocks, more than "
                         f"max_request_blocks = {limit}")
    return offsets


def _tokens(values: Any) -> np.ndarray:
    """Input tokens as int64: whole, finite, non-negative numbers, in total < 2**62."""
    array = np.asarray(values)
    if array.ndim != 1:
        raise ValueError(f"input_tokens: expected a 1-D array, got {array.ndim} dimensions")
    if array.size == 0:
        return np.zeros(0, dtype=np.int64)
    if array.dtype.kind not in "iuf":
        raise ValueError(f"input_tokens: expected numbers, got {array.dtype}")
    problems = (("is NaN", np.isnan), ("is infinite", np.isinf),
                ("is negative", lambda a: a < 0),
                ("is not a whole number", lambda a: a != np.floor(a)))
    for what, test in problems if array.dtype.kind == "f" else problems[2:3]:
        bad = test(array)
        if bad.any():
            row = int(np.argmax(bad))
            raise ValueError(f"input_tokens: request {row} {what} ({array[row]})")
    if float(array.sum(dtype=np.float64)) >= MAX_TOTAL_TOKENS:
        raise ValueError("input_tokens: the total is 2**62 tokens or more")
    return array.astype(np.int64)
