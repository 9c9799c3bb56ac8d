"""ServeGen's own reader: the per-client probability tables of ``chunk-N-dataset.json``.

Each file becomes rows ``(client, window_start, quantity, value, probability)``, one per
listed value of each table (:mod:`.tables` parses them as data, bounded, never
evaluated). The windows (``chunk-N-trace.csv``) need no reader of their own: the
built-in CSV reader reads them headerless, the client from each source's columns.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mltraces.catalog.problems import DriftProblem, SchemaDriftError
from mltraces.catalog.protocol import Conversion, FileReader, InputFile, ReadRequest
from mltraces.sources.servegen.tables import TableError, Window, read_dataset

MAX_REPORTED = 200


def _quantities(request: ReadRequest) -> frozenset[str]:
    """The tables a file may hold: the ``quantity`` column's enum in the schema."""
    return frozenset(request.schema.field("quantity").constraints.get("enum", ()))


def _columns(item: InputFile, windows: list[Window]) -> dict[str, Any]:
    """One file's rows as arrays (``_row``: the row's position in the file, from 1)."""
    starts, names, values, probabilities = [], [], [], []
    for window in windows:
        for name, (value, probability) in window.tables.items():
            starts.append(np.full(value.size, window.start, dtype=np.int64))
            names += [name] * value.size
            values.append(value)
            probabilities.append(probability)
    rows = len(names)
    return {"client": np.full(rows, int(item.columns["client"]), dtype=np.int64),
            "window_start": np.concatenate(starts) if starts else np.empty(0, np.int64),
            "quantity": names,
            "value": np.concatenate(values) if values else np.empty(0),
            "probability": np.concatenate(probabilities) if probabilities else np.empty(0),
            "_source": [item.label] * rows, "_row": np.arange(1, rows + 1, dtype=np.int64)}


def convert_lengths(request: ReadRequest) -> Conversion:
    """Every input's tables, long form, into one Parquet file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    names = [*request.schema.field_names, "_source", "_row"]
    if set(names) != {"client", "window_start", "quantity", "value", "probability", "_source",
                      "_row"}:
        raise SchemaDriftError(request.schema.name, [DriftProblem(
            "missing column", request.schema.name, "the servegen_lengths reader writes client, "
            "window_start, quantity, value, probability")])
    quantities = _quantities(request)
    problems: list[DriftProblem] = []
    writer = None
    rows = 0
    try:
        for item in request.inputs:
            try:
                windows = read_dataset(item.path, item.label, quantities)
            except TableError as error:
                problems.append(DriftProblem("unparsable value", item.label, str(error)))
                if len(problems) >= MAX_REPORTED:
                    break
                continue
            if problems:
                continue  # nothing more is written once a file is refused
            columns = _columns(item, windows)
            table = pa.table({n: columns[n] for n in names})
            if writer is None:
                writer = pq.ParquetWriter(request.out, table.schema, compression="zstd")
            writer.write_table(table)
            rows += table.num_rows
    finally:
        if writer is not None:
            writer.close()
    if problems:
        raise SchemaDriftError(request.schema.name, problems)
    if writer is None:
        raise SchemaDriftError(request.schema.name, [DriftProblem(
            "empty file", request.schema.name, "no dataset file to read")])
    return Conversion(rows)


READERS = {"servegen_lengths": FileReader("servegen_lengths", convert_lengths, row_label="item")}
