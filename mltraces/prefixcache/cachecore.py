"""The compiled loops of the prefix-cache replay: one cache, one access sequence, per policy.

Why compiled. A replay touches every block of every request once per policy and
capacity: the Mooncake conversation trace is ~290,000 block accesses, a Qwen
trace tens of millions, and a dictionary-backed cache spends ~0.5 µs of
interpreter time on each. Here the caches are int64 arrays indexed by dense
block id (linked lists, heaps, a ring, a Fenwick tree) and each access is a
handful of machine instructions. The source is Cython's pure Python mode (see
:mod:`.native`): compiled when mltraces is installed, the same file runs as
Python otherwise, with identical results (the tests compare the two).

Conventions. ``blocks`` is one access sequence of dense block ids ``0 …
nblocks - 1`` (the requests of one instance, concatenated in arrival order).
A cache function writes ``hit[t] = 1`` when access ``t`` found its block
cached and 0 otherwise; every miss inserts the block (demand paging), evicting
per the policy when the cache is full; a capacity of 0 caches nothing.
:func:`tally` then applies the prefix rule per request. :func:`stack_distances`
and :func:`tally_stack` do LRU for many capacities in one pass.
"""

from __future__ import annotations

import numpy as np

try:
    import cython
except ImportError:  # installed without its compiled extension: run as Python
    from mltraces import cyshim as cython

i64 = cython.typedef(cython.longlong)
u64 = cython.typedef(cython.ulonglong)
u8 = cython.typedef(cython.uchar)

#: the stack distance of a block's first access: larger than any capacity
NEVER = cython.declare(i64, 2**62)
#: an odd 64-bit constant that spreads ids over the hash table (SplitMix64's first)
SPREAD = cython.declare(u64, 0xBF58476D1CE4E5B9)


@cython.cfunc
@cython.inline
@cython.exceptval(check=False)
def home(value: i64, mask: i64) -> i64:
    """The slot where the search for ``value`` starts: its 64 bits mixed (codes never
    depend on it, only how long searches are; the interpreted core mixes the same way,
    wrapping by hand, so strided ids do not pile up in one slot there either)."""
    z: u64
    if cython.compiled:
        z = cython.cast(u64, value)
        z = (z ^ (z >> 31)) * SPREAD
        return cython.cast(i64, (z ^ (z >> 29)) & cython.cast(u64, mask))
    else:
        z = int(value) & 0xFFFFFFFFFFFFFFFF
        z = ((z ^ (z >> 31)) * SPREAD) & 0xFFFFFFFFFFFFFFFF
        return (z ^ (z >> 29)) & mask


@cython.ccall
def factorize(ids: i64[:], codes: i64[:]) -> i64:
    """Dense ids: ``codes[t]`` numbers ``ids[t]`` among the distinct ids in order of first
    appearance (0, 1, …); returns how many there are. An open-addressing table of (id,
    code) rows searched linearly, doubled whenever it is half full, so it stays about the
    size of the distinct ids (a table sized by the accesses would not fit any cache)."""
    n: i64 = ids.shape[0]
    size: i64 = 1024
    table: i64[:, :] = np.full((size, 2), -1, dtype=np.int64)
    count: i64 = 0
    t: i64
    h: i64
    value: i64
    for t in range(n):
        value = ids[t]
        h = home(value, size - 1)
        while table[h, 1] >= 0 and table[h, 0] != value:
            h = (h + 1) & (size - 1)
        if table[h, 1] < 0:
            table[h, 0] = value
            table[h, 1] = count
            count += 1
            if 2 * count > size:
                size *= 2
                table = grown(table, size)
            codes[t] = count - 1
        else:
            codes[t] = table[h, 1]
    return count


@cython.ccall
def factorize_range(ids: i64[:], low: i64, high: i64, codes: i64[:]) -> i64:
    """:func:`factorize` for ids all within ``low … high`` (a range the caller keeps about
    as long as ``ids``): a table indexed by id, which sequential ids (Mooncake's, Qwen's)
    read in order instead of hashing all over a large table."""
    n: i64 = ids.shape[0]
    table: i64[:] = np.full(high - low + 1, -1, dtype=np.int64)
    count: i64 = 0
    t: i64
    at: i64
    for t in range(n):
        at = ids[t] - low
        if table[at] < 0:
            table[at] = count
            count += 1
        codes[t] = table[at]
    return count


@cython.cfunc
def grown(table: i64[:, :], size: i64) -> i64[:, :]:
    """The rows of ``table`` placed in a new table of ``size`` rows."""
    bigger: i64[:, :] = np.full((size, 2), -1, dtype=np.int64)
    i: i64
    h: i64
    for i in range(table.shape[0]):
        if table[i, 1] >= 0:
            h = home(table[i, 0], size - 1)
            while bigger[h, 1] >= 0:
                h = (h + 1) & (size - 1)
            bigger[h, 0] = table[i, 0]
            bigger[h, 1] = table[i, 1]
    return bigger


