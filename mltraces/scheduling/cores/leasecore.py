"""The compiled packing loops of Chronus's lease plans (see :mod:`.leases` for what they mean).

Why compiled. A Chronus replay packs its jobs into lease terms hundreds of
thousands of times (each arrival's admission test and deadline search, each
lease's certified plan), every packing a few dozen jobs over a few dozen terms:
as numpy on arrays that small, almost all of the time went to calls, not work.
The source is Cython's pure Python mode (see :mod:`.native`): compiled when
mltraces is installed, the same file runs as Python otherwise.

Layout. Jobs are three int64 arrays ``width``, ``need``, ``horizon``; a
packing's room per term is an int64 array it updates. A plan is written flat:
job ``k``'s terms (ascending) are ``terms[start[k]:start[k] + count[k]]``,
``start[k]`` leaving ``max(need[k], 1)`` slots per job (see :func:`slots`).
Only whole numbers are computed, so compiled and interpreted runs agree exactly.
"""

from __future__ import annotations

import numpy as np

try:
    import cython
except ImportError:  # installed without its compiled extensions: run as Python
    from mltraces import cyshim as cython

if cython.compiled:
    from cython.cimports.mltraces.scheduling.cores import mergesort
else:
    from mltraces.scheduling.cores import mergesort

i64 = cython.typedef(cython.longlong)
u8 = cython.typedef(cython.uchar)  # numpy's bool arrays

#: sort keys: the artifact's packing order, and least slack first (term 0 of "maximize")
BY_PACKING = cython.declare(i64, 0)
BY_SLACK = cython.declare(i64, 1)
#: the same keys by name, for callers in Python (the constants above exist only in C)
KEYS = {"packing": BY_PACKING, "slack": BY_SLACK}


# -- orders ------------------------------------------------------------------------------------
@cython.final
@cython.cclass
class Packing(mergesort.Ranking):
    """Jobs by ``key``: ``BY_PACKING``, widest first, then least slack (``horizon -
    need``), then latest horizon; ``BY_SLACK``: least slack first. Made by :func:`_order`
    without a Python call (it runs by the hundred thousand; a typed memoryview passed to
    ``__init__`` would be converted there and back)."""

    width: i64[:]
    need: i64[:]
    horizon: i64[:]
    key: i64

    @cython.wraparound(False)  # no index is negative
    @cython.cfunc
    @cython.exceptval(check=False)
    def before(self, a: i64, b: i64) -> cython.bint:
        """Whether job ``a`` sorts strictly before job ``b`` (ties: neither). The arrays
        are read in place (a local typed memoryview costs two atomic reference counts)."""
        slack_a: i64 = self.horizon[a] - self.need[a]
        slack_b: i64 = self.horizon[b] - self.need[b]
        if self.key == BY_PACKING and self.width[a] != self.width[b]:
            return self.width[a] > self.width[b]
        if slack_a != slack_b:
            return slack_a < slack_b
        if self.key == BY_PACKING and self.horizon[a] != self.horizon[b]:
            return self.horizon[a] > self.horizon[b]
        return False


@cython.ccall
def order(width: i64[:], need: i64[:], horizon: i64[:], key: i64, out: i64[:]) -> cython.void:
    """Write the jobs' indices into ``out`` sorted by ``key`` (see :class:`Packing`).
    Ties keep index order (a stable sort)."""
    _order(width, need, horizon, key, out, np.empty(width.shape[0], np.int64))


@cython.cfunc
def _order(width: i64[:], need: i64[:], horizon: i64[:], key: i64, out: i64[:],
           spare: i64[:]) -> cython.void:
    """:func:`order`, merging through ``spare`` (as long as ``out``; overwritten)."""
    n: i64 = width.shape[0]
    k: i64
    ranking: Packing = Packing.__new__(Packing)
    ranking.width, ranking.need, ranking.horizon, ranking.key = width, need, horizon, key
    for k in range(n):
        out[k] = k
    mergesort.sort(out, n, spare, ranking)


