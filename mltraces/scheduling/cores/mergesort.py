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

try:
    import cython
except ImportError:  # installed without its compiled extensions: run as Python
    from mltraces.scheduling.cores import cyshim as cython

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
    """Items ascending by ``key[item]``, NaN last (as numpy sorts floats)."""

    def __init__(self, key) -> None:
        self.key = key

    @cython.cfunc
    @cython.exceptval(check=False)
    def before(self, a: i64, b: i64) -> cython.bint:
        x: f64 = self.key[a]
        y: f64 = self.key[b]
        return x < y or (x == x and y != y)


@cython.ccall
def sort(items: i64[:], n: i64, spare: i64[:], ranking: Ranking) -> cython.void:
    """Sort ``items[:n]`` in place by ``ranking``, stably; ``spare`` is scratch as long.

    Runs of 1, 2, 4 … items are merged pairwise, back and forth between ``items``
    and ``spare``; an item of the right run goes first only if it sorts strictly
    before the left run's.
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
