"""What can go wrong building a table, as values: drift problems and the catalog's errors.

Readers raise :class:`SchemaDriftError` listing every way the inputs depart
from the schema (so ``mltraces validate`` reports them all at once);
:class:`NotFetchedError` says a table was not asked for and its files are not
cached (no network was touched); :class:`ConversionError` is a failure of the
machine, not the data (disk full, cache not writable), so it is never reported
as a bad row.
"""

from __future__ import annotations

import errno
from typing import NamedTuple

from mltraces.errors import FetchError, MltracesError, SchemaError

__all__ = ["ConversionError", "DriftProblem", "NotFetchedError", "SchemaDriftError",
           "disk_problem"]


class DriftProblem(NamedTuple):
    """One way an input file departs from its schema (for reports and messages)."""

    kind: str  # "empty file", "not UTF-8", "missing column", "extra column", "renamed column",
    # "unparsable value", "malformed row", "missing file", "NUL character"
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


class NotFetchedError(FetchError):
    """A table nobody asked for by name has files that are not cached (nothing was fetched)."""


class ConversionError(MltracesError):
    """Converting a table failed for a reason outside the data (disk full, no permission)."""


def disk_problem(table: str, where: object, error: BaseException) -> ConversionError | None:
    """A one-line :class:`ConversionError` when ``error`` is the disk's fault, else None.

    Covers Python's ``OSError`` (xz staging, pyarrow) and DuckDB's IO errors, whose
    text carries the OS message ("No space left on device").
    """
    code = getattr(error, "errno", None)
    text = str(error)
    if code == errno.ENOSPC or "No space left on device" in text:
        cause = "the disk is full"
        fix = "free some space there, or point MLTRACES_CACHE at a larger disk"
    elif code in (errno.EACCES, errno.EROFS) or "Permission denied" in text \
            or "Read-only file system" in text:
        cause = "the cache is not writable"
        fix = "fix its permissions, or point MLTRACES_CACHE at a writable folder"
    else:
        return None
    return ConversionError(f"{table}: could not write the converted table to {where}: {cause} "
                           f"({text.splitlines()[0][:200]}); {fix}")