# -- one job -------------------------------------------------------------------------------------
@cython.cfunc
@cython.exceptval(check=False)
def _take_latest(width: i64, need: i64, horizon: i64, room: i64[:], terms: i64[:], at: i64,
                 write: cython.bint) -> i64:
    """Take the latest terms with room for the job (written ascending from ``terms[at]``
    when ``write``); the number taken, or -1 if too few. One walk down the terms, each
    taken as it is found: on failure, when ``write``, the terms taken are given back
    (``room`` is unchanged, the slots from ``terms[at]`` not, and nobody reads them then);
    otherwise ``room`` is spoiled (a test discards it).

    For ``need`` 0 (or less) the artifact's walk ends at once only if the latest term
    is full: nothing is taken then, and the job fails otherwise.
    """
    found: i64 = 0
    t: i64
    k: i64
    if horizon < 0:
        horizon = 0
    if need <= 0:
        return 0 if horizon and room[horizon - 1] < width else -1
    t = horizon - 1
    if write:
        while t >= 0 and found < need:
            if room[t] >= width:
                room[t] -= width
                found += 1
                terms[at + need - found] = t
            t -= 1
        if found < need:
            for k in range(at + need - found, at + need):
                room[terms[k]] += width
            return -1
        return need
    while t >= 0 and found < need:
        if room[t] >= width:
            room[t] -= width
            found += 1
        t -= 1
    return need if found == need else -1


@cython.cfunc
@cython.exceptval(check=False)
def _take_earliest(width: i64, need: i64, horizon: i64, room: i64[:], terms: i64[:],
                   at: i64) -> i64:
    """Take the earliest terms with room for the job, written from ``terms[at]``; the
    number taken, or -1 if too few (``room`` then unchanged)."""
    found: i64 = 0
    t: i64
    if need <= 0:
        return 0
    for t in range(max(horizon, 0)):
        if room[t] >= width:
            found += 1
    if found < need:
        return -1
    found = 0
    t = 0
    while found < need:
        if room[t] >= width:
            terms[at + found] = t
            found += 1
            room[t] -= width
        t += 1
    return need


# -- whole packings ------------------------------------------------------------------------------
@cython.ccall
def room_for(horizon: i64[:], profile: i64[:], size: i64, least: i64) -> np.ndarray:
    """GPUs free per term over every job's horizon (at least ``least`` terms): the profile,
    then the whole cluster."""
    terms: i64 = max(least, profile.shape[0])
    k: i64
    for k in range(horizon.shape[0]):
        terms = max(terms, horizon[k])
    room = np.full(terms, size, np.int64)
    view: i64[:] = room
    for k in range(profile.shape[0]):
        view[k] = profile[k]
    return room


@cython.ccall
def fill(width: i64[:], need: i64[:], horizon: i64[:], room: i64[:], stop: cython.bint,
         terms: i64[:], start: i64[:], count: i64[:]) -> i64:
    """Each job in the packing order takes its latest open terms; a job that does not fit
    takes none, and ends the packing when ``stop``. The number of jobs placed."""
    n: i64 = width.shape[0]
    ranked: i64[:] = np.empty(n, np.int64)
    placed: i64 = 0
    i: i64
    k: i64
    got: i64
    order(width, need, horizon, BY_PACKING, ranked)
    for i in range(n):
        k = ranked[i]
        got = _take_latest(width[k], need[k], horizon[k], room, terms, start[k], True)
        if got < 0:
            if stop:
                break
            continue
        count[k] = got
        placed += 1
    return placed


@cython.cfunc
def _fits_in(width: i64[:], need: i64[:], horizon: i64[:], room: i64[:],
             ranked: i64[:]) -> cython.bint:
    """Whether every job packs into ``room`` (updated; spoiled when not), nothing written."""
    i: i64
    k: i64
    order(width, need, horizon, BY_PACKING, ranked)
    for i in range(width.shape[0]):
        k = ranked[i]
        if _take_latest(width[k], need[k], horizon[k], room, ranked, 0, False) < 0:
            return False
    return True


@cython.ccall
def fits(width: i64[:], need: i64[:], horizon: i64[:], profile: i64[:], size: i64) -> cython.bint:
    """Whether every job packs (the artifact's quick test) into the room ``profile`` then
    ``size`` GPUs leave."""
    ranked: i64[:] = np.empty(width.shape[0], np.int64)
    return _fits_in(width, need, horizon, room_for(horizon, profile, size, 0), ranked)


@cython.ccall
def earliest_horizon(width: i64[:], need: i64[:], horizon: i64[:], profile: i64[:], size: i64,
                     low: i64, high: i64) -> i64:
    """The least horizon in ``[low, high]`` for the last job with which every job packs, by
    the artifact's binary search (``high`` if none below it does). The last job's horizon
    is left at the answer."""
    last: i64 = width.shape[0] - 1
    middle: i64
    ranked: i64[:] = np.empty(width.shape[0], np.int64)
    horizon[last] = high
    base = room_for(horizon, profile, size, 0)  # every horizon tried is at most high
    while low < high:
        middle = low + (high - low) // 2
        horizon[last] = middle
        if _fits_in(width, need, horizon, base.copy(), ranked):
            high = middle
        else:
            low = middle + 1
    horizon[last] = high
    return high


