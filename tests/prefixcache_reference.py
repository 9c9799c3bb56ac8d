"""A brute-force prefix-cache replay, written plainly from the definitions, and random traces.

Nothing here shares code with :mod:`mltraces.prefixcache`: caches are Python lists
and dicts, Belady looks ahead by scanning the rest of the sequence, the prefix hit
is checked against the cache as it was when the request arrived (not as a run of
hits), and ties among blocks never used again are broken the other way round
from the engine (the smallest id goes first), which must not change any count.
"""

from __future__ import annotations

import math

import numpy as np

MASK = (1 << 64) - 1


def _victim(policy: str, cache: list[int], meta: dict[int, list[int]], future: list[int],
            t: int) -> int:
    """The block ``policy`` evicts from the full ``cache`` before access ``t``."""
    if policy in ("lru", "fifo"):
        return cache[0]  # the list is kept oldest first (by last access / by insertion)
    if policy == "lfu":
        return min(cache, key=lambda b: (meta[b][0], meta[b][1]))

    def next_use(block: int) -> float:
        for u in range(t + 1, len(future)):
            if future[u] == block:
                return u
        return math.inf

    farthest = max(next_use(b) for b in cache)
    return min(b for b in cache if next_use(b) == farthest)


def simulate(requests: list[list[int]], tokens: list[int], block_size: int, capacity: int,
             policy: str) -> tuple[int, int, int]:
    """(block hits, prefix-hit blocks, reused tokens) of one cache."""
    future = [b for request in requests for b in request]
    cache: list[int] = []
    meta: dict[int, list[int]] = {}  # LFU: block -> [count since inserted, last access]
    hits = prefix = reused = 0
    t = 0
    for request, request_tokens in zip(requests, tokens, strict=True):
        k = 0
        while k < len(request) and request[k] in cache:
            k += 1
        prefix += k
        reused += min(k * block_size, request_tokens)
        for block in request:
            if block in cache:
                hits += 1
                meta[block] = [meta[block][0] + 1, t]
                if policy == "lru":
                    cache.remove(block)
                    cache.append(block)
            elif capacity > 0:
                if len(cache) == capacity:
                    victim = _victim(policy, cache, meta, future, t)
                    cache.remove(victim)
                    del meta[victim]
                cache.append(block)
                meta[block] = [1, t]
            t += 1
    return hits, prefix, reused


def splitmix64(z: int) -> int:
    z = (z + 0x9E3779B97F4A7C15) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def route(requests: list[list[int]], instances: int, routing: str, depth: int) -> list[int]:
    """The instance of each request, from the routing rules' definitions."""
    if routing == "round-robin":
        return [i % instances for i in range(len(requests))]
    chosen = []
    for request in requests:
        h = 0
        for block in request[:depth]:
            h = splitmix64(h ^ (block & MASK))
        chosen.append(h % instances)
    return chosen


def random_trace(seed: int, requests: int = 40) -> tuple[list[list[int]], list[int], int]:
    """Requests that share prefixes as real ones do: continuations of an earlier request,
    a few common first blocks, repeats inside a request, empty requests, sparse ids
    (large, negative); tokens mostly fill their blocks, sometimes fewer or none."""
    rng = np.random.default_rng(seed)
    block_size = int(rng.choice([1, 4, 16, 512]))
    pool = [int(x) for x in rng.integers(-(2**62), 2**62, size=6)] + list(range(6))
    trace: list[list[int]] = []
    for _ in range(requests):
        kind = rng.random()
        if kind < 0.4 and trace:  # continue an earlier request
            base = trace[int(rng.integers(len(trace)))]
            blocks = base[: int(rng.integers(len(base) + 1))]
        elif kind < 0.5:
            blocks = []
        else:
            blocks = [int(rng.choice(pool))]
        blocks = blocks + [int(rng.choice(pool)) if rng.random() < 0.5 else
                           int(rng.integers(100, 130)) for _ in range(int(rng.integers(0, 6)))]
        trace.append(blocks)
    tokens = []
    for blocks in trace:
        full = len(blocks) * block_size
        low = max(0, full - block_size + 1)
        tokens.append(int(rng.integers(low, full + 1)) if rng.random() < 0.8 else
                      int(rng.integers(0, full + block_size + 1)))
    return trace, tokens, block_size
