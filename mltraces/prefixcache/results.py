"""What a replay reports: counts per (policy, capacity, instance), typed and as a tidy table."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Any


def _ratio(part: int, whole: int) -> float:
    return part / whole if whole else math.nan


@dataclass(frozen=True)
class CacheStats:
    """One cache (or all instances' caches together, ``instance`` None) under one policy
    and capacity (blocks per instance): requests and blocks replayed, blocks found
    cached when accessed (``block_hits``), blocks in requests' prefix hits
    (``prefix_hit_blocks``), the tokens those prefixes spare (``reused_tokens``, at most
    each request's input) and the input tokens."""

    policy: str
    capacity: int
    instance: int | None
    requests: int
    blocks: int
    block_hits: int
    prefix_hit_blocks: int
    reused_tokens: int
    input_tokens: int

    @property
    def block_hit_ratio(self) -> float:
        """Block hits over blocks (NaN without blocks)."""
        return _ratio(self.block_hits, self.blocks)

    @property
    def prefix_hit_ratio(self) -> float:
        """Prefix-hit blocks over blocks (NaN without blocks)."""
        return _ratio(self.prefix_hit_blocks, self.blocks)

    @property
    def token_hit_ratio(self) -> float:
        """Reused tokens over input tokens (NaN without input tokens)."""
        return _ratio(self.reused_tokens, self.input_tokens)

    def row(self) -> dict[str, Any]:
        """The stats as one row of the tidy table."""
        return {**asdict(self), "block_hit_ratio": self.block_hit_ratio,
                "prefix_hit_ratio": self.prefix_hit_ratio,
                "token_hit_ratio": self.token_hit_ratio}


#: the tidy table's columns, in order: the counts, then the three ratios
COLUMNS = (*(field.name for field in fields(CacheStats)), "block_hit_ratio",
           "prefix_hit_ratio", "token_hit_ratio")


@dataclass(frozen=True)
class PrefixCacheResult:
    """Every (policy, capacity) of one replay: ``totals`` (all instances together, in the
    order of ``policies`` then ascending capacities) and ``per_instance`` (the same per
    instance, instances ascending within each), with how requests were spread."""

    totals: tuple[CacheStats, ...]
    per_instance: tuple[CacheStats, ...]
    block_size: int
    instances: int
    routing: str

    def get(self, policy: str, capacity: int, instance: int | None = None) -> CacheStats:
        """The stats of one policy and capacity (all instances, or one)."""
        rows = self.totals if instance is None else self.per_instance
        for stats in rows:
            if (stats.policy, stats.capacity, stats.instance) == (policy, capacity, instance):
                return stats
        raise KeyError(f"no result for policy {policy!r}, capacity {capacity}, "
                       f"instance {instance}")

    def frame(self, per_instance: bool = False) -> Any:
        """A tidy pandas DataFrame, one row per stats (:data:`COLUMNS`); the totals only
        unless ``per_instance`` (then the instances' rows follow, ``instance`` an
        integer, and the totals have ``instance`` <NA>)."""
        import pandas as pd

        rows = [*self.totals, *(self.per_instance if per_instance else ())]
        frame = pd.DataFrame([stats.row() for stats in rows], columns=list(COLUMNS))
        frame["instance"] = frame["instance"].astype("Int64")
        return frame

