"""Alibaba PAI's own reader: its jobs with what their tasks asked for.

``pai_job_table`` says when a job was submitted and how it ended, but not what
it asked for: that is in ``pai_task_table``, per task role and **per instance**
(alibaba/clusterdata#129: a task with ``inst_num = 4`` and ``plan_gpu = 100``
asks for 4 GPUs). ``alibaba_pai.jobs`` joins the two, and the group and
workload tag of ``pai_group_tag_table``, once at conversion, so the common
``mltraces.jobs`` view, the scheduler and the figures read a job's GPUs from
one table. Each of the three headerless CSVs is read by the built-in ``csv``
reader with its own column names (the ``.header`` files) and typed checks; this
reader only joins them.

The join reads the three CSVs itself, the fast way, with every check of the
``csv`` reader and of the times' bounds made to fail the query. Only when it
fails is each CSV converted on its own into scratch Parquet and checked there,
which names every bad value, and joined from those.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from mltraces.catalog.buildcon import build_connection
from mltraces.catalog.csv_reader import convert_csv, fast_input
from mltraces.catalog.problems import DriftProblem, SchemaDriftError, disk_problem
from mltraces.catalog.protocol import (
    TABLE_PARQUET,
    Conversion,
    FileReader,
    InputFile,
    ReadRequest,
)
from mltraces.schema import Field, TableSchema, get_schema, quote_ident, sql_literal, sql_path

if TYPE_CHECKING:
    import duckdb

#: the columns pai_job_table publishes (the rest of alibaba_pai.jobs is derived)
JOB_COLUMNS = ("job_name", "inst_id", "user", "status", "start_time", "end_time")
#: input label prefix -> the part it is
PARTS = {"pai_job_table": "jobs", "pai_task_table": "tasks", "pai_group_tag_table": "tags"}

_JOIN = """
WITH tasks AS (
    SELECT job_name,
           count(*) AS num_tasks,
           sum(inst_num) AS num_instances,
           coalesce(sum(plan_gpu * inst_num), 0) / 100 AS num_gpu,
           sum(plan_cpu * inst_num) / 100 AS num_cpu,
           sum(plan_mem * inst_num) AS mem_gb,
           {gpu_types} AS gpu_type,
           min(start_time) FILTER (WHERE start_time > 0) AS first_task_start,
           max(end_time) FILTER (WHERE end_time > 0) AS last_task_end
    FROM {tasks} GROUP BY job_name
), tags AS (
    SELECT inst_id, any_value("group") AS "group", any_value(workload) AS workload,
           any_value(gpu_type_spec) AS gpu_type_spec
    FROM {tags} GROUP BY inst_id
)
SELECT {columns}, j._source, j._row
FROM {jobs} AS j
LEFT JOIN tasks AS t USING (job_name)
LEFT JOIN tags AS g ON g.inst_id = j.inst_id
{order}
"""


def _part_schema(schema: TableSchema, part: str) -> TableSchema:
    """The schema one input is read with: the published job columns, or its own table's."""
    if part == "tasks":
        return get_schema("alibaba_pai.tasks")
    if part == "tags":
        return get_schema("alibaba_pai.group_tags")
    fields = tuple(f for f in schema.fields if f.name in JOB_COLUMNS)
    return dataclasses.replace(schema, fields=fields, primary_key=(), checks=(), derived=())


def _parts(request: ReadRequest) -> dict[str, InputFile]:
    """Each input by the part it is (its label names its table)."""
    found: dict[str, InputFile] = {}
    for item in request.inputs:
        part = next((p for prefix, p in PARTS.items() if item.label.startswith(prefix)), None)
        if part is not None:
            found[part] = item
    missing = [prefix for prefix, part in PARTS.items() if part not in found]
    if missing:
        problems = [DriftProblem("missing file", ", ".join(i.label for i in request.inputs),
                                 f"no {prefix}.csv among the inputs") for prefix in missing]
        raise SchemaDriftError(request.schema.name, problems)
    return found


MAX_REPORTED = 200


