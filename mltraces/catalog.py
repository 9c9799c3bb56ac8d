"""The SQL catalog: one DuckDB connection, a schema per source, a typed view per table.

``connect()`` turns verified upstream files into views whose columns and types
come from ``schemas/<source>/<table>.json`` (never sniffed). Each table's inputs are converted
once to Parquet in the cache, under a name keyed by the inputs' verified sha256
(or, for local files, their path, size and mtime), the schema's own hash and
the converter version, so a schema change or a new upstream file makes a new
conversion and warm connects only open Parquet files. Conversions are written
to a temporary file and renamed into place: a failed one leaves nothing behind.

Conventions (documented in the README and the schemas):

- Times with an offset (AcmeTrace) are ``TIMESTAMPTZ``: absolute instants. The
  files mix ``+08:00`` (Seren) and ``+00:00`` (Kalos); every connection is set to
  ``TimeZone='UTC'`` so both render the same way on every machine.
- ITP times stay integer seconds from each cluster's trace start.
- Derived conveniences (``gpu_hours``, ``energy_per_epoch``, ...) are declared in
  the schemas' ``derived`` lists and computed in the view.
- A table whose files cannot be obtained (offline, not downloadable, malformed)
  does not break ``connect()``: a warning is logged and its view raises the
  reason when queried. Pass ``strict=True`` to raise at once instead.

Markers other modules may rely on: querying an unavailable view raises an error
whose message contains ``"<table> is unavailable: <reason>"``; the comment of a
view built from user-supplied files (``duckdb_views().comment``) contains
``"UNVERIFIED"``.

>>> import mltraces
>>> con = mltraces.connect(tables=["itp.jobs"])                          # doctest: +SKIP
>>> con.sql("SELECT cluster, sum(gpu_hours) FROM itp.jobs GROUP BY ALL")  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import csv
import fnmatch
import hashlib
import json
import logging
import lzma
import os
import shutil
import tarfile
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mltraces import config
from mltraces.errors import MltracesError, SchemaError
from mltraces.schema import (
    MEMBER_STEM,
    SourceSpec,
    TableSchema,
    all_schemas,
    get_schema,
    quote_ident,
    sql_literal,
)

if TYPE_CHECKING:
    import duckdb

log = logging.getLogger(__name__)

CONVERTER_VERSION = 1
TABLES_DIR = "tables"
_XZ_MAGIC = b"\xfd7zXZ\x00"
_MAX_REPORTED = 200

__all__ = [
    "Built",
    "DriftProblem",
    "SchemaDriftError",
    "connect",
    "describe_table",
    "materialize",
    "resolve_local",
    "select_schemas",
    "tables",
]


# --------------------------------------------------------------------------- errors


@dataclass(frozen=True)
class DriftProblem:
    """One way an input file departs from its schema (for reports and messages)."""

    kind: str  # "empty file", "missing column", "extra column", "renamed column",
    # "unparsable value", "malformed row", "missing file"
    file: str
    message: str
    column: str | None = None
    line: int | None = None

    def __str__(self) -> str:
        where = self.file + (f" line {self.line}" if self.line is not None else "")
        where += f", column {self.column}" if self.column else ""
        return f"{where}: {self.message}"


class SchemaDriftError(SchemaError):
    """Input files do not match the table's schema; ``problems`` lists each mismatch."""

    def __init__(self, table: str, problems: list[DriftProblem]) -> None:
        self.table = table
        self.problems = problems
        shown = "; ".join(str(p) for p in problems[:3])
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        super().__init__(
            f"{table}: input does not match its schema: {shown}{more}. "
            f"Run `mltraces validate {table}` for the full report"
        )


# --------------------------------------------------------------------------- table names


def tables() -> list[str]:
    """Names of every catalog table (``source.table``), from the schema files.

    >>> "itp.jobs" in tables()
    True
    """
    return sorted(all_schemas())


