"""The compiled core of the ElasticFlow replay: planning on a free-GPU timeline and scale-up.

Why compiled. The artifact prices every runnable job with a full re-plan after
every single scaling step, and the exact replay must do the same: on
cluster10 that is ~9,000 steps and ~50,000 plans, each a few dozen
interpreted loop iterations. No reordering of that work removes it (a price
depends on where the other jobs' plans put their steps, which every step
moves), so the loops run as machine code: this file is Cython's pure Python
mode, compiled when mltraces is installed (see :mod:`.native`); where it
could not be, the same functions run as plain Python, with the same results,
only slower.

What it costs in machine code. A plan is a few hundred nanoseconds of
arithmetic; what used to dominate was bookkeeping around it: fresh arrays
per plan, lists of arrays, reference counts. So a round's plans write into
one workspace of 2-D rows (see :class:`Planner`), the small helpers are C
functions the compiler inlines, and the arrays that travel together are
attributes of small classes (:class:`Tables`, :class:`Current`,
:class:`Offers`, :class:`Prices`, :class:`Work`, :class:`Merged`, all held by the
:class:`Planner`) that compiled code reads in place; a plan reads the models and
writes through a :class:`Sheet`. :mod:`.efrounds` calls :func:`bisect_left`,
:func:`rate`, :func:`estimate` and :func:`scale_up` as C functions: their
signatures and the classes are also declared in ``efcore.pxd``, which must change
with them.

Conventions. A timeline is ``(times, free, n)``: the first ``n`` entries of a
float64 and an int64 array (arrays may be longer). An allocation is
``(at, ag, na)`` the same way: the job holds ``ag[k]`` GPUs from ``at[k]``.
A job's scaling model is row ``m`` of the model tables: ``speed[m, g]``
(iterations per second on ``g`` GPUs, NaN when ``g`` is not allowed),
``levels[m, :nlev[m]]`` (its scaling steps up to its cap), ``cap[m]`` and
``fit[fitrow[m], x]`` (the largest level that fits in ``x`` free GPUs).

Every arithmetic step is the one the pure-Python planner did, in the same
order, on IEEE doubles, so times and iteration counts are bit-identical.
Where that planner relied on Python semantics that arrays do not have (a
negative index wrapping, a missing key raising), the helpers below do the
same explicitly.
"""

from __future__ import annotations

import math

import numpy as np

try:
    import cython
except ImportError:  # installed without its compiled extensions: run as Python
    from mltraces import cyshim as cython

if cython.compiled:
    from cython.cimports.libc.math import ceil, floor, fmod, isnan
    from cython.cimports.libc.string import memcpy, memmove, memset
else:
    from math import ceil, floor, fmod, isnan

i64 = cython.typedef(cython.longlong)
f64 = cython.typedef(cython.double)
u8 = cython.typedef(cython.uchar)  # numpy's bool arrays
# 1-D arrays inside the planner: C pointers compiled (a typed memoryview, or a row of
# one, costs a struct copy and a reference count each time it is passed), the numpy
# arrays (or rows) themselves as Python; see fptr/iptr/bptr/frow/irow
f64p = cython.typedef(cython.p_double)
i64p = cython.typedef(cython.p_longlong)
u8p = cython.typedef(cython.p_uchar)

INF = cython.declare(f64, math.inf)
NAN = cython.declare(f64, math.nan)
NONE = cython.declare(i64, -(2**62))  # an unset GPU count (the reference's undefined variable)


# -- pointers to arrays and rows (compiled), the arrays and rows themselves (Python) --------
@cython.cfunc
@cython.inline
@cython.exceptval(check=False)
def fptr(a: f64[:]) -> f64p:
    """The data of a 1-D float array."""
    if cython.compiled:
        return cython.address(a[0])
    else:
        return a


@cython.cfunc
@cython.inline
@cython.exceptval(check=False)
def iptr(a: i64[:]) -> i64p:
    """The data of a 1-D int64 array."""
    if cython.compiled:
        return cython.address(a[0])
    else:
        return a


@cython.cfunc
@cython.inline
@cython.exceptval(check=False)
def bptr(a: u8[:]) -> u8p:
    """The data of a 1-D bool array."""
    if cython.compiled:
        return cython.address(a[0])
    else:
        return a


@cython.cfunc
@cython.inline
@cython.exceptval(check=False)
def frow(a: f64[:, :], p: i64) -> f64p:
    """Row ``p`` of a 2-D float array."""
    if cython.compiled:
        return cython.address(a[p, 0])
    else:
        return a[p]


@cython.cfunc
@cython.inline
@cython.exceptval(check=False)
def irow(a: i64[:, :], p: i64) -> i64p:
    """Row ``p`` of a 2-D int64 array."""
    if cython.compiled:
        return cython.address(a[p, 0])
    else:
        return a[p]


@cython.cfunc
@cython.inline
@cython.exceptval(check=False)
def copy_f64(src: f64p, dst: f64p, n: i64) -> cython.void:
    """``dst[:n] = src[:n]``."""
    if cython.compiled:
        if n > 0:
            memcpy(dst, src, n * cython.sizeof(f64))
    else:
        dst[:n] = src[:n]


@cython.cfunc
@cython.inline
@cython.exceptval(check=False)
def copy_i64(src: i64p, dst: i64p, n: i64) -> cython.void:
    """``dst[:n] = src[:n]``."""
    if cython.compiled:
        if n > 0:
            memcpy(dst, src, n * cython.sizeof(i64))
    else:
        dst[:n] = src[:n]


# -- small helpers -------------------------------------------------------------------------
@cython.cfunc
@cython.inline
@cython.exceptval(check=False)
def whole(v: f64) -> cython.bint:
    """Whether ``v`` is a whole number that an int64 holds exactly (below 2**53)."""
    if not -9007199254740992.0 < v < 9007199254740992.0:
        return False
    w: i64 = int(v)
    return w == v


@cython.cfunc
@cython.inline
@cython.cdivision(True)
@cython.exceptval(check=False)
def remainder(a: i64, b: i64) -> i64:
    """``a % b`` as C computes it, with the sign of ``a``: ``fmod`` of two whole numbers."""
    return a % b


@cython.cfunc
@cython.inline
@cython.cdivision(True)
@cython.exceptval(check=False)
def quotient(a: i64, b: i64) -> i64:
    """``a / b`` as C computes it, rounded toward zero."""
    return a // b


@cython.cfunc
@cython.inline
@cython.exceptval(check=False)
def align(origin: f64, time: f64, slot: f64) -> f64:
    """The first slot boundary ``origin + k·slot`` at or after ``time`` (Python's divmod).

    Times and slots are whole seconds nearly always, and then the whole computation is
    an integer ceiling division, several times cheaper than ``fmod`` and the float steps
    below and equal to them: for a positive whole slot they count ``x // slot`` steps,
    one more if a remainder is left (exact in doubles below 2**53; a zero's sign cannot
    differ, as ``x - mod`` is then +0).
    """
    x: f64 = time - origin
    mod: f64
    xi: i64
    si: i64
    if cython.compiled and slot >= 1.0 and whole(x) and whole(slot):
        xi = int(x)
        si = int(slot)
        return origin + float(quotient(xi, si) + (remainder(xi, si) > 0)) * slot
    else:
        mod = fmod(x, slot)
    div: f64 = (x - mod) / slot
    if mod != 0.0 and (slot < 0) != (mod < 0):
        mod += slot
        div -= 1.0
    steps: f64 = 0.0
    if div != 0.0:
        steps = floor(div)
        if div - steps > 0.5:
            steps += 1.0
    if mod > 0:
        steps += 1.0
    return origin + steps * slot