def _bounded_times(schema: TableSchema) -> Iterator[tuple[Field, str]]:
    """Each time column with a bound (a second count on PAI's clock, 0 for unknown, up to
    2**32 - 1), and the SQL that is true of a value outside it. Such a value is no instant of
    the trace: kept, it would move the jobs view's origin for every job (-1e12) or fail every
    query that reads its instant (1e17), so the table is refused instead."""
    for f in schema.fields:
        low, high = f.constraints.get("minimum"), f.constraints.get("maximum")
        if f.unit != "s" or low is None or high is None:
            continue
        q = quote_ident(f.name)
        yield f, f"{q} IS NOT NULL AND (NOT isfinite({q}) OR {q} < {low} OR {q} > {high})"


def _time_problems(schema: TableSchema, parquet: Path) -> list[DriftProblem]:
    """Times outside their bounds (:func:`_bounded_times`), each named with its file, line
    and column."""
    import duckdb

    problems: list[DriftProblem] = []
    con = duckdb.connect()
    try:
        for f, outside in _bounded_times(schema):
            low, high = f.constraints["minimum"], f.constraints["maximum"]
            bad = con.execute(
                f"SELECT _source, _row, {quote_ident(f.name)} FROM read_parquet("
                f"{sql_path(parquet)}) WHERE {outside} ORDER BY _row LIMIT {MAX_REPORTED}"
            ).fetchall()
            problems += [DriftProblem("unparsable value", source, f"{value!r} s is no time of "
                                      f"the trace (from {low} to {high:,} s; 0: unknown)",
                                      f.name, int(row)) for source, row, value in bad]
    finally:
        con.close()
    return problems


def _checked_rows(schema: TableSchema, select: str) -> str:
    """``select``'s rows, failing on a time outside its bounds (:func:`_bounded_times`)."""
    checks = [f"CASE WHEN {outside} THEN error('mltraces: a time out of bounds') ELSE "
              f"{quote_ident(f.name)} END AS {quote_ident(f.name)}"
              for f, outside in _bounded_times(schema)]
    return f"(SELECT * REPLACE ({', '.join(checks)}) FROM ({select}))" if checks else \
        f"({select})"


#: a job's distinct GPU types (of its tasks that ask for GPUs), sorted, '|'-joined; NULL for
#: none (an ordered DISTINCT string_agg, the same, cost a fifth of the whole conversion)
_GPU_TYPES = """CASE WHEN len(list_distinct(list(gpu_type) FILTER (WHERE plan_gpu > 0))) > 0
                THEN array_to_string(list_sort(list_distinct(
                    list(gpu_type) FILTER (WHERE plan_gpu > 0))), '|') END"""
#: at most this many listed GPU types are named through a bit mask (a list of 2**N names)
MASKED_TYPES = 8


def _gpu_types_sql(listed: list[str]) -> str:
    """:data:`_GPU_TYPES` through the schema's listed types: a bit per type, OR-ed over a job's
    GPU tasks, indexes the list of every set's name. That halves the aggregation's CPU
    (0.43 s against 0.88 for PAI's 1.6 M tasks). A type not listed fails the query (the
    careful way then collects lists); without a short list, the lists are collected."""
    if not listed or len(listed) > MASKED_TYPES:
        return _GPU_TYPES
    ordered = sorted(set(listed))  # code point order: DuckDB's (UTF-8 bytes) order of text
    names = ["|".join(t for i, t in enumerate(ordered) if mask >> i & 1) or None
             for mask in range(2 ** len(ordered))]
    known = f"[{', '.join(sql_literal(t) for t in ordered)}]"
    bit = (f"CASE WHEN gpu_type IS NULL THEN NULL WHEN list_position({known}, gpu_type) IS NULL "
           "THEN error('mltraces: a GPU type not listed') "
           f"ELSE CAST(1 AS BIGINT) << (list_position({known}, gpu_type) - 1) END")
    every = f"[{', '.join('NULL' if n is None else sql_literal(n) for n in names)}]"
    return f"{every}[coalesce(bit_or({bit}) FILTER (WHERE plan_gpu > 0), 0) + 1]"


def _listed_gpu_types() -> list[str]:
    field = next(f for f in get_schema("alibaba_pai.tasks").fields if f.name == "gpu_type")
    return list(field.constraints.get("enum") or [])


