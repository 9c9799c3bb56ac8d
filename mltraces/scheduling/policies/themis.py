"""Themis: finish-time fairness in 60-second leases, rigid GPU counts.

Every slot, for the runnable jobs, a share ``x_i ∈ [0, 1]`` of each job's
requested GPUs is chosen to minimise the worst finish-time fairness ratio

    ρ_i(x) = (elapsed_i + remaining_i / (throughput_i · x_i)) / isolated_i,

subject to Σ gpus_i · x_i ≤ cluster GPUs; jobs then get their whole request,
highest share first, while GPUs last. Jobs run on their requested count;
a job ends when its iterations (or its trace duration) are done, at the end
of the slot. There is no restart overhead.

The artifact solves the problem with cvxpy/ECOS every slot, which makes it
slow (about 20 minutes for 260 jobs). Here the optimum is found directly:
the optimal worst ratio by bisection on a monotone scalar equation, and,
when the optimum leaves slack (it is not unique), the point an
interior-point solver converges to — the analytic centre of the optimal set —
by a second scalar equation. Shares come out as the artifact's; only their
ordering matters, and it matches unless two jobs' shares tie to solver
precision. As in the artifact, "elapsed" is measured at the last slot that
had an arrival or a completion, and the isolated share is
min(1, ⌈G/n⌉ / gpus_i) with n runnable jobs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from mltraces.scheduling.base import Setup
from mltraces.scheduling.results import Recorder


def fair_shares(
    a: np.ndarray, b: np.ndarray, c: np.ndarray, g: np.ndarray, total: float
) -> np.ndarray:
    """Shares x minimising max_i (a_i + b_i / x_i) / c_i s.t. Σ g_i x_i ≤ total, 0 ≤ x ≤ 1.

    ``b`` is the remaining isolated-throughput time at x = 1, ``c`` > 0. Where the
    optimum is not unique, returns the analytic centre of the optimal set (what
    an interior-point method such as ECOS converges to).
    """
    floor = (a + b) / c  # each job's ratio at x = 1
    t_lo = float(floor.max())

    def lower(t: float) -> np.ndarray:
        return np.minimum(b / np.maximum(t * c - a, 1e-300), 1.0)

    if float(g @ lower(t_lo)) > total:
        return lower(_root_t(a, b, c, g, total, t_lo))
    tight = floor >= t_lo * (1 - 1e-12)
    low = np.where(tight, 1.0, lower(t_lo))
    return _centre(low, g, tight, total)


def _root_t(a, b, c, g, total: float, t_lo: float) -> float:
    """The worst ratio at which the shares' lower bounds exactly fill the cluster."""
    t_hi = float(((a + b * g.sum() / total) / c).max())
    for _ in range(200):
        mid = 0.5 * (t_lo + t_hi)
        if mid <= t_lo or mid >= t_hi:
            break
        if float(g @ (b / (mid * c - a))) > total:
            t_lo = mid
        else:
            t_hi = mid
    return t_hi


#: weight of log(x − low) in the centre: a linear slack (1) plus half the log-det of
#: the second-order cone that models 1/x (ECOS counts a cone of that kind once)
_SLACK_WEIGHT = 1.5


def _centre(low: np.ndarray, g: np.ndarray, fixed: np.ndarray, total: float) -> np.ndarray:
    """Maximise Σ w·log(x−low) + log(1−x) + log(total − Σ g·x) over the free jobs."""
    free = ~fixed
    if not free.any():
        return low
    lf, gf = low[free], g[free]
    m = 1.0 - lf
    w = _SLACK_WEIGHT
    used_fixed = float(g[fixed].sum())

    def shares(lam: float) -> np.ndarray:
        k = lam * gf
        p = k * m + w + 1.0
        d = (p - np.sqrt(np.maximum(p * p - 4.0 * k * w * m, 0.0))) / (2.0 * k)
        return lf + d

    def excess(lam: float) -> float:
        return lam * (total - used_fixed - float(gf @ shares(lam))) - 1.0

    lo, hi = 1e-12, 1.0
    while excess(hi) < 0 and hi < 1e300:
        hi *= 4.0
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        if not lo < mid < hi:
            break
        if excess(mid) < 0:
            lo = mid
        else:
            hi = mid
    x = low.copy()
    x[free] = shares(hi)
    return x


