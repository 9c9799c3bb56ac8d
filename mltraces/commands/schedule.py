"""`mltraces schedule`: replay job traces through cluster schedulers (ElasticFlow's evaluation).

``--trace`` names catalog traces (``itp/cluster10``, ``elasticflow/philly``,
``acme/kalos``; ``--list-traces`` shows them) or ``all``, the Fig. 8(b) setup:
ITP clusters 1-10 and Philly, each on the cluster the artifact gives it
(Fig. 8(a) is ``--trace elasticflow/pollux --cluster n16g4 --gpu-type T4``). The
table format prints one line per (trace, policy) with the published Fig. 8(b)
or 8(a) value beside ours where there is one; ``--jobs`` prints every job and
``--utilisation`` the allocated-GPU step series; csv and json print the jobs
unless ``--summary`` is given. Replays run in parallel worker processes.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import TYPE_CHECKING, Any

from mltraces.commands.common import add_table_options, open_catalog
from mltraces.commands.output import frame_rows, render_rows, view_table, write_text

if TYPE_CHECKING:
    from mltraces.scheduling import ScheduleResult

#: The readable summary: (column, heading, scale).
SUMMARY_VIEW = [
    ("trace", "trace", None),
    ("cluster", "cluster", None),
    ("policy", "policy", None),
    ("jobs", "jobs", None),
    ("admitted", "admitted", None),
    ("deadline_met", "met", None),
    ("ddl_satis_ratio", "ratio", None),
    ("published", "published", None),
    ("mean_jct", "mean JCT h", 1 / 3600),
    ("mean_queueing_delay", "queue h", 1 / 3600),
    ("makespan", "makespan h", 1 / 3600),
    ("mean_utilisation", "GPU util", None),
    ("seconds", "replay s", None),
]


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--trace", default="all",
        help="trace ids, comma-separated (itp/cluster10, elasticflow/philly, itp/testbed, "
        "acme/seren, ...), or all: the Fig. 8(b) setup (default)",
    )
    parser.add_argument(
        "--cluster",
        help="cluster spec (n32g8, n64g8, n128g8, ...; see elasticflow.cluster_specs); default: "
        "the cluster Fig. 8(b) gives the trace",
    )
    parser.add_argument(
        "--policy", default="edf,gandiva,tiresias,themis,chronus,elasticflow",
        help="edf, gandiva, tiresias, themis, chronus, elasticflow, fifo, sjf, a comma list or "
        "all (default: the six of Fig. 8(b))",
    )
    parser.add_argument("--gpu-type", default="A100", choices=["A100", "T4"],
                        help="throughput profiles to use (default A100, as Fig. 8(b))")
    parser.add_argument("--slot", type=float, default=60.0,
                        help="scheduling slot in seconds (default 60, the artifact's)")
    parser.add_argument("--workers", type=int, metavar="N",
                        help="worker processes (default: one per core; 1 replays in-process)")
    shape = parser.add_mutually_exclusive_group()
    shape.add_argument("--summary", action="store_true",
                       help="one row per (trace, policy), every column")
    shape.add_argument("--jobs", action="store_true",
                       help="one row per job (default for --format csv and json)")
    shape.add_argument("--utilisation", action="store_true",
                       help="GPUs allocated over time, one row per change")
    parser.add_argument("--list-traces", action="store_true",
                        help="list the trace ids the catalog offers, then exit")
    parser.add_argument("--format", choices=["table", "csv", "json"], default="table")
    parser.add_argument("--output", "-o", help="write here instead of standard output")
    add_table_options(parser)


def run(args: argparse.Namespace) -> int:
    from mltraces.scheduling import inputs
    from mltraces.scheduling.errors import SchedulingError

    if args.list_traces:
        return _list_traces(args)
    if args.workers is not None and args.workers < 1:
        raise SchedulingError(f"--workers must be at least 1, got {args.workers}")
    fig8b = args.trace.strip() == "all"
    if fig8b and args.cluster:
        raise SchedulingError("--trace all replays each Fig. 8(b) trace on its own cluster: "
                              "drop --cluster, or name the traces")
    labels, traces = _chosen(args.trace)
    for trace in traces:
        inputs.resolve(trace)  # a misspelt trace fails before any download
    clusters = [_cluster(trace, args.cluster) for trace in traces]
    con = open_catalog(args, inputs.tables_for(traces))
    try:
        cases = [inputs.case(con, trace, cluster, gpu_type=args.gpu_type, label=label,
                             slot=args.slot)
                 for label, trace, cluster in zip(labels, traces, clusters, strict=True)]
    finally:
        con.close()
    result = _replay(cases, args)
    write_text(_render(result, args), args.output)
    return 0


def _chosen(spec: str) -> tuple[list[str], list[str]]:
    """(labels, trace ids): ``all`` is Fig. 8(b) under its own labels (cluster01, ...)."""
    from mltraces.scheduling.fig8b import FIG8B_TRACE_IDS

    if spec.strip() == "all":
        return list(FIG8B_TRACE_IDS), list(FIG8B_TRACE_IDS.values())
    traces = [t.strip() for t in spec.split(",") if t.strip()]
    if not traces:
        from mltraces.scheduling.errors import SchedulingError

        raise SchedulingError("no trace given: name one (itp/cluster10) or use --trace all")
    return traces, traces


def _cluster(trace: str, asked: str | None) -> str:
    """The cluster to replay ``trace`` on: the one asked for, else Fig. 8(b)'s."""
    from mltraces.scheduling.errors import SchedulingError
    from mltraces.scheduling.fig8b import FIG8B_CLUSTERS, FIG8B_TRACE_IDS

    if asked:
        return asked
    for label, trace_id in FIG8B_TRACE_IDS.items():
        if trace_id == trace:
            return FIG8B_CLUSTERS[label]
    raise SchedulingError(f"{trace} is not a Fig. 8(b) trace, so it has no default cluster: "
                          "give one, e.g. --cluster n16g8 (see elasticflow.cluster_specs)")


