"""The cluster: switches × nodes × GPUs, read from the artifact's cluster-spec CSVs.

A spec file is one header line and one row,
``num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node``;
its name (``n32g8``) says nodes and GPUs per node. In simulation only the GPU
count and the GPUs per node matter: speed does not depend on placement, and
placement shows only through the restart overhead (:mod:`.overhead`).
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path

from mltraces.config import max_gpus
from mltraces.scheduling.errors import SchedulingError

_NAME = re.compile(r"^n(\d+)g(\d+)$")
_FIELDS = ("num_switch", "num_node_p_switch", "num_gpu_p_node", "num_cpu_p_node", "mem_p_node")


@dataclass(frozen=True)
class ClusterSpec:
    """A homogeneous GPU cluster."""

    nodes_per_switch: int
    gpus_per_node: int = 8
    switches: int = 1
    cpus_per_node: int = 64
    mem_per_node: int = 256
    name: str = ""

    def __post_init__(self) -> None:
        bad = [
            f"{f}={getattr(self, f)}"
            for f in ("nodes_per_switch", "gpus_per_node", "switches")
            if int(getattr(self, f)) < 1
        ]
        if bad:
            raise SchedulingError(f"cluster spec needs positive counts, got {', '.join(bad)}")
        if not self.name:
            object.__setattr__(self, "name", f"n{self.nodes}g{self.gpus_per_node}")
        limit = max_gpus()
        if self.gpus > limit:  # before anything is sized by it
            raise SchedulingError(
                f"cluster {self.name} has {self.gpus:,} GPUs; a replay may use at most "
                f"{limit:,} (set MLTRACES_MAX_GPUS to allow more)"
            )

    @property
    def nodes(self) -> int:
        return self.nodes_per_switch * self.switches

    @property
    def gpus(self) -> int:
        return self.nodes * self.gpus_per_node

    @staticmethod
    def is_name(name: str) -> bool:
        """Whether ``name`` reads as ``n<nodes>g<gpus per node>``."""
        return bool(_NAME.match(name.strip()))

    @classmethod
    def from_name(cls, name: str) -> ClusterSpec:
        """``"n32g8"`` → 32 nodes of 8 GPUs on one switch (the artifact's naming)."""
        match = _NAME.match(name.strip())
        if not match:
            raise SchedulingError(
                f"cluster name {name!r} is not of the form n<nodes>g<gpus per node>, e.g. n32g8"
            )
        return cls(nodes_per_switch=int(match[1]), gpus_per_node=int(match[2]), name=name)

    @classmethod
    def from_csv(cls, path: str | Path) -> ClusterSpec:
        """Read an artifact ``cluster_specs/*.csv`` file."""
        path = Path(path)
        with path.open(newline="") as handle:
            rows = list(csv.DictReader(handle))
        missing = [f for f in _FIELDS if not rows or f not in rows[0]]
        if len(rows) != 1 or missing:
            raise SchedulingError(
                f"{path}: expected a header {','.join(_FIELDS)} and exactly one row; "
                f"got {len(rows)} rows, missing {missing or 'nothing'}"
            )
        row = rows[0]
        return cls(
            nodes_per_switch=int(row["num_node_p_switch"]),
            gpus_per_node=int(row["num_gpu_p_node"]),
            switches=int(row["num_switch"]),
            cpus_per_node=int(row["num_cpu_p_node"]),
            mem_per_node=int(row["mem_p_node"]),
            name=path.stem,
        )


def as_cluster(cluster: ClusterSpec | str | Path) -> ClusterSpec:
    """Accept a spec, a name like ``"n32g8"``, or a path to a spec CSV."""
    if isinstance(cluster, ClusterSpec):
        return cluster
    if isinstance(cluster, Path) or str(cluster).endswith(".csv"):
        return ClusterSpec.from_csv(cluster)
    return ClusterSpec.from_name(str(cluster))
