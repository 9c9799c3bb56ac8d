"""Every scheduler replay of the README's main job, one at a time: CPU per figure and policy,
and each replay's per-job output recorded or compared with a record of another revision.

The main job's first run is mostly these replays (ElasticFlow Figs. 7(a), 8(a), 8(b), 9
and 11), spread over worker processes; this script runs them in one process, in order,
so each one's cost is its own, and prints the CPU seconds per (figure, policy), the
largest first, with the total: what a figure run spends across its cores. With
``--record DIR`` it writes each replay's per-job lists (admitted, start, finish, met,
GPU-seconds, the GPU series, the round log, the logged ends); ``--compare DIR`` checks
them against such a record, bit for bit (a whole-number time written as an int by one
revision and a float by the other counts as equal), and exits 1 on any difference::

    python benchmarks/main_replays.py --record /tmp/replays-base   # on the base revision
    python benchmarks/main_replays.py --compare /tmp/replays-base  # after a change
        [--figures 8a,7a,8b,9,11] [POLICY ...]

Reads the real files through the catalog (``MLTRACES_MIRROR=../shared/upstream`` works
offline).
"""

from __future__ import annotations

import argparse
import pickle
import sys
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

FIGURES = ("8a", "7a", "8b", "9", "11")
#: what an outcome holds per job or per step (its tables are built from these)
FIELDS = ("admitted", "start", "finish", "met", "gpu_seconds", "times", "allocated", "rounds",
          "efficiency", "logged_finish")


def figure_cases(con: Any, figure: str) -> tuple[list[Any], list[str]]:
    """The cases and policies the figure replays, built as its data function builds them."""
    from mltraces.papers.elasticflow_asplos23 import fig8b, genfigs
    from mltraces.papers.elasticflow_asplos23.fig8a import (
        FIG8A_CLUSTER,
        FIG8A_GPU_TYPE,
        FIG8A_LABEL,
        FIG8A_POLICIES,
        FIG8A_TRACE,
    )
    from mltraces.papers.elasticflow_asplos23.fig8b import FIG8B_POLICIES, FIG8B_TRACES
    from mltraces.workloads import cluster as inputs

    if figure == "8a":
        return [inputs.case(con, FIG8A_TRACE, FIG8A_CLUSTER, gpu_type=FIG8A_GPU_TYPE,
                            label=FIG8A_LABEL)], list(FIG8A_POLICIES)
    if figure == "7a":
        return [inputs.case(con, "itp/testbed", "n16g8", label="testbed")], list(FIG8B_POLICIES)
    if figure == "8b":
        return fig8b.catalog_cases(con, list(FIG8B_TRACES)), list(FIG8B_POLICIES)
    profiles = inputs.load_profiles(con, "A100")
    if figure == "9":
        setup = genfigs.setup("fig9")
        clusters = {name: inputs.load_cluster(con, name) for name in setup["clusters"]}
        return (genfigs.fig9_cases(profiles, clusters, genfigs.SEEDS),
                genfigs.replayed(list(setup["policies"])))
    if figure == "11":
        setup = genfigs.setup("fig11")
        policies = genfigs.replayed(list(setup["policies"]))
        policies += [] if "gandiva" in policies else ["gandiva"]  # the JCT baseline
        return (genfigs.fig11_cases(profiles, inputs.load_cluster(con, setup["cluster"]),
                                    genfigs.SEEDS, list(setup["best_effort"])), policies)
    raise SystemExit(f"unknown figure {figure!r}: choose from {', '.join(FIGURES)}")


def _as_floats(value: Any) -> Any:
    """A list with its ints as floats: revisions may write a whole-number time either way."""
    if isinstance(value, list):
        return [float(x) if type(x) is int else x for x in value]
    return value


def differences(recorded: dict[str, Any], outcome: dict[str, Any]) -> list[str]:
    """The fields whose values differ (floats compared by their exact repr)."""
    return [f for f in FIELDS if repr(_as_floats(recorded[f])) != repr(_as_floats(outcome[f]))]


def replay_all(figures: Sequence[str], only: Iterable[str], record: Path | None,
               compare: Path | None) -> int:
    """Run, time, record or compare every replay; print the totals; the number differing."""
    import mltraces
    from mltraces.scheduling.api import resolve_policies, run_case

    con = mltraces.connect()
    only = set(only)
    cpu: dict[tuple[str, str], float] = defaultdict(float)
    differing = 0
    for figure in figures:
        cases, policies = figure_cases(con, figure)
        for n, case in enumerate(cases):
            for policy in resolve_policies(policies):
                if only and policy.name not in only:
                    continue
                started = time.process_time()
                outcome = run_case(case, policy)
                seconds = time.process_time() - started
                cpu[figure, policy.name] += seconds
                lists = {f: getattr(outcome, f) for f in FIELDS}
                name = f"{figure}-{n}-{policy.name}"
                status = ""
                if record is not None:
                    record.mkdir(parents=True, exist_ok=True)
                    (record / name).write_bytes(pickle.dumps(lists))
                if compare is not None:
                    changed = differences(pickle.loads((compare / name).read_bytes()), lists)
                    status = "same" if not changed else f"DIFFERENT: {', '.join(changed)}"
                    differing += bool(changed)
                print(f"{figure:>3} {n:3d} {case.trace[:22]:22} {policy.name:14} "
                      f"{seconds:7.2f} CPU-s {status}", flush=True)
    print("\nCPU seconds per figure and policy:")
    for (figure, policy), seconds in sorted(cpu.items(), key=lambda item: -item[1]):
        print(f"  Fig. {figure:>3} {policy:14} {seconds:7.1f}")
    print(f"  total {sum(cpu.values()):.1f} CPU-s" +
          (f"; {differing} replays differ from {compare}" if compare is not None else ""))
    return differing


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--figures", default=",".join(FIGURES),
                        help=f"which figures' replays (default {','.join(FIGURES)})")
    parser.add_argument("--record", type=Path, help="write each replay's per-job lists here")
    parser.add_argument("--compare", type=Path, help="compare with a --record folder")
    parser.add_argument("policies", nargs="*", help="only these policies (default: all)")
    args = parser.parse_args(argv)
    differing = replay_all(args.figures.split(","), args.policies, args.record, args.compare)
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