def select_schemas(names: str | Iterable[str] | None) -> list[TableSchema]:
    """Schemas for table names or source names (``"zeus"`` means every zeus table)."""
    schemas = all_schemas()
    if names is None:
        return [schemas[n] for n in sorted(schemas)]
    if isinstance(names, str):
        names = [names]
    chosen: dict[str, TableSchema] = {}
    sources = sorted({s.schema_name for s in schemas.values()})
    for name in names:
        in_source = [s for n, s in sorted(schemas.items()) if s.schema_name == name]
        if not in_source and name not in schemas:
            raise KeyError(f"unknown table or source {name!r}; sources: {', '.join(sources)}; "
                           f"known tables: {', '.join(sorted(schemas))}")
        for schema in in_source or [schemas[name]]:
            chosen[schema.name] = schema
    return list(chosen.values())


def resolve_local(local: Mapping[str, str | os.PathLike[str]] | None = None) -> dict[str, Path]:
    """``MLTRACES_LOCAL`` overrides updated with ``local``; unknown table names raise."""
    overrides = config.local_tables()
    overrides.update({k: Path(v).expanduser() for k, v in (local or {}).items()})
    known = all_schemas()
    for name in overrides:
        if name not in known:
            raise KeyError(
                f"unknown table {name!r} in local overrides; "
                f"known tables: {', '.join(sorted(known))}"
            )
    return overrides


# --------------------------------------------------------------------------- inputs


@dataclass(frozen=True)
class InputFile:
    """One concrete file to read, with the constant columns it contributes."""

    label: str
    path: Path
    columns: dict[str, str] = field(default_factory=dict)


@dataclass
class Plan:
    """What a table would be built from: cheap to compute, heavy work deferred."""

    keys: list[str]  # identity and version of each input: change -> new conversion
    identity: list[str]  # which inputs, regardless of version: same -> older ones are stale
    verified: bool
    origin: str
    load: Callable[[], list[InputFile]]


def _expand_columns(spec: SourceSpec, member: str) -> dict[str, str]:
    stem = Path(member).name.split(".", 1)[0]
    return {k: v.replace(MEMBER_STEM, stem) for k, v in spec.columns.items()}


def _registry_file(schema: TableSchema, file_id: str) -> Any:
    from mltraces.registry import get_file

    try:
        return get_file(file_id)
    except KeyError as error:
        raise SchemaError(f"{schema.name}: schema names unknown file {file_id!r}") from error


def _pick_members(schema: TableSchema, spec: SourceSpec, members: Mapping[str, Path],
                  where: str) -> list[InputFile]:
    chosen = sorted(n for n in members if fnmatch.fnmatch(Path(n).name, spec.members or ""))
    if not chosen:
        has = ", ".join(sorted(members))
        problem = DriftProblem("missing file", where,
                               f"no member matches {spec.members!r} (has: {has})")
        raise SchemaDriftError(schema.name, [problem])
    return [InputFile(Path(n).name, members[n], _expand_columns(spec, n)) for n in chosen]


def _registry_plan(schema: TableSchema) -> Plan:
    """Inputs from the verified cache (fetched now when missing, unless offline)."""
    from mltraces.download import fetch_file, fetch_members, verified_hash

    files = {spec.file: _registry_file(schema, spec.file) for spec in schema.sources}
    keys = [f"{fid}={verified_hash(f)}" for fid, f in files.items()]

    def load() -> list[InputFile]:
        inputs: list[InputFile] = []
        for spec in schema.sources:
            remote = files[spec.file]
            if spec.members:
                inputs.extend(_pick_members(schema, spec, fetch_members(remote), remote.filename))
            else:
                inputs.append(InputFile(remote.filename, fetch_file(remote), dict(spec.columns)))
        return inputs

    return Plan(keys, sorted(files), verified=True, origin="upstream", load=load)


def _stat_key(path: Path) -> str:
    stat = path.stat()
    return f"{_identity(path)}:{stat.st_size}:{stat.st_mtime_ns}"


def _identity(path: Path) -> str:
    return f"local:{path.resolve()}"