def ecos_shares(
    elapsed: np.ndarray,
    left: np.ndarray,
    speed: np.ndarray,
    isolated: np.ndarray,
    g: np.ndarray,
    total: float,
) -> np.ndarray | None:
    """The artifact's own solve: the same conic program handed to ECOS (``None`` if absent).

    The program is built exactly as cvxpy builds it from the artifact's
    expression (variables t, x, u; rows: the max's epigraph, 0 ≤ x ≤ 1, the GPU
    budget, and one 3-D second-order cone per job for u ≥ 1/(throughput·x)), so
    ECOS walks the same iterates and returns the same optimal point out of the
    many the problem has. The matrix goes to ECOS's C solver directly, as the
    arrays its Python wrapper would pass (:func:`ecos_program`).
    """
    try:
        from _ecos import csolve
    except ImportError:
        return None
    n = len(left)
    data, indices, indptr, h = ecos_program(elapsed, left, speed, isolated, g, total)
    c = _program_shape(n).cost.copy()
    solution = csolve((6 * n + 1, 2 * n + 1, 0), c, data, indices, indptr, h,
                      {"l": 3 * n + 1, "q": [3] * n, "e": 0}, verbose=False)
    x = np.asarray(solution["x"][1 : n + 1], float)
    return x if np.isfinite(x).all() else None


