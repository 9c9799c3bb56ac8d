"""Scheduling inputs from the catalog: job traces by id, cluster specs, throughput profiles.

A *trace id* is ``<source>/<name>``. Each source's card (``job_traces`` in its
``source.json``) says which of its tables hold replayable jobs: a named trace
(``elasticflow/philly`` is ``elasticflow.philly_jobs``) or one trace per value
of a column (``itp/cluster10`` is ``itp.elasticflow_jobs WHERE cluster =
'cluster10'``). Nothing here lists sources: a new source with jobs declares its
traces in its own folder and ``mltraces schedule --trace`` finds them.

Cluster specs come from ``elasticflow.cluster_specs`` (the artifact's files, so
``n1g2`` is the 2 x 1 GPUs its file holds) and throughputs from
``elasticflow.throughputs``; both fall back to nothing else, so a run always
says which verified inputs it used.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from mltraces.scheduling.cluster import ClusterSpec
from mltraces.scheduling.errors import SchedulingError
from mltraces.scheduling.profiles import Profiles

if TYPE_CHECKING:
    import duckdb

    from mltraces.registry import JobTrace

CLUSTER_TABLE = "elasticflow.cluster_specs"
THROUGHPUT_TABLE = "elasticflow.throughputs"


def declared() -> dict[str, JobTrace]:
    """``source/name`` (or ``source/*`` for a split table) → its declaration, every source."""
    from mltraces.registry import all_sources

    found: dict[str, JobTrace] = {}
    for source in all_sources().values():
        for trace in source.job_traces:
            found[f"{source.name}/{trace.name or '*'}"] = trace
    return found


def resolve(trace_id: str) -> tuple[JobTrace, str | None]:
    """The declaration behind ``trace_id`` and, for a split table, the value it selects."""
    source, _, name = trace_id.partition("/")
    traces = declared()
    if f"{source}/{name}" in traces:
        return traces[f"{source}/{name}"], None
    if name and f"{source}/*" in traces:
        return traces[f"{source}/*"], name
    known = ", ".join(sorted(t.replace("*", "<" + traces[t].split_by + ">") for t in traces
                             if traces[t].split_by) + sorted(t for t in traces if "*" not in t))
    raise SchedulingError(f"unknown trace {trace_id!r}; traces are SOURCE/NAME: {known} "
                          "(`mltraces schedule --list-traces` expands the clusters)")


def tables_for(trace_ids: Iterable[str], *, throughputs: bool = True) -> list[str]:
    """The catalog tables a run over ``trace_ids`` reads: what to pass to ``connect()``."""
    tables = {resolve(t)[0].table for t in trace_ids} | {CLUSTER_TABLE}
    return sorted(tables | ({THROUGHPUT_TABLE} if throughputs else set()))


def trace_ids(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Every replayable trace id, split tables expanded from the data (a split table
    that is not available on ``con`` shows as ``source/<column>``)."""
    import duckdb

    from mltraces.schema import quote_ident

    ids = []
    for key, trace in declared().items():
        if trace.split_by is None:
            ids.append(key)
            continue
        column = quote_ident(trace.split_by)
        try:
            values = con.sql(f"SELECT DISTINCT {column} FROM {trace.table} ORDER BY 1").fetchall()
        except duckdb.Error:
            ids.append(key.replace("*", f"<{trace.split_by}>"))
            continue
        ids.extend(key.replace("*", str(value)) for (value,) in values)
    return ids


def load_jobs(con: duckdb.DuckDBPyConnection, trace_id: str) -> Any:
    """The jobs of ``trace_id`` as a pandas frame in the table's row order."""
    from mltraces.schema import quote_ident

    trace, value = resolve(trace_id)
    query = f"SELECT * FROM {trace.table}"
    params: list[Any] = []
    if value is not None:
        query += f" WHERE {quote_ident(trace.split_by or '')} = ?"
        params.append(value)
    # through Arrow: DuckDB's own DataFrame export of time zones trips a pandas 3 deprecation
    frame = con.sql(query, params=params).to_arrow_table().to_pandas()
    if frame.empty:
        raise SchedulingError(f"trace {trace_id!r} has no jobs in {trace.table}"
                              + (f" (no {trace.split_by} = {value!r})" if value else ""))
    return frame


def load_cluster(con: duckdb.DuckDBPyConnection, name: str) -> ClusterSpec:
    """A cluster spec by name (``n32g8``) from the artifact's spec files.

    A name the artifact does not ship (``n286g8`` for Seren's 286 nodes) is built
    from the name itself: that many nodes of that many GPUs on one switch.
    """
    rows = con.execute(f"SELECT num_switch, num_node_p_switch, num_gpu_p_node, num_cpu_p_node, "
                       f"mem_p_node FROM {CLUSTER_TABLE} WHERE spec = ?", [name]).fetchall()
    if not rows and ClusterSpec.is_name(name):
        return ClusterSpec.from_name(name)
    if not rows:
        known = [s for (s,) in con.execute(f"SELECT spec FROM {CLUSTER_TABLE} ORDER BY num_gpus")
                 .fetchall()]
        raise SchedulingError(f"unknown cluster {name!r}; the artifact's specs: "
                              f"{', '.join(known)}, or any n<nodes>g<GPUs per node>")
    switches, per_switch, gpus, cpus, mem = rows[0]
    return ClusterSpec(nodes_per_switch=per_switch, gpus_per_node=gpus, switches=switches,
                       cpus_per_node=cpus, mem_per_node=mem, name=name)


def load_profiles(con: duckdb.DuckDBPyConnection, gpu_type: str = "A100") -> Profiles:
    """The throughput profiles measured on ``gpu_type`` (the artifact's default is A100)."""
    frame = con.execute(
        f"SELECT model, batch_size, num_gpus AS gpus, iterations_per_second AS iterations_per_s "
        f"FROM {THROUGHPUT_TABLE} WHERE gpu_type = ? ORDER BY model, batch_size, gpus",
        [gpu_type]).df()
    if frame.empty:
        raise SchedulingError(f"no throughput profiles for GPU type {gpu_type!r} in "
                              f"{THROUGHPUT_TABLE}; the artifact measured A100 and T4")
    return Profiles.from_frame(frame, gpu_type)


def case(con: duckdb.DuckDBPyConnection, trace_id: str, cluster: str, *,
         gpu_type: str = "A100", label: str | None = None, **options: Any) -> Any:
    """One :class:`~mltraces.scheduling.api.Case` read from the catalog."""
    from mltraces.scheduling.api import Case

    return Case.build(label or trace_id, load_jobs(con, trace_id), load_cluster(con, cluster),
                      load_profiles(con, gpu_type), **options)


def fig8b_cases(con: duckdb.DuckDBPyConnection, labels: Iterable[str] | None = None,
                **options: Any) -> list[Any]:
    """The Fig. 8(b) cases (every trace on its cluster), from the catalog."""
    from mltraces.scheduling.fig8b import FIG8B_CLUSTERS, FIG8B_TRACE_IDS

    chosen = list(FIG8B_CLUSTERS) if labels is None else list(labels)
    unknown = [label for label in chosen if label not in FIG8B_CLUSTERS]
    if unknown:
        raise SchedulingError(f"{unknown} are not Fig. 8(b) traces; it has "
                              f"{', '.join(FIG8B_CLUSTERS)}")
    profiles = load_profiles(con, "A100")
    from mltraces.scheduling.api import Case

    return [Case.build(label, load_jobs(con, FIG8B_TRACE_IDS[label]),
                       load_cluster(con, FIG8B_CLUSTERS[label]), profiles, **options)
            for label in chosen]


def fig8b_tables() -> list[str]:
    """The catalog tables the Fig. 8(b) replays read."""
    from mltraces.scheduling.fig8b import FIG8B_TRACE_IDS

    return tables_for(FIG8B_TRACE_IDS.values())