def _local_dir_inputs(schema: TableSchema, folder: Path) -> list[InputFile]:
    names = {p.name: p for p in folder.iterdir() if p.is_file()}
    inputs: list[InputFile] = []
    missing: list[DriftProblem] = []
    for spec in schema.sources:
        if spec.members:
            try:
                inputs.extend(_pick_members(schema, spec, names, str(folder)))
            except SchemaDriftError as error:
                missing.extend(error.problems)
            continue
        filename = _registry_file(schema, spec.file).filename
        candidates = [filename, filename.removesuffix(".xz")]
        found = next((names[c] for c in candidates if c in names), None)
        if found is None:
            missing.append(DriftProblem("missing file", str(folder), f"no file named {filename}"))
        else:
            inputs.append(InputFile(found.name, found, dict(spec.columns)))
    if missing:
        raise SchemaDriftError(schema.name, missing)
    return inputs


def _local_file_inputs(schema: TableSchema, path: Path) -> Callable[[], list[InputFile]]:
    if len(schema.sources) != 1:
        names = ", ".join(_registry_file(schema, s.file).filename for s in schema.sources)
        raise SchemaError(
            f"{schema.name} reads {len(schema.sources)} files ({names}); give a directory "
            f"holding them instead of the single file {path}"
        )
    spec = schema.sources[0]
    if spec.members and tarfile.is_tarfile(path):
        def load() -> list[InputFile]:
            from mltraces.archives import extract_verified

            digest = hashlib.sha256(_stat_key(path).encode()).hexdigest()[:16]
            target = config.cache_dir() / "local-extracted" / f"{path.name}-{digest}"
            return _pick_members(schema, spec, extract_verified(path, target), path.name)
        return load
    columns = _expand_columns(spec, path.name) if spec.members else dict(spec.columns)
    return lambda: [InputFile(path.name, path, columns)]


def _local_plan(schema: TableSchema, path: Path) -> Plan:
    """Inputs from a user-supplied file or folder: checked against the schema, not hashed."""
    if not path.exists():
        raise SchemaError(f"local file for {schema.name} not found: {path}")
    path = path.resolve()
    if path.is_dir():
        inputs = _local_dir_inputs(schema, path)
        keys = [_stat_key(i.path) for i in inputs]
        load: Callable[[], list[InputFile]] = lambda: inputs  # noqa: E731
    else:
        keys = [_stat_key(path)]
        load = _local_file_inputs(schema, path)
    return Plan(keys, [_identity(path)], verified=False, origin=f"local: {path}", load=load)


# --------------------------------------------------------------------------- conversion


@dataclass(frozen=True)
class Built:
    """A table converted to Parquet, ready for a view."""

    schema: TableSchema
    parquet: Path
    verified: bool
    origin: str
    rows: int
    inputs: tuple[str, ...]
    warnings: tuple[DriftProblem, ...] = ()


def _conversion_key(schema: TableSchema, keys: list[str]) -> str:
    text = "\n".join([f"converter={CONVERTER_VERSION}", f"schema={schema.digest}", *sorted(keys)])
    return hashlib.sha256(text.encode()).hexdigest()


def _target(schema: TableSchema, origin_kind: str, key: str) -> Path:
    return config.cache_dir() / TABLES_DIR / f"{schema.name}-{origin_kind}-{key[:24]}.parquet"


def _sidecar(target: Path) -> Path:
    return target.with_name(target.name + ".json")


def _load_built(schema: TableSchema, target: Path, plan: Plan) -> Built | None:
    try:
        meta = json.loads(_sidecar(target).read_text())
    except (OSError, ValueError):
        return None
    if not target.is_file():
        return None
    warnings = tuple(DriftProblem(**w) for w in meta.get("warnings", []))
    return Built(schema, target, plan.verified, plan.origin, int(meta["rows"]),
                 tuple(meta["inputs"]), warnings)


def _remove_stale(target: Path, identity: list[str]) -> None:
    """Delete older conversions of the same inputs (same table, same files or paths).

    Conversions of *other* inputs of the table (say, two local copies used by two
    notebooks) are kept: another process may have a view on them.
    """
    prefix = target.name.rsplit("-", 1)[0] + "-"
    for sidecar in target.parent.glob(prefix + "*.parquet.json"):
        parquet = sidecar.with_name(sidecar.name.removesuffix(".json"))
        if parquet == target:
            continue
        try:
            same = json.loads(sidecar.read_text()).get("identity") == identity
        except (OSError, ValueError):
            same = False
        if same:
            for path in (parquet, sidecar, parquet.with_name(parquet.name + ".lock")):
                with contextlib.suppress(OSError):
                    path.unlink()