@cython.ccall
def around(width: i64[:], need: i64[:], horizon: i64[:], room: i64[:], first: u8[:],
           latest: cython.bint, terms: i64[:], start: i64[:], count: i64[:]) -> cython.bint:
    """Term 0 holds exactly the jobs marked in ``first``; the others' terms (and the rest of
    theirs) are packed in the packing order from term 1 on, each job in its latest (or
    earliest) open terms. False when that fails."""
    n: i64 = width.shape[0]
    ranked: i64[:] = np.empty(n, np.int64)
    i: i64
    k: i64
    rest: i64
    got: i64
    for k in range(n):
        if first[k]:
            if room[0] < width[k]:
                return False
            room[0] -= width[k]
            terms[start[k]] = 0
            count[k] = 1
    room[0] = -1  # nobody else takes term 0
    order(width, need, horizon, BY_PACKING, ranked)
    for i in range(n):
        k = ranked[i]
        rest = need[k] - first[k]
        if rest == 0:
            continue
        if latest:
            got = _take_latest(width[k], rest, horizon[k], room, terms, start[k] + first[k], True)
        else:
            got = _take_earliest(width[k], rest, horizon[k], room, terms, start[k] + first[k])
        if got < 0:
            return False
        count[k] = first[k] + got
    return True


@cython.ccall
def fullest_first(width: i64[:], need: i64[:], horizon: i64[:], room0: i64,
                  first: u8[:]) -> cython.bint:
    """Mark in ``first`` the jobs for term 0 chosen greedily, least slack first, while their
    widths fit in ``room0``; True if that width sum is the largest any choice reaches."""
    n: i64 = width.shape[0]
    ranked: i64[:] = np.empty(n, np.int64)
    limit: i64 = max(room0, 0)
    reach: u8[:] = np.zeros(limit + 1, np.uint8)
    used: i64 = 0
    best: i64 = 0
    i: i64
    k: i64
    s: i64
    order(width, need, horizon, BY_SLACK, ranked)
    reach[0] = 1
    for i in range(n):
        k = ranked[i]
        if need[k] == 0 or horizon[k] == 0:
            continue
        if used + width[k] <= room0:
            first[k] = 1
            used += width[k]
    for k in range(n):  # the largest reachable subset sum of the eligible widths
        if need[k] == 0 or horizon[k] == 0 or not 0 < width[k] <= limit:
            continue
        for s in range(limit, width[k] - 1, -1):
            if reach[s - width[k]]:
                reach[s] = 1
    for s in range(limit, -1, -1):
        if reach[s]:
            best = s
            break
    return used >= best


@cython.ccall
def slots(need: i64[:]) -> tuple:
    """An empty flat plan: (terms, start, count) with ``max(need[k], 1)`` slots for job ``k``
    (one at least, for a plan of term 0 alone)."""
    n: i64 = need.shape[0]
    start = np.empty(n, np.int64)
    view: i64[:] = start
    total: i64 = 0
    k: i64
    for k in range(n):
        view[k] = total
        total += max(need[k], 1)
    return np.empty(total, np.int64), start, np.zeros(n, np.int64)  # only slots taken are read


@cython.ccall
def overdrawn(need: i64[:], horizon: i64[:]) -> cython.bint:
    """Whether some job needs more terms than its horizon holds."""
    k: i64
    for k in range(need.shape[0]):  # noqa: SIM110 (a C loop compiled, not a generator)
        if need[k] > horizon[k]:
            return True
    return False


@cython.cfunc
def _first_marks(width: i64[:], need: i64[:], horizon: i64[:], room0: i64,
                 maximize: cython.bint) -> object:
    """The jobs :func:`certified` puts in term 0 (uint8 marks), or None when no choice is
    certified optimal. Minimizing: the jobs whose every term is needed; maximizing:
    :func:`fullest_first`'s, when that is the fullest term 0 any choice reaches."""
    n: i64 = width.shape[0]
    marks = np.zeros(n, np.uint8)
    first: u8[:] = marks
    k: i64
    if maximize:
        if not fullest_first(width, need, horizon, room0, first):
            return None
    else:
        for k in range(n):
            first[k] = need[k] != 0 and need[k] == horizon[k]
    return marks