@cython.final
@cython.cclass
class Heap:
    """A binary min-heap of blocks by an int64 key (``keys[i]`` is the key of ``items[i]``),
    with each block's place in ``pos`` (-1 when not in the heap), so that a block's key can
    change in place."""

    items: i64[:]
    keys: i64[:]
    pos: i64[:]
    size: i64

    def __init__(self, capacity: int, nblocks: int) -> None:
        self.items = np.zeros(max(capacity, 1), dtype=np.int64)
        self.keys = np.zeros(max(capacity, 1), dtype=np.int64)
        self.pos = np.full(max(nblocks, 1), -1, dtype=np.int64)
        self.size = 0

    @cython.cfunc
    @cython.inline
    @cython.exceptval(check=False)
    def place(self, i: i64, x: i64, key: i64) -> cython.void:
        self.items[i] = x
        self.keys[i] = key
        self.pos[x] = i

    @cython.cfunc
    @cython.exceptval(check=False)
    def up(self, i: i64, x: i64, key: i64) -> cython.void:
        """Put block ``x`` with ``key`` at ``i`` or above, moving larger parents down."""
        parent: i64
        while i > 0:
            parent = (i - 1) >> 1
            if self.keys[parent] <= key:
                break
            self.place(i, self.items[parent], self.keys[parent])
            i = parent
        self.place(i, x, key)

    @cython.cfunc
    @cython.exceptval(check=False)
    def down(self, i: i64, x: i64, key: i64) -> cython.void:
        """Put block ``x`` with ``key`` at ``i`` or below, moving smaller children up."""
        child: i64
        while True:
            child = 2 * i + 1
            if child >= self.size:
                break
            if child + 1 < self.size and self.keys[child + 1] < self.keys[child]:
                child += 1
            if self.keys[child] >= key:
                break
            self.place(i, self.items[child], self.keys[child])
            i = child
        self.place(i, x, key)

    @cython.cfunc
    @cython.exceptval(check=False)
    def push(self, x: i64, key: i64) -> cython.void:
        self.size += 1
        self.up(self.size - 1, x, key)

    @cython.cfunc
    @cython.exceptval(check=False)
    def pop(self) -> i64:
        """Remove and return the block of the smallest key."""
        first: i64 = self.items[0]
        self.pos[first] = -1
        self.size -= 1
        if self.size > 0:
            self.down(0, self.items[self.size], self.keys[self.size])
        return first


@cython.final
@cython.cclass
class Buckets:
    """Blocks by access count: one list per count, oldest access first (``head``/``tail``
    per count, ``older``/``newer`` per block), ``count[x]`` 0 for a block not cached."""

    count: i64[:]
    older: i64[:]
    newer: i64[:]
    head: i64[:]
    tail: i64[:]

    def __init__(self, nblocks: int, most: int) -> None:
        self.count = np.zeros(max(nblocks, 1), dtype=np.int64)
        self.older = np.full(max(nblocks, 1), -1, dtype=np.int64)
        self.newer = np.full(max(nblocks, 1), -1, dtype=np.int64)
        self.head = np.full(most + 2, -1, dtype=np.int64)
        self.tail = np.full(most + 2, -1, dtype=np.int64)

    @cython.cfunc
    @cython.exceptval(check=False)
    def unlink(self, x: i64) -> cython.void:
        """Take ``x`` out of its count's list."""
        c: i64 = self.count[x]
        a: i64 = self.older[x]
        b: i64 = self.newer[x]
        if a >= 0:
            self.newer[a] = b
        else:
            self.head[c] = b
        if b >= 0:
            self.older[b] = a
        else:
            self.tail[c] = a

    @cython.cfunc
    @cython.exceptval(check=False)
    def append(self, x: i64, c: i64) -> cython.void:
        """Put ``x`` last (newest) in the list of count ``c``."""
        last: i64 = self.tail[c]
        self.count[x] = c
        self.older[x] = last
        self.newer[x] = -1
        if last >= 0:
            self.newer[last] = x
        else:
            self.head[c] = x
        self.tail[c] = x


