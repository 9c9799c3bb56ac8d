"""Where jobs sit on the nodes, for the one thing placement changes in simulation: overhead.

A job whose exact GPU set has been used since the last periodic restart
restarts from a cached communicator and pays only the base overhead; a new
GPU set pays the full cost. So the simulator needs the GPU ranks each job
gets. :class:`NodeSets` reproduces the artifact's "elastic" placement: nodes
are grouped into sets filed by the largest job size that still fits their free
GPUs; a job goes to a set of its size, else fills a set of a larger size,
else opens a set on the lowest-numbered free nodes.

The interpreted twin of the compiled placement in :mod:`.efrounds`, for the
interpreted policies that pay overheads (:mod:`.edfadmit`); like them, it is
built afresh every round.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass, field

#: the reference's size classes, in its order
SIZES = (1, 2, 4, 8, 12, 16, 24, 32, 40, 48, 56, 64, 72, 88, 128, 256)
_DESCENDING = tuple(sorted(SIZES, reverse=True))
_USED = operator.attrgetter("used")


@dataclass(eq=False)
class NodeGroup:
    """Nodes hosting jobs; ``used`` GPUs of ``capacity`` are taken."""

    nodes: list[int]
    capacity: int
    size: int
    used: int = 0
    jobs: list[int] = field(default_factory=list)


def _filing(free: int) -> int:
    """The size class a group with ``free`` free GPUs is filed under (0: full)."""
    for size in _DESCENDING:
        if size <= free and free % size == 0:
            return size
    return 0


class NodeSets:
    """The artifact's elastic placement, with the GPU ranks it implies."""

    def __init__(self, nodes: int, gpus_per_node: int) -> None:
        self.per_node = gpus_per_node
        self.free_nodes = list(range(nodes))
        self.groups: dict[int, list[NodeGroup]] = {size: [] for size in SIZES}
        self.group_of: dict[int, NodeGroup] = {}

    def _share(self, line: list[NodeGroup], job: int, gpus: int, home: list[NodeGroup]) -> bool:
        """Try the first group of ``line`` for ``job``; a full one goes to the line's end
        (the reference rotates its group lists this way)."""
        group = line.pop(0)
        if group.used + gpus <= group.capacity:
            self._add(group, job, gpus, home)
            return True
        line.append(group)
        return False

    def place(self, job: int, gpus: int) -> bool:
        """Place ``job`` on ``gpus`` GPUs; False when no nodes are left for it."""
        home = self.groups[gpus]
        if home and self._share(home, job, gpus, home):
            return True
        for size in _DESCENDING:
            if size <= gpus:
                break
            others = self.groups[size]
            if others and self._share(others, job, gpus, home):
                return True
        span = math.ceil(gpus / self.per_node)
        if span > len(self.free_nodes):
            return False
        nodes, self.free_nodes = self.free_nodes[:span], self.free_nodes[span:]
        group = NodeGroup(nodes, span * self.per_node, gpus, gpus, [job])
        self.group_of[job] = group
        size = _filing(group.capacity - gpus)
        target = self.groups[size] if size else home
        target.append(group)
        target.sort(key=_USED)
        if size:
            home.sort(key=_USED)
        return True

    def _add(self, group: NodeGroup, job: int, gpus: int, home: list[NodeGroup]) -> None:
        group.used += gpus
        group.jobs.append(job)
        self.group_of[job] = group
        size = _filing(len(group.nodes) * self.per_node - group.used)
        if size:
            group.size = size
            self.groups[size].append(group)
            home.sort(key=_USED)
            self.groups[size].sort(key=_USED)
        else:
            home.append(group)
            home.sort(key=_USED)

    def first_rank(self, job: int, gpus_of) -> int:
        """The job's first global GPU rank: its group's lowest node, after the jobs before it."""
        group = self.group_of[job]
        rank = min(group.nodes) * self.per_node
        for other in group.jobs:
            if other == job:
                return rank
            rank += gpus_of[other]
        raise KeyError(job)