@cython.ccall
def certified(width: i64[:], need: i64[:], horizon: i64[:], profile: i64[:], size: i64,
              maximize: cython.bint, latest: cython.bint) -> object:
    """A flat plan (terms, start, count) whose term 0 provably holds the program's optimum,
    else None. Minimizing, term 0 holds the jobs whose every term is needed; maximizing,
    :func:`fullest_first`'s jobs, when that is the fullest term 0 any choice reaches."""
    room = room_for(horizon, profile, size, 1)
    view: i64[:] = room
    marks = _first_marks(width, need, horizon, view[0], maximize)
    if marks is None:
        return None
    first: u8[:] = marks
    flat = slots(need)
    if not around(width, need, horizon, view, first, latest, flat[0], flat[1], flat[2]):
        return None
    return flat


@cython.ccall
def advance(terms: i64[:], start: i64[:], count: i64[:]) -> np.ndarray:
    """The plan one term later, in place: term 0 dropped from the plans that take it, every
    other term one earlier. Whether each job took term 0 (uint8)."""
    n: i64 = start.shape[0]
    opens = np.zeros(n, np.uint8)
    took: u8[:] = opens
    k: i64
    for k in range(terms.shape[0]):
        terms[k] -= 1
    for k in range(n):
        if count[k] > 0 and terms[start[k]] == -1:
            took[k] = 1
            start[k] += 1
            count[k] -= 1
    return opens


# -- plans written as spans ----------------------------------------------------------------------
# A Chronus job needs up to thousands of leases, and the latest packing gives it runs of
# consecutive terms: written term by term, a lease's plan was ~6,600 terms on Fig. 8(b)'s
# clusters. Written as spans (half-open runs of terms), job k's terms are the spans
# ``(spans[2 * j], spans[2 * j + 1])`` for ``j`` from ``at[k]`` to ``at[k] + count[k] - 1``,
# in order; the room is kept as runs of terms too (segment ``i``: terms ``lo[i]`` to
# ``lo[i + 1]``, ``room[i]`` GPUs free in each), so a packing costs per run, not per term.
@cython.cfunc
@cython.exceptval(check=False)
def _split(lo: i64[:], room: i64[:], count: i64, i: i64, at: i64) -> i64:
    """Split segment ``i`` at term ``at`` (inside it): its terms from ``at`` on become
    segment ``i + 1``, with the same room. The new number of segments."""
    j: i64
    lo[count + 1] = lo[count]
    for j in range(count - 1, i, -1):
        lo[j + 1] = lo[j]
        room[j + 1] = room[j]
    lo[i + 1] = at
    room[i + 1] = room[i]
    return count + 1


@cython.cfunc
@cython.exceptval(check=False)
def _take_spans(width: i64, need: i64, horizon: i64, lo: i64[:], room: i64[:], meta: i64[:],
                out: i64[:], at: i64) -> i64:
    """:func:`_take_latest` on segments (``meta[0]`` of them, split as terms are taken):
    the same terms, taken a run at a time and written as spans, ascending, from pair ``at``
    of ``out``. The number of spans, or -1 if too few terms (``room`` then spoiled)."""
    count: i64 = meta[0]
    i: i64 = count - 1
    left: i64 = need
    written: i64 = 0
    top: i64
    took: i64
    j: i64
    swap: i64
    if horizon < 0:
        horizon = 0
    if need <= 0:  # as _take_latest: nothing taken if the latest term is full, else a failure
        if horizon == 0:
            return -1
        while lo[i] > horizon - 1:
            i -= 1
        return 0 if room[i] < width else -1
    while i >= 0 and lo[i] >= horizon:
        i -= 1
    while i >= 0 and left > 0:
        if room[i] >= width:
            top = min(lo[i + 1], horizon)
            if top < lo[i + 1]:
                count = _split(lo, room, count, i, top)
            took = min(left, top - lo[i])
            if took < top - lo[i]:
                count = _split(lo, room, count, i, top - took)
                i += 1
            room[i] -= width
            out[2 * (at + written)] = top - took
            out[2 * (at + written) + 1] = top
            written += 1
            left -= took
        i -= 1
    meta[0] = count
    if left > 0:
        return -1
    for j in range(written):  # found from the top down: put them in ascending order
        if j >= written - 1 - j:
            break
        swap = out[2 * (at + j)]
        out[2 * (at + j)] = out[2 * (at + written - 1 - j)]
        out[2 * (at + written - 1 - j)] = swap
        swap = out[2 * (at + j) + 1]
        out[2 * (at + j) + 1] = out[2 * (at + written - 1 - j) + 1]
        out[2 * (at + written - 1 - j) + 1] = swap
    return written


