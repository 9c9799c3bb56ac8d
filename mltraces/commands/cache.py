"""`mltraces cache`: replay a request trace's prefix blocks through a KV cache.

``mltraces cache --trace mooncake/conversation --capacity 1000,8000,64000 --policy all``
reads the trace's prefix blocks from the catalog (:mod:`mltraces.workloads.requests`,
fetched when missing), replays them under each policy at each capacity
(:mod:`mltraces.prefixcache`: LRU, LFU, FIFO and Belady's optimal) and prints, per
(policy, capacity), the requests, blocks, block hits, prefix-hit blocks, reused tokens and
the three ratios. Capacities are **blocks per instance** of the trace's own block size
(``--capacity``), or **tokens** per instance (``--capacity-tokens``, each turned into the
whole blocks that fit: ``tokens // block_size``); both take ``k``/``M``/``G`` suffixes
(powers of 1000). ``--instances K`` spreads the requests over K caches of that capacity,
``--routing round-robin`` or ``affinity`` (requests sharing their first
``--affinity-blocks`` ids go to one instance); ``--per-instance`` adds each instance's
rows. ``--format table|csv|json`` and ``-o FILE`` (written whole or not at all). The
command imports neither pandas nor matplotlib.
"""

from __future__ import annotations

import argparse
import re
import time
from typing import Any

from mltraces.commands.common import add_table_options, open_catalog

POLICY_CHOICES = ("lru", "lfu", "fifo", "belady", "all")
ROUTING_CHOICES = ("round-robin", "affinity")
FORMATS = ("table", "csv", "json")
_SUFFIX = {"": 1, "k": 1000, "m": 1000**2, "g": 1000**3}
_NUMBER = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmMgG]?)\s*$")
#: the columns printed, in order (``capacity`` in blocks, ``capacity_tokens`` the same in tokens)
COLUMNS = ("policy", "capacity", "capacity_tokens", "instance", "requests", "blocks",
           "block_hits", "prefix_hit_blocks", "reused_tokens", "input_tokens",
           "block_hit_ratio", "prefix_hit_ratio", "token_hit_ratio")
#: the aligned table's view: (column, heading, scale)
TABLE_VIEW = (("policy", "policy", None), ("capacity", "blocks", None),
              ("capacity_tokens", "tokens", None), ("instance", "instance", None),
              ("block_hit_ratio", "block hit %", 100.0),
              ("prefix_hit_ratio", "prefix hit %", 100.0),
              ("token_hit_ratio", "token hit %", 100.0),
              ("reused_tokens", "reused tokens", None))


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--trace", help="a request trace with prefix blocks: SOURCE/NAME of "
                        "mltraces.requests (--list-traces names them)")
    parser.add_argument("--capacity", metavar="BLOCKS",
                        help="cache capacities in blocks per instance, comma-separated "
                        "(1000,8000,64k)")
    parser.add_argument("--capacity-tokens", metavar="TOKENS",
                        help="cache capacities in tokens per instance, comma-separated (3M,50M); "
                        "each holds tokens // block_size whole blocks")
    parser.add_argument("--policy", default="all", metavar="POLICY",
                        help=f"comma-separated among {', '.join(POLICY_CHOICES)} (default all)")
    parser.add_argument("--instances", type=int, default=1, metavar="K",
                        help="caches the requests are spread over (default 1)")
    parser.add_argument("--routing", choices=ROUTING_CHOICES, default="round-robin",
                        help="how requests are spread over the instances (default round-robin)")
    parser.add_argument("--affinity-blocks", type=int, default=2, metavar="N",
                        help="affinity routing: the leading block ids that pick the instance "
                        "(default 2)")
    parser.add_argument("--per-instance", action="store_true",
                        help="also print each instance's rows")
    parser.add_argument("--format", choices=FORMATS, default="table")
    parser.add_argument("--output", "-o", help="write here instead of standard output")
    parser.add_argument("--list-traces", action="store_true",
                        help="list the traces with prefix blocks and exit")
    add_table_options(parser)


