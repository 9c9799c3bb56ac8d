"""Writing result rows for the verbs that print tables: CSV, JSON records or aligned text.

Rows are plain Python values (column names plus one tuple per row), so a verb
never needs pandas to print: DuckDB's ``fetchall()``, numpy's ``tolist()`` and
``frame_rows()`` all give them.
"""

from __future__ import annotations

import csv
import io
import json
import math
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from mltraces.outputs import Output

#: Rows to print: column names and one tuple per row.
Rows = tuple[list[str], list[tuple]]


def frame_rows(frame: pd.DataFrame) -> Rows:
    """A pandas frame as column names and plain-Python row tuples (JSON needs Python types)."""
    return list(frame.columns), [tuple(row) for row in frame.to_dict("split")["data"]]


def render_rows(columns: Sequence[str], rows: Sequence[Sequence[Any]], fmt: str) -> str:
    """Rows as CSV, JSON records (NaN and infinities as null) or an aligned table."""
    if fmt == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows([_csv_value(v) for v in row] for row in rows)
        return buffer.getvalue()
    if fmt == "json":
        records = [dict(zip(columns, map(_json_value, row), strict=True)) for row in rows]
        return json.dumps(records, indent=1) + "\n"
    return aligned([str(c) for c in columns], [[cell(v) for v in row] for row in rows])


def checked_output(path: str | None) -> Output | None:
    """The ``-o`` target, checked before the work (None: standard output)."""
    if not path:
        return None
    from mltraces.outputs import prepare

    return prepare(path)


def write_text(text: str, output: Output | None, *, quiet: bool = False) -> None:
    """``text`` to the checked ``output`` (whole or not at all), or to standard output."""
    if output is None:
        sys.stdout.write(text)
        return
    output.write_text(text)
    output.done(quiet)


#: A readable subset of a table's columns: (column, heading, scale or None).
View = Sequence[tuple[str, str, "float | None"]]


def view_table(columns: Sequence[str], rows: Sequence[Sequence[Any]], view: View) -> str:
    """The ``view`` columns of ``rows``, scaled (to MJ, hours, ...) and aligned."""
    index = {name: k for k, name in enumerate(columns)}
    cells = [[cell(_scaled(row[index[c]], scale)) for c, _, scale in view] for row in rows]
    return aligned([heading for _, heading, _ in view], cells)


def _scaled(value: Any, scale: float | None) -> Any:
    return value * scale if scale is not None and isinstance(value, int | float) else value


def aligned(header: Sequence[str], cells: Sequence[Sequence[str]]) -> str:
    """Columns padded to their widest cell: text left-aligned, numbers right-aligned."""
    widths = [max([len(h), *(len(row[k]) for row in cells)]) for k, h in enumerate(header)]
    numeric = [bool(cells) and all(_is_number(row[k]) for row in cells)
               for k in range(len(header))]

    def line(values: Sequence[str]) -> str:
        return "  ".join(v.rjust(w) if n else v.ljust(w)
                         for v, w, n in zip(values, widths, numeric, strict=True)).rstrip()

    return "".join(line(row) + "\n" for row in [header, *cells])


def cell(value: Any) -> str:
    """One value for a text table: 4 significant digits, thousands separators when large."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1e5 else f"{value:,.0f}"
    return str(value)


def _is_number(text: str) -> bool:
    try:
        float(text.replace(",", ""))
    except ValueError:
        return text == "-"
    return True


def _csv_value(value: Any) -> Any:
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else value


def _json_value(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