@cython.cfunc
def _segments(horizon: i64[:], profile: i64[:], size: i64, lo: i64[:], room: i64[:]) -> i64:
    """The room of :func:`room_for` (at least one term) as segments in ``lo``/``room``, and
    term 0 a segment of its own; their number."""
    terms: i64 = max(1, profile.shape[0])
    count: i64 = 0
    t: i64
    for t in range(horizon.shape[0]):
        terms = max(terms, horizon[t])
    for t in range(profile.shape[0]):
        if count == 0 or profile[t] != room[count - 1]:
            lo[count] = t
            room[count] = profile[t]
            count += 1
    if terms > profile.shape[0] and (count == 0 or room[count - 1] != size):
        lo[count] = profile.shape[0]
        room[count] = size
        count += 1
    lo[count] = terms
    if lo[1] > 1:
        count = _split(lo, room, count, 0, 1)
    return count


@cython.ccall
def certified_spans(width: i64[:], need: i64[:], horizon: i64[:], profile: i64[:], size: i64,
                    maximize: cython.bint) -> object:
    """:func:`certified` with the latest layout, its plan written as spans: (spans, at,
    count), or None where :func:`certified` gives None."""
    n: i64 = width.shape[0]
    capacity: i64 = profile.shape[0] + 2 * n + 4  # a job's take splits two segments at most
    # one allocation for the work arrays (segments, their count, the order), one for the
    # plan's index (at, count): calls are by the hundred thousand, plans a few dozen jobs
    work: i64[:] = np.empty(2 * capacity + 2 + 2 * n, np.int64)
    lo: i64[:] = work[: capacity + 1]
    room: i64[:] = work[capacity + 1: 2 * capacity + 1]
    meta: i64[:] = work[2 * capacity + 1: 2 * capacity + 2]
    ranked: i64[:] = work[2 * capacity + 2: 2 * capacity + 2 + n]
    spare: i64[:] = work[2 * capacity + 2 + n:]
    meta[0] = _segments(horizon, profile, size, lo, room)
    marks = _first_marks(width, need, horizon, room[0], maximize)
    if marks is None:
        return None
    first: u8[:] = marks
    index = np.zeros(2 * n, np.int64)
    at: i64[:] = index[:n]
    count: i64[:] = index[n:]
    spans = np.empty(2 * (n + capacity), np.int64)
    out: i64[:] = spans
    written: i64 = 0
    i: i64
    k: i64
    got: i64
    for k in range(n):  # term 0 holds exactly the marked jobs, nobody else
        if first[k]:
            if room[0] < width[k]:
                return None
            room[0] -= width[k]
    room[0] = -1
    _order(width, need, horizon, BY_PACKING, ranked, spare)
    for i in range(n):
        k = ranked[i]
        at[k] = written
        if first[k]:
            out[2 * written] = 0
            out[2 * written + 1] = 1
            written += 1
        if need[k] - first[k] != 0:
            while 2 * (written + meta[0] + 1) > out.shape[0]:  # a span per segment at most
                spans = np.concatenate([spans, np.empty(out.shape[0], np.int64)])
                out = spans
            got = _take_spans(width[k], need[k] - first[k], horizon[k], lo, room, meta, out,
                              written)
            if got < 0:
                return None
            written += got
        count[k] = written - at[k]
    return spans[: 2 * written], index[:n], index[n:]


@cython.ccall
def spans_of(terms: i64[:], start: i64[:], count: i64[:]) -> tuple:
    """A flat plan (terms, start, count) written as spans (spans, at, count): each run of
    consecutive terms one span."""
    n: i64 = start.shape[0]
    spans = np.empty(2 * terms.shape[0], np.int64)
    out: i64[:] = spans
    at_array = np.zeros(n, np.int64)
    runs_array = np.zeros(n, np.int64)
    at: i64[:] = at_array
    runs: i64[:] = runs_array
    written: i64 = 0
    k: i64
    j: i64
    t: i64
    for k in range(n):
        at[k] = written
        for j in range(start[k], start[k] + count[k]):
            t = terms[j]
            if written > at[k] and out[2 * written - 1] == t:
                out[2 * written - 1] = t + 1
            else:
                out[2 * written] = t
                out[2 * written + 1] = t + 1
                written += 1
        runs[k] = written - at[k]
    return spans[: 2 * written], at_array, runs_array
