"""Per-round restart overhead: the seconds a job loses when it is (re)launched.

The reference charges, per scheduling round and running job, a base cost plus,
when the job's exact GPU set is new (not seen since the last periodic restart),
the time to rebuild its communicator, 2·(log2 n + 1) s, and on restart rounds a
relaunch cost. Large clusters (≥ 256 GPUs) pay more. Which policy pays when is
the policy's business; this module only prices one round.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Overhead:
    """Overhead constants (seconds); ``Overhead.none()`` turns them all off."""

    base: float = 2.0
    base_large: float = 7.0
    restart: float = 27.0
    restart_large_extra: float = 20.0
    per_level: float = 2.0
    large_cluster_gpus: int = 256
    #: a periodic restart happens every this many scheduling rounds; None: as many rounds
    #: as the slot has seconds (the artifact compares its round count with its
    #: ``--scheduling_slot``, so 60 rounds at 60 s slots, 240 at 240 s)
    restart_every: int | None = None

    @classmethod
    def none(cls) -> Overhead:
        return cls(0.0, 0.0, 0.0, 0.0, 0.0)

    def cost(
        self, gpus: int, cluster_gpus: int, *, restart: bool = False, cached: bool = False
    ) -> float:
        """Seconds lost this round by a job on ``gpus`` GPUs."""
        large = cluster_gpus >= self.large_cluster_gpus
        seconds = self.base_large if large else self.base
        if cached:
            return seconds
        if restart:
            seconds += self.restart + (self.restart_large_extra if large else 0.0)
        return seconds + (math.log2(gpus) + 1) * self.per_level

    def period(self, slot: float) -> int:
        """Scheduling rounds between periodic restarts with ``slot``-second slots."""
        return int(slot) if self.restart_every is None else self.restart_every

    def is_restart(self, round_index: int, slot: float = 60) -> bool:
        """Whether round ``round_index`` (0-based) is a periodic restart round."""
        every = self.period(slot)
        return every > 0 and round_index > 0 and round_index % every == 0
