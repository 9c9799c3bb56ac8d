"""AcmeTrace's own table readers, registered by name for ``schemas/acme/*.json``.

- ``util_pkl`` (:class:`~mltraces.catalog.FileReader`): the processed CDF curves
  of the 13 ``util_pkl`` pickles, read with the restricted unpickler, one row per
  (file, curve, point); ``_row`` counts the points of each file.
- ``acme_util`` (:class:`~mltraces.catalog.ViewReader`): ``acme.gpu_metrics`` and
  friends, views over the long-form Parquet that ``mltraces fetch acme-util``
  converts from the HuggingFace CSVs (:mod:`mltraces.sources.acme.util`), or,
  given ``--local``, over the user's own downloaded copy of those CSVs
  (:mod:`mltraces.sources.acme.util.local`).

The catalog finds them through ``READERS`` when a schema of this source names
them; nothing in the catalog knows about pickles or the Hub.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from mltraces.catalog.problems import DriftProblem, SchemaDriftError
from mltraces.catalog.protocol import Conversion, FileReader, ReadRequest, ViewReader
from mltraces.catalog.status import READY, UNAVAILABLE, TableStatus
from mltraces.errors import MltracesError, SchemaError

if TYPE_CHECKING:
    import duckdb

    from mltraces.schema import TableSchema

__all__ = ["READERS", "attach_util_view", "read_util_pkl", "util_status"]

# what to fetch for each view, as an example the user adapts (`mltraces list acme-util`)
_FETCH_EXAMPLE = {
    "gpu_metrics": "--cluster seren --metric GPU_UTIL",
    "node_metrics": "--cluster seren --metric NODE_CPU_UTILIZATION",
    "ipmi_power": "--cluster ipmi",
}


def _fetch_hint(table: str) -> str:
    command = f"mltraces fetch acme-util {_FETCH_EXAMPLE.get(table, '')}".rstrip()
    return (f"run `{command}` (choose clusters, metrics and months; "
            "`mltraces list acme-util` shows sizes)")


# --------------------------------------------------------------------------- util_pkl


def _curves(label: str, content: Any, curves: list[dict], problems: list[DriftProblem]
            ) -> list[tuple[Any, Any]] | None:
    """The (x, y) arrays of one pickle, or None after recording why they are unusable."""
    from mltraces.safepickle import PickledSeries

    arrays = [a.values if isinstance(a, PickledSeries) else a for a in content] \
        if isinstance(content, list | tuple) else None
    if arrays is None or len(arrays) != 2 * len(curves):
        found = "not a list" if arrays is None else f"{len(arrays)} arrays"
        problems.append(DriftProblem("malformed row", label, f"expected {2 * len(curves)} "
                                     f"arrays ({len(curves)} x/y curves), found {found}"))
        return None
    return [(arrays[2 * i], arrays[2 * i + 1]) for i in range(len(curves))]


def read_util_pkl(request: ReadRequest) -> Conversion:
    """Tidy the CDF curves of the util_pkl files: one row per (file, curve, point)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from mltraces.safepickle import safe_load

    schema = request.schema
    by_label = {i.label: i for i in request.inputs}
    columns: dict[str, list[Any]] = {name: [] for name in (*schema.field_names, "_source", "_row")}
    problems: list[DriftProblem] = []
    for spec in schema.sources:
        label = Path(spec.file).name
        item = by_label.get(label)
        if item is None:
            problems.append(DriftProblem("missing file", label, "file not found among the inputs"))
            continue
        curves = spec.extra.get("curves", [])
        pairs = _curves(label, safe_load(item.path), curves, problems)
        row = 0
        for position, (xs, ys) in enumerate(pairs or []):
            if not (isinstance(xs, np.ndarray) and isinstance(ys, np.ndarray)):
                kinds = f"{type(xs).__name__}/{type(ys).__name__}"
                problems.append(DriftProblem("malformed row", label, f"curve {position}: "
                                             f"x and y are {kinds}, not numpy arrays"))
                continue
            x = np.asarray(xs, dtype="float64")
            y = np.asarray(ys, dtype="float64")
            if x.ndim != 1 or x.shape != y.shape:
                problems.append(DriftProblem("malformed row", label,
                                             f"curve {position}: x and y shapes differ"))
                continue
            n = len(x)
            curve = curves[position]
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
    arrow_schema = pa.schema([(f.name, types[f.duckdb_type]) for f in schema.fields]
                             + [("_source", pa.string()), ("_row", pa.int64())])
    table = pa.table(columns, schema=arrow_schema)
    pq.write_table(table, request.out, compression="zstd")
    return Conversion(table.num_rows)


# --------------------------------------------------------------------------- acme_util


def _view(schema: TableSchema) -> Any:
    from mltraces.sources.acme.util.views import VIEWS

    view = next((v for v in VIEWS if v.table == schema.table_name), None)
    if view is None:
        raise SchemaError(f"mltraces.sources.acme.util provides no view {schema.table_name!r}")
    return view


def util_status(schema: TableSchema) -> TableStatus:
    """Whether any utilization data was converted for this table, without a connection."""
    from mltraces.sources.acme.util.layout import dataset_root
    from mltraces.sources.acme.util.views import months

    root = dataset_root()
    present = months(_view(schema), root)
    if not present:
        return TableStatus(schema.name, UNAVAILABLE, f"acme-util: {root}", 0,
                           f"nothing fetched yet (the view is empty): "
                           f"{_fetch_hint(schema.table_name)}")
    span = present[0] if len(present) == 1 else f"{present[0]} to {present[-1]}"
    return TableStatus(schema.name, READY, f"acme-util: {root} ({span})")


def attach_util_view(con: duckdb.DuckDBPyConnection, schema: TableSchema,
                     local: Path | None) -> TableStatus:
    """``acme.gpu_metrics`` and friends: views over the converted Hub Parquet.

    With ``local`` (a CSV, a folder of them or a downloaded dataset folder) the
    view serves those files instead, converted once into their own part of the
    cache (:mod:`mltraces.sources.acme.util.local`).
    """
    from mltraces.sources.acme.util.views import create_macros, months, view_sql

    view = _view(schema)
    create_macros(con)  # acme.floor_time(time, seconds): fast UTC buckets for these views
    if local is None:
        con.execute(f"CREATE OR REPLACE VIEW {schema.qualified} AS {view_sql(view)}")
        return util_status(schema)
    from mltraces.sources.acme.util.local import prepare

    data = prepare(view.table, local)
    con.execute(f"CREATE OR REPLACE VIEW {schema.qualified} AS {view_sql(view, data.root)}")
    return data.status(schema.name, months(view, data.root))


def util_local_status(schema: TableSchema, local: Path) -> TableStatus:
    """What ``attach_util_view`` would report for ``local``, without converting or hashing."""
    from mltraces.sources.acme.util.local import peek

    try:
        return peek(_view(schema).table, local).status(schema.name, None)
    except MltracesError as error:
        return TableStatus(schema.name, UNAVAILABLE, f"local: {local}", None, str(error))


READERS = {
    "util_pkl": FileReader("util_pkl", read_util_pkl, row_label="item"),
    "acme_util": ViewReader("acme_util", attach_util_view, util_status,
                            local_status=util_local_status),
}