def ecos_program(
    elapsed: np.ndarray,
    left: np.ndarray,
    speed: np.ndarray,
    isolated: np.ndarray,
    g: np.ndarray,
    total: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``G`` in compressed columns (data, row indices, column starts) and ``h``.

    Columns: t, then x_i, then u_i. Every column's rows are distinct and
    ascending, so these are the arrays scipy's ``csc_matrix`` makes of the same
    entries (int32 indices), without a sparse matrix per slot (building one
    cost a third as much as the solve).
    """
    n = len(left)
    shape = _program_shape(n)
    data, h = shape.data.copy(), shape.h.copy()
    inv = 1.0 / isolated
    x_vals = data[n : 6 * n].reshape(n, 5)
    x_vals[:, 2] = g
    x_vals[:, 3] = x_vals[:, 4] = -np.asarray(speed, float)
    data[6 * n :: 3] = left * inv
    h[:n] = -(elapsed * inv)
    h[3 * n] = float(total)
    return data, shape.indices.copy(), shape.indptr.copy(), h


@dataclass(frozen=True)
class _Shape:
    """What ECOS's arrays hold for ``n`` jobs whatever the jobs are: every row index and
    column start, and the constant entries of ``G`` and ``h`` (the rest left zero)."""

    data: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray
    h: np.ndarray
    cost: np.ndarray


@lru_cache(maxsize=512)
def _program_shape(n: int) -> _Shape:
    """The program's layout for ``n`` jobs, built once (a replay solves with few sizes)."""
    cone = 3 * n + 1 + 3 * np.arange(n)
    job = np.arange(n)
    x_rows = np.column_stack([n + job, 2 * n + job, np.full(n, 3 * n), cone, cone + 1])
    x_vals = np.column_stack([np.full(n, -1.0), np.ones(n), np.zeros(n), np.zeros(n),
                              np.zeros(n)])
    u_rows = np.column_stack([job, cone, cone + 1])
    u_vals = np.column_stack([np.zeros(n), np.full(n, -1.0), np.ones(n)])
    data = np.concatenate([np.full(n, -1.0), x_vals.ravel(), u_vals.ravel()])
    indices = np.concatenate([job, x_rows.ravel(), u_rows.ravel()]).astype(np.int32)
    indptr = np.concatenate(
        [[0], n + 5 * np.arange(n + 1), 6 * n + 3 * np.arange(1, n + 1)]).astype(np.int32)
    h = np.concatenate([np.zeros(n), np.zeros(n), np.ones(n), [0.0], np.tile([0.0, 0.0, 2.0], n)])
    cost = np.zeros(2 * n + 1)
    cost[0] = 1.0  # minimise t
    for array in (data, indices, indptr, h, cost):
        array.flags.writeable = False
    return _Shape(data, indices, indptr, h, cost)


def _running(op: np.ufunc, first: np.ndarray, step: np.ndarray | float, size: int) -> np.ndarray:
    """Rows ``first``, op(first, step), op(op(first, step), step), … (``size`` + 1 rows),
    each computed from the previous one, as a loop applying ``op`` would."""
    table = np.empty((size + 1, len(first)))
    table[0] = first
    table[1:] = step
    return op.accumulate(table, axis=0, out=table)


def _fixed_rows(gpus: np.ndarray, speed: np.ndarray, slot: float) -> np.ndarray:
    """Per-job constants of the slot loop, gathered in one copy with the runnable jobs:
    GPUs, throughput, iterations per slot, GPU-seconds per slot."""
    return np.stack([gpus, speed, slot * speed, gpus * slot])


@dataclass(frozen=True)
class Themis:
    """Finish-time-fair leases (the artifact's ``themis``)."""

    name: str = "themis"

    def simulate(self, setup: Setup) -> Recorder:
        return _ThemisRun(setup).run()


class _ThemisRun:
    """The slot loop. State of the runnable jobs lives in dense arrays (``r_*``), in
    the order the artifact keeps its runnable list, re-packed only when that
    set or order changes."""

    def __init__(self, setup: Setup) -> None:
        self.setup = setup
        self.slot = setup.slot
        self.jobs = setup.jobs
        self.rec = setup.recorder()
        n = len(self.jobs)
        self.gpus = np.array([j.num_gpu for j in self.jobs], float)
        self.speed = np.array(
            [setup.curve(j).speed.get(j.num_gpu, math.nan) for j in self.jobs], float
        )
        self.submit = np.array([j.submit_time for j in self.jobs], float)
        self.fixed = _fixed_rows(self.gpus, self.speed, self.slot)
        #: (job, GPUs) per job, as the recorder's rounds take them
        self.pairs = list(zip(range(n), self.gpus.astype(int).tolist(), strict=True))
        # per-job state (rows: _STATE), valid for jobs not in the dense copy
        self.state = np.zeros((len(self._STATE), n))
        self.state[0] = [j.iterations for j in self.jobs]
        self.state[1] = [j.duration for j in self.jobs]
        self.state[3] = np.nan
        self.state[4] = 1.0
        self.end_time = np.zeros(n)
        self.runnable = np.zeros(0, int)
        #: whether the job has run a slot (its start is recorded)
        self.started = np.zeros(n, bool)
        #: bumped whenever the set of runnable jobs changes
        self.members = 0
        #: which holders the last logged round had (None: unknown)
        self.logged: tuple | None = None

    def arrivals(self, start: float, slot: float) -> dict[float, list[int]]:
        """Arrivals by the slot boundary (start + k·slot) at or after their submission."""
        out: dict[float, list[int]] = {}
        cluster = self.setup.gpus
        for job in self.jobs:
            if job.num_gpu > cluster or not self.speed[job.index] > 0:
                self.rec.reject(job.index)
                continue
            k = math.ceil((job.submit_time - start) / slot)
            out.setdefault(start + k * slot, []).append(job.index)
        return out

    # -- dense state of the runnable jobs --------------------------------------------
    _STATE = ("left", "remaining", "isolated_time", "last_left", "last_share", "busy_seconds")
    _BUSY = _STATE.index("busy_seconds")

    def pack(self, order: np.ndarray) -> None:
        """Make ``order`` the runnable jobs (saving the state of the previous ones).

        Their state is copied in one block; ``r_left`` … ``r_busy_seconds`` are views of
        its rows, so the slot code updates them in place.
        """
        self.unpack()
        self.runnable = order
        self.dense = self.state[:, order]
        (self.r_left, self.r_remaining, self.r_isolated_time, self.r_last_left,
         self.r_last_share, self.r_busy_seconds) = self.dense
        self.r_gpus, self.r_speed, self.r_step, self.r_slot_gpus = self.fixed[:, order]
        self.r_need = float(self.r_gpus.sum())
        self.r_started = bool(self.started[order].all())
        self.r_share_iso: np.ndarray | None = None

    def unpack(self) -> None:
        if len(self.runnable):
            self.state[:, self.runnable] = self.dense

    def run(self) -> Recorder:
        if not self.jobs:
            return self.rec
        slot, total = self.setup.slot, self.setup.gpus
        now = self.jobs[0].submit_time
        arrivals = self.arrivals(now, slot)
        due = sorted(arrivals)
        k = 0
        ending: list[int] = []  # jobs done at the end of the last slot
        stamp = now  # the reference's "event time": last slot with an arrival or an end
        while k < len(due) or len(self.runnable) or ending:
            if not len(self.runnable) and not ending and due[k] > now:
                self.idle_rounds(now, due[k], slot)
                now = due[k]  # idle until the next arrival's slot
            came = []
            if k < len(due) and due[k] == now:
                came = arrivals[due[k]]
                k += 1
            if came or ending:
                stamp = now
                for j in ending:
                    self.rec.finished(j, float(self.end_time[j]), now)
                self.pack(self.successors(ending, came))
                self.members += 1
                ending = []
            if not len(self.runnable):
                self.log([now], ())
                now += slot
                continue
            if not came and self.r_need <= total:
                horizon = (due[k] - now) // slot if k < len(due) else math.inf
                quiet = self.quiet_rounds(slot, horizon)
                if quiet:
                    self.log([now + k_round * slot for k_round in range(quiet)], None)
                    now += quiet * slot
                    if quiet >= horizon:
                        continue  # the next arrival's slot
                    # else a job ends in this slot: no quiet one, so it is leased now
            running = self.lease(stamp, total)
            self.log([now], running)
            ending = self.progress(running, now, slot)
            now += slot
        self.unpack()
        for j, busy in enumerate(self.state[self._BUSY].tolist()):
            self.rec.charge(j, busy)
        return self.rec

    def successors(self, ending: list[int], came: list[int]) -> np.ndarray:
        """The runnable jobs after a slot boundary: those still running, in their order,
        then the arrivals."""
        keep = self.runnable
        if ending:
            gone = set(ending)
            keep = np.array([j for j in keep.tolist() if j not in gone], int)
        return np.concatenate([keep, np.array(came, int)]) if came else keep

    def idle_rounds(self, now: float, until: float, slot: float) -> None:
        """The artifact logs every slot, idle ones too (no job holds GPUs)."""
        times = []
        while now < until:
            times.append(now)
            now += slot
        if times:
            self.log(times, ())

    def log(self, times: list[float], running: np.ndarray | tuple | None) -> None:
        """Log rounds at ``times`` in which ``running`` hold GPUs (``()``: none, None: all).

        The efficiency is summed only when the holders may differ from the last
        logged round's, else repeated: the same jobs on the same GPUs give the same sum.
        """
        rec = self.rec
        key = self.holders(running)
        if key is None or key != self.logged or not rec.rounds:
            rec.round(times[0], () if isinstance(running, tuple) else self.holding(running))
            times = times[1:]
            self.logged = key
        rec.repeat_rounds(times)

    def holders(self, running: np.ndarray | tuple | None) -> tuple | None:
        """Who holds GPUs, as a key equal for equal holders (None: not known cheaply)."""
        if isinstance(running, tuple):
            return ("idle",)
        return ("all", self.members) if running is None else None

    def holding(self, running: np.ndarray | None) -> list[tuple[int, int]]:
        """(job, GPUs) of the leased jobs (None: every runnable one)."""
        jobs = self.runnable if running is None else self.runnable[running]
        return list(map(self.pairs.__getitem__, np.sort(jobs).tolist()))

    def quiet_rounds(self, slot: float, horizon: float) -> int:
        """Run slots in which every runnable job runs and none ends; how many ran.

        Same arithmetic as full slots (so the same floating-point results), with
        none of their bookkeeping; stops before a slot in which a job would end
        and before ``horizon`` slots (the next arrival). Slots go in batches
        (:meth:`quiet_batch`), sized to about where the first job would end.
        """
        if np.isnan(self.r_last_left).any():
            return 0
        step = self.r_step
        if (self.r_remaining <= slot).any() or (self.r_left - step <= 0).any():
            return 0  # a job ends in the first slot (most calls: worth no batch)
        steps = np.concatenate([step, np.full(len(step), slot)])  # for left, remaining
        rounds = 0
        while rounds < horizon:
            size = self.batch_size(step, slot, horizon - rounds)
            ran = self.quiet_batch(steps, slot, size)
            rounds += ran
            if ran < size:
                break
        if rounds:
            self.r_busy_seconds += self.r_gpus * (slot * rounds)
        return rounds

    #: most slots in one batch (bounds its arrays when no job is near its end)
    _MAX_BATCH = 2048

    def batch_size(self, step: np.ndarray, slot: float, most: float) -> int:
        """Slots to compute at once: a little past where the first job would end, at most
        ``most`` (rounded up: the loop runs a slot while fewer than ``most`` ran)."""
        first = min(float(self.r_remaining.min()) / slot, float((self.r_left / step).min()))
        guess = first + 2 if math.isfinite(first) else 64  # NaN: no guess
        return max(1, math.ceil(min(guess, most, self._MAX_BATCH)))

    def quiet_batch(self, steps: np.ndarray, slot: float, size: int) -> int:
        """Up to ``size`` quiet slots; how many ran. ``steps``: what a slot takes off
        ``left`` and ``remaining`` (the dense block's first two rows, end to end).

        Row k of each table is the state after k slots. ``accumulate`` subtracts
        and adds row by row, in order, so every value is the one a slot-by-slot
        loop (``left -= step``, ``remaining -= slot``, ``iso += …``) computes.
        """
        n = len(self.runnable)
        table = _running(np.subtract, self.dense[:2].ravel(), steps, size)
        lefts, rems = table[:, :n], table[:, n:]
        stop = (rems[:size] <= slot).any(axis=1) | (lefts[1:] <= 0).any(axis=1)
        ran = int(stop.argmax()) if stop.any() else size
        if ran:
            iso = np.empty((ran + 1, n))  # the time, then what each slot adds
            iso[0] = self.r_isolated_time
            np.subtract(self.r_last_left, lefts[0], out=iso[1])
            np.subtract(lefts[: ran - 1], lefts[1:ran], out=iso[2:])
            iso[1:] /= self.r_last_share
            self.r_isolated_time[:] = np.add.accumulate(iso, axis=0, out=iso)[-1]
            self.dense[:2] = table[ran].reshape(2, n)  # left, remaining
            self.r_last_left[:] = lefts[ran - 1]
        return ran

    def lease(self, stamp: float, total: int) -> np.ndarray | None:
        """Solve the fairness problem; the dense positions that run (None: all of them)."""
        g, left = self.r_gpus, self.r_left
        if self.r_share_iso is None:  # it depends on the runnable jobs only
            self.r_share_iso = np.minimum(math.ceil(total / len(g)) / g, 1.0)
        share_iso = self.r_share_iso
        seen = ~np.isnan(self.r_last_left)
        if seen.all():
            self.r_isolated_time += (self.r_last_left - left) / self.r_last_share
        elif seen.any():
            self.r_isolated_time[seen] += (self.r_last_left[seen] - left[seen]) / self.r_last_share[
                seen
            ]
        self.r_last_left[:] = left
        self.r_last_share[:] = share_iso
        if self.r_need <= total:
            return None  # everyone fits: the shares cannot change who runs
        elapsed = stamp - self.submit[self.runnable]
        isolated = self.r_isolated_time + left / share_iso
        x = ecos_shares(elapsed, left, self.r_speed, isolated, g, total)
        if x is None:
            x = fair_shares(elapsed, left / self.r_speed, isolated, g, float(total))
        order = np.argsort(-x, kind="stable")
        self.pack(self.runnable[order])
        chosen, free = [], total
        for pos, need in enumerate(self.r_gpus.tolist()):
            if free <= 0:
                break
            if need <= free:
                chosen.append(pos)
                free -= need
        return np.array(chosen, int)

    def progress(self, running: np.ndarray | None, now: float, slot: float) -> list[int]:
        """Run the leased jobs for one slot; return those done by its end."""
        if running is None:
            return self.progress_all(now, slot)
        sel = running
        jobs = self.runnable[sel]
        gpus, speed = self.r_gpus[sel], self.r_speed[sel]
        rec = self.rec
        if not self.started[jobs].all():
            fresh = jobs[~self.started[jobs]]
            for j in fresh.tolist():
                rec.started(j, now)
            self.started[fresh] = True
        self.r_busy_seconds[sel] += gpus * slot
        rec.mark(now, int(gpus.sum()))
        nxt = now + slot
        remaining = self.r_remaining[sel]
        end = now + remaining
        remaining = np.maximum(remaining - slot, 0.0)
        left = self.r_left[sel] - slot * speed
        done = left <= 0
        remaining[done] = 0.0
        self.r_remaining[sel] = remaining
        self.r_left[sel] = left
        ending = done | (end <= nxt)
        if not ending.any():
            return []
        end = np.where(done, nxt, end)
        self.end_time[jobs[ending]] = end[ending]
        return jobs[ending].tolist()

    def progress_all(self, now: float, slot: float) -> list[int]:
        """:meth:`progress` when every runnable job runs: the same values, updated in place
        on the dense rows (no per-slot gathers and scatters)."""
        if not self.r_started:
            fresh = self.runnable[~self.started[self.runnable]]
            for j in fresh.tolist():
                self.rec.started(j, now)
            self.started[fresh] = True
            self.r_started = True
        self.r_busy_seconds += self.r_slot_gpus
        self.rec.mark(now, int(self.r_need))
        nxt = now + slot
        remaining, left = self.r_remaining, self.r_left
        end = now + remaining
        remaining -= slot
        np.maximum(remaining, 0.0, out=remaining)
        left -= self.r_step
        done = left <= 0
        ending = done | (end <= nxt)
        if not ending.any():
            return []
        remaining[done] = 0.0
        end = np.where(done, nxt, end)
        jobs = self.runnable[ending]
        self.end_time[jobs] = end[ending]
        return jobs.tolist()