def _join(schema: TableSchema, relations: dict[str, str], out: Path, work: Path,
          gpu_types: str = _GPU_TYPES) -> int:
    """Join the three parts' rows (each a relation: a checked SELECT or a scratch file) into
    ``out`` in the job table's order, with ``gpu_types`` for each job's GPU types; its rows.

    On one thread the joins keep the job table's order when it is read from its CSV, so the
    rows are written as they come and checked (0.08 CPU-s) rather than sorted (0.4 of PAI's
    join). Read from scratch Parquet they come out of order at a row group's end (a few rows
    held back by the hash joins), so where the check fails they are written again, sorted.
    """
    columns = ", ".join(f"j.{quote_ident(f.name)} AS {quote_ident(f.name)}"
                        if f.name in JOB_COLUMNS else quote_ident(f.name) for f in schema.fields)
    con = build_connection(work)
    try:
        for order in ("", "ORDER BY j._row"):
            query = _JOIN.format(columns=columns, gpu_types=gpu_types, order=order, **relations)
            con.execute(f"COPY ({query}) TO {sql_literal(str(out))} ({TABLE_PARQUET})")
            if order or _in_file_order(con, out):
                break
        rows = con.execute(f"SELECT count(*) FROM read_parquet({sql_path(out)})")
        return int(rows.fetchall()[0][0])
    finally:
        con.close()


def _in_file_order(con: duckdb.DuckDBPyConnection, parquet: Path) -> bool:
    """True when every row of ``parquet`` comes after the one before it in its file."""
    back = con.execute(
        f"SELECT count(*) FROM (SELECT _row <= lag(_row) OVER (ORDER BY file_row_number) AS "
        f"back FROM read_parquet({sql_path(parquet)}, file_row_number = true)) WHERE back"
    ).fetchall()[0][0]
    return int(back) == 0


def _fast(request: ReadRequest) -> tuple[Conversion | None, list[InputFile]]:
    """The join read straight from the CSVs; None when some check failed, with the inputs as
    plain files (archive members written out once) for the careful way."""
    import duckdb

    relations: dict[str, str] = {}
    plain: list[InputFile] = []
    warnings: list[DriftProblem] = []
    for part, item in _parts(request).items():
        work = request.work / f"fast-{part}"
        work.mkdir()
        part_schema = _part_schema(request.schema, part)
        prepared = fast_input(part_schema, item, work)
        plain.append(prepared.plain)
        warnings.extend(prepared.warnings)
        if prepared.select is not None:
            relations[part] = _checked_rows(part_schema, prepared.select)
    if len(relations) < len(PARTS):
        return None, plain
    try:
        rows = _join(request.schema, relations, request.out, request.work,
                     _gpu_types_sql(_listed_gpu_types()))
    except duckdb.OutOfMemoryException:
        raise  # the machine's limit, not a bad row: the caller may try again alone
    except duckdb.Error as error:
        disk = disk_problem(request.schema.name, request.out, error)
        if disk is not None:
            raise disk from None
        return None, plain  # a value a check refused: the careful way names it
    return Conversion(rows, tuple(warnings)), plain


def convert_jobs(request: ReadRequest) -> Conversion:
    """Join the job, task and group-tag CSVs, read with typed checks, into one Parquet: the
    fast way, else each CSV on its own into scratch Parquet, checked and named there."""
    try:
        done, plain = _fast(request)
    except SchemaDriftError:
        done, plain = None, list(request.inputs)  # the careful way names every problem
    if done is not None:
        return done
    request = request._replace(inputs=plain)
    schema = request.schema
    outputs: dict[str, Path] = {}
    warnings: list[DriftProblem] = []
    errors: list[DriftProblem] = []
    for part, item in _parts(request).items():
        work = request.work / part
        work.mkdir()
        outputs[part] = request.work / f"{part}.parquet"
        part_schema = _part_schema(schema, part)
        try:
            done = convert_csv(ReadRequest(part_schema, [item], outputs[part], work, scratch=True))
        except SchemaDriftError as error:
            errors.extend(error.problems)
            continue
        warnings.extend(done.warnings)
        errors.extend(_time_problems(part_schema, outputs[part]))
    if errors:
        raise SchemaDriftError(schema.name, errors)
    relations = {k: f"read_parquet({sql_path(v)})" for k, v in outputs.items()}
    return Conversion(_join(schema, relations, request.out, request.work), tuple(warnings))


READERS = {"pai_jobs": FileReader("pai_jobs", convert_jobs, row_label="line")}
