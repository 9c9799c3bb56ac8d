"""`mltraces schedule`: replay job traces through cluster schedulers (ElasticFlow's evaluation).

``--trace`` names catalog traces (``--list-traces`` shows them: every mapped job
table's ``replay`` names, see :mod:`mltraces.jobmap`) or ``all``, the Fig. 8(b)
setup: ITP clusters 1-10 and Philly, each on the cluster the artifact gives it
(Fig. 8(a) is ``--trace elasticflow/pollux --cluster n16g4 --gpu-type T4``).
A trace runs on ``--cluster``, else on the cluster Fig. 8(b) gives it, else on its
own capacity (declared in its mapping). ``--generate`` draws a trace with
ElasticFlow's generator instead (or as well) (:mod:`mltraces.papers.elasticflow_asplos23.generator`;
``--save-trace`` writes it). The
table format prints one line per (trace, policy) with the published Fig. 8(b)
or 8(a) value beside ours where there is one; ``--jobs`` prints every job and
``--utilisation`` the allocated-GPU step series; csv and json print the jobs
unless ``--summary`` is given. Replays run in parallel worker processes.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import warnings
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from mltraces.commands.common import add_table_options, open_catalog
from mltraces.commands.output import (
    checked_output,
    frame_rows,
    render_rows,
    view_table,
    write_text,
)

if TYPE_CHECKING:
    from mltraces.outputs import Output
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
        "--trace",
        help="trace ids SOURCE/NAME, comma-separated (--list-traces shows them), or all: the "
        "Fig. 8(b) setup (default, unless --generate is given)",
    )
    parser.add_argument(
        "--generate", action="append", metavar="KEY=VALUE,...",
        help="replay a trace drawn by ElasticFlow's generator, e.g. "
        "num_jobs=100,lam=1500,min_ddl=1.5,seed=1 (Fig. 10's); keys: num_jobs (required), "
        "lam (mean seconds between arrivals), seed, min_ddl, max_ddl, best_effort (share), "
        "deadline_seed (default seed+4; the artifact's are unseeded), max_gpus; needs "
        "--cluster; repeat for more traces",
    )
    parser.add_argument("--save-trace", metavar="FILE",
                        help="with one --generate: also write its trace, in the artifact's "
                        "CSV format")
    parser.add_argument(
        "--cluster",
        help="cluster spec: n<nodes>g<GPUs per node> (n32g8) or one of the artifact's spec "
        "files; default: the cluster Fig. 8(b) gives the trace, else the trace's own capacity",
    )
    from mltraces.papers.elasticflow_asplos23.fig8b import FIG8B_POLICIES
    from mltraces.scheduling.api import POLICIES

    parser.add_argument(
        "--policy", default=",".join(FIG8B_POLICIES),
        help=f"{', '.join(POLICIES)}, a comma list or all (default: the "
        f"{len(FIG8B_POLICIES)} of Fig. 8(b))",
    )
    parser.add_argument("--gpu-type", default="A100", choices=["A100", "T4"],
                        help="throughput profiles to use (default A100, as Fig. 8(b))")
    parser.add_argument("--slot", type=float, default=60.0,
                        help="scheduling slot in seconds, at least 1 (default 60, the artifact's)")
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
    output = checked_output(args.output)  # before the replays: a bad -o loses no work
    from mltraces.scheduling.errors import SchedulingError
    from mltraces.workloads import cluster as inputs

    if args.list_traces:
        return _list_traces(args, output)
    if args.workers is not None and args.workers < 1:
        raise SchedulingError(f"--workers must be at least 1, got {args.workers}")
    generated = _generated(args)
    saved = checked_output(args.save_trace)  # checked before the replays too
    spec = args.trace if args.trace is not None else (None if generated else "all")
    fig8b = spec is not None and spec.strip() == "all"
    if fig8b and args.cluster:
        raise SchedulingError("--trace all replays each Fig. 8(b) trace on its own cluster: "
                              "drop --cluster, or name the traces")
    labels, traces = _chosen(spec) if spec is not None else ([], [])
    # a misspelt trace, or one with no cluster to run on, fails before any download
    chosen = [_cluster(trace, args.cluster) for trace in traces]
    # cluster names: the artifact's files first; generated traces need the profiles too
    specs = bool(generated) or any(cluster is not None for cluster in chosen)
    con = open_catalog(args, inputs.tables_for(traces, throughputs=True if generated else None,
                                               specs=specs))
    try:
        _require(con, [table for trace, cluster in zip(traces, chosen, strict=True)
                       for table in _own_tables(trace, cluster)])
        clusters = [cluster or inputs.capacity_cluster(con, trace)
                    for trace, cluster in zip(traces, chosen, strict=True)]
        with _notes(getattr(args, "quiet", False)):
            cases = [inputs.case(con, trace, cluster, gpu_type=args.gpu_type, label=label,
                                 slot=args.slot)
                     for label, trace, cluster in zip(labels, traces, clusters, strict=True)]
        cases += _generated_cases(con, generated, args, saved)
    finally:
        con.close()
    result = _replay(cases, args)
    write_text(_render(result, args), output, quiet=getattr(args, "quiet", False))
    for note in result.notes:  # what a replay wants said beside its numbers (a time limit hit)
        print(f"mltraces schedule: note: {note}", file=sys.stderr)
    return 0


@contextlib.contextmanager
def _notes(quiet: bool) -> Iterator[None]:
    """Print each :class:`~mltraces.errors.ByDurationWarning` raised inside as one ``note:``
    line on stderr (a trace's jobs that replay by run time), once per trace."""
    from mltraces.errors import ByDurationWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ByDurationWarning)
        yield
    for said in dict.fromkeys(str(w.message) for w in caught
                              if issubclass(w.category, ByDurationWarning)):
        if not quiet:
            print(f"note: {said}", file=sys.stderr)
    for other in (w for w in caught if not issubclass(w.category, ByDurationWarning)):
        warnings.warn_explicit(other.message, other.category, other.filename, other.lineno)


