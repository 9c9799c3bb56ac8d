"""Replay the prefix blocks of LLM requests through a KV cache: LRU, LFU, FIFO and Belady.

An engine: it takes arrays and returns counts; it knows no trace file, no source
and no table. A trace is its requests in arrival order, each with its prefix
block ids (Mooncake's ``hash_ids``, 512 tokens a block; Qwen/Bailian's, 16) and
its input tokens, given as an Arrow list column gives them: the ids of all
requests concatenated (``blocks``), where each request starts (``offsets``,
``len(input_tokens) + 1`` entries from 0 to ``len(blocks)``), the input tokens
and the tokens per block.

>>> from mltraces.prefixcache import replay
>>> result = replay(blocks=[7, 8, 9, 7, 8, 5, 7, 6], offsets=[0, 3, 6, 8],
...                 input_tokens=[40, 44, 20], block_size=16, capacities=[2, 8],
...                 policies="lru,belady")
>>> lru = result.get("lru", 8)
>>> lru.block_hits, lru.prefix_hit_blocks, lru.reused_tokens, lru.input_tokens
(3, 3, 48, 104)
>>> result.frame()[["policy", "capacity", "block_hits", "prefix_hit_blocks", "token_hit_ratio"]]
   policy  capacity  block_hits  prefix_hit_blocks  token_hit_ratio
0     lru         2           0                  0         0.000000
1     lru         8           3                  3         0.461538
2  belady         2           2                  2         0.307692
3  belady         8           3                  3         0.461538

**The cache.** Each instance holds at most N blocks (its capacity; 0 caches
nothing). A request's blocks are accessed in order: a block found cached is a
**block hit** (and is touched as its policy says); a block not found is a miss
and is inserted, evicting one block by the policy when the cache is full. So a
block repeated within a request hits the second time, and a block cached when
the request arrived but evicted by an earlier miss of the same request misses.

**The prefix rule.** A KV prefix is reusable only from the start: a request's
**prefix hit** is the number k of its leading blocks that were all cached when it
arrived (equivalently its leading run of block hits: nothing is evicted before
its first miss), and it spares ``min(k × block_size, input_tokens)`` **reused
tokens** (its last block may be partial). Per (policy, capacity) the replay
reports requests, blocks, block hits, prefix-hit blocks, reused tokens, input
tokens and three ratios: block hits / blocks, prefix-hit blocks / blocks and
reused / input tokens (NaN when the denominator is 0).

**The policies.** ``lru``: evicts the least recently accessed block. ``fifo``:
evicts the block inserted longest ago; a hit does not refresh it. ``lfu``:
evicts the least frequently accessed block, counting accesses since it was last
inserted (in-cache frequency: a count is forgotten at eviction), the least
recently accessed among equals. ``belady``: Belady's MIN, evicts the block whose
next access (in the instance's own future) is farthest away, blocks never
accessed again first (among those, the one first seen last: which one does not
change any count).

**What Belady bounds.** MIN is the offline optimum of block hits among caches of
N blocks that insert every missed block (Belady 1966; Mattson et al. 1970):
LRU, LFU and FIFO are such caches, so on the same instance split Belady's block
hits are at least theirs. A prefix hit is a run of block hits, so every
policy's prefix-hit blocks are at most its block hits, hence at most Belady's
block hits, and its reused tokens at most ``block_size`` × Belady's block hits.
Belady's own prefix-hit blocks and reused tokens are *not* an optimum (MIN
maximises hits, not leading runs of them): LFU and FIFO can beat them (the tests
hold a three-request example of each). LRU cannot: every access LRU hits, Belady
hits too at the same capacity (between two accesses of a block that LRU keeps,
fewer than N other distinct blocks are accessed, so whenever MIN must evict in
between, some cached block is needed later than it), so Belady's prefix-hit blocks and reused tokens
are at least LRU's, request by request.

**Instances.** With ``instances=K`` each of K instances has its own cache of N
blocks; ``routing="round-robin"`` sends request i to instance i mod K,
``routing="affinity"`` sends requests that begin with the same
``affinity_blocks`` ids (default 2) to one instance (a hash of those ids: see
:mod:`.routing`). The result has the totals and each instance's counts.

**Speed.** The loops are compiled (:mod:`.cachecore`, Cython's pure Python mode,
built at install; see :mod:`.native`; the same file runs as Python where it
could not be built): an access is an array operation, O(1) for LRU, FIFO and
LFU (lists per access count), O(log N) for Belady (a heap). LRU at several
capacities is one pass over Mattson's stack distances (a Fenwick tree, O(log T)
an access) with the prefix rule applied per capacity. Block ids are remapped once
to dense ids (in the core); pandas is imported only by ``frame()``.

Public API::

    replay(blocks, offsets, input_tokens, block_size, capacities, policies="all", *,
           instances=1, routing="round-robin", affinity_blocks=2,
           max_request_blocks=2**20) -> PrefixCacheResult
    RequestBlocks.from_arrays(...) / .from_lists(block_lists, input_tokens, block_size) /
        .from_arrow(list_column, input_tokens, block_size): a checked trace
    replay_trace(trace: RequestBlocks, plan: Plan) -> PrefixCacheResult
    Plan.checked(capacities, policies="all", *, instances=1, routing="round-robin",
                 affinity_blocks=2)
    PrefixCacheResult: .totals, .per_instance (CacheStats), .get(policy, capacity,
        instance=None), .frame(per_instance=False) -> pandas.DataFrame
    CacheStats: the counts, .block_hit_ratio, .prefix_hit_ratio, .token_hit_ratio
    POLICIES, ROUTINGS
"""

from __future__ import annotations

from mltraces.prefixcache.engine import POLICIES, Plan, replay, replay_trace
from mltraces.prefixcache.results import COLUMNS, CacheStats, PrefixCacheResult
from mltraces.prefixcache.routing import ROUTINGS
from mltraces.prefixcache.trace import RequestBlocks

__all__ = [
    "COLUMNS",
    "POLICIES",
    "ROUTINGS",
    "CacheStats",
    "Plan",
    "PrefixCacheResult",
    "RequestBlocks",
    "replay",
    "replay_trace",
]