@cython.cfunc
@cython.inline
@cython.exceptval(check=False)
def bisect_left(a: f64p, n: i64, x: f64) -> i64:
    lo: i64 = 0
    hi: i64 = n
    mid: i64
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@cython.cfunc
@cython.inline
@cython.exceptval(check=False)
def bisect_right(a: f64p, n: i64, x: f64) -> i64:
    lo: i64 = 0
    hi: i64 = n
    mid: i64
    while lo < hi:
        mid = (lo + hi) >> 1
        if x < a[mid]:
            hi = mid
        else:
            lo = mid + 1
    return lo


@cython.cfunc
@cython.inline
@cython.exceptval(check=False)
def step_index(a: f64p, n: i64, x: f64) -> i64:
    """Index of the step starting exactly at ``x``, or -1."""
    i: i64 = bisect_left(a, n, x)
    if i < n and a[i] == x:
        return i
    return -1


@cython.cfunc
@cython.inline
@cython.exceptval(check=False)
def end_search(times: f64p, n: i64, end: f64) -> i64:
    """The index of the first step at or after a plan's ``end`` (``n``: none), where a
    scan of the steps would stop; a NaN end stops none, so it reads them all. A plan
    restores the value of the step before it (if that one is in its window)."""
    if end != end:
        return n
    return bisect_left(times, n, end)


@cython.cfunc
@cython.inline
@cython.exceptval(-1)
def wrap(i: i64, n: i64) -> i64:
    """A Python list index: -1 is the last element."""
    if i < 0:
        i += n
    if i < 0 or i >= n:
        raise IndexError("timeline index out of range")
    return i


@cython.cfunc
@cython.inline
@cython.exceptval(-1)
def set_step(times: f64p, free: i64p, n: i64, time: f64, value: i64) -> i64:
    """Set the value from ``time`` on (insert a step or overwrite one); the new length.

    The arrays must have room for one more entry.
    """
    i: i64 = bisect_left(times, n, time)
    if i < n and times[i] == time:
        if value == NONE:
            raise TypeError("a timeline step without a value (the reference's unset variable)")
        free[i] = value
        return n
    return insert_step(times, free, n, i, time, value)


@cython.cfunc
@cython.inline
@cython.exceptval(-1)
def insert_step(times: f64p, free: i64p, n: i64, i: i64, time: f64, value: i64) -> i64:
    """:func:`set_step` where ``i`` is where ``time`` goes and no step is at it."""
    if value == NONE:
        raise TypeError("a timeline step without a value (the reference's unset variable)")
    k: i64
    if cython.compiled:
        if n > i:
            memmove(cython.address(times[i + 1]), cython.address(times[i]),
                    (n - i) * cython.sizeof(f64))
            memmove(cython.address(free[i + 1]), cython.address(free[i]),
                    (n - i) * cython.sizeof(i64))
    else:
        for k in range(n, i, -1):
            times[k] = times[k - 1]
            free[k] = free[k - 1]
    times[i] = time
    free[i] = value
    return n + 1


@cython.cfunc
@cython.inline
@cython.exceptval(-1)
def fit_of(fit: i64p, n: i64, x: i64) -> i64:
    """``fit[x]`` of a row of the fit table, ``n`` long, with Python's indexing (negative
    wraps, too large raises); the row is found once per plan (see :func:`irow`)."""
    if x == NONE:
        raise TypeError("free GPUs unset")
    if x < 0:
        x += n
    if x < 0 or x >= n:
        raise IndexError("more free GPUs than the cluster has")
    return fit[x]


@cython.cfunc
@cython.inline
def rate(tables: Tables, m: i64, g: i64) -> f64:
    """Iterations per second of model row ``m`` on ``g`` GPUs; a count the profile lacks raises."""
    if g < 0 or g >= tables.speed2.shape[1] or isnan(tables.speed2[m, g]):
        raise KeyError("no throughput for this GPU count")
    return tables.speed2[m, g]


@cython.cfunc
@cython.inline
@cython.exceptval(check=False)
def gpu_time(at: f64p, ag: i64p, na: i64, end: f64) -> f64:
    """GPU-seconds of an allocation held until ``end``."""
    total: f64 = 0.0
    k: i64
    for k in range(na - 1):
        total += ag[k] * (at[k + 1] - at[k])
    if na:
        total += ag[na - 1] * (end - at[na - 1])
    return total


@cython.cfunc
@cython.inline
@cython.exceptval(check=False)
def hold(aval: i64p, aset: u8p, nf: i64p, k: i64, gpus: i64) -> cython.void:
    """The plan holds ``gpus`` in the timeline's step ``k``: record it, take them off free."""
    aval[k] = gpus
    aset[k] = True
    nf[k] -= gpus


# -- one plan --------------------------------------------------------------------------------
# A plan writes into buffers its caller owns (a workspace reused for every plan of
# a round): ``nt``/``nf``/``aval``/``aset`` need room for n + 2 entries, ``at``/``ag``
# for n + 3, where n is the length of the timeline planned on.
@cython.cfunc
@cython.inline
@cython.exceptval(check=False)
def collect(nt: f64p, aval: i64p, aset: u8p, lo: i64, hi: i64, at: f64p, ag: i64p, na: i64,
            last: i64) -> tuple[i64, i64]:
    """Append the plan's marked steps ``lo..hi-1`` whose count changes to the allocation
    (``na`` long, ``last`` its last count); returns both, updated."""
    k: i64
    for k in range(lo, hi):
        if aset[k] and aval[k] != last:
            at[na] = nt[k]
            ag[na] = aval[k]
            na += 1
            last = aval[k]
    return na, last


@cython.cfunc
@cython.inline
def finish_plan(sheet: Sheet, nn: i64, end_step: f64, end_value: i64,
                marked: i64) -> tuple[i64, i64]:
    """Collect the allocation steps (sorted, repeats dropped) and note the end step.

    The sheet's ``xt``/``xv`` is an allocation step at a time that is not on the
    timeline (NaN: none); only a start that the timeline lost has one (the released
    timeline of a job holding more GPUs than were free, which the reference
    would have refused by an assertion). Writes the allocation to ``at``/``ag``
    and returns ``(n, na)``: the timeline's length (``nn``) and the allocation's. The end
    step (``end_step``/``end_value``; NaN: none) is left just past the timeline, in
    ``nt[n]``/``nf[n]``, for :func:`compact` to set: most plans are only priced,
    and inserting it would shift the timeline's tail for nothing. No step from
    ``marked`` on is marked (a plan that ends by its deadline marks none past the
    deadline slot): the search stops there.
    """
    nt: f64p = sheet.nt
    nf: i64p = sheet.nf
    aval: i64p = sheet.aval
    aset: u8p = sheet.aset
    at: f64p = sheet.at
    ag: i64p = sheet.ag
    xt: f64 = sheet.xt
    xv: i64 = sheet.xv
    na: i64 = 0
    last: i64 = -1
    marked = min(marked, nn)
    # the start's step goes before the first later timeline step (none: all of them)
    pos: i64 = nn if xt != xt else bisect_right(nt, nn, xt)
    na, last = collect(nt, aval, aset, 0, min(pos, marked), at, ag, na, last)
    if xt == xt and xv != last:
        at[na] = xt
        ag[na] = xv
        na += 1
        last = xv
    na, last = collect(nt, aval, aset, pos, marked, at, ag, na, last)
    if end_step == end_step and end_value == NONE:
        raise TypeError("a timeline step without a value (the reference's unset variable)")
    nt[nn] = end_step
    nf[nn] = end_value
    return nn, na