def _generated(args: argparse.Namespace) -> list[Any]:
    """The ``--generate`` settings, checked before anything is read."""
    from mltraces.papers.elasticflow_asplos23.generator import TraceSpec
    from mltraces.scheduling.errors import SchedulingError

    specs = [TraceSpec.parse(text) for text in args.generate or []]
    if specs and not args.cluster:
        raise SchedulingError("--generate draws a trace with no cluster of its own: give "
                              "--cluster (ElasticFlow's Fig. 10 uses n16g8, Figs. 9 and 11 "
                              "n8g8 ... n32g8) and usually --slot 240")
    if args.save_trace and len(specs) != 1:
        raise SchedulingError(f"--save-trace writes one generated trace; got {len(specs)} "
                              "--generate options")
    return specs


def _generated_cases(con: Any, specs: list[Any], args: argparse.Namespace,
                     saved: Output | None) -> list[Any]:
    """One case per generated trace (its label: the settings), on ``--cluster``; the one
    trace also written to ``saved`` (``--save-trace``), whole or not at all."""
    from mltraces.papers.elasticflow_asplos23.generator import generate_trace
    from mltraces.scheduling.api import Case
    from mltraces.workloads import cluster as inputs

    if not specs:
        return []
    profiles = inputs.load_profiles(con, args.gpu_type)
    cluster = inputs.load_cluster(con, args.cluster)
    cases = []
    for spec in specs:
        frame = generate_trace(profiles, spec)
        if saved is not None:
            saved.write_text(frame.to_csv(index=False, lineterminator="\n"))
            saved.done(getattr(args, "quiet", False))
        cases.append(Case.build(spec.label, frame, cluster, profiles, slot=args.slot))
    return cases


def _own_tables(trace: str, cluster: str | None) -> list[str]:
    """The tables a replay of ``trace`` cannot do without: its jobs, and the table its
    capacity comes from when no cluster was given (``--cluster`` never reads it)."""
    from mltraces.workloads import cluster as inputs

    entry = inputs.resolve(trace).entry
    return list(entry.tables) if cluster is None else [entry.table]


