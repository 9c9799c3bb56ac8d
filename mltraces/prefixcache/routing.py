"""Spreading requests over K cache instances, and each instance's share of the trace.

Two deterministic rules, both decided by the trace alone (never by a cache's
state, so every policy and capacity sees the same split):

``round-robin``
    request ``i`` (0-based, in arrival order) goes to instance ``i mod K``.
``affinity``
    requests that begin with the same ``affinity_blocks`` block ids go to the same
    instance: request ``i`` with block ids ``b_0 … b_(m-1)`` (the caller's ids, not
    the dense ones) goes to instance ``h mod K``, where ``h`` starts at 0 and, for
    ``j < min(affinity_blocks, m)``, becomes ``splitmix64(h XOR b_j)`` (ids as
    unsigned 64-bit; ``splitmix64(z)`` adds 0x9E3779B97F4A7C15 and applies the
    SplitMix64 finaliser, all modulo 2**64). A request without blocks goes to
    instance 0. A shared prefix shorter than the depth does not keep requests
    together, and a common system-prompt block makes a depth of 1 useless: every
    Mooncake conversation request starts with block 0 (one group at depth 1,
    7,373 at depth 2), hence the default depth of 2.

Each instance replays its requests in their arrival order as one trace of its own.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mltraces.prefixcache.trace import RequestBlocks, dense_ids

ROUTINGS = ("round-robin", "affinity")
#: the default affinity depth (see the module's docstring)
AFFINITY_BLOCKS = 2

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


@dataclass(frozen=True)
class Part:
    """One instance's share: dense ids of its own (``0 … distinct - 1``), offsets and tokens."""

    blocks: np.ndarray
    offsets: np.ndarray
    input_tokens: np.ndarray
    distinct: int

    @property
    def requests(self) -> int:
        return len(self.input_tokens)


def splitmix64(z: np.ndarray) -> np.ndarray:
    """SplitMix64's step on unsigned 64-bit values (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        z = z + _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * _MIX1
        z = (z ^ (z >> np.uint64(27))) * _MIX2
    return z ^ (z >> np.uint64(31))


def assign(trace: RequestBlocks, instances: int, routing: str,
           affinity_blocks: int = AFFINITY_BLOCKS) -> np.ndarray:
    """The instance (0 … K-1) of every request, by ``routing``."""
    if routing == "round-robin":
        return np.arange(trace.requests, dtype=np.int64) % instances
    counts = np.diff(trace.offsets)
    state = np.zeros(trace.requests, dtype=np.uint64)
    ids = trace.ids.astype(np.uint64)
    for j in range(affinity_blocks):
        rows = np.flatnonzero(counts > j)
        if len(rows) == 0:
            break
        state[rows] = splitmix64(state[rows] ^ ids[trace.offsets[rows] + j])
    return (state % np.uint64(instances)).astype(np.int64)


def split(trace: RequestBlocks, instance: np.ndarray, instances: int) -> list[Part]:
    """Each instance's requests, in arrival order, with dense ids of their own."""
    if instances == 1:
        return [Part(trace.blocks, trace.offsets, trace.input_tokens, trace.distinct)]
    counts = np.diff(trace.offsets)
    order = np.argsort(instance, kind="stable")  # requests, grouped by instance
    starts = np.searchsorted(instance[order], np.arange(instances + 1))
    block_instance = np.repeat(instance, counts)
    per_block = np.argsort(block_instance, kind="stable")  # blocks, grouped the same way
    block_starts = np.zeros(instances + 1, dtype=np.int64)
    np.cumsum(np.bincount(block_instance, minlength=instances), out=block_starts[1:])
    parts = []
    for k in range(instances):
        rows = order[starts[k]:starts[k + 1]]
        offsets = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(counts[rows], out=offsets[1:])
        blocks, distinct = dense_ids(trace.blocks[per_block[block_starts[k]:block_starts[k + 1]]])
        parts.append(Part(blocks, offsets, trace.input_tokens[rows], distinct))
    return parts