def parse_amounts(text: str, flag: str) -> list[int]:
    """``"1000,8k,2.5M"`` -> [1000, 8000, 2500000]; one line naming the bad item."""
    from mltraces.errors import MltracesError

    values = []
    for item in text.split(","):
        match = _NUMBER.match(item)
        if not match:
            raise MltracesError(f"{flag}: {item.strip()!r} is not a whole number (with an "
                                "optional k, M or G suffix)")
        number = float(match[1]) * _SUFFIX[match[2].lower()]
        if number != int(number) or number > 2**62:
            raise MltracesError(f"{flag}: {item.strip()!r} is not a whole number of at most "
                                "2**62")
        values.append(int(number))
    return values


def _capacities(args: argparse.Namespace, block_size: int) -> list[int]:
    from mltraces.errors import MltracesError
    from mltraces.workloads.requests import blocks_for_tokens

    if not args.capacity and not args.capacity_tokens:
        raise MltracesError("mltraces cache needs --capacity BLOCKS or --capacity-tokens "
                            "TOKENS (comma-separated)")
    blocks = parse_amounts(args.capacity, "--capacity") if args.capacity else []
    if args.capacity_tokens:
        blocks += [blocks_for_tokens(t, block_size)
                   for t in parse_amounts(args.capacity_tokens, "--capacity-tokens")]
    return blocks


def run(args: argparse.Namespace) -> int:
    from mltraces.commands.output import checked_output, write_text
    from mltraces.errors import MltracesError
    from mltraces.workloads import requests

    if args.list_traces:
        print("\n".join(requests.block_traces()))
        return 0
    if not args.trace:
        raise MltracesError("mltraces cache needs --trace SOURCE/NAME (--list-traces names "
                            "the traces with prefix blocks)")
    entry = requests.request_trace(args.trace)
    plan = _plan(args, _capacities(args, entry.block_size))
    output = checked_output(args.output)  # before any work
    started = time.perf_counter()
    con = open_catalog(args, [entry.table], strict=True)
    try:
        trace = requests.read_blocks(con, entry.trace)
    finally:
        con.close()
    result = requests.replay_blocks(trace, plan)
    seconds = time.perf_counter() - started
    write_text(render(result, trace, args, seconds), output, quiet=args.quiet)
    return 0


def _plan(args: argparse.Namespace, capacities: list[int]) -> Any:
    from mltraces.errors import MltracesError
    from mltraces.prefixcache import Plan

    try:
        return Plan.checked(capacities, args.policy, instances=args.instances,
                            routing=args.routing, affinity_blocks=args.affinity_blocks)
    except ValueError as error:
        raise MltracesError(f"mltraces cache: {error}") from None


def rows_of(result: Any, per_instance: bool) -> list[tuple]:
    """One tuple per (policy, capacity[, instance]) in :data:`COLUMNS`' order."""
    stats = [*result.totals, *(result.per_instance if per_instance else ())]
    rows = []
    for s in stats:
        row = s.row()
        row["capacity_tokens"] = s.capacity * result.block_size
        rows.append(tuple(row[c] for c in COLUMNS))
    return rows


def render(result: Any, trace: Any, args: argparse.Namespace, seconds: float) -> str:
    """The result as the chosen format (JSON: the rows and what they were replayed on)."""
    import json
    import math

    from mltraces.commands.output import render_rows, view_table

    def plain(value: Any) -> Any:  # JSON has no NaN: a ratio without a denominator is null
        return None if isinstance(value, float) and not math.isfinite(value) else value

    rows = rows_of(result, args.per_instance)
    if args.format == "json":
        about = {"trace": trace.trace, "table": trace.table, "block_size": result.block_size,
                 "requests": trace.blocks.requests, "blocks": len(trace.blocks.blocks),
                 "distinct_blocks": trace.blocks.distinct, "instances": result.instances,
                 "routing": result.routing,
                 "rows": [dict(zip(COLUMNS, map(plain, row), strict=True))
                          for row in rows]}
        return json.dumps(about, indent=1) + "\n"
    if args.format == "csv":
        return render_rows(COLUMNS, rows, "csv")
    head = (f"{trace.trace}: {trace.blocks.requests:,} requests, {len(trace.blocks.blocks):,} "
            f"blocks of {result.block_size} tokens ({trace.blocks.distinct:,} distinct), "
            f"{result.instances} instance{'s' * (result.instances > 1)}"
            + (f" ({result.routing})" if result.instances > 1 else "")
            + f"; read and replayed in {seconds:.2f} s\n")
    return head + view_table(COLUMNS, rows, TABLE_VIEW)