def _require(con: Any, tables: list[str]) -> None:
    """Raise the reason a trace's own table cannot be read (the cluster specs may be absent:
    a cluster name like ``n2g8`` needs no file), instead of a traceback at its first read."""
    from mltraces.catalog import read_status
    from mltraces.errors import MltracesError

    status = read_status(con) or {}
    for table in tables:
        row = status.get(table)
        if row is not None and not row.usable:
            raise MltracesError(f"{table} is {row.state}: {row.reason}")


def _chosen(spec: str) -> tuple[list[str], list[str]]:
    """(labels, trace ids): ``all`` is Fig. 8(b) under its own labels (cluster01, ...)."""
    from mltraces.papers.elasticflow_asplos23.fig8b import FIG8B_TRACE_IDS
    from mltraces.workloads.cluster import canonical_id

    if spec.strip() == "all":
        traces = list(FIG8B_TRACE_IDS.values())
        return [canonical_id(t) for t in traces], traces
    from mltraces.names import canonical

    traces = [canonical(t.strip()) for t in spec.split(",") if t.strip()]
    if not traces:
        from mltraces.scheduling.errors import SchedulingError

        raise SchedulingError("no trace given: name one (--list-traces) or use --trace all")
    return [canonical_id(t) for t in traces], traces  # printed as the jobs view names them


def _cluster(trace: str, asked: str | None) -> str | None:
    """The cluster to replay ``trace`` on: the one asked for, else Fig. 8(b)'s; None when it
    comes from the trace's own capacity (read once the catalog is open)."""
    from mltraces.papers.elasticflow_asplos23.fig8b import FIG8B_CLUSTERS, FIG8B_TRACE_IDS
    from mltraces.scheduling.errors import SchedulingError
    from mltraces.workloads import cluster as inputs

    replay = inputs.resolve(trace)
    if asked:
        from mltraces.scheduling.cluster import ClusterSpec

        if ClusterSpec.is_name(asked):
            ClusterSpec.from_name(asked)  # a size past the limits fails before any download
        return asked
    for label, trace_id in FIG8B_TRACE_IDS.items():
        if inputs.canonical_id(trace_id) == inputs.canonical_id(trace):
            return FIG8B_CLUSTERS[label]
    if replay.entry.capacity is None:
        raise SchedulingError(f"{trace} declares no capacity and is not a Fig. 8(b) trace, so "
                              "it has no default cluster: give one, e.g. --cluster n16g8")
    return None


#: below this :func:`~mltraces.scheduling.api.expected_cost` in all, replays run in this
#: process: starting worker processes (each importing pandas) costs more than they save
#: (cluster10 under EDF and ElasticFlow is 5,460 and takes 0.05 s; cluster01's 33,495, 2 s)
IN_PROCESS_COST = 20_000


def _replay(cases: list[Any], args: argparse.Namespace) -> ScheduleResult:
    """Every (case, policy) replay, in worker processes (unless they are few and small) with
    a progress bar on a terminal."""
    from tqdm import tqdm

    from mltraces.scheduling import ScheduleResult, resolve_policies, sweep
    from mltraces.scheduling.api import expected_cost, run_case

    policies = resolve_policies(args.policy)
    total = len(cases) * len(policies)
    cost = sum(expected_cost(case, policy) for case in cases for policy in policies)
    quiet = getattr(args, "quiet", False) or not sys.stderr.isatty()
    _announce_interpreted(policies, getattr(args, "quiet", False))
    with tqdm(total=total, desc="replays", unit="replay", delay=2.0, disable=quiet,
              file=sys.stderr, leave=False) as bar:
        if args.workers == 1 or total == 1 or cost <= IN_PROCESS_COST:
            outcomes = []
            for case in cases:
                for policy in policies:
                    outcomes.append(run_case(case, policy))
                    bar.update()
            return ScheduleResult(outcomes)
        return sweep(cases, policies, max_workers=args.workers, on_done=lambda _: bar.update())