@cython.cfunc
@cython.exceptval(check=False)
def compact(nt: f64p, nf: i64p, nn: i64, ct: f64p, cf: i64p) -> i64:
    """Copy a plan's timeline into ``ct``/``cf`` without repeated values; the new length.

    First sets the plan's end step, which :func:`finish_plan` left in
    ``nt[nn]``/``nf[nn]`` (as :func:`set_step` would: overwrite a step at the same
    time, or insert it before the first later one). Kept apart from
    :func:`finish_plan` because most plans are only priced: their timeline is
    compacted only for the one a step chooses. ``ct`` must not be ``nt``.
    """
    m: i64 = 0
    prev: i64 = -1
    k: i64
    t: f64
    v: i64
    xt: f64 = nt[nn]
    xv: i64 = nf[nn]
    pending: cython.bint = xt == xt
    for k in range(nn):
        t = nt[k]
        v = nf[k]
        if pending and xt <= t:
            pending = False
            if xt < t:
                if xv != prev:
                    ct[m] = xt
                    cf[m] = xv
                    m += 1
                    prev = xv
            else:
                v = xv
        if v != prev:
            ct[m] = t
            cf[m] = v
            m += 1
            prev = v
    if pending and xv != prev:
        ct[m] = xt
        cf[m] = xv
        m += 1
    return m


@cython.cfunc
def plan(sheet: Sheet, times: f64p, free: i64p, n: i64, start: f64, left: f64, deadline: f64,
         m: i64, assign: i64) -> tuple[i64, i64, f64, f64, f64, cython.bint]:
    """Plan a job (model row ``m``) from ``start`` backwards from its deadline on the
    timeline (``times``/``free``, ``n`` steps).

    With ``assign`` the job first holds that many GPUs until the timeline's
    next step (how a scale-up is priced), then is planned as usual. Writes the
    timeline with the plan to the sheet's ``nt``/``nf`` (its end step past its end, see
    :func:`finish_plan`) and the allocation to its ``at``/``ag``;
    returns ``(n, na, end, real_end, aligned, fast)``: besides the plan, its deadline
    slot and whether the assigned count alone finished it before the timeline's next
    step, which a price needs and would otherwise compute again (see :func:`price`).
    """
    tables: Tables = sheet.tables
    total: i64 = sheet.total
    slot: f64 = sheet.slot
    nt: f64p = sheet.nt
    nf: i64p = sheet.nf
    aval: i64p = sheet.aval
    aset: u8p = sheet.aset
    fitp: i64p = irow(tables.fit2, tables.fitrow[m])
    fitw: i64 = tables.fit2.shape[1]
    cap: i64 = tables.cap2[m]
    nl: i64 = tables.nlev[m]
    k: i64
    i: i64
    u: i64
    q: i64
    g: i64
    p: f64
    t: f64
    got: i64
    until: f64
    gathered: f64
    gained: f64
    sp: f64
    nxt: i64
    future: f64
    real_end: f64
    end: f64
    back: i64
    na: i64
    lo: i64
    hi: i64
    last_q: i64
    rq: f64
    last_t: f64
    last_k: i64
    last_a: i64
    lk: i64
    copy_f64(times, nt, n)
    copy_i64(free, nf, n)
    nn: i64 = n
    if cython.compiled:
        memset(aval, 0, (n + 2) * cython.sizeof(i64))
        memset(aset, 0, (n + 2) * cython.sizeof(u8))
    else:
        for k in range(n + 2):
            aval[k] = 0
            aset[k] = False
    aligned: f64 = align(start, deadline, slot)
    carried: i64 = NONE  # the pre-job value the reference restores after a plan's end
    # each search below once: the deadline slot's index stays hi (no step is added
    # before it until step 3), and the first step at or after the start is lo
    hi = bisect_left(nt, nn, aligned)
    if aligned >= start and not (hi < nn and nt[hi] == aligned):
        carried = nf[wrap(hi - 1, nn)]
        nn = insert_step(nt, nf, nn, hi, aligned, carried)
    lo = 0 if nn and nt[0] >= start else bisect_left(nt, nn, start)  # mostly: now
    i_start: i64 = lo if lo < nn and nt[lo] == start else -1
    sheet.xt = NAN  # the start's allocation when the timeline lacks the start
    sheet.xv = 0
    if i_start < 0:
        sheet.xt = start
    else:
        aset[i_start] = True
    event: f64 = start
    if assign:
        sp = rate(tables, m, assign)
        nxt = bisect_right(times, n, start)
        future = times[nxt] if nxt < n else aligned
        if i_start < 0:
            sheet.xv = assign
        else:
            aval[i_start] = assign
        real_end = float(ceil(start + left / sp))
        end = align(start, real_end, slot)
        if future >= end and deadline >= real_end:
            back = NONE
            for u in range(n):
                if times[u] >= end:
                    break
                if times[u] >= start:
                    k = step_index(nt, nn, times[u])
                    back = nf[wrap(k, nn)]
                    nf[wrap(k, nn)] -= assign
            if start != end:
                nf[wrap(i_start, nn)] = free[0] - assign
            if step_index(times, n, end) < 0:
                if back == NONE:
                    raise TypeError("a timeline step without a value")
                nn, na = finish_plan(sheet, nn, end, back, nn)
            else:
                nn, na = finish_plan(sheet, nn, NAN, 0, nn)
            return nn, na, end, real_end, aligned, True
        left -= ((deadline if future == aligned else future) - start) * sp
        nf[wrap(i_start, nn)] -= assign
        event = future
        lo = bisect_left(nt, nn, event)
        if not (lo < nn and nt[lo] == event):
            raise ValueError("a plan's first period must end on a step of the timeline")
        aval[lo] = 0
        aset[lo] = True
    for k in range(hi):
        aset[k] = True  # setdefault(t, 0): aval is 0 where unset
    # 1. the smallest count that, counted back from the deadline, is enough
    last_q = 0
    rg: f64 = NAN
    rg_of: i64 = -1
    for i in range(nl):
        q = tables.levels2[m, i]
        if q > total:
            break
        until = aligned
        gathered = 0.0
        rq = NAN  # rate(q), asked once per level (when first needed: it may raise)
        for k in range(hi - 1, lo - 1, -1):
            p = nt[k]
            if nf[k] >= q and q:
                if rq != rq:
                    rq = rate(tables, m, q)
                sp = rq
            else:
                got = min(q, fit_of(fitp, fitw, nf[k]))
                if not got:
                    until = p
                    continue
                if got != rg_of:  # the rate of the last count asked, kept
                    rg = rate(tables, m, got)
                    rg_of = got
                sp = rg
            gathered += ((deadline if until == aligned else until) - p) * sp
            if gathered >= left:
                sheet.m, sheet.deadline, sheet.aligned, sheet.event = m, deadline, aligned, event
                nn, na, end, real_end = forward(sheet, times, free, n, nn, left, q, last_q, p,
                                                lo, hi + 1)
                return nn, na, end, real_end, aligned, False
            until = p
        last_q = q
    # 2. not enough before the deadline: the top count on what is free until then
    last_t = NAN
    last_k = -1
    last_a = 0
    for k in range(lo, nn):
        t = nt[k]
        if t > aligned:
            break
        if last_k >= 0:
            hold(aval, aset, nf, last_k, last_a)
            if last_a:
                left -= ((deadline if t == aligned else t) - last_t) * rate(tables, m, last_a)
        last_t, last_k, last_a = t, k, min(last_q, fit_of(fitp, fitw, nf[k]))
    # 3. after the deadline: whatever fits, up to the cap, until done
    last_t = max(aligned, event)
    lk = step_index(nt, nn, last_t)
    for k in range(bisect_right(nt, nn, aligned), nn):
        t = nt[k]
        q = min(fit_of(fitp, fitw, nf[wrap(lk, nn)]), cap)
        if not q:
            aval[wrap(lk, nn)] = 0
            aset[wrap(lk, nn)] = True
            last_t, lk = t, k
            continue
        aval[wrap(lk, nn)] = q
        aset[wrap(lk, nn)] = True
        gained = (t - last_t) * rate(tables, m, q)
        if gained >= left:
            real_end = float(ceil(last_t + left / rate(tables, m, q)))
            end = align(start, real_end, slot)
            u = end_search(times, n, end)
            if u > 0 and times[u - 1] >= aligned:  # the last step in [aligned, end)
                carried = free[u - 1]
            if last_t != end:
                if carried == NONE:
                    raise TypeError("free GPUs unset")
                nf[wrap(lk, nn)] = carried - q
            if not (u < n and times[u] == end):  # no step at the end: it gets one
                nn, na = finish_plan(sheet, nn, end, carried, nn)
            else:
                nn, na = finish_plan(sheet, nn, NAN, 0, nn)
            return nn, na, end, real_end, aligned, False
        left -= gained
        for u in range(n):
            if times[u] >= last_t:
                break
            carried = nf[wrap(step_index(nt, nn, times[u]), nn)]
        if t > last_t:  # a job past its deadline starts with an empty period: nothing held
            nf[wrap(lk, nn)] -= q
        last_t, lk = t, k
    # 4. beyond the timeline: the cap (or the count being priced) on an empty cluster
    q = assign
    if not q:
        q = -1
        for i in range(nl):
            g = tables.levels2[m, i]
            if g <= min(total, cap) and g > q:
                q = g
        if q < 0:
            q = tables.levels2[m, 0]
    aval[wrap(lk, nn)] = q
    aset[wrap(lk, nn)] = True
    real_end = float(ceil(last_t + left / rate(tables, m, q)))
    end = align(start, real_end, slot)
    nf[wrap(lk, nn)] = total - q
    nn, na = finish_plan(sheet, nn, end, total, nn)
    return nn, na, end, real_end, aligned, False