def _replay(cases: list[Any], args: argparse.Namespace) -> ScheduleResult:
    """Every (case, policy) replay, in worker processes with a progress bar on a terminal."""
    from tqdm import tqdm

    from mltraces.scheduling import ScheduleResult, resolve_policies, sweep
    from mltraces.scheduling.api import run_case

    policies = resolve_policies(args.policy)
    total = len(cases) * len(policies)
    quiet = getattr(args, "quiet", False) or not sys.stderr.isatty()
    _announce_compilation(policies, getattr(args, "quiet", False))
    with tqdm(total=total, desc="replays", unit="replay", delay=2.0, disable=quiet,
              file=sys.stderr, leave=False) as bar:
        if args.workers == 1 or total == 1:
            outcomes = []
            for case in cases:
                for policy in policies:
                    outcomes.append(run_case(case, policy))
                    bar.update()
            return ScheduleResult(outcomes)
        return sweep(cases, policies, max_workers=args.workers, on_done=lambda _: bar.update())


def _announce_compilation(policies: list[Any], quiet: bool) -> None:
    """Say so when a compiled core is about to be built: a minute of silence otherwise.

    The cores (and numba) are imported only when a policy that runs on them is asked for.
    """
    from mltraces.scheduling import ElasticFlow, Gandiva

    if quiet:
        return
    cores = [
        (ElasticFlow, "efcore", "ElasticFlow's planner", "about 40 s"),
        (Gandiva, "gandivacore", "Gandiva's round loop", "a few seconds"),
    ]
    for kind, module, what, how_long in cores:
        if any(isinstance(policy, kind) for policy in policies):
            core = importlib.import_module(f"mltraces.scheduling.{module}")
            if not core.compiled():
                print(f"compiling {what} (once per installation, {how_long}) ...",
                      file=sys.stderr)


def _render(result: ScheduleResult, args: argparse.Namespace) -> str:
    if args.utilisation:
        return render_rows(*frame_rows(result.utilisation), args.format)
    summary = args.summary or (args.format == "table" and not args.jobs)
    if not summary:
        return render_rows(*frame_rows(result.jobs), args.format)
    columns, rows = frame_rows(_without_deadlines(_with_published(result.summary), result))
    if args.format == "table" and not args.summary:
        return _readable(columns, rows)
    return render_rows(columns, rows, args.format)


def _with_published(summary: Any) -> Any:
    """The summary with the published ratio of each (trace, policy) where one exists: Fig. 8(b),
    and Fig. 8(a) for the Pollux trace on its cluster."""
    from mltraces.scheduling.fig8a import FIG8A_CLUSTER, FIG8A_TRACE, PUBLISHED_FIG8A
    from mltraces.scheduling.fig8b import FIG8B_TRACE_IDS, PUBLISHED_FIG8B

    label = {trace_id: label for label, trace_id in FIG8B_TRACE_IDS.items()}

    def published_for(trace: str, cluster: str, policy: str) -> float | None:
        if (trace, cluster) == (FIG8A_TRACE, FIG8A_CLUSTER):
            return PUBLISHED_FIG8A.get(policy)
        return PUBLISHED_FIG8B.get(policy, {}).get(label.get(trace, trace))

    published = [published_for(*row) for row in
                 zip(summary["trace"], summary["cluster"], summary["policy"], strict=True)]
    position = summary.columns.get_loc("ddl_satis_ratio") + 1
    return summary.assign(published=published)[
        [*summary.columns[:position], "published", *summary.columns[position:]]]


def _without_deadlines(summary: Any, result: ScheduleResult) -> Any:
    """Blank the deadline columns of traces that have no deadlines (AcmeTrace jobs)."""
    import numpy as np

    jobs = result.jobs
    timed = {trace for trace, rows in jobs.groupby("trace") if np.isfinite(rows["deadline"]).any()}
    blank = ~summary["trace"].isin(timed)
    return summary.assign(deadline_met=summary["deadline_met"].where(~blank),
                          ddl_satis_ratio=summary["ddl_satis_ratio"].where(~blank))


def _readable(columns: list[str], rows: list[tuple]) -> str:
    note = ("ratio: jobs that met their deadline / all jobs (declined ones count; - without "
            "deadlines); published: ElasticFlow Fig. 8(b) (an earlier state of its code), or "
            "Fig. 8(a) for elasticflow/pollux on n16g4; "
            "--summary for every column")
    return view_table(columns, rows, SUMMARY_VIEW) + note + "\n"


def _list_traces(args: argparse.Namespace) -> int:
    from mltraces.registry import all_sources
    from mltraces.scheduling import inputs

    con = open_catalog(args)  # what is cached: listing fetches nothing
    try:
        ids = inputs.trace_ids(con)
    finally:
        con.close()
    described = {}
    for source in all_sources().values():
        for trace in source.job_traces:
            described[trace.table] = trace.description
    tables = [inputs.resolve(t)[0].table if "<" not in t else
              next(d.table for k, d in inputs.declared().items() if t.startswith(k[:-1]))
              for t in ids]
    rows = [(t, table, described.get(table, "")) for t, table in zip(ids, tables, strict=True)]
    write_text(render_rows(["trace", "table", "what"], rows, args.format), args.output)
    return 0