@cython.ccall
def lru(blocks: i64[:], nblocks: i64, capacity: i64, hit: u8[:]) -> cython.void:
    """Least recently used: a doubly linked list through ``newer``/``older``, the newest
    block at ``head``; a hit moves its block to the head, a miss in a full cache evicts
    the tail."""
    n: i64 = blocks.shape[0]
    cap: i64 = min(capacity, nblocks)
    newer: i64[:] = np.full(max(nblocks, 1), -1, dtype=np.int64)
    older: i64[:] = np.full(max(nblocks, 1), -1, dtype=np.int64)
    cached: u8[:] = np.zeros(max(nblocks, 1), dtype=np.uint8)
    head: i64 = -1
    tail: i64 = -1
    size: i64 = 0
    t: i64
    x: i64
    v: i64
    for t in range(n):
        x = blocks[t]
        if cached[x]:
            hit[t] = 1
            if x == head:
                continue
            v = older[x]  # unlink x; it has a newer neighbour, not being the head
            older[newer[x]] = v
            if v >= 0:
                newer[v] = newer[x]
            else:
                tail = newer[x]
        else:
            hit[t] = 0
            if cap == 0:
                continue
            if size == cap:  # evict the tail
                v = tail
                cached[v] = 0
                tail = newer[v]
                if tail >= 0:
                    older[tail] = -1
                else:
                    head = -1
                size -= 1
            cached[x] = 1
            size += 1
        older[x] = head  # x becomes the head
        newer[x] = -1
        if head >= 0:
            newer[head] = x
        head = x
        if tail < 0:
            tail = x


@cython.ccall
def fifo(blocks: i64[:], nblocks: i64, capacity: i64, hit: u8[:]) -> cython.void:
    """First in, first out: blocks in insertion order in a ring; a hit changes nothing,
    a miss in a full cache replaces the oldest block."""
    n: i64 = blocks.shape[0]
    cap: i64 = min(capacity, nblocks)
    ring: i64[:] = np.zeros(max(cap, 1), dtype=np.int64)
    cached: u8[:] = np.zeros(max(nblocks, 1), dtype=np.uint8)
    first: i64 = 0
    size: i64 = 0
    t: i64
    x: i64
    for t in range(n):
        x = blocks[t]
        if cached[x]:
            hit[t] = 1
            continue
        hit[t] = 0
        if cap == 0:
            continue
        if size == cap:
            cached[ring[first]] = 0
            ring[first] = x
            first = (first + 1) % cap
        else:
            ring[(first + size) % cap] = x
            size += 1
        cached[x] = 1


@cython.ccall
def lfu(blocks: i64[:], nblocks: i64, capacity: i64, hit: u8[:]) -> cython.void:
    """Least frequently used, in-cache counts: a block's count starts at 1 when it is
    inserted and is forgotten when it is evicted; among the least frequent, the least
    recently accessed goes first (the head of the lowest count's list)."""
    n: i64 = blocks.shape[0]
    cap: i64 = min(capacity, nblocks)
    lists: Buckets = Buckets(nblocks, most_accessed(blocks, nblocks))
    lowest: i64 = 1
    size: i64 = 0
    t: i64
    x: i64
    c: i64
    for t in range(n):
        x = blocks[t]
        c = lists.count[x]
        if c > 0:
            hit[t] = 1
            lists.unlink(x)
            if c == lowest and lists.head[c] < 0:
                lowest = c + 1
            lists.append(x, c + 1)
            continue
        hit[t] = 0
        if cap == 0:
            continue
        if size == cap:
            c = lists.head[lowest]
            lists.unlink(c)
            lists.count[c] = 0
            size -= 1
        lists.append(x, 1)
        lowest = 1
        size += 1


@cython.cfunc
def most_accessed(blocks: i64[:], nblocks: i64) -> i64:
    """The most accesses any one block has: the highest count LFU can reach."""
    seen: i64[:] = np.zeros(max(nblocks, 1), dtype=np.int64)
    most: i64 = 0
    t: i64
    for t in range(blocks.shape[0]):
        seen[blocks[t]] += 1
        if seen[blocks[t]] > most:
            most = seen[blocks[t]]
    return most


@cython.ccall
def next_uses(blocks: i64[:], nblocks: i64, nexts: i64[:]) -> cython.void:
    """``nexts[t]``: where block ``blocks[t]`` is accessed next, or ``n + block`` when it
    never is again (past every position, and distinct per block)."""
    n: i64 = blocks.shape[0]
    seen: i64[:] = np.full(max(nblocks, 1), -1, dtype=np.int64)
    t: i64
    x: i64
    for t in range(n - 1, -1, -1):
        x = blocks[t]
        nexts[t] = seen[x] if seen[x] >= 0 else n + x
        seen[x] = t


@cython.ccall
def belady(blocks: i64[:], nblocks: i64, capacity: i64, nexts: i64[:],
           hit: u8[:]) -> cython.void:
    """Belady's MIN: a miss in a full cache evicts the cached block whose next use is
    farthest away (blocks never used again first, by :func:`next_uses`'s order)."""
    n: i64 = blocks.shape[0]
    cap: i64 = min(capacity, nblocks)
    heap: Heap = Heap(cap, nblocks)  # min-heap on minus the next use
    t: i64
    x: i64
    for t in range(n):
        x = blocks[t]
        if heap.pos[x] >= 0:
            hit[t] = 1
            heap.up(heap.pos[x], x, -nexts[t])  # its next use moved later: it sorts earlier
            continue
        hit[t] = 0
        if cap == 0:
            continue
        if heap.size == cap:
            heap.pop()
        heap.push(x, -nexts[t])


