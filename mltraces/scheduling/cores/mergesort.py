"""The one stable sort of the compiled cores: a bottom-up merge sort of int64 items.

Why one. ElasticFlow's rounds (:mod:`.efrounds`: jobs by deadline, by GPUs), Chronus's
packing (:mod:`.leasecore`: jobs by width and slack) and its queue (:mod:`.chronuscore`:
jobs by priority and urgency) each need a stable sort in C, each by its own order.
The order is a :class:`Ranking`: a class whose ``before(a, b)`` says whether item ``a``
sorts strictly before item ``b``; each core subclasses it (its ``before`` a C method
the sort calls through the class's table of methods) and :func:`sort` does the rest.
Equal items keep their order, as Python's ``sorted`` and numpy's stable sort leave
them, so the result is theirs whatever the algorithm.

The source is Cython's pure Python mode (see :mod:`.native`), declared for the other
cores in ``mergesort.pxd`` (which must change with it): compiled when mltraces is
installed, the same file runs as Python otherwise.
"""

from __future__ import annotations

import numpy as np

try:
    import cython
except ImportError:  # installed without its compiled extensions: run as Python
    from mltraces import cyshim as cython

i64 = cython.typedef(cython.longlong)
f64 = cython.typedef(cython.double)


@cython.cclass
class Ranking:
    """An order of int64 items (job indices): subclasses say which item comes first."""

    @cython.cfunc
    @cython.exceptval(check=False)
    def before(self, a: i64, b: i64) -> cython.bint:
        """Whether item ``a`` sorts strictly before item ``b`` (here: never)."""
        return False


@cython.cclass
class ByKey(Ranking):
    """Items ascending by ``key[item]``, NaN last (as numpy sorts floats); compiled
    callers make it with :func:`by_key`."""

    def __init__(self, key) -> None:
        self.key = key

    @cython.wraparound(False)  # no index is negative
    @cython.cfunc
    @cython.exceptval(check=False)
    def before(self, a: i64, b: i64) -> cython.bint:
        x: f64 = self.key[a]
        y: f64 = self.key[b]
        return x < y or (x == x and y != y)


@cython.cfunc
def by_key(key: f64[:]) -> ByKey:
    """The order of :class:`ByKey` on ``key`` (made without a Python call: rounds sort
    often, and a typed memoryview passed to ``__init__`` is converted there and back)."""
    ranking: ByKey = ByKey.__new__(ByKey)
    ranking.key = key
    return ranking


@cython.wraparound(False)  # no index is negative
@cython.ccall
def sort(items: i64[:], n: i64, spare: i64[:], ranking: Ranking) -> cython.void:
    """Sort ``items[:n]`` in place by ``ranking``, stably; ``spare`` is scratch as long.

    Runs of 1, 2, 4 … items are merged pairwise, back and forth between ``items`` and
    ``spare``: an item of the right run goes first only if it sorts strictly before the
    left run's. Runs already in order (the right one's first item not before the left
    one's last: lists sorted a round ago mostly are) are copied as they are, for one
    comparison.
    """
    width: i64 = 1
    lo: i64
    mid: i64
    hi: i64
    i: i64
    j: i64
    k: i64
    src: i64[:] = items
    dst: i64[:] = spare
    swap: i64[:]
    in_spare: cython.bint = False  # whether the sorted runs are in ``spare``
    while width < n:
        lo = 0
        while lo < n:
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            i, j, k = lo, mid, lo
            if mid < hi and ranking.before(src[mid], src[mid - 1]):
                if mid - 1 == lo:  # that was the merge's first comparison: not twice
                    dst[k] = src[j]
                    j += 1
                    k += 1
                while i < mid and j < hi:
                    if ranking.before(src[j], src[i]):
                        dst[k] = src[j]
                        j += 1
                    else:
                        dst[k] = src[i]
                        i += 1
                    k += 1
            while i < mid:
                dst[k] = src[i]
                i += 1
                k += 1
            while j < hi:
                dst[k] = src[j]
                j += 1
                k += 1
            lo = hi
        swap = src
        src = dst
        dst = swap
        in_spare = not in_spare
        width *= 2
    if in_spare:
        for i in range(n):
            items[i] = src[i]


@cython.cclass
class Positions:
    """Room, reused from sort to sort, to sort the positions ``0 … n-1`` of a list (see
    :func:`positions`): fresh arrays each time cost more than sorting a short list."""

    def __init__(self) -> None:
        self.items, self.spare = np.empty(0, np.int64), np.empty(0, np.int64)


@cython.wraparound(False)  # no index is negative
@cython.cfunc
def positions(room: Positions, n: i64, ranking: Ranking) -> i64[:]:
    """The positions ``0 … n-1`` sorted by ``ranking`` (the first ``n`` of the array
    returned, which is ``room``'s: valid until its next use)."""
    k: i64
    if room.items.shape[0] < n:
        room.items, room.spare = np.empty(2 * n, np.int64), np.empty(2 * n, np.int64)
    for k in range(n):
        room.items[k] = k
    sort(room.items, n, room.spare, ranking)
    return room.items