def _announce_interpreted(policies: list[Any], quiet: bool) -> None:
    """Say so in one line when the policies' compiled cores run as plain Python (their
    extensions were not built at install): a replay then takes about 100 times longer
    than documented. Once per process (:func:`~mltraces.scheduling.cores.native.announce`); the
    cores are imported only when a policy that runs on them is asked for.
    """
    from mltraces.scheduling import Chronus, EDFElastic, ElasticFlow, Gandiva
    from mltraces.scheduling.cores import native

    used = [what for kind, what in (((ElasticFlow, EDFElastic), "ElasticFlow's planner"),
                                    (Gandiva, "Gandiva's rounds"),
                                    (Chronus, "Chronus's lease packing"))
            if any(isinstance(policy, kind) for policy in policies)]
    if used:
        what = ", ".join(used[:-1]) + (" and " if len(used) > 1 else "") + used[-1]
        native.announce(what, plural=len(used) > 1, quiet=quiet)


def _render(result: ScheduleResult, args: argparse.Namespace) -> str:
    if args.utilisation:
        return render_rows(*frame_rows(result.utilisation), args.format)
    summary = args.summary or (args.format == "table" and not args.jobs)
    if not summary:
        return render_rows(*frame_rows(result.jobs), args.format)
    columns, rows = frame_rows(_without_deadlines(_with_published(result.summary), result))
    if args.format == "table" and not args.summary:
        return _readable(columns, rows)
    if args.format == "table":  # every column, each with its unit (csv and json keep the names)
        return (render_rows([f"{c} ({SUMMARY_UNITS[c]})" if c in SUMMARY_UNITS else c
                             for c in columns], rows, args.format) + SUMMARY_NOTE)
    return render_rows(columns, rows, args.format)


#: the units of the summary's columns (``--summary``): times in the trace's seconds
SUMMARY_UNITS = {"mean_jct": "s", "median_jct": "s", "mean_queueing_delay": "s",
                 "makespan": "s", "gpu_seconds": "GPU s", "mean_utilisation": "share of GPUs",
                 "seconds": "s, wall", "cpu_seconds": "s, CPU"}
SUMMARY_NOTE = ("times in seconds of the trace's clock (mean JCT, queueing, makespan), the "
                "replay's own cost in wall and CPU seconds; ratio: deadlines met / jobs with "
                "one; csv and json carry the same columns, named without units\n")


def _with_published(summary: Any) -> Any:
    """The summary with the published ratio of each (trace, policy) where one exists: Fig. 8(b),
    and Fig. 8(a) for the Pollux trace on its cluster."""
    from mltraces.papers.elasticflow_asplos23.fig8a import (
        FIG8A_CLUSTER,
        FIG8A_TRACE,
        PUBLISHED_FIG8A,
    )
    from mltraces.papers.elasticflow_asplos23.fig8b import FIG8B_TRACE_IDS, PUBLISHED_FIG8B
    from mltraces.workloads.cluster import canonical_id

    label = {canonical_id(trace_id): label for label, trace_id in FIG8B_TRACE_IDS.items()}

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
    return summary.assign(
        deadline_met=summary["deadline_met"].where(~blank),
        ddl_satis_ratio=summary["ddl_satis_ratio"].where(~blank),
        ddl_satis_ratio_listed=summary["ddl_satis_ratio_listed"].where(~blank))


def _readable(columns: list[str], rows: list[tuple]) -> str:
    note = ("ratio: jobs that met their deadline / all jobs with one (ddl_satis_ratio: "
            "declined ones count, best-effort ones on neither side; - without deadlines); "
            "--summary adds ddl_satis_ratio_listed, every job against the deadline the trace "
            "lists, best-effort ones too, as the artifact's Chronus converter counts; "
            "published: ElasticFlow Fig. 8(b) (an earlier state of its code), or Fig. 8(a) "
            "for the Pollux trace on n16g4; --summary for every column")
    return view_table(columns, rows, SUMMARY_VIEW) + note + "\n"


def _list_traces(args: argparse.Namespace, output: Any) -> int:
    from mltraces.jobmap import expand_replays

    con = open_catalog(args)  # what is cached: listing fetches nothing
    try:
        ids = expand_replays(con)
    finally:
        con.close()
    rows = [(trace_id, entry.table, entry.description) for trace_id, entry in ids]
    write_text(render_rows(["trace", "table", "what"], rows, args.format), output,
               quiet=getattr(args, "quiet", False))
    return 0
