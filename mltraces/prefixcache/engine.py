"""The replay: every policy at every capacity on every instance's share of a trace.

:func:`replay` checks its arguments (one line naming the bad one), splits the
trace over the instances (:mod:`.routing`), runs the compiled loops of
:mod:`.cachecore` once per (instance, policy, capacity) — LRU once per instance
for all capacities, from stack distances — and adds the instances up.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from mltraces.prefixcache import native
from mltraces.prefixcache.results import CacheStats, PrefixCacheResult
from mltraces.prefixcache.routing import AFFINITY_BLOCKS, ROUTINGS, Part, assign, split
from mltraces.prefixcache.trace import MAX_REQUEST_BLOCKS, RequestBlocks

POLICIES = ("lru", "lfu", "fifo", "belady")
#: most capacities one replay may ask for
MAX_CAPACITIES = 1024
#: most rows (instances × policies × capacities) one result may have
MAX_RESULT_ROWS = 1_000_000
#: largest capacity accepted (blocks per instance)
MAX_CAPACITY = 1 << 62


@dataclass(frozen=True)
class Plan:
    """What to replay: policies (in the caller's order), distinct capacities ascending,
    and how requests are spread over instances."""

    policies: tuple[str, ...]
    capacities: tuple[int, ...]
    instances: int = 1
    routing: str = "round-robin"
    affinity_blocks: int = AFFINITY_BLOCKS

    @classmethod
    def checked(cls, capacities: Any, policies: Any = "all", *, instances: Any = 1,
                routing: Any = "round-robin",
                affinity_blocks: Any = AFFINITY_BLOCKS) -> Plan:
        """A plan from user values, each checked (one line naming the bad argument)."""
        plan = cls(_policies(policies), _capacities(capacities),
                   _count(instances, "instances"), _routing(routing),
                   _count(affinity_blocks, "affinity_blocks"))
        rows = plan.instances * len(plan.policies) * len(plan.capacities)
        if rows > MAX_RESULT_ROWS:
            raise ValueError(f"instances: {plan.instances} instances × {len(plan.policies)} "
                             f"policies × {len(plan.capacities)} capacities is {rows} "
                             f"results, more than {MAX_RESULT_ROWS}")
        return plan


def replay(blocks: Any, offsets: Any, input_tokens: Any, block_size: int, capacities: Any,
           policies: Any = "all", *, instances: int = 1, routing: str = "round-robin",
           affinity_blocks: int = AFFINITY_BLOCKS,
           max_request_blocks: int = MAX_REQUEST_BLOCKS) -> PrefixCacheResult:
    """Replay a trace given as flat arrays (see :mod:`mltraces.prefixcache`)."""
    plan = Plan.checked(capacities, policies, instances=instances, routing=routing,
                        affinity_blocks=affinity_blocks)
    trace = RequestBlocks.from_arrays(blocks, offsets, input_tokens, block_size,
                                      max_request_blocks=max_request_blocks)
    return replay_trace(trace, plan)


def replay_trace(trace: RequestBlocks, plan: Plan) -> PrefixCacheResult:
    """Replay a checked trace under a checked plan."""
    instance = assign(trace, plan.instances, plan.routing, plan.affinity_blocks)
    parts = split(trace, instance, plan.instances)
    caps = np.asarray(plan.capacities, dtype=np.int64)
    counts = np.zeros((plan.instances, len(plan.policies), len(caps), 3), dtype=np.int64)
    for k, part in enumerate(parts):
        for p, policy in enumerate(plan.policies):
            counts[k, p] = part_counts(part, policy, caps, trace.block_size)
    sizes = [_size(part) for part in parts]
    per_instance = tuple(
        CacheStats(policy, cap, k, *sizes[k][:2], *_ints(counts[k, p, c]), sizes[k][2])
        for p, policy in enumerate(plan.policies) for c, cap in enumerate(plan.capacities)
        for k in range(plan.instances))
    whole = [sum(size[i] for size in sizes) for i in range(3)]
    totals = tuple(
        CacheStats(policy, cap, None, *whole[:2], *_ints(counts[:, p, c].sum(axis=0)),
                   whole[2])
        for p, policy in enumerate(plan.policies) for c, cap in enumerate(plan.capacities))
    return PrefixCacheResult(totals, per_instance, trace.block_size, plan.instances,
                             plan.routing)


def part_counts(part: Part, policy: str, caps: np.ndarray, block_size: int,
                one_pass: bool | None = None) -> np.ndarray:
    """(block hits, prefix-hit blocks, reused tokens) per capacity of ascending ``caps``
    for one instance; LRU from stack distances when ``one_pass`` (default: with more than
    one capacity), else each capacity replayed directly."""
    core = native.core()
    if policy == "lru" and (len(caps) > 1 if one_pass is None else one_pass):
        distances = np.empty(len(part.blocks), dtype=np.int64)
        core.stack_distances(part.blocks, part.distinct, distances)
        out = np.zeros((len(caps), 3), dtype=np.int64)
        core.tally_stack(distances, part.offsets, part.input_tokens, block_size, caps, out)
        return out
    hit = np.empty(len(part.blocks), dtype=np.uint8)
    nexts = None
    if policy == "belady":
        nexts = np.empty(len(part.blocks), dtype=np.int64)
        core.next_uses(part.blocks, part.distinct, nexts)
    out = np.zeros((len(caps), 3), dtype=np.int64)
    done: dict[int, int] = {}  # a capacity past the distinct blocks never evicts: run it once
    for c, cap in enumerate(np.minimum(caps, part.distinct).tolist()):
        if cap in done:
            out[c] = out[done[cap]]
            continue
        if nexts is not None:
            core.belady(part.blocks, part.distinct, cap, nexts, hit)
        else:
            getattr(core, policy)(part.blocks, part.distinct, cap, hit)
        core.tally(hit, part.offsets, part.input_tokens, block_size, out[c])
        done[cap] = c
    return out


def _size(part: Part) -> tuple[int, int, int]:
    """Requests, blocks and input tokens of an instance's share."""
    return part.requests, len(part.blocks), int(part.input_tokens.sum())


def _ints(counts: np.ndarray) -> list[int]:
    return [int(x) for x in counts]


def _policies(value: Any) -> tuple[str, ...]:
    names = value.split(",") if isinstance(value, str) else value
    if not isinstance(names, Iterable):
        raise ValueError(f"policies: expected names among {', '.join(POLICIES)} or 'all', "
                         f"got {value!r}")
    chosen: list[str] = []
    for name in names:
        name = str(name).strip().lower()
        if name == "all":
            chosen.extend(POLICIES)
        elif name in POLICIES:
            chosen.append(name)
        else:
            raise ValueError(f"policies: unknown policy {name!r} (choose from "
                             f"{', '.join(POLICIES)} or 'all')")
    if not chosen:
        raise ValueError("policies: no policy given")
    return tuple(dict.fromkeys(chosen))


def _capacities(value: Any) -> tuple[int, ...]:
    values = [value] if isinstance(value, (int, np.integer)) else value
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise ValueError(f"capacities: expected block counts, got {value!r}")
    values = list(values)
    if not values:
        raise ValueError("capacities: no capacity given")
    if len(values) > MAX_CAPACITIES:
        raise ValueError(f"capacities: {len(values)} values, more than {MAX_CAPACITIES}")
    for i, cap in enumerate(values):
        if isinstance(cap, (bool, np.bool_)) or not isinstance(cap, (int, np.integer)):
            raise ValueError(f"capacities[{i}]: expected a number of blocks, got {cap!r}")
        if not 0 <= cap <= MAX_CAPACITY:
            raise ValueError(f"capacities[{i}]: {cap} blocks is outside 0 … 2**62")
    return tuple(sorted({int(cap) for cap in values}))


def _count(value: Any, name: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) \
            or value < 1:
        raise ValueError(f"{name}: expected a positive integer, got {value!r}")
    return int(value)


def _routing(value: Any) -> str:
    if value not in ROUTINGS:
        raise ValueError(f"routing: expected one of {', '.join(ROUTINGS)}, got {value!r}")
    return str(value)