@cython.ccall
def stack_distances(blocks: i64[:], nblocks: i64, dist: i64[:]) -> cython.void:
    """Mattson's LRU stack distance of every access: 1 + the number of distinct blocks
    accessed since the block's previous access (:data:`NEVER` for a first access), so
    access ``t`` hits an LRU cache of ``c`` blocks exactly when ``dist[t] <= c``.

    A Fenwick tree over positions marks each block's latest access; the distance is
    the count of marks after the previous access."""
    n: i64 = blocks.shape[0]
    tree: i64[:] = np.zeros(n + 1, dtype=np.int64)
    last: i64[:] = np.full(max(nblocks, 1), -1, dtype=np.int64)
    t: i64
    x: i64
    p: i64
    i: i64
    s: i64
    for t in range(n):
        x = blocks[t]
        p = last[x]
        if p < 0:
            dist[t] = NEVER
        else:
            s = 0
            i = t  # marks at positions 0 … t-1, minus those at 0 … p
            while i > 0:
                s += tree[i]
                i -= i & -i
            i = p + 1
            while i > 0:
                s -= tree[i]
                i -= i & -i
            dist[t] = s + 1
            i = p + 1  # unmark the previous access
            while i <= n:
                tree[i] -= 1
                i += i & -i
        i = t + 1
        while i <= n:
            tree[i] += 1
            i += i & -i
        last[x] = t


@cython.ccall
def tally(hit: u8[:], offsets: i64[:], tokens: i64[:], block_size: i64,
          out: i64[:]) -> cython.void:
    """The prefix rule over one run's hits: ``out`` = (block hits, prefix-hit blocks,
    reused tokens). A request's prefix hit is its leading run of hits: no block changes
    membership before the first miss, so that run is exactly the leading blocks that were
    all cached when the request arrived."""
    requests: i64 = tokens.shape[0]
    hits: i64 = 0
    prefix: i64 = 0
    reused: i64 = 0
    r: i64
    t: i64
    k: i64
    leading: cython.bint
    for r in range(requests):
        k = 0
        leading = True
        for t in range(offsets[r], offsets[r + 1]):
            if hit[t]:
                hits += 1
                if leading:
                    k += 1
            else:
                leading = False
        prefix += k
        reused += min(k * block_size, tokens[r])
    out[0] = hits
    out[1] = prefix
    out[2] = reused


@cython.cfunc
@cython.exceptval(check=False)
def first_at_least(caps: i64[:], value: i64) -> i64:
    """The first index of sorted ``caps`` holding ``value`` or more (its length if none)."""
    lo: i64 = 0
    hi: i64 = caps.shape[0]
    mid: i64
    while lo < hi:
        mid = (lo + hi) >> 1
        if caps[mid] < value:
            lo = mid + 1
        else:
            hi = mid
    return lo


@cython.ccall
def tally_stack(dist: i64[:], offsets: i64[:], tokens: i64[:], block_size: i64,
                caps: i64[:], out: i64[:, :]) -> cython.void:
    """:func:`tally` for LRU at every capacity of ascending ``caps`` from stack distances:
    ``out[c]`` = (block hits, prefix-hit blocks, reused tokens) at ``caps[c]``. An access
    hits at capacity ``c`` when its distance is at most ``c``; it is in its request's
    prefix hit when the largest distance up to it in the request is."""
    ncap: i64 = caps.shape[0]
    block_hist: i64[:] = np.zeros(ncap + 1, dtype=np.int64)
    leading: i64[:] = np.zeros(ncap + 1, dtype=np.int64)
    requests: i64 = tokens.shape[0]
    r: i64
    t: i64
    c: i64
    k: i64
    d: i64
    worst: i64
    at: i64
    for r in range(requests):
        for c in range(ncap + 1):
            leading[c] = 0
        worst = 0
        at = 0
        for t in range(offsets[r], offsets[r + 1]):
            d = dist[t]
            block_hist[first_at_least(caps, d)] += 1
            if d > worst:
                worst = d
                while at < ncap and caps[at] < worst:
                    at += 1
            leading[at] += 1
        k = 0
        for c in range(ncap):
            k += leading[c]
            out[c, 1] += k
            out[c, 2] += min(k * block_size, tokens[r])
    k = 0
    for c in range(ncap):
        k += block_hist[c]
        out[c, 0] = k
