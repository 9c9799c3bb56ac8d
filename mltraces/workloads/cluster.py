"""Scheduling inputs from the catalog: job traces by id, cluster specs, throughput profiles.

A *trace id* is ``<source>/<name>``. Every mapped job table (its source's
``jobs.json``, :mod:`mltraces.jobmap`) names the replays it offers in
``replay``: a literal name is the whole table (``elasticflow/philly``), a name with
``{cluster}`` one replay per cluster (``itp/cluster10`` is ``itp.elasticflow_jobs``
whose cluster is ``cluster10``). The jobs are read through the same mapping as
``mltraces.jobs``: submission, run time, GPUs, and ElasticFlow's model, batch
size, iterations and deadline where the trace has them (else duration-only jobs).
Nothing here lists sources: a new source with a mapped job table is schedulable
the moment its folder exists.

The cluster a replay runs on is the one asked for, else the one Fig. 8(b) gives
the trace, else the trace's own capacity (``capacity`` in its mapping: a GPU
count, or an aggregate over a table of its source such as a machine list).
Cluster specs come from ``elasticflow.cluster_specs`` (the artifact's files, so
``n1g2`` is the 2 x 1 GPUs its file holds) or from the name ``n<nodes>g<GPUs>``,
and throughputs from ``elasticflow.throughputs``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from mltraces.scheduling.cluster import ClusterSpec
from mltraces.scheduling.errors import SchedulingError
from mltraces.scheduling.profiles import Profiles

if TYPE_CHECKING:
    import duckdb

    from mltraces.jobmap import Replay

CLUSTER_TABLE = "elasticflow.cluster_specs"
THROUGHPUT_TABLE = "elasticflow.throughputs"


def resolve(trace_id: str) -> Replay:
    """The mapped table (and slice of it) behind ``trace_id``; the error lists the known ids."""
    from mltraces.jobmap import resolve_replay

    try:
        return resolve_replay(trace_id)
    except KeyError as error:
        raise SchedulingError(error.args[0]) from None


def canonical_id(trace_id: str) -> str:
    """``trace_id`` as the jobs view names it (``itp/cluster10`` -> ``itp/elasticflow/cluster10``,
    ``philly/all`` -> ``philly/jobs``); the error lists the known ids."""
    from mltraces.jobmap import canonical_id as named

    try:
        return named(trace_id)
    except KeyError as error:
        raise SchedulingError(error.args[0]) from None


def tables_for(trace_ids: Iterable[str], *, throughputs: bool | None = None,
               specs: bool = True) -> list[str]:
    """The catalog tables a run over ``trace_ids`` reads: what to pass to ``connect()``.

    The artifact's throughput profiles only when a trace names models (``throughputs``
    None: decided from the mappings); its cluster specs unless ``specs`` is false (every
    cluster built from a trace's capacity).
    """
    replays = [resolve(trace) for trace in trace_ids]
    tables = {t for replay in replays for t in replay.entry.tables}
    if throughputs is None:
        throughputs = any("model" in replay.entry.columns for replay in replays)
    return sorted(tables | ({CLUSTER_TABLE} if specs else set())
                  | ({THROUGHPUT_TABLE} if throughputs else set()))


def trace_ids(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Every replayable trace id, ``{cluster}`` names expanded from the data on ``con`` (a
    table that is not available there shows as ``source/{cluster}``)."""
    from mltraces.jobmap import expand_replays

    return [trace_id for trace_id, _ in expand_replays(con)]


def load_jobs(con: duckdb.DuckDBPyConnection, trace_id: str, **options: Any) -> Any:
    """The jobs of ``trace_id`` (a :class:`~mltraces.scheduling.jobs.Jobs` table).

    Read through the trace's mapping, in the table's row order. Jobs without a
    GPU (unless ``include_cpu_jobs=True``) or without known work (still running)
    are left out; see :func:`~mltraces.scheduling.jobs.from_common`.
    """
    from mltraces.jobmap import table_select_sql
    from mltraces.scheduling.jobs import BEST_EFFORT, COMMON, from_common
    from mltraces.schema import quote_ident

    replay = resolve(trace_id)
    relative = replay.entry.kind == "relative"
    query = f"SELECT * FROM ({table_select_sql(replay.entry, absolute=not relative)})"
    if replay.where:
        query += " WHERE " + " AND ".join(f"{quote_ident(c)} = ?" for c in replay.where)
    columns = ", ".join(quote_ident(c) for c in (*COMMON, BEST_EFFORT))
    # through Arrow: DuckDB's own DataFrame export of time zones trips a pandas 3 deprecation
    frame = con.sql(f"SELECT {columns} FROM ({query})", params=list(replay.where.values())
                    ).to_arrow_table().to_pandas()
    if frame.empty:
        where = " and ".join(f"{c} = {v!r}" for c, v in replay.where.items())
        raise SchedulingError(f"trace {trace_id!r} has no jobs in {replay.entry.table}"
                              + (f" (no {where})" if where else ""))
    return from_common(frame, clock=not relative, **options)


def default_cluster(con: duckdb.DuckDBPyConnection, trace_id: str) -> str:
    """The cluster spec name a replay of ``trace_id`` gets from the trace's own capacity.

    ``ceil(gpus / gpus_per_node)`` nodes of ``gpus_per_node`` GPUs (``n286g8``); an
    error when the mapping declares no capacity.
    """
    from mltraces.jobmap import capacity_sql, table_select_sql

    replay = resolve(trace_id)
    capacity = replay.entry.capacity
    if capacity is None:
        raise SchedulingError(f"{trace_id} declares no capacity (capacity in its source's "
                              "jobs.json): give the cluster, e.g. n16g8")
    if isinstance(capacity.gpus, int):
        gpus: float = capacity.gpus
    else:
        table, aggregate, column = capacity_sql(replay.entry)  # checked before it is used
        if column is None:
            gpus = con.execute(f"SELECT {aggregate} FROM {table}").fetchall()[0][0]
        else:
            clusters = replay.where.get("cluster")
            chosen = [clusters] if clusters else [c for (c,) in con.execute(
                f"SELECT DISTINCT cluster FROM ({table_select_sql(replay.entry)})").fetchall()]
            per_cluster = dict(con.execute(f"SELECT {column}, {aggregate} FROM {table} "
                                           "GROUP BY 1").fetchall())
            gpus = sum(per_cluster.get(c) or 0 for c in chosen)
    if not gpus or gpus < 1:
        raise SchedulingError(f"{trace_id}: its capacity ({capacity.table}: {capacity.gpus}) "
                              "gives no GPUs; give a cluster with --cluster")
    nodes = math.ceil(gpus / capacity.gpus_per_node)
    return f"n{nodes}g{capacity.gpus_per_node}"


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


def case(con: duckdb.DuckDBPyConnection, trace_id: str, cluster: str | ClusterSpec, *,
         gpu_type: str = "A100", label: str | None = None, **options: Any) -> Any:
    """One :class:`~mltraces.scheduling.api.Case` read from the catalog.

    ``cluster`` is a spec name (the artifact's spec files first) or a spec; the
    throughput profiles are read only when the trace's jobs name models.
    """
    from mltraces.scheduling.api import Case

    jobs = load_jobs(con, trace_id)
    spec = cluster if isinstance(cluster, ClusterSpec) else load_cluster(con, cluster)
    profiles = None
    if (jobs.frame["model"] != "").any():
        profiles = _profiles_if_any(con, gpu_type)
        jobs, missing = jobs.by_duration_unless_profiled(set(profiles.curves) if profiles
                                                         else set())
        if missing:
            _say_by_duration(trace_id, missing, gpu_type, profiles is not None)
        if not (jobs.frame["model"] != "").any():
            profiles = None
    return Case.build(label or trace_id, jobs, spec, profiles, **options)


def _profiles_if_any(con: duckdb.DuckDBPyConnection, gpu_type: str) -> Profiles | None:
    """The ``gpu_type`` profiles, or None when the catalog cannot serve them (not fetched)."""
    import duckdb

    try:
        return load_profiles(con, gpu_type)
    except (duckdb.Error, SchedulingError):
        return None


def _say_by_duration(trace_id: str, models: tuple[str, ...], gpu_type: str,
                     have_profiles: bool) -> None:
    """Warn once that ``trace_id``'s jobs of ``models`` replay by their run time."""
    import warnings

    from mltraces.errors import ByDurationWarning

    shown = ", ".join(models[:5]) + (f" and {len(models) - 5} more" if len(models) > 5 else "")
    why = (f"{THROUGHPUT_TABLE} has no {gpu_type} profile for them" if have_profiles else
           f"{THROUGHPUT_TABLE} is not available (`mltraces fetch elasticflow` brings it)")
    warnings.warn(f"{trace_id}: the jobs of models {shown} replay by their run time: {why}; "
                  "policies that scale jobs (edf, elasticflow) need a profile for every job",
                  ByDurationWarning, stacklevel=3)


def capacity_cluster(con: duckdb.DuckDBPyConnection, trace_id: str) -> ClusterSpec:
    """The cluster of the trace's own capacity, built from its name (no spec file)."""
    return ClusterSpec.from_name(default_cluster(con, trace_id))