@cython.cfunc
@cython.inline
def forward(sheet: Sheet, times: f64p, free: i64p, n: i64, nn: i64, left: f64, q: i64,
            prev_q: i64, point: f64, first: i64, marked: i64) -> tuple[i64, i64, f64, f64]:
    """Allocate the sheet's job from its ``event`` (step ``first`` of the ``nn`` of the
    plan's timeline): ``prev_q`` before ``point``, ``q`` from it, until ``left`` is done.
    Only the first ``marked`` steps can be marked (up to the deadline slot's, see
    :func:`finish_plan`)."""
    tables: Tables = sheet.tables
    total: i64 = sheet.total
    slot: f64 = sheet.slot
    nf: i64p = sheet.nf
    nt: f64p = sheet.nt
    aval: i64p = sheet.aval
    aset: u8p = sheet.aset
    m: i64 = sheet.m
    deadline: f64 = sheet.deadline
    aligned: f64 = sheet.aligned
    event: f64 = sheet.event
    k: i64
    u: i64
    t: f64
    sp: f64
    gained: f64
    real_left: f64
    na: i64
    end: f64 = NAN
    real_end: f64 = NAN
    last_t: f64 = NAN
    last_k: i64 = -1
    last_a: i64 = 0
    sp_of: i64 = -1
    fitp: i64p = irow(tables.fit2, tables.fitrow[m])
    fitw: i64 = tables.fit2.shape[1]
    for k in range(first, nn):
        t = nt[k]
        if t > aligned:
            break
        if last_k >= 0:
            hold(aval, aset, nf, last_k, last_a)
            if last_a:
                if last_a != sp_of:  # the rate of the last count asked, kept
                    sp = rate(tables, m, last_a)
                    sp_of = last_a
                gained = ((deadline if t == aligned else t) - last_t) * sp
                if last_t < point or gained < left:
                    left -= gained
                else:
                    real_left = float(ceil(left / sp))
                    end = last_t + align(0.0, real_left, slot)
                    real_end = last_t + real_left
                    break
        last_t, last_k = t, k
        last_a = min(q if t >= point else prev_q, fit_of(fitp, fitw, nf[k]))
    if end != end:
        if last_k < 0:
            raise TypeError("nothing to allocate before the deadline")
        hold(aval, aset, nf, last_k, last_a)
        real_left = float(ceil(left / rate(tables, m, last_a)))
        end = last_t + align(0.0, real_left, slot)
        real_end = last_t + real_left
    # the value before the plan at its end: the last step in [event, end), else ``total``
    u = end_search(times, n, end)
    back: i64 = free[u - 1] if u > 0 and times[u - 1] >= event else total
    if not (u < n and times[u] == end):
        nn, na = finish_plan(sheet, nn, end, back, marked)
    else:
        nn, na = finish_plan(sheet, nn, NAN, 0, marked)
    return nn, na, end, real_end


# -- a round: plan every job, then hand out the free GPUs ----------------------------------
@cython.cfunc
@cython.inline
@cython.exceptval(check=False)
def next_level_of(levels2: i64[:, :], m: i64, nl: i64, gpus: i64) -> i64:
    """The next scaling step of model row ``m`` above ``gpus`` (``gpus`` itself at the top)."""
    i: i64
    g: i64
    for i in range(nl):
        g = levels2[m, i]
        if g > gpus:
            return g
    return gpus


@cython.cfunc
@cython.inline
@cython.exceptval(check=False)
def released(times: f64p, free: i64p, n: i64, at: f64p, ag: i64p, na: i64, end: f64,
             total: i64, out_t: f64p, out_f: i64p) -> i64:
    """The cluster timeline plus a job's own allocation until its planned end.

    Written to ``out_t``/``out_f`` (room for n + na + 1 entries); returns its length.
    Past the end and the allocation's last step it is the cluster timeline itself, copied
    by a plain loop (the timeline's steps are strictly increasing).
    """
    m: i64 = 0
    i: i64 = 0
    a: i64 = 0
    k: f64
    value: i64
    end_left: cython.bint = True
    base: i64 = total
    held: i64 = 0
    last: i64 = -1
    add: i64
    change: f64
    while True:
        # a run of the timeline's own steps before the next change of the held count:
        # each is its value plus what is held (nothing once the end has passed)
        change = INF
        if a < na:
            change = at[a]
        if end_left and end < change:
            change = end
        add = held if end_left and end == end else 0  # (k < NaN is false)
        while i < n and times[i] < change:
            base = free[i]
            if base + add != last:
                last = base + add
                out_t[m] = times[i]
                out_f[m] = last
                m += 1
            i += 1
        k = INF
        if i < n:
            k = times[i]
        if a < na and at[a] < k:
            k = at[a]
        if end_left and end < k:
            k = end
        if k == INF and not (i < n or a < na or end_left):
            break
        while i < n and times[i] <= k:
            base = free[i]
            i += 1
        while a < na and at[a] <= k:
            held = ag[a]
            a += 1
        if end_left and end <= k:
            end_left = False
        value = base + held if k < end else base
        if value != last:
            out_t[m] = k
            out_f[m] = value
            m += 1
            last = value
        if not end_left and a >= na:
            break
    while i < n:
        if free[i] != last:
            out_t[m] = times[i]
            out_f[m] = free[i]
            m += 1
            last = free[i]
        i += 1
    return m


