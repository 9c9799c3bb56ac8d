"""Gandiva: node sets per job size, time slicing inside a set, rigid GPU counts.

Nodes are grouped into *node sets*, each serving jobs of one GPU count; a set
of ``k`` nodes runs ``8·k / n`` jobs of ``n`` GPUs at once (at least one) and
time-slices the rest. A new job joins the least-loaded set of its size while
it has room, else opens a set on free nodes, else is squeezed into the
least-loaded set (over capacity), else waits. Every round, sets grow or shrink
towards each size's share of the GPU demand. Work is the trace's duration in
seconds; every running job pays the restart overhead each round.

Mirrors the artifact's ``--schedule=gandiva --scheme=gandiva``, including its
bookkeeping: a set's load counts every job it ever took until it is emptied or
rebalanced, the rotation of time slices happens only on rounds whose time is a
multiple of 60 s, and retrying waiting jobs skips the one after each start.

That rotation rule reads the trace's own clock: rounds come every slot after
an arrival, so which of them fall on a whole minute depends on the arrival
times modulo 60 s. The artifact's Gandiva (and this one) therefore gives the
same result when every time moves by a whole number of minutes, and another
when it moves by, say, 27 s (on cluster10, 88 instead of 86 deadlines met;
on cluster02, 667 jobs change outcome for a 1 s shift). The replay works on
times since the first submission (``Setup.origin``) plus that origin's
seconds past the minute, so it keeps the artifact's rotations at any clock
magnitude (epoch seconds or milliseconds) without the precision those
magnitudes cost. ``Gandiva(shift_invariant=True)`` rotates on whole minutes
since the first submission instead: then no shift of the times changes
anything, and the result is the artifact's for traces whose first submission
falls on a whole minute.

The rounds run in :mod:`.gandivacore` (compiled at install, see
:mod:`.native`); this module turns the setup into its arrays and the result
back into a :class:`Recorder`.
"""

from __future__ import annotations

import math

import numpy as np

from mltraces.scheduling.base import Setup
from mltraces.scheduling.errors import SchedulingError
from mltraces.scheduling.events import arrival_groups
from mltraces.scheduling.results import Recorder

#: job sizes that get node sets, in the reference's order
SET_SIZES = (1, 2, 4, 8, 12, 16, 24, 32, 40, 48, 56, 64, 72, 88, 128, 256)


class Gandiva:
    """Gandiva-style time slicing on node sets (the artifact's ``gandiva``).

    Args:
        shift_invariant: Rotate time slices on whole minutes since the first
            submission, not of the trace's clock (see the module docstring).
    """

    name = "gandiva"

    def __init__(self, shift_invariant: bool = False) -> None:
        self.shift_invariant = shift_invariant

    def __repr__(self) -> str:
        return f"Gandiva(shift_invariant={self.shift_invariant})"

    def simulate(self, setup: Setup) -> Recorder:
        from mltraces.scheduling.cores import gandivacore  # loaded only when Gandiva runs

        setup.check_memory("gandiva", 8.0 * (len(SET_SIZES) + 6) * setup.cluster.nodes,
                           "its node sets grow with the nodes")
        jobs, rec = setup.jobs, setup.recorder()
        sizes = np.array(SET_SIZES, np.int64)
        kind = np.searchsorted(sizes, jobs.num_gpu).astype(np.int64)
        known = (kind < len(sizes)) & (jobs.num_gpu <= setup.gpus)
        known[known] = sizes[kind[known]] == jobs.num_gpu[known]
        kind[~known] = -1
        for j in np.flatnonzero(~known).tolist():
            rec.reject(j)  # the reference exits on such a job
        duration = jobs.duration.astype(float)
        _check_durations(setup, duration, kind)
        per_node = setup.cluster.gpus_per_node
        span = np.array([math.ceil(size / per_node) for size in SET_SIZES], np.int64)
        capacity = np.array(
            [int(n * per_node / size) for n, size in zip(span, SET_SIZES, strict=True)], np.int64
        )
        plain, restart = _overhead_costs(setup)
        # rotations fall on the trace clock's minutes
        phase = 0.0 if self.shift_invariant else setup.clock_phase(60)
        submit = jobs.submit_time + phase
        etime, eptr, ejobs = arrival_groups(submit, np.flatnonzero(kind >= 0))
        start = np.full(len(jobs), np.nan)
        finish = np.full(len(jobs), np.nan)
        gpu_seconds = np.zeros(len(jobs))
        speedups = setup.speedups()
        weight = np.array([speedups[j.index].get(j.num_gpu, np.nan) if speedups else np.nan
                           for j in jobs], float)
        sets = gandivacore.Sets(sizes, span, capacity, setup.cluster.nodes, per_node, setup.gpus,
                                len(jobs))
        replayed = gandivacore.Jobs(kind, duration, plain, restart, weight, etime, eptr, ejobs)
        times, allocated, n_marks, rounds, n_rounds = gandivacore.replay(
            sets, replayed, float(setup.slot), setup.overhead.period(setup.slot), start, finish,
            gpu_seconds,
        )
        start -= phase
        finish -= phase
        rec.start, rec.finish = start.tolist(), finish.tolist()
        rec.met = (finish <= jobs.deadline).tolist()
        rec.gpu_seconds = gpu_seconds.tolist()
        rec.times = (times[:n_marks] - phase).tolist()
        rec.allocated = allocated[:n_marks].tolist()
        if speedups is not None:
            rec.rounds = (rounds[0, :n_rounds] - phase).tolist()
            rec.efficiency = (rounds[1, :n_rounds] / setup.gpus).tolist()
        return rec


def _check_durations(setup: Setup, duration: np.ndarray, kind: np.ndarray) -> None:
    """Gandiva's work is the trace's run time: a job without a finite one would never end."""
    bad = np.flatnonzero((kind >= 0) & ~np.isfinite(duration))
    if len(bad):
        named = ", ".join(f"{setup.jobs.job_id[j]!r} ({duration[j]})" for j in bad[:3])
        raise SchedulingError(
            f"gandiva needs every job's duration in seconds; {len(bad)} job(s) have none "
            f"or an infinite one: {named}{', ...' if len(bad) > 3 else ''}"
        )


def _overhead_costs(setup: Setup) -> tuple[np.ndarray, np.ndarray]:
    """Each job's overhead on a plain and on a restart round (priced once per size)."""
    cost, total = setup.overhead.cost, setup.gpus
    sizes, which = np.unique(setup.jobs.num_gpu, return_inverse=True)
    plain = np.array([cost(int(g), total, restart=False) for g in sizes], float)
    restart = np.array([cost(int(g), total, restart=True) for g in sizes], float)
    return plain[which], restart[which]