def materialize(schema: TableSchema | str, local: str | os.PathLike[str] | None = None) -> Built:
    """Convert a table's inputs to Parquet once (reusing an earlier conversion).

    Raises a :class:`~mltraces.errors.MltracesError` when the inputs cannot be
    fetched, are unsafe or do not match the schema (:class:`SchemaDriftError`).
    """
    from filelock import FileLock

    if isinstance(schema, str):
        schema = get_schema(schema)
    if schema.external:
        raise SchemaError(f"{schema.name} is provided by reader {schema.reader!r}, not converted "
                          "by the catalog; query it through connect()")
    plan = _local_plan(schema, Path(local)) if local is not None else _registry_plan(schema)
    origin_kind = "upstream" if plan.verified else "local"
    target = _target(schema, origin_kind, _conversion_key(schema, plan.keys))
    built = _load_built(schema, target, plan)
    if built is not None:
        return built
    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target) + ".lock"):
        built = _load_built(schema, target, plan)
        if built is None:
            built = _convert(schema, plan, target)
    _remove_stale(target, plan.identity)
    return built


def _convert(schema: TableSchema, plan: Plan, target: Path) -> Built:
    inputs = plan.load()
    tmp = target.with_name(f"{target.name}.tmp-{os.getpid()}")
    staging = Path(tempfile.mkdtemp(prefix="convert-", dir=target.parent))
    started = time.perf_counter()
    try:
        reader = _READERS[schema.reader]
        rows, warnings = reader(schema, inputs, tmp, staging)
        meta = {
            "table": schema.name,
            "origin": plan.origin,
            "verified": plan.verified,
            "rows": rows,
            "inputs": [i.label for i in inputs],
            "input_keys": plan.keys,
            "identity": plan.identity,
            "schema_sha256": schema.digest,
            "converter": CONVERTER_VERSION,
            "warnings": [w.__dict__ for w in warnings],
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        side_tmp = _sidecar(tmp)
        side_tmp.write_text(json.dumps(meta, indent=1))
        os.replace(side_tmp, _sidecar(target))
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
        _sidecar(tmp).unlink(missing_ok=True)
        shutil.rmtree(staging, ignore_errors=True)
    log.info("converted %s (%d rows) in %.1f s", schema.name, rows, time.perf_counter() - started)
    for warning in warnings:
        log.warning("%s: schema drift: %s", schema.name, warning)
    return Built(schema, target, plan.verified, plan.origin, rows,
                 tuple(i.label for i in inputs), tuple(warnings))


# --------------------------------------------------------------------------- CSV reader


def _plain_csv(item: InputFile, staging: Path) -> Path:
    """The input as an uncompressed file (xz is decompressed into the staging folder)."""
    with item.path.open("rb") as handle:
        magic = handle.read(len(_XZ_MAGIC))
    if magic != _XZ_MAGIC:
        return item.path
    out = staging / (item.path.name.removesuffix(".xz") + f".{os.getpid()}.csv")
    try:
        with lzma.open(item.path) as source, out.open("wb") as sink:
            shutil.copyfileobj(source, sink, 1 << 20)
    except lzma.LZMAError as error:
        raise SchemaDriftError("", [DriftProblem("unparsable value", item.label,
                                                 f"not a readable xz stream ({error})")]) from error
    return out


def read_header(path: Path, label: str) -> list[str]:
    """Column names on the first line; an empty file raises a drift error."""
    with path.open("r", encoding="utf-8-sig", newline="") as handle:
        first = handle.readline()
    if not first.strip():
        message = "the file is empty: expected a header line with the column names"
        raise SchemaDriftError("", [DriftProblem("empty file", label, message)])
    return [name.strip() for name in next(csv.reader([first]))]


def header_drift(schema: TableSchema, header: list[str], label: str
                 ) -> tuple[list[DriftProblem], list[DriftProblem]]:
    """Compare a file header with the schema: (errors, warnings).

    Missing columns are errors; extra columns are warnings (ignored by the
    view); a missing and an extra column at the same position read as a rename.
    """
    expected = [f.name for f in schema.file_fields]
    missing = [c for c in expected if c not in header]
    extra = [c for c in header if c not in expected]
    errors: list[DriftProblem] = []
    renamed: set[str] = set()
    for column in missing:
        position = expected.index(column)
        candidate = header[position] if position < len(header) else None
        if candidate in extra:
            renamed.add(candidate)
            message = f"column {column!r} appears renamed to {candidate!r}"
            errors.append(DriftProblem("renamed column", label, message, column))
        else:
            message = f"column {column!r} is missing (header: {', '.join(header)})"
            errors.append(DriftProblem("missing column", label, message, column))
    if len(set(header)) != len(header):
        message = "the header repeats a column name"
        errors.append(DriftProblem("malformed row", label, message, None, 1))
    warnings = [DriftProblem("extra column", label, f"unexpected column {c!r} is ignored", c)
                for c in extra if c not in renamed]
    return errors, warnings


def _csv_options(schema: TableSchema, header: list[str]) -> str:
    types = {f.name: f.duckdb_type for f in schema.file_fields}
    columns = ", ".join(f"{sql_literal(c)}: {sql_literal(types.get(c, 'VARCHAR'))}" for c in header)
    nulls = ", ".join(sql_literal(v) for v in schema.missing_values) or "''"
    return (f"header = true, auto_detect = false, delim = ',', quote = '\"', escape = '\"', "
            f"columns = {{{columns}}}, nullstr = [{nulls}], strict_mode = true")


def _csv_select(schema: TableSchema, item: InputFile, path: Path, header: list[str]) -> str:
    parts = []
    for f in schema.fields:
        if f.name in item.columns:
            value = sql_literal(item.columns[f.name])
            parts.append(f"CAST({value} AS {f.duckdb_type}) AS {quote_ident(f.name)}")
        else:
            parts.append(quote_ident(f.name))
    parts.append(f"{sql_literal(item.label)} AS _source")
    parts.append("row_number() OVER () AS _row")
    scan = f"read_csv({sql_literal(str(path))}, {_csv_options(schema, header)})"
    return f"SELECT {', '.join(parts)} FROM {scan}"


def _reject_problems(con: duckdb.DuckDBPyConnection, schema: TableSchema, item: InputFile,
                     path: Path, header: list[str]) -> list[DriftProblem]:
    """Every unparsable value or malformed row of one file, via DuckDB's reject tables."""
    scan = (f"read_csv({sql_literal(str(path))}, {_csv_options(schema, header)}, "
            f"store_rejects = true, rejects_limit = {_MAX_REPORTED})")
    con.execute(f"CREATE OR REPLACE TEMP TABLE _probe AS SELECT * FROM {scan}")
    con.execute("DROP TABLE _probe")
    rows = con.execute(
        "SELECT line, column_name, error_type, error_message FROM reject_errors "
        "ORDER BY line LIMIT ?", [_MAX_REPORTED]).fetchall()
    con.execute("DROP TABLE IF EXISTS reject_errors")
    con.execute("DROP TABLE IF EXISTS reject_scans")
    problems = []
    for line, column, kind, message in rows:
        is_value = kind == "CAST"
        problems.append(DriftProblem("unparsable value" if is_value else "malformed row",
                                     item.label, message.strip(), column if is_value else None,
                                     int(line)))
    return problems


def _read_csv_tables(schema: TableSchema, inputs: list[InputFile], tmp: Path, staging: Path
                     ) -> tuple[int, list[DriftProblem]]:
    import duckdb

    errors: list[DriftProblem] = []
    warnings: list[DriftProblem] = []
    selects: list[tuple[InputFile, Path, list[str]]] = []
    for item in inputs:
        try:
            path = _plain_csv(item, staging)
            header = read_header(path, item.label)
        except SchemaDriftError as error:
            errors.extend(error.problems)
            continue
        bad, odd = header_drift(schema, header, item.label)
        errors.extend(bad)
        warnings.extend(odd)
        if not bad:
            selects.append((item, path, header))
    if errors:
        raise SchemaDriftError(schema.name, errors)
    con = duckdb.connect()
    try:
        con.execute("SET TimeZone = 'UTC'")
        union = " UNION ALL BY NAME ".join(_csv_select(schema, *s) for s in selects)
        columns = ", ".join(quote_ident(n) for n in (*schema.field_names, "_source", "_row"))
        query = f"SELECT {columns} FROM ({union})"
        try:
            con.execute(f"COPY ({query}) TO {sql_literal(str(tmp))} "
                        "(FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 122880)")
        except duckdb.Error as error:
            problems = [p for s in selects for p in _reject_problems(con, schema, *s)]
            if not problems:
                problems = [DriftProblem("malformed row", ", ".join(i.label for i in inputs),
                                         str(error).splitlines()[0])]
            raise SchemaDriftError(schema.name, problems) from None
        rows = con.execute(f"SELECT count(*) FROM read_parquet({sql_literal(str(tmp))})").fetchall()
    finally:
        con.close()
    return int(rows[0][0]), warnings


# --------------------------------------------------------------------------- util_pkl reader


def _read_util_pkl(schema: TableSchema, inputs: list[InputFile], tmp: Path, staging: Path
                   ) -> tuple[int, list[DriftProblem]]:
    """Tidy the CDF curves of the util_pkl files: one row per (file, curve, point)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from mltraces.safepickle import PickledSeries, safe_load

    by_label = {i.label: i for i in inputs}
    columns: dict[str, list[Any]] = {name: [] for name in (*schema.field_names, "_source", "_row")}
    problems: list[DriftProblem] = []
    for spec in schema.sources:
        label = Path(spec.file).name
        item = by_label.get(label)
        if item is None:
            problems.append(DriftProblem("missing file", label, "file not found among the inputs"))
            continue
        curves = spec.extra.get("curves", [])
        content = safe_load(item.path)
        arrays = [a.values if isinstance(a, PickledSeries) else a for a in content] \
            if isinstance(content, list | tuple) else None
        if arrays is None or len(arrays) != 2 * len(curves):
            found = "not a list" if arrays is None else f"{len(arrays)} arrays"
            problems.append(DriftProblem(
                "malformed row", label, f"expected {2 * len(curves)} arrays "
                f"({len(curves)} x/y curves), found {found}"))
            continue
        row = 0
        for position, curve in enumerate(curves):
            x = np.asarray(arrays[2 * position], dtype="float64")
            y = np.asarray(arrays[2 * position + 1], dtype="float64")
            if x.ndim != 1 or x.shape != y.shape:
                problems.append(DriftProblem("malformed row", label,
                                             f"curve {position}: x and y shapes differ"))
                continue
            n = len(x)
            constant = {"source_file": label, "cluster": spec.extra.get("cluster"),
                        "metric": curve["metric"], "series": curve["series"],
                        "unit": curve.get("unit"), "curve": position, "_source": label}
            for name, value in constant.items():
                columns[name].extend([value] * n)
            columns["point"].extend(range(n))
            columns["x"].extend(x.tolist())
            columns["y"].extend(y.tolist())
            columns["_row"].extend(range(row + 1, row + n + 1))
            row += n
    if problems:
        raise SchemaDriftError(schema.name, problems)
    types = {"VARCHAR": pa.string(), "BIGINT": pa.int64(), "DOUBLE": pa.float64()}
    arrow_schema = pa.schema(
        [(f.name, types[f.duckdb_type]) for f in schema.fields]
        + [("_source", pa.string()), ("_row", pa.int64())]
    )
    table = pa.table(columns, schema=arrow_schema)
    pq.write_table(table, tmp, compression="zstd")
    return table.num_rows, []


_READERS: dict[str, Callable[..., tuple[int, list[DriftProblem]]]] = {
    "csv": _read_csv_tables,
    "util_pkl": _read_util_pkl,
}


# --------------------------------------------------------------------------- external readers


def _attach_acme_util(con: duckdb.DuckDBPyConnection, schema: TableSchema,
                      local: Path | None) -> None:
    """``acme.gpu_metrics`` and friends: views over the Parquet of :mod:`.datasets.acme.util`."""
    from mltraces.datasets.acme.util.views import VIEWS, create_macros, view_sql

    if local is not None:
        raise SchemaError(f"{schema.name} has no local-file override: convert the raw CSVs with "
                          "mltraces.datasets.acme.util (`mltraces fetch acme-util`) instead")
    view = next((v for v in VIEWS if v.table == schema.table_name), None)
    if view is None:
        raise SchemaError(f"mltraces.datasets.acme.util provides no view {schema.table_name!r}")
    create_macros(con)  # acme.floor_time(time, seconds): fast UTC buckets for these views
    con.execute(f"CREATE OR REPLACE VIEW {schema.qualified} AS {view_sql(view)}")


# Reader name -> function(con, schema, local) creating the table's view; for data a
# module manages itself (converted elsewhere, too large for one Parquet file).
EXTERNAL_READERS: dict[str, Callable[[Any, TableSchema, Path | None], None]] = {
    "acme_util": _attach_acme_util,
}


# --------------------------------------------------------------------------- views


def _view_sql(built: Built) -> str:
    schema = built.schema
    parts = [f"CAST({quote_ident(f.name)} AS {f.duckdb_type}) AS {quote_ident(f.name)}"
             for f in schema.fields]
    parts += [f"CAST(({d.sql}) AS {d.duckdb_type}) AS {quote_ident(d.name)}"
              for d in schema.derived]
    return (f"CREATE OR REPLACE VIEW {schema.qualified} AS SELECT {', '.join(parts)} "
            f"FROM read_parquet({sql_literal(str(built.parquet))})")


def _unavailable_sql(schema: TableSchema, reason: str) -> str:
    parts = [f"CAST(NULL AS {f.duckdb_type}) AS {quote_ident(f.name)}" for f in schema.fields]
    parts += [f"CAST(NULL AS {d.duckdb_type}) AS {quote_ident(d.name)}" for d in schema.derived]
    message = f"mltraces: table {schema.name} is unavailable: {reason}"
    return (f"CREATE OR REPLACE VIEW {schema.qualified} AS SELECT {', '.join(parts)} "
            f"WHERE error({sql_literal(message)}) IS NULL")


def _column_comment(description: str, unit: str | None) -> str:
    return f"{description} [{unit}]" if unit else description


def _comment(con: duckdb.DuckDBPyConnection, schema: TableSchema, status: str) -> None:
    title = sql_literal(f"{schema.title} ({status})")
    con.execute(f"COMMENT ON VIEW {schema.qualified} IS {title}")
    for item in (*schema.fields, *schema.derived):
        text = _column_comment(item.description, item.unit)
        con.execute(f"COMMENT ON COLUMN {schema.qualified}.{quote_ident(item.name)} "
                    f"IS {sql_literal(text)}")


def connect(
    tables: str | Iterable[str] | None = None,
    local: Mapping[str, str | os.PathLike[str]] | None = None,
    *,
    strict: bool = False,
    database: str = ":memory:",
) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with one schema per source and one typed view per table.

    Parameters
    ----------
    tables
        Table names (``"itp.jobs"``) or source names (``"zeus"``) to set up;
        None means every table. Only their files are fetched or read.
    local
        ``{table: path}`` of user-supplied files in the upstream format (a file,
        a ``.tar.gz`` for archive tables, or a folder holding the upstream file
        names); merged over ``MLTRACES_LOCAL``. Validated against the schema,
        but not hash-pinned: such tables are marked unverified.
    strict
        Raise on the first table that cannot be built instead of leaving a view
        that raises the reason when queried.
    database
        DuckDB database to open (default in memory).

    Examples
    --------
    >>> con = connect(tables=["itp.jobs"])                           # doctest: +SKIP
    >>> con.sql("SELECT count(*), sum(gpu_hours) FROM itp.jobs")     # doctest: +SKIP
    """
    import duckdb

    schemas = select_schemas(tables)
    overrides = resolve_local(local)
    con = duckdb.connect(database)
    try:
        con.execute("SET TimeZone = 'UTC'")
        for name in dict.fromkeys(s.schema_name for s in schemas):
            con.execute(f"CREATE SCHEMA IF NOT EXISTS {quote_ident(name)}")
        for schema in schemas:
            _attach(con, schema, overrides.get(schema.name), strict)
    except BaseException:
        con.close()
        raise
    return con


def _attach(con: duckdb.DuckDBPyConnection, schema: TableSchema, local: Path | None,
            strict: bool) -> None:
    """Create one table's view, or a view that explains why it is unavailable."""
    try:
        if schema.external:
            EXTERNAL_READERS[schema.reader](con, schema, local)
            _comment(con, schema, f"provided by reader {schema.reader}")
            return
        built = materialize(schema, local)
    except MltracesError as error:
        if strict:
            raise
        log.warning("%s is unavailable: %s", schema.name, error)
        con.execute(_unavailable_sql(schema, str(error)))
        _comment(con, schema, f"unavailable: {error}")
        return
    con.execute(_view_sql(built))
    status = "verified upstream files" if built.verified else f"UNVERIFIED {built.origin}"
    _comment(con, schema, status)


# --------------------------------------------------------------------------- describe


def _constraint_text(constraints: Mapping[str, Any]) -> str:
    parts = []
    if constraints.get("required"):
        parts.append("required")
    if constraints.get("unique"):
        parts.append("unique")
    if "minimum" in constraints:
        parts.append(f">= {constraints['minimum']}")
    if "maximum" in constraints:
        parts.append(f"<= {constraints['maximum']}")
    if "enum" in constraints:
        values = [str(v) for v in constraints["enum"]]
        shown = ", ".join(values)
        if len(shown) > 60:
            shown = shown[:56].rsplit(", ", 1)[0] + ", ..."
        parts.append(f"one of {{{shown}}}")
    if "pattern" in constraints:
        parts.append(f"matches {constraints['pattern']}")
    return "; ".join(parts)


def _column_rows(schema: TableSchema) -> list[tuple[str, str, str, str, str]]:
    rows = [(f.name, f.duckdb_type, f.unit or "", _constraint_text(f.constraints), f.description)
            for f in schema.fields]
    rows += [(d.name, d.duckdb_type, d.unit or "", f"= {d.sql}", d.description)
             for d in schema.derived]
    return rows


def _format_columns(rows: list[tuple[str, ...]]) -> list[str]:
    header = ("column", "type", "unit", "constraints", "description")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(4)]
    lines = []
    for row in [header, *rows]:
        cells = [row[i].ljust(widths[i]) for i in range(4)]
        lines.append("  " + "  ".join(cells) + "  " + row[4])
    return lines