@cython.ccall
@cython.exceptval(-1)
def estimate(now: f64, left: f64[:], deadline: f64[:], model: i64[:], stop_on_miss: cython.bint,
             planner: Planner) -> i64:
    """Plan jobs (deadline order) one after another on an empty cluster.

    Returns whether every plan meets its deadline (1 or 0; ``stop_on_miss``
    stops at the first miss). Leaves in ``planner`` the plans' allocations as
    ``at_all[ptr[i]:ptr[i+1]]`` (``ag_all`` likewise), their ends
    (``end``, ``real_end``) and the timeline they leave (``times``/``free``,
    ``timeline`` steps long).
    """
    i: i64
    k: i64
    nn: i64
    na: i64
    e: f64
    re: f64
    sheet: Sheet = planner.sheet
    m: i64 = left.shape[0]
    width: i64 = 2 * m + 8  # a plan adds at most two steps (its aligned deadline and its end)
    times: f64p = fptr(planner.times)
    free: i64p = iptr(planner.free)
    ptr: i64[:] = planner.ptr
    end: f64[:] = planner.end
    real_end: f64[:] = planner.real_end
    times[0] = now
    free[0] = planner.total
    n: i64 = 1
    for i in range(m + 1):
        ptr[i] = 0
    sheet.nt, sheet.nf = fptr(planner.nt), iptr(planner.nf)
    sheet.aval, sheet.aset = iptr(planner.aval), bptr(planner.aset)
    sheet.at, sheet.ag = fptr(planner.at), iptr(planner.ag)
    ok: cython.bint = True
    for i in range(m):
        if n + 3 > width:
            raise RuntimeError("planner workspace too small")
        nn, na, e, re, _, _ = plan(sheet, times, free, n, now, left[i], deadline[i], model[i], 0)
        n = compact(fptr(planner.nt), iptr(planner.nf), nn, times, free)
        if ptr[i] + na > planner.at_all.shape[0]:
            planner.at_all = np.concatenate((np.asarray(planner.at_all),
                                             np.empty(planner.at_all.shape[0] + na)))
            planner.ag_all = np.concatenate((np.asarray(planner.ag_all),
                                             np.empty(planner.ag_all.shape[0] + na, np.int64)))
        for k in range(na):
            planner.at_all[ptr[i] + k] = planner.at[k]
            planner.ag_all[ptr[i] + k] = planner.ag[k]
        ptr[i + 1] = ptr[i] + na
        end[i] = e
        real_end[i] = re
        if re > deadline[i]:
            ok = False
            if stop_on_miss:
                break
    planner.timeline = n
    return 1 if ok else 0



@cython.cfunc
@cython.exceptval(check=False)
def sort_desc(order: i64[:], key: f64[:]) -> cython.void:
    """Sort ``order`` in place by ``key[order]``, largest first, stably (NaN last).

    What Python's ``sort(reverse=True)`` does; an insertion sort, as the
    lists are short and mostly sorted already.
    """
    i: i64
    j: i64
    x: i64
    kx: f64
    ky: f64
    for i in range(1, order.shape[0]):
        x = order[i]
        kx = key[x]
        j = i - 1
        while j >= 0:
            ky = key[order[j]]
            if kx > ky or (ky != ky and kx == kx):
                order[j + 1] = order[j]
                j -= 1
            else:
                break
        order[j + 1] = x




# -- the workspace of a replay's planning: arrays that travel together ---------------------
@cython.cclass
class Tables:
    """The jobs' scaling models (see the module docstring): ``speed2``, ``levels2``,
    ``nlev``, ``fit2``, ``fitrow``, ``cap2``, one argument wherever they go (the
    attributes are declared in ``efcore.pxd``: :mod:`.efrounds` reads them too)."""

    def __init__(self, speed2, levels2, nlev, fit2, fitrow, cap2) -> None:
        self.speed2, self.levels2, self.nlev = speed2, levels2, nlev
        self.fit2, self.fitrow, self.cap2 = fit2, fitrow, cap2


@cython.cclass
class Sheet:
    """What a plan reads besides the timeline and the job, and where it writes.

    Set once: the model ``tables``, the cluster's GPUs (``total``) and the ``slot``.
    Set before each plan (pointers into arrays the caller owns, compiled; the arrays or
    rows themselves as Python): the timeline with the plan ``nt``/``nf``, its marks
    ``aval``/``aset`` and the allocation ``at``/``ag`` (see :func:`plan` for their
    room). Set by the plan for its later steps (:func:`forward`, :func:`finish_plan`):
    the start's allocation off the timeline ``xt``/``xv``, the job's model row ``m``,
    ``deadline`` and deadline slot ``aligned``, and the time its search starts
    (``event``). The attributes are declared in ``efcore.pxd``.
    """

    def __init__(self, tables: Tables, total: i64, slot: f64) -> None:
        self.tables, self.total, self.slot = tables, total, slot
        self.xt, self.xv, self.m = NAN, 0, 0
        self.deadline, self.aligned, self.event = NAN, NAN, NAN


@cython.cclass
class Current:
    """Per job (a row each): its allocation ``cat``/``cag``, ``cna`` steps long."""

    def __init__(self, cat, cag, cna) -> None:
        self.cat, self.cag, self.cna = cat, cag, cna


@cython.cclass
class Offers:
    """Per job, its offer (the plan one scaling step up): that plan's timeline ``ot``/``of``
    (``on`` long), allocation ``oat``/``oag`` (``ona`` long) and ends ``oend``/``oreal``,
    and whether it is valid for the current timeline (``has``)."""

    def __init__(self, ot, of, on, oat, oag, ona, oend, oreal, has) -> None:
        self.ot, self.of, self.on, self.oat, self.oag = ot, of, on, oat, oag
        self.ona, self.oend, self.oreal, self.has = ona, oend, oreal, has


@cython.cclass
class Prices:
    """Per job: its price (``marginal``) and what :func:`keep` needs to know when it still
    holds (``reuse``, ``r_step``, ``r_horizon``, ``r_jump``, ``r_fast``)."""

    def __init__(self, marginal, reuse, r_step, r_horizon, r_jump, r_fast) -> None:
        self.marginal, self.reuse, self.r_step = marginal, reuse, r_step
        self.r_horizon, self.r_jump, self.r_fast = r_horizon, r_jump, r_fast


@cython.cclass
class Work:
    """A round's scratch: the last released timeline ``rt``/``rf``, a plan's marks, and
    the last offer's deadline slot ``aligned`` and whether it finished in its first
    period (``fast``, see :func:`plan`)."""

    def __init__(self, rt, rf, aval, aset) -> None:
        self.rt, self.rf, self.aval, self.aset = rt, rf, aval, aset
        self.aligned, self.fast = NAN, False


@cython.cclass
class Merged:
    """:func:`keep`'s scratch: the two timelines' steps, the change at each, the next change."""

    def __init__(self, keys, delta, next_change) -> None:
        self.keys, self.delta, self.next_change = keys, delta, next_change


