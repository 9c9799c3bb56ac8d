"""EDF + elastic scaling: ElasticFlow without admission control (the artifact's ``ef``, Fig. 9).

Every arrival is accepted. Each round, every runnable job is planned with
ElasticFlow's planner (deadline order, backwards from each deadline, see
:mod:`.efcore`) and the free GPUs are handed out by marginal return, as in
:mod:`.elasticflow`; jobs pay the same per-round overheads.

Mirrors the artifact's round (``ef_sim_jobs``), which differs from its
ElasticFlow round in more than the admission test:

* a job meets its deadline when its planned end (slot-aligned, plus the
  overheads charged since) is no later than the deadline, not its unaligned
  end; that end is the finish time recorded here;
* a waiting job planned to start later wakes a round at that time, and
  every running job wakes one at its next planned change of GPUs (ElasticFlow
  wakes only the earliest, and only before the next event); a wake-up left
  without jobs vanishes when a job's planned end moves away from it;
* jobs are laid on nodes in the order they started (jobs of a node or more
  first, then smaller ones by size), not largest first.

The round runs compiled (:class:`.efrounds.NoAdmit`, beside ElasticFlow's
round, with its event list and placement), the planner and the scale-up are
ElasticFlow's (:mod:`.efcore`); this module builds their inputs and turns the
result into a :class:`Recorder`. Compiled because the round, interpreted,
cost twice what its planning did: every scaling step moves a job's end event.
Where the artifact would stop on an error (a job its end event finds without
GPUs: ``release_job_res`` of a job never placed), the job just ends there.
"""

from __future__ import annotations

import numpy as np

from mltraces.scheduling.base import Setup
from mltraces.scheduling.errors import SchedulingError
from mltraces.scheduling.events import arrival_groups
from mltraces.scheduling.policies.elasticflow import cluster_of, model_tables
from mltraces.scheduling.results import Recorder


class EDFElastic:
    """ElasticFlow's elastic scaling without its admission control (the artifact's ``ef``)."""

    name = "edf-elastic"

    def simulate(self, setup: Setup) -> Recorder:
        return _replay(setup)


def _replay(setup: Setup) -> Recorder:
    """Run :class:`.efrounds.NoAdmit` on the setup's arrays and fill a :class:`Recorder`."""
    from mltraces.scheduling.cores import efcore, efrounds  # loaded only when needed

    jobs, total = setup.jobs, setup.gpus
    n = len(jobs)
    tables, _ = model_tables(setup)
    rec = setup.recorder()
    etimes, eptr, ejobs = arrival_groups(np.array([j.submit_time for j in jobs], float),
                                         np.arange(n))
    start, finish = np.full(n, np.nan), np.full(n, np.nan)
    met, gpu_seconds = np.zeros(n, np.bool_), np.zeros(n)
    replayed = efrounds.Jobs(etimes, eptr, ejobs, np.array([float(j.iterations) for j in jobs]),
                             np.array([j.deadline for j in jobs], np.float64), tables.model,
                             np.zeros(n, np.bool_))
    record = efrounds.Record(start, finish, gpu_seconds, met, np.ones(n, np.bool_),
                             np.full(n, np.nan))
    run = efrounds.NoAdmit(replayed, cluster_of(setup), efcore.Tables(*tables.arrays()), record)
    failed = run.run()
    if failed >= 0:
        raise SchedulingError(f"no room on the nodes for job {jobs[failed].job_id!r} "
                              f"on {run.gpus_of(failed)} GPUs (the artifact asserts here)")
    times, allocated, rounds = run.results()
    rec.start, rec.finish = start.tolist(), finish.tolist()
    rec.met, rec.gpu_seconds = met.tolist(), gpu_seconds.tolist()
    rec.times, rec.allocated = times.tolist(), allocated.tolist()
    rec.rounds, rec.efficiency = rounds[0].tolist(), (rounds[1] / total).tolist()
    return rec