def _built_status(built: Built) -> str:
    origin = " (verified)" if built.verified else f" (UNVERIFIED {built.origin})"
    return f"{built.rows:,} rows from " + ", ".join(built.inputs) + origin


def _external_status(schema: TableSchema) -> str:
    con = connect(tables=[schema.name], strict=True)
    try:
        rows = con.execute(f"SELECT count(*) FROM {schema.qualified}").fetchall()[0][0]
    finally:
        con.close()
    return f"{rows:,} rows (provided by reader {schema.reader})"


def describe_table(name: str, local: Mapping[str, str | os.PathLike[str]] | None = None) -> str:
    """A readable description of a table: schema, units, constraints, source and row count.

    Builds the table if needed (fetching its files unless offline) to count rows.
    """
    schema = get_schema(name)
    overrides = resolve_local(local)
    try:
        status = _external_status(schema) if schema.external else _built_status(
            materialize(schema, overrides.get(name)))
    except MltracesError as error:
        status = f"unavailable: {error}"
    lines = [f"{schema.name}: {schema.title}", "", textwrap.fill(schema.description, 100), "",
             textwrap.fill(f"Source files: {', '.join(schema.file_ids)}", 100,
                           subsequent_indent="  "),
             textwrap.fill(f"Status: {status}", 100, subsequent_indent="  ")]
    if schema.primary_key:
        lines.append(f"Primary key: ({', '.join(schema.primary_key)})")
    lines += ["", "Columns:", *_format_columns(_column_rows(schema))]
    if schema.checks:
        lines += ["", "Checks:"]
        lines += [f"  {c.name} [{c.severity}]: {c.description}" for c in schema.checks]
    if schema.notes:
        lines += ["", "Notes:"]
        lines += [textwrap.fill(n, 100, initial_indent="  - ", subsequent_indent="    ")
                  for n in schema.notes]
    lines += ["", f"Schema file: schemas/{schema.schema_name}/{schema.table_name}.json "
              "(Frictionless Table Schema)"]
    return "\n".join(lines)