@cython.cclass
class Planner:
    """Everything a replay's rounds plan in, allocated once for ``jobs`` jobs and grown
    when a round needs more (rounds plan thousands of times; fresh arrays for each were a
    third of a replay).

    :func:`estimate` writes its plans here (``times``/``free`` … ``timeline``,
    ``ptr``, ``at_all``, ``ag_all``, ``end``, ``real_end``) and :func:`scale_up`
    its result (``order``, ``gpus``, ``up_end``, ``up_real``, ``started``,
    ``next_change``, ``step_job``/``step_end`` … ``nsteps``); Python reads them with
    :meth:`estimated` and :meth:`scaled` (the attributes are C-only when compiled). It plans
    on a cluster of ``total`` GPUs, ``slot`` seconds a slot, by the model ``tables`` (what
    every plan reads, with where it writes, is its :class:`Sheet`); a scale-up's jobs'
    ``left``, ``deadline`` and ``model`` are those :func:`scale_up` was given. A scale-up's
    rows are ``width`` wide for ``rows`` jobs (see :func:`reserve`): the cluster
    timeline's two rows ``tt``/``tf`` (row ``cur`` after the last step, the other
    before it, for :func:`keep`), then per job its allocation (:class:`Current`) and
    offer (:class:`Offers`), its price (:class:`Prices`), and the scratch
    (:class:`Work`, :class:`Merged`). The attributes are declared in ``efcore.pxd``.
    """

    def __init__(self, jobs: i64, tables: Tables, total: i64, slot: f64) -> None:
        n = max(int(jobs), 1)
        self.tables, self.total, self.slot = tables, total, slot
        self.sheet = Sheet(tables, total, slot)
        self.left, self.deadline = np.empty(0), np.empty(0)
        self.model = np.empty(0, np.int64)
        width = 2 * n + 8
        self.times, self.nt, self.at = (np.empty(width) for _ in range(3))
        self.free, self.nf, self.aval, self.ag = (np.empty(width, np.int64) for _ in range(4))
        self.aset = np.empty(width, np.bool_)
        self.ptr = np.zeros(n + 1, np.int64)
        self.at_all = np.empty(16 * n + 16)
        self.ag_all = np.empty(16 * n + 16, np.int64)
        self.end, self.real_end = np.empty(n), np.empty(n)
        self.timeline = 0
        self.order, self.gpus = np.empty(n, np.int64), np.empty(n, np.int64)
        self.up_end, self.up_real = np.empty(n), np.empty(n)
        self.started = np.empty(n, np.bool_)
        self.next_change = np.empty(n)
        self.step_job, self.step_end, self.nsteps = np.empty(0, np.int64), np.empty(0), 0
        self.next_level, self.fill = np.empty(n, np.int64), np.empty(n, np.int64)
        self.stale, self.idle = np.empty(n, np.bool_), np.empty(n)
        self.prices = Prices(np.empty(n), np.empty(n, np.bool_), np.empty(n),
                             np.empty(n), np.empty(n, np.int64), np.empty(n, np.bool_))
        self.rows, self.width = 0, 0
        self.current = Current(np.empty((0, 0)), np.empty((0, 0), np.int64),
                               np.empty(n, np.int64))
        self.offers = Offers(np.empty((0, 0)), np.empty((0, 0), np.int64),
                             np.empty(n, np.int64), np.empty((0, 0)),
                             np.empty((0, 0), np.int64), np.empty(n, np.int64), np.empty(n),
                             np.empty(n), np.empty(n, np.bool_))  # fmt: skip
        self.tt, self.tf = np.empty((2, 0)), np.empty((2, 0), np.int64)
        self.work, self.merged = scratch(0)

    def estimated(self, m: i64) -> tuple:
        """What :func:`estimate` left for its ``m`` jobs, as numpy copies (for callers in
        Python): ``(ptr, at, ag, end, real_end, times, free)``, job ``i``'s allocation
        ``at[ptr[i]:ptr[i+1]]`` and the timeline the plans leave."""
        ptr = np.array(self.ptr[: m + 1])
        used = ptr[m]
        n = self.timeline
        return (ptr, np.array(self.at_all[:used]), np.array(self.ag_all[:used]),
                np.array(self.end[:m]), np.array(self.real_end[:m]), np.array(self.times[:n]),
                np.array(self.free[:n]))

    def scaled(self, m: i64) -> tuple:
        """What :func:`scale_up` left for its ``m`` jobs, as numpy copies (for callers in
        Python): ``(order, gpus, end, real_end, started, next_change, step_job, step_end)``."""
        k = self.nsteps
        return (np.array(self.order[:m]), np.array(self.gpus[:m]), np.array(self.up_end[:m]),
                np.array(self.up_real[:m]), np.array(self.started[:m]).astype(bool),
                np.array(self.next_change[:m]), np.array(self.step_job[:k]),
                np.array(self.step_end[:k]))


@cython.cfunc
def widen(a, rows: i64, width: i64):
    """A copy of the 2-D buffer ``a`` with ``rows`` rows and ``width`` columns."""
    out = np.empty((rows, width), a.dtype)
    keep_rows = min(rows, a.shape[0])
    keep_width = min(width, a.shape[1])
    out[:keep_rows, :keep_width] = a[:keep_rows, :keep_width]
    return out


@cython.cfunc
def resize(planner: Planner, rows: i64, width: i64) -> cython.void:
    """The planner's rows, ``rows`` × ``width`` now, contents kept."""
    current: Current = planner.current
    offers: Offers = planner.offers
    planner.tt = widen(np.asarray(planner.tt), 2, width)
    planner.tf = widen(np.asarray(planner.tf), 2, width)
    current.cat = widen(np.asarray(current.cat), rows, width)
    current.cag = widen(np.asarray(current.cag), rows, width)
    offers.ot = widen(np.asarray(offers.ot), rows, width)
    offers.of = widen(np.asarray(offers.of), rows, width)
    offers.oat = widen(np.asarray(offers.oat), rows, width)
    offers.oag = widen(np.asarray(offers.oag), rows, width)
    planner.work, planner.merged = scratch(width)
    planner.rows, planner.width = rows, width


@cython.cfunc
def reserve(planner: Planner, m: i64, width: i64) -> cython.void:
    """Rows for ``m`` jobs at least ``width`` wide (a scale-up's start)."""
    if m > planner.rows or width > planner.width:
        resize(planner, max(m, planner.rows), max(width, planner.width))


@cython.cfunc
def roomier(n: i64, longest: i64, planner: Planner) -> cython.void:
    """Widen the rows (see :class:`Planner`) for plans on an ``n``-step timeline.

    Plans need n + na + 4 entries (``longest``: the largest na). The rows keep
    their contents, in new arrays.
    """
    resize(planner, planner.rows, max(2 * (n + longest) + 16, planner.width))


@cython.cfunc
def scratch(width: i64) -> tuple:
    """The 1-D scratch of a round: :class:`Work` and keep()'s :class:`Merged`."""
    work = Work(np.empty(width, np.float64), np.empty(width, np.int64),
                np.empty(width, np.int64), np.empty(width, np.bool_))  # fmt: skip
    merged = Merged(np.empty(2 * width, np.float64), np.empty(2 * width, np.int64),
                    np.empty(2 * width, np.float64))  # fmt: skip
    return work, merged


