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
"""

from __future__ import annotations

import bisect
import math
import operator
from dataclasses import dataclass, field

from mltraces.scheduling.base import Setup
from mltraces.scheduling.events import EventQueue
from mltraces.scheduling.results import Recorder

#: job sizes that get node sets, in the reference's order
SET_SIZES = (1, 2, 4, 8, 12, 16, 24, 32, 40, 48, 56, 64, 72, 88, 128, 256)
_LOAD = operator.attrgetter("load")


@dataclass(slots=True, eq=False)
class NodeSet:
    """Nodes serving jobs of one size; the first ``concurrency`` jobs run."""

    nodes: list[int]
    capacity: int
    load: int = 0
    jobs: list[int] = field(default_factory=list)

    @property
    def concurrency(self) -> int:
        return min(len(self.jobs), self.capacity)


class Gandiva:
    """Gandiva-style time slicing on node sets (the artifact's ``gandiva``)."""

    name = "gandiva"

    def simulate(self, setup: Setup) -> Recorder:
        return _GandivaRun(setup).run()


class _GandivaRun:
    def __init__(self, setup: Setup) -> None:
        self.setup = setup
        self.jobs = setup.jobs
        self.per_node = setup.cluster.gpus_per_node
        self.rec = Recorder(self.jobs)
        n = len(self.jobs)
        self.executed = [0.0] * n
        self.duration = [j.duration for j in self.jobs]
        self.cluster_gpus = setup.gpus
        self.round_cost, self.restart_cost = self._costs(setup)
        self.overhead = [0.0] * n
        self.free_nodes = list(range(setup.cluster.nodes))
        self.sets: dict[int, list[NodeSet]] = {size: [] for size in SET_SIZES}
        self.seated = dict.fromkeys(SET_SIZES, 0)  # jobs in the node sets, per size
        self.span = {
            size: math.ceil(size / self.per_node) for size in SET_SIZES
        }  # nodes a set spans
        self.running: list[int] = []
        self.pending: list[int] = []
        # placed jobs that had to wait: the only ones whose overhead the reference
        # clears every round (for the others still waiting it is 0 already)
        self.waited_running: set[int] = set()
        self.events = EventQueue()
        for job in self.jobs:
            if job.num_gpu not in self.sets or job.num_gpu > setup.gpus:
                self.rec.reject(job.index)  # the reference exits on such a job
            else:
                self.events.add_start(job.index, job.submit_time)
        self.rounds = 0
        self.active: list[tuple[int, list[NodeSet]]] = []  # sizes with node sets (see gaps)
        self.active_stale = False  # a size got its first node set or lost its last

    def _costs(self, setup: Setup) -> tuple[list[float], list[float]]:
        """Each job's overhead on a plain and on a restart round (priced once per size)."""
        cost, total = setup.overhead.cost, setup.gpus
        sizes = {j.num_gpu for j in self.jobs}
        plain = {g: cost(g, total, restart=False) for g in sizes}
        restart = {g: cost(g, total, restart=True) for g in sizes}
        return [plain[j.num_gpu] for j in self.jobs], [restart[j.num_gpu] for j in self.jobs]

    def run(self) -> Recorder:
        """The rounds. Each round that has events after it prices every running job's
        overhead for the next round; that price is kept as the round's cost list
        (``charge``) rather than written per job, and written out only before a round
        after which no event is left (the only rounds that read per-job overhead)."""
        events, slot = self.events, self.setup.slot
        if not events:
            return self.rec
        now, step = events.first_time(), 0
        charge: list[float] | None = None
        while events or self.pending or self.running:
            event = events.at(now)
            if charge is not None and len(events) <= (event is not None):
                self._settle(charge)
                charge = None
            if not events and step:
                quiet = self.quiet_rounds(now, step)
                if quiet:
                    self.skip(quiet, step)
                    now += quiet * step
            self.rebalance()
            released = self.execute(now, step, charge)
            if charge is None:
                for j in self.waited_running:  # the reference clears these jobs' overhead
                    self.overhead[j] = 0
            if event is not None:
                for j in event.starts:
                    if self.place(j):
                        self.running.append(j)
                        self.rec.started(j, now)
                    else:
                        self.pending.append(j)
                events.remove(now)
            if released:
                self.retry_pending(now)
            if not events:
                step, now = slot, now + slot
                continue
            restart = self.setup.overhead.is_restart(self.rounds)
            self.rounds += 1
            charge = self.restart_cost if restart else self.round_cost
            events.merge_slot(now, slot)
            nxt = events.first_time()
            step, now = nxt - now, nxt
        return self.rec

    def _settle(self, charge: list[float]) -> None:
        """Write out the overhead the last round priced for every running job."""
        overhead = self.overhead
        for j in self.running:
            overhead[j] = charge[j]

    def retry_pending(self, now: float) -> None:
        """Place waiting jobs in order; like the reference, skip the one after each start."""
        pending, i = self.pending, 0
        while i < len(pending):
            j = pending[i]
            if self.place(j):
                del pending[i]
                self.running.append(j)
                self.waited_running.add(j)
                self.rec.started(j, now)
            i += 1

    def place(self, j: int) -> bool:
        """Put job ``j`` in a node set of its size; False when it has to wait."""
        if self._seat(j):
            self.seated[self.jobs[j].num_gpu] += 1
            return True
        return False

    def _seat(self, j: int) -> bool:
        size = self.jobs[j].num_gpu
        sets = self.sets[size]
        if sets:
            best = sets.pop(0)
            sets.append(best)
            if best.load + 1 < best.capacity:
                self._join(sets, best, j)
                return True
        span = math.ceil(size / self.per_node)
        if span <= len(self.free_nodes):
            nodes, self.free_nodes = self.free_nodes[:span], self.free_nodes[span:]
            new = NodeSet(nodes, int(span * self.per_node / size))
            if not sets:
                self.active_stale = True
            sets.append(new)
            self._join(sets, new, j)
            return True
        if sets:  # over capacity: time-slice in the least-loaded set
            crowded = sets.pop(0)
            sets.append(crowded)
            self._join(sets, crowded, j)
            return True
        return False

    @staticmethod
    def _join(sets: list[NodeSet], node_set: NodeSet, j: int) -> None:
        node_set.load += 1
        node_set.jobs.append(j)
        sets.sort(key=_LOAD)

    @classmethod
    def _deal(cls, sets: list[NodeSet], jobs: list[int]) -> None:
        """Each job joins the first set, then the sets are re-sorted by load, job by job.

        After the first job's full (stable) sort only the first set has moved
        up: it goes before the first later set whose load is at least its own,
        which is what the stable sort does, found by bisection.
        """
        if not jobs:
            return
        cls._join(sets, sets[0], jobs[0])
        for j in jobs[1:]:
            best = sets[0]
            best.load += 1
            best.jobs.append(j)
            k = bisect.bisect_left(sets, best.load, 1, key=_LOAD)
            if k > 1:
                del sets[0]
                sets.insert(k - 1, best)

    def execute(self, now: float, step: float, charge: list[float] | None) -> bool:
        """Credit the jobs that ran in the last ``step`` seconds; end the finished ones.

        A job loses its overhead: ``charge[j]`` when the last round priced it, else
        ``self.overhead[j]``, which is then cleared.
        """
        rotate = int(now % 60) == 0
        executed, overhead, duration = self.executed, self.overhead, self.duration
        lost_of = overhead if charge is None else charge
        charged = self.rec.gpu_seconds
        released = False
        busy = 0
        for size, sets in self.active:
            held = size * step
            emptied = None
            for node_set in sets:
                jobs = node_set.jobs
                slots = node_set.capacity
                if slots >= len(jobs):
                    slots = len(jobs)
                    turn = jobs
                else:
                    turn = jobs[:slots]
                ended = None
                for j in turn:
                    lost = lost_of[j]
                    if step > lost:
                        executed[j] += step - lost
                    charged[j] += held
                    if executed[j] >= duration[j]:
                        ended = [j] if ended is None else [*ended, j]
                        self.rec.finished(j, now - (executed[j] - duration[j]), now)
                if charge is None:
                    for j in turn:
                        overhead[j] = 0
                busy += size * slots
                if rotate and len(jobs) > slots:
                    jobs[:] = jobs[slots:] + jobs[:slots]
                if ended:
                    self._end(size, jobs, ended)
                if not jobs:  # also a set that never got a job back from a re-deal
                    self.free_nodes.extend(node_set.nodes)
                    emptied = [node_set] if emptied is None else [*emptied, node_set]
            if emptied:
                for node_set in emptied:
                    sets.remove(node_set)
                released = True
                if not sets:
                    self.active_stale = True
        if step:
            self.rec.mark(now - step, busy)
        return released

    def _end(self, size: int, jobs: list[int], ended: list[int]) -> None:
        """Take finished jobs off their node set (``jobs``) and the running list."""
        self.seated[size] -= len(ended)
        for j in ended:
            self.running.remove(j)
            self.waited_running.discard(j)
            jobs.remove(j)

    def gaps(self) -> list[tuple[int, int]]:
        """(size, GPUs wanted − GPUs held) per size with demand, towards its demand share.

        A size's jobs are counted as they are seated and end (re-deals move them
        between sets of one size), and all its sets span the same nodes. Also
        keeps the sizes that have node sets (``self.active``, listed again only
        when a size gets its first set or loses its last): rebalancing keeps at
        least one set per such size and opens none for others, so the round's
        :meth:`execute` can visit just those.
        """
        if self.active_stale:
            self.active = [(size, sets) for size, sets in self.sets.items() if sets]
            self.active_stale = False
        active, seated = self.active, self.seated
        total = 0
        for size, _ in active:
            total += seated[size] * size
        out = []
        gpus, per_node, span = self.cluster_gpus, self.per_node, self.span
        for size, sets in active:
            wanted = seated[size] * size
            if wanted:
                target = min(math.floor(wanted / total * gpus), wanted)
                out.append((size, target - len(sets) * span[size] * per_node))
        return out

    def rebalance(self) -> None:
        """Grow or shrink each size's node sets towards its share of the GPU demand."""
        sets_of = self.sets
        for size, gap in self.gaps():
            if gap > 0:
                self._expand(size, sets_of[size], math.ceil(gap / size))
            elif gap < 0 and len(sets_of[size]) > 1:  # a size keeps its last set
                self._shrink(sets_of[size], math.ceil(-gap / size))

    def quiet_rounds(self, now: float, step: float) -> int:
        """How many coming rounds change nothing but progress (no arrivals left).

        True when no node set would be resized or re-dealt, no time slice
        rotates, and the running jobs paid their overhead: then the same jobs
        gain ``step`` seconds a round until the first of them completes.
        """
        if self.events or any(
            gap > 0 or (gap < 0 and len(self.sets[size]) > 1) for size, gap in self.gaps()
        ):
            return 0
        rotate = int(now % 60) == 0
        rounds = math.inf
        for sets in self.sets.values():
            for node_set in sets:
                slots = node_set.concurrency
                if rotate and len(node_set.jobs) > slots:
                    return 0
                for j in node_set.jobs[:slots]:
                    if self.overhead[j]:
                        return 0
                    rounds = min(
                        rounds, math.ceil((self.jobs[j].duration - self.executed[j]) / step)
                    )
        return 0 if rounds == math.inf else max(int(rounds) - 1, 0)

    def skip(self, rounds: int, step: float) -> None:
        """Credit ``rounds`` quiet rounds at once (see :meth:`quiet_rounds`)."""
        gained = rounds * step
        for size, sets in self.sets.items():
            for node_set in sets:
                for j in node_set.jobs[: node_set.concurrency]:
                    self.executed[j] += gained
                    self.rec.charge(j, size * gained)

    def _expand(self, size: int, sets: list[NodeSet], count: int) -> None:
        span = math.ceil(size / self.per_node)
        # the reference re-deals the jobs unless the last set it tried to open
        # was a single-node one (its loop counter is reused by an inner loop)
        redeal = count > 0
        for _ in range(count):
            if span <= len(self.free_nodes):
                nodes, self.free_nodes = self.free_nodes[:span], self.free_nodes[span:]
                sets.append(NodeSet(nodes, int(span * self.per_node / size)))
                redeal = span > 1
            else:
                redeal = True
        if redeal:
            jobs = []
            for node_set in sets:
                if node_set.jobs:
                    jobs.extend(node_set.jobs)
                    node_set.jobs = []
                    node_set.load = 0
            self._deal(sets, jobs)

    def _shrink(self, sets: list[NodeSet], count: int) -> None:
        count = min(count, len(sets) - 1)
        if count <= 0:
            return
        jobs = []
        for _ in range(count):
            node_set = sets.pop(0)
            jobs.extend(node_set.jobs)
            self.free_nodes.extend(node_set.nodes)
        self._deal(sets, jobs)
