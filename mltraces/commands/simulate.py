"""`mltraces simulate`: replay recurring training jobs on the Zeus traces.

The table format prints a readable summary (one line per simulated job); the
machine formats (csv, json) print every run unless ``--summary`` is given, and
``--history`` asks for every run in any format. Only the Alibaba replay needs
pandas; the sweep writes straight from its numpy columns and DuckDB.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from mltraces.commands.common import add_table_options, local_overrides, open_catalog
from mltraces.commands.output import (
    Rows,
    cell,
    checked_output,
    frame_rows,
    render_rows,
    view_table,
    write_text,
)

if TYPE_CHECKING:
    pass

#: The readable summary: (column, heading, scale); η, β and a single seed go above it.
SUMMARY_VIEW = [
    ("gpu", "gpu", None),
    ("workload", "workload", None),
    ("policy", "policy", None),
    ("seed", "seed", None),
    ("recurrences", "recurrences", None),
    ("energy_j", "ETA MJ", 1e-6),
    ("time_s", "TTA h", 1 / 3600),
    ("energy_vs_default", "ETA/default", None),
    ("time_vs_default", "TTA/default", None),
    ("regret", "regret MJ", 1e-6),
]


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--gpu", default="v100", help="v100, a40, p100, rtx6000, a comma list or all"
    )
    parser.add_argument(
        "--workload",
        default="all",
        help="cifar100, imagenet, squad, librispeech, movielens-1m, sentiment140, "
        "a comma list or all (default)",
    )
    from mltraces.simulation.policies import POLICIES

    first = next(iter(POLICIES))  # the paper's own optimizer
    parser.add_argument(
        "--policy",
        default=first,
        help=f"{', '.join(POLICIES)}, a comma list or all (default {first})",
    )
    parser.add_argument("--seeds", type=parse_seeds, help="e.g. 1-10 or 1,3,5 (default 1)")
    parser.add_argument(
        "--recurrences", type=int, help="recurrences per job (default 2·|B|·|P| of each job)"
    )
    parser.add_argument("--eta", type=float, default=0.5, help="weight of energy in the cost (0.5)")
    parser.add_argument(
        "--beta",
        type=float,
        default=2.0,
        help="early-stopping multiple of the best cost (2.0; inf: off)",
    )
    shape = parser.add_mutually_exclusive_group()
    shape.add_argument(
        "--summary",
        action="store_true",
        help="one row per job and seed, every column (default for --format table: a readable "
        "subset)",
    )
    shape.add_argument(
        "--history", action="store_true", help="every run (default for --format csv and json)"
    )
    parser.add_argument(
        "--alibaba",
        action="store_true",
        help="replay the Alibaba recurring-job groups on --gpu; each group has its own seed "
        "and submissions, so no --seeds or --recurrences",
    )
    parser.add_argument("--processes", type=int, help="worker processes for --alibaba (all cores)")
    parser.add_argument("--format", choices=["table", "csv", "json"], default="table")
    parser.add_argument("--output", "-o", help="write here instead of standard output")
    add_table_options(parser)


def parse_seeds(text: str) -> list[int]:
    """``"1-10"``, ``"3"`` or ``"1,4,7-9"`` as a list of seeds (counted before it is built:
    more than ``MLTRACES_MAX_SEEDS`` is refused)."""
    from mltraces.config import max_seeds

    parts: list[range] = []
    try:
        for part in text.split(","):
            low, dash, high = part.strip().partition("-")
            parts.append(range(int(low), int(high) + 1) if dash else range(int(low), int(low) + 1))
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad seeds {text!r}: use e.g. 1-10 or 1,3,5") from None
    count, limit = sum(len(part) for part in parts), max_seeds()
    if count > limit:
        raise argparse.ArgumentTypeError(
            f"--seeds {text} asks for {count:,} seeds; the limit is {limit:,} "
            "(set MLTRACES_MAX_SEEDS to allow more)"
        )
    if not count:
        raise argparse.ArgumentTypeError(f"no seeds in {text!r}: use e.g. 1-10")
    if any(part.start < 0 for part in parts if part):
        raise argparse.ArgumentTypeError(f"bad seeds {text!r}: seeds are 0 or more")
    return [seed for part in parts for seed in part]


def run(args: argparse.Namespace) -> int:
    from mltraces.simulation import SimulationError, simulate
    from mltraces.workloads.recurring import load_traces

    if args.alibaba and (args.seeds is not None or args.recurrences is not None):
        raise SimulationError(
            "--alibaba replays every submission of every group with a seed per group: "
            "drop --seeds and --recurrences"
        )
    if not args.alibaba and args.processes is not None:
        raise SimulationError("--processes applies to --alibaba only: drop it")
    summary = args.summary or (args.format == "table" and not args.history)
    output = checked_output(args.output)  # before the simulation: a bad -o loses no work
    if args.alibaba:
        from mltraces.workloads.recurring import GROUPS_TABLE, TRACE_TABLES

        con = open_catalog(args, [*TRACE_TABLES, GROUPS_TABLE], strict=True)  # one error, its cause
        rows = _alibaba_rows(load_traces(con), con, args, summary)
    else:
        traces = _traces(args)
        result = simulate(
            traces,
            args.gpu,
            args.workload,
            args.policy,
            args.seeds or [1],
            recurrences=args.recurrences,
            eta=args.eta,
            beta=args.beta,
        )
        if summary:
            relation = result.summary_relation()
            rows = (relation.columns, relation.fetchall())
        else:
            values = [column.tolist() for column in result.columns.values()]  # Python scalars
            rows = (list(result.columns), list(zip(*values, strict=True)))
    readable = args.format == "table" and not args.summary and not args.history
    text = render(*rows, args.format, readable=readable)
    write_text(text, output, quiet=getattr(args, "quiet", False))
    return 0


def _traces(args: argparse.Namespace) -> Any:
    """The Zeus traces: the saved arrays while the catalog vouches for their tables
    (no DuckDB then), else read through the catalog and saved for the next run."""
    from mltraces.workloads import recurring_cache as trace_cache
    from mltraces.workloads.recurring import load_traces

    cacheable = not local_overrides(args)
    key = trace_cache.current_key() if cacheable else None
    if key is not None:
        traces = trace_cache.load(key)
        if traces is not None:
            return traces
    con = open_catalog(args, list(trace_cache.TABLES), strict=True)  # one error, its cause
    if not cacheable:
        return load_traces(con)
    key = trace_cache.current_key()
    traces = load_traces(con)
    if key is not None and key == trace_cache.current_key():  # nothing moved while reading
        trace_cache.save(traces, key)
    return traces


def _alibaba_rows(traces: Any, con: Any, args: argparse.Namespace, summary: bool) -> Rows:
    from mltraces.simulation import replay_alibaba
    from mltraces.workloads.recurring import load_groups

    history, totals = replay_alibaba(
        traces,
        load_groups(con),
        gpu=args.gpu,
        policies=args.policy,
        workloads=args.workload,
        eta=args.eta,
        beta=args.beta,
        processes=args.processes,
    )
    return frame_rows(totals if summary else history)


def render(columns: list[str], rows: list[tuple], fmt: str, *, readable: bool = False) -> str:
    """Rows in ``fmt``; the table format of a summary is the readable subset."""
    if fmt == "table" and readable and {c for c, _, _ in SUMMARY_VIEW} <= set(columns):
        return _readable_summary(columns, rows)
    return render_rows(columns, rows, fmt)


def _readable_summary(columns: list[str], rows: list[tuple]) -> str:
    """The summary's key columns, scaled to MJ and hours; constant knobs printed once above."""
    index = {name: k for k, name in enumerate(columns)}
    knobs = [f"{name} = {cell(rows[0][index[name]])}" for name in ("eta", "beta")
             if rows and len({row[index[name]] for row in rows}) == 1]
    view = [(c, h, s) for c, h, s in SUMMARY_VIEW
            if not (c == "seed" and rows and len({r[index["seed"]] for r in rows}) == 1)]
    if len(view) < len(SUMMARY_VIEW) and rows:
        knobs.append(f"seed = {rows[0][index['seed']]}")
    table = view_table(columns, rows, view)
    note = "ETA/TTA: cumulative energy/time to accuracy over the recurrences; " \
           "regret: cost minus Oracle's (--summary or --format csv/json for every column)"
    return "".join(f"{k}\n" for k in ([", ".join(knobs)] if knobs else [])) + table + note + "\n"