@cython.cfunc
@cython.inline
def make_offer(p: i64, now: f64, times: f64p, free: i64p, n: i64, planner: Planner) -> i64:
    """Plan job ``p`` one step up on the timeline (``times``/``free``, ``n`` steps) with its
    own GPUs handed back.

    The released timeline it was planned on is left in ``work`` (with the plan's
    deadline slot and whether it was fast); returns its length.
    """
    nn: i64
    na: i64
    e: f64
    re: f64
    aligned: f64
    fast: cython.bint
    current: Current = planner.current
    offers: Offers = planner.offers
    work: Work = planner.work
    sheet: Sheet = planner.sheet
    rt: f64p = fptr(work.rt)
    rf: i64p = iptr(work.rf)
    rn: i64 = released(times, free, n, frow(current.cat, p), irow(current.cag, p),
                       current.cna[p], planner.up_end[p], planner.total, rt, rf)
    sheet.nt, sheet.nf = frow(offers.ot, p), irow(offers.of, p)
    sheet.aval, sheet.aset = iptr(work.aval), bptr(work.aset)
    sheet.at, sheet.ag = frow(offers.oat, p), irow(offers.oag, p)
    nn, na, e, re, aligned, fast = plan(sheet, rt, rf, rn, now, planner.left[p],
                                        planner.deadline[p], planner.model[p],
                                        planner.next_level[p])
    work.aligned = aligned
    work.fast = fast
    offers.on[p] = nn
    offers.ona[p] = na
    offers.oend[p] = e
    offers.oreal[p] = re
    offers.has[p] = True
    return rn


@cython.cfunc
@cython.inline
def price(p: i64, spare: i64, now: f64, times: f64p, free: i64p, n: i64,
          planner: Planner) -> cython.void:
    """The GPU-time per added GPU of scaling job ``p`` one step now (+inf for idle jobs),
    with ``spare`` GPUs free, on the timeline ``times``/``free`` (``n`` steps).

    Notes, for :func:`keep`, the window of the timeline the price read: from
    its first step after now to the first step at or after its deadline slot
    and its end (if the deadline slot comes earlier, it reads more).
    """
    prices: Prices = planner.prices
    offers: Offers = planner.offers
    current: Current = planner.current
    work: Work = planner.work
    level: i64 = planner.next_level[p]
    g: i64 = planner.gpus[p]
    prices.reuse[p] = False
    offers.has[p] = False
    if level - g > spare or level == g:
        prices.marginal[p] = -INF
        return
    if g == 0:
        prices.marginal[p] = INF  # idle jobs come first; plan them only when chosen
        return
    rn: i64 = make_offer(p, now, times, free, n, planner)
    rt: f64p = fptr(work.rt)
    rf: i64p = iptr(work.rf)
    new: f64 = gpu_time(frow(offers.oat, p), irow(offers.oag, p), offers.ona[p], offers.oend[p])
    old: f64 = gpu_time(frow(current.cat, p), irow(current.cag, p), current.cna[p],
                        planner.up_end[p])
    prices.marginal[p] = (new - old) / (level - g)
    aligned: f64 = work.aligned
    k: i64
    # the plan's first branch: the new count until done, before the timeline's first
    # step after now (and the deadline); then the price reads nothing else of it
    prices.r_fast[p] = work.fast
    if prices.r_fast[p]:
        prices.reuse[p] = True
        prices.r_horizon[p] = offers.oend[p]
    elif rn > 1 and aligned >= rt[1]:
        k = bisect_left(rt, rn, max(aligned, offers.oend[p]))
        prices.reuse[p] = True
        prices.r_step[p] = rt[1]
        prices.r_horizon[p] = rt[k] if k < rn else INF
        prices.r_jump[p] = rf[1] - rf[0]


@cython.cfunc
@cython.inline
@cython.exceptval(check=False)
def any_set(flags: u8[:], m: i64) -> cython.bint:
    """Whether any of ``flags[:m]`` is set (a C loop: ``any()`` of a generator is Python)."""
    i: i64
    for i in range(m):  # noqa: SIM110
        if flags[i]:
            return True
    return False


@cython.cfunc
@cython.inline
def keep(old_t: f64p, old_f: i64p, old_n: i64, new_t: f64p, new_f: i64p, new_n: i64,
         total: i64, prices: Prices, has: u8[:], merged: Merged, m: i64) -> cython.void:
    """Drop the reusable prices that the timeline change old → new can affect.

    A job's price reads the timeline (with its own GPUs handed back) on a
    window from its first step after now, ``f``, to a horizon ``h``. It is
    unchanged if the change is a constant before ``f``, nothing on [f, h], and
    ``f`` is still a step. ``merged`` is scratch with room for both timelines' steps;
    the jobs are the first ``m``.
    """
    reuse: u8[:] = prices.reuse
    r_step: f64[:] = prices.r_step
    r_horizon: f64[:] = prices.r_horizon
    r_jump: i64[:] = prices.r_jump
    r_fast: u8[:] = prices.r_fast
    keys: f64[:] = merged.keys
    delta: i64[:] = merged.delta
    next_change: f64[:] = merged.next_change
    i: i64
    p: i64
    k: f64
    step: f64
    if not any_set(reuse, m):
        return
    # the steps of both, and the change at each (new minus old value; ``total`` before a
    # timeline's first step): past a key, each timeline's last step read is its value there
    i = 0
    j: i64 = 0
    nk: i64 = 0
    while i < old_n or j < new_n:
        if j >= new_n or (i < old_n and old_t[i] < new_t[j]):
            k = old_t[i]
            i += 1
        elif i >= old_n or new_t[j] < old_t[i]:
            k = new_t[j]
            j += 1
        else:
            k = old_t[i]
            i += 1
            j += 1
        keys[nk] = k
        delta[nk] = (new_f[j - 1] if j else total) - (old_f[i - 1] if i else total)
        nk += 1
    first: i64 = delta[0]
    change: f64 = INF
    for i in range(1, nk):
        if delta[i] != first:
            change = keys[i]
            break
    upcoming: f64 = INF
    for i in range(nk - 1, -1, -1):
        next_change[i] = upcoming
        if delta[i]:
            upcoming = keys[i]
    for p in range(m):
        if not reuse[p]:
            continue
        if r_fast[p]:  # read only that no step falls before its end
            if change >= r_horizon[p]:
                has[p] = False
            else:
                reuse[p] = False
            continue
        step = r_step[p]
        i = wrap(bisect_right(fptr(keys), nk, step) - 1, nk)
        if change >= step and not delta[i] and next_change[i] > r_horizon[p] and (
            r_jump[p] != first
        ):
            r_jump[p] = r_jump[p] - first
            has[p] = False  # its plan's timeline is stale; re-plan if chosen
        else:
            reuse[p] = False


@cython.cfunc
@cython.inline
def take_offer(p: i64, offers: Offers, tt: f64[:, :], tf: i64[:, :], row: i64,
               current: Current) -> i64:
    """Make job ``p``'s offer current: its timeline into row ``row``, its allocation its own.

    Returns the new timeline's length.
    """
    k: i64
    cat: f64[:, :] = current.cat
    cag: i64[:, :] = current.cag
    n: i64 = compact(frow(offers.ot, p), irow(offers.of, p), offers.on[p], frow(tt, row),
                     irow(tf, row))
    na: i64 = offers.ona[p]
    for k in range(na):
        cat[p, k] = offers.oat[p, k]
        cag[p, k] = offers.oag[p, k]
    current.cna[p] = na
    return n


@cython.cfunc
@cython.inline
@cython.exceptval(check=False)
def longest(counts: i64[:], m: i64) -> i64:
    """The largest of ``counts[:m]`` (0 for none)."""
    best: i64 = 0
    i: i64
    for i in range(m):
        if counts[i] > best:
            best = counts[i]
    return best



