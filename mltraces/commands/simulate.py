"""`mltraces simulate`: replay recurring training jobs on the Zeus traces."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from mltraces.commands.common import add_table_options, open_catalog

if TYPE_CHECKING:
    import pandas as pd

HELP = "replay recurring training jobs on the Zeus traces"


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
    parser.add_argument(
        "--policy",
        default="zeus",
        help="zeus (default), default, grid, pl-only, bs-only, oracle, a comma list or all",
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
    parser.add_argument(
        "--summary", action="store_true", help="print one row per job and seed instead of every run"
    )
    parser.add_argument(
        "--alibaba",
        action="store_true",
        help="replay the Alibaba recurring-job groups (zeus.alibaba_groups) on --gpu; "
        "each group has its own seed and submissions, so no --seeds or --recurrences",
    )
    parser.add_argument("--processes", type=int, help="worker processes for --alibaba (all cores)")
    parser.add_argument("--format", choices=["table", "csv", "json"], default="table")
    parser.add_argument("--output", "-o", help="write here instead of standard output")
    add_table_options(parser)


def parse_seeds(text: str) -> list[int]:
    """``"1-10"``, ``"3"`` or ``"1,4,7-9"`` as a list of seeds."""
    seeds: list[int] = []
    try:
        for part in text.split(","):
            low, dash, high = part.strip().partition("-")
            seeds.extend(range(int(low), int(high) + 1) if dash else [int(low)])
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad seeds {text!r}: use e.g. 1-10 or 1,3,5") from None
    if not seeds:
        raise argparse.ArgumentTypeError(f"no seeds in {text!r}: use e.g. 1-10")
    return seeds


def run(args: argparse.Namespace) -> int:
    from mltraces.simulation import SimulationError, load_traces, replay_alibaba, simulate
    from mltraces.simulation.alibaba import load_groups

    if args.alibaba and (args.seeds is not None or args.recurrences is not None):
        raise SimulationError(
            "--alibaba replays every submission of every group with a seed per group: "
            "drop --seeds and --recurrences"
        )
    if not args.alibaba and args.processes is not None:
        raise SimulationError("--processes applies to --alibaba only: drop it")
    tables = ["zeus.train", "zeus.power"] + (["zeus.alibaba_groups"] if args.alibaba else [])
    con = open_catalog(args, tables)
    traces = load_traces(con)
    if args.alibaba:
        history, summary = replay_alibaba(
            traces,
            load_groups(con),
            gpu=args.gpu,
            policies=args.policy,
            workloads=args.workload,
            eta=args.eta,
            beta=args.beta,
            processes=args.processes,
        )
    else:
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
        history, summary = result.history, result.summary
    write(summary if args.summary else history, args.format, args.output)
    return 0


def write(frame: pd.DataFrame, fmt: str, output: str | None) -> None:
    """Render ``frame`` as a table, CSV or JSON records, to a file or stdout."""
    if fmt == "csv":
        text = frame.to_csv(index=False)
    elif fmt == "json":
        text = frame.to_json(orient="records", indent=1) + "\n"
    else:
        text = frame.to_string(index=False) + "\n"
    if output:
        with open(output, "w", encoding="utf-8") as handle:
            handle.write(text)
    else:
        sys.stdout.write(text)