@cython.ccall
def scale_up(now: f64, reprice_all: cython.bint, gpus_in: i64[:], left: f64[:],
             deadline: f64[:], model: i64[:], end_in: f64[:], planner: Planner) -> f64:
    """Give free GPUs one scaling step at a time to the job with the best offer.

    Jobs are given by position (the runnable list after planning, in deadline
    order): their GPUs now, iterations left, deadlines, model rows and planned
    ends. The rest is what :func:`estimate` left in ``planner`` for the same jobs:
    the timeline their plans leave, each plan's allocation and unaligned end. As in the
    reference, every job is priced again after each step;
    a price whose inputs the step provably left unchanged is reused (see
    :func:`keep`). With ``reprice_all`` false, the faster approximation:
    only the job that grew is re-priced, and when the spare GPUs cover every
    job's top level each job is scaled straight there.

    Leaves in ``planner`` (the first ``m`` entries) the runnable list's new order
    (positions, ``order``), the new counts and ends (``gpus``, ``up_end``,
    ``up_real``), which jobs got their first GPUs here (``started``) and each job's
    own next allocation change after now (``next_change``, INF: none); and the
    scaling steps in the order taken (``nsteps`` of them: the job's position
    ``step_job`` and its end after the step ``step_end``), which the artifact's
    ``ef`` moves ends by one at a time. Returns the earliest allocation change after now.
    """
    tables: Tables = planner.tables
    levels2: i64[:, :] = tables.levels2
    nlev: i64[:] = tables.nlev
    total: i64 = planner.total
    m: i64 = gpus_in.shape[0]
    n: i64 = planner.timeline
    ptr: i64[:] = planner.ptr
    p: i64
    i: i64
    k: i64
    mp: i64
    top: i64
    step: i64
    old_n: i64
    chosen: i64
    t: f64
    order: i64[:] = planner.order
    gpus: i64[:] = planner.gpus
    end: f64[:] = planner.up_end
    real_end: f64[:] = planner.up_real
    started: u8[:] = planner.started
    next_level: i64[:] = planner.next_level
    stale: u8[:] = planner.stale
    next_change: f64[:] = planner.next_change
    if planner.step_job.shape[0] < total + m:  # a step adds a GPU or fills an idle job
        planner.step_job = np.empty(total + m, np.int64)
        planner.step_end = np.empty(total + m)
    step_job: i64[:] = planner.step_job
    step_end: f64[:] = planner.step_end
    nsteps: i64 = 0
    prices: Prices = planner.prices
    marginal: f64[:] = prices.marginal
    reuse: u8[:] = prices.reuse
    current: Current = planner.current
    offers: Offers = planner.offers
    cna: i64[:] = current.cna
    oend: f64[:] = offers.oend
    oreal: f64[:] = offers.oreal
    has: u8[:] = offers.has
    spare: i64 = total
    need: i64 = 0
    planner.left, planner.deadline, planner.model = left, deadline, model
    for p in range(m):
        order[p] = p
        gpus[p] = gpus_in[p]
        end[p] = end_in[p]
        real_end[p] = planner.real_end[p]
        started[p] = False
        stale[p] = True
        marginal[p] = 0.0
        reuse[p] = False
        prices.r_step[p] = 0.0
        prices.r_horizon[p] = 0.0
        prices.r_jump[p] = 0
        prices.r_fast[p] = False
        offers.on[p] = 0
        offers.ona[p] = 0
        oend[p] = 0.0
        oreal[p] = 0.0
        has[p] = False
        cna[p] = ptr[p + 1] - ptr[p]
        mp = model[p]
        next_level[p] = next_level_of(levels2, mp, nlev[mp], gpus[p])
        spare -= gpus[p]
        need += levels2[mp, nlev[mp] - 1] - gpus[p]
    # a plan on a released timeline needs n + na + 4
    reserve(planner, m, 2 * (n + longest(cna, m)) + 16)
    width: i64 = planner.width
    tt: f64[:, :] = planner.tt
    tf: i64[:, :] = planner.tf
    cat: f64[:, :] = current.cat
    cag: i64[:, :] = current.cag
    cur: i64 = 0
    for k in range(n):
        tt[0, k] = planner.times[k]
        tf[0, k] = planner.free[k]
    for p in range(m):
        for k in range(cna[p]):
            cat[p, k] = planner.at_all[ptr[p] + k]
            cag[p, k] = planner.ag_all[ptr[p] + k]
    if spare != 0 and not reprice_all and spare >= need:
        # fill up: idle jobs first, then the rest, each planned once at its top level
        fill: i64[:] = planner.fill
        k = 0
        for i in range(m):
            if gpus[order[i]] == 0:
                fill[k] = order[i]
                k += 1
        for i in range(m):
            if gpus[order[i]] != 0:
                fill[k] = order[i]
                k += 1
        for i in range(m):
            p = fill[i]
            top = levels2[model[p], nlev[model[p]] - 1]
            if top <= gpus[p]:
                continue
            if n + longest(cna, m) + 8 > width:
                roomier(n, longest(cna, m), planner)
                width, tt, tf = planner.width, planner.tt, planner.tf
            next_level[p] = top
            make_offer(p, now, frow(tt, cur), irow(tf, cur), n, planner)
            cur = 1 - cur
            n = take_offer(p, offers, tt, tf, cur, current)
            gpus[p] = top
            end[p], real_end[p] = oend[p], oreal[p]
            step_job[nsteps] = p
            step_end[nsteps] = end[p]
            nsteps += 1
            started[p] = True
        idle: f64[:] = planner.idle
        for p in range(m):
            idle[p] = INF if gpus[p] == 0 else 0.0
        sort_desc(order[:m], idle)
        spare = 0
    # stale (to be priced) is everyone at first
    priced: cython.bint = spare != 0
    grew: cython.bint = True
    while True:
        if priced:
            for i in range(m):
                p = order[i]
                if stale[p]:
                    price(p, spare, now, frow(tt, cur), irow(tf, cur), n, planner)
            sort_desc(order[:m], marginal)
        if spare <= 0 or not grew:
            break
        grew = False
        chosen = -1
        for i in range(m):
            p = order[i]
            step = next_level[p] - gpus[p]
            if step > spare or step == 0:
                continue
            if not has[p]:  # priced without a plan (idle job) or on an older timeline
                make_offer(p, now, frow(tt, cur), irow(tf, cur), n, planner)
            old_n = n
            cur = 1 - cur
            n = take_offer(p, offers, tt, tf, cur, current)
            gpus[p] = next_level[p]
            end[p], real_end[p] = oend[p], oreal[p]
            step_job[nsteps] = p
            step_end[nsteps] = end[p]
            nsteps += 1
            started[p] = True
            spare -= step
            grew = True
            mp = model[p]
            next_level[p] = next_level_of(levels2, mp, nlev[mp], gpus[p])
            reuse[p] = False
            keep(frow(tt, 1 - cur), irow(tf, 1 - cur), old_n, frow(tt, cur), irow(tf, cur), n,
                 total, prices, has, planner.merged, m)
            chosen = p
            break
        if grew and n + longest(cna, m) + 8 > width:  # room for the next plans
            roomier(n, longest(cna, m), planner)
            width, tt, tf = planner.width, planner.tt, planner.tf
        if not reprice_all and grew:
            for p in range(m):
                has[p] = False  # every other offer's timeline is stale now
                stale[p] = False
            stale[chosen] = next_level[chosen] > gpus[chosen]
        else:  # every job that can still grow, unless its price provably holds
            for p in range(m):
                step = next_level[p] - gpus[p]
                stale[p] = step > 0 and not (reuse[p] and step <= spare)
        priced = True
    first_change: f64 = INF
    own: f64
    cat = current.cat
    for p in range(m):
        own = INF
        for k in range(cna[p]):
            t = cat[p, k]
            if t > now and t < own:
                own = t
        next_change[p] = own
        if own < first_change:
            first_change = own
    planner.nsteps = nsteps
    return first_change
