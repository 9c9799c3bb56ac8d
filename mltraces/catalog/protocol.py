"""The reader protocol: what a reader gets (:class:`ReadRequest`) and gives back.

Plain records, like pooch's processor signature: a :class:`FileReader` converts a
:class:`ReadRequest` (the schema, its :class:`InputFile` inputs, where to write) into
Parquet and returns a :class:`Conversion`; a :class:`ViewReader` attaches a view over
data it manages. :mod:`.readers` resolves a schema's reader by name; every reader,
built in (:mod:`.csv_reader`) or a source folder's own (``readers.py``), imports these
records from here, so no reader imports the registry that finds it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from mltraces.catalog.problems import DriftProblem
    from mltraces.catalog.status import TableStatus
    from mltraces.schema import TableSchema

__all__ = ["SCRATCH_PARQUET", "TABLE_PARQUET", "Conversion", "FileReader", "InputFile",
           "ReadRequest", "Reader", "ViewReader"]

#: DuckDB's ``COPY`` options for a converted table, in Parquet v2's encodings (Helios's 3.4 M
#: jobs 45 MB against 61 in v1 with zstd, a grouping query over them 0.088 s against 0.106).
#: snappy, not zstd: a third less CPU to write (Helios's table 1.17 CPU-s against 1.68, PAI's
#: jobs 0.73 against 1.28) and as quick to read, for files a quarter to three quarters larger
#: (56 MB against 45, 88 against 50): the first build is what a user waits for
TABLE_PARQUET = "FORMAT parquet, COMPRESSION snappy, PARQUET_VERSION v2, ROW_GROUP_SIZE 122880"
#: ... and for an intermediate (:attr:`ReadRequest.scratch`): read once, so not compressed
SCRATCH_PARQUET = "FORMAT parquet, COMPRESSION uncompressed, ROW_GROUP_SIZE 122880"


# Records are NamedTuples: immutable, and cheap to define (a frozen dataclass costs a
# millisecond of start-up each, and every process that connects defines these).


class InputFile(NamedTuple):
    """One concrete file to read, with the constant columns it contributes.

    ``member`` names a member of the archive at ``path`` that is read as a stream
    (:meth:`open`), held to ``limits`` (:class:`mltraces.download.archives.Limits`);
    ``header`` is a file whose one line names the columns of a headerless CSV.
    """

    label: str
    path: Path
    columns: Mapping[str, str]
    member: str | None = None
    limits: Any = None
    header: Path | None = None

    @contextmanager
    def open(self) -> Iterator[IO[bytes]]:
        """The input's bytes: the file itself, or its archive member read as a stream.

        A member the archive lacks is a ``missing file`` drift problem naming it.
        """
        if self.member is None:
            with self.path.open("rb") as handle:
                yield handle
            return
        from mltraces.catalog.problems import DriftProblem, SchemaDriftError
        from mltraces.download.archives import MissingMemberError, open_member

        try:
            with open_member(self.path, self.member, self.limits) as stream:
                yield stream
        except MissingMemberError as error:
            raise SchemaDriftError("", [DriftProblem("missing file", self.label, str(error))]
                                   ) from None


class ReadRequest(NamedTuple):
    """Everything a :class:`FileReader` gets: what to read, where to write, scratch space.

    ``scratch``: ``out`` is an intermediate another reader reads once and removes (a part
    of a joined table), so it is written uncompressed: zstd took a third of the CPU of
    converting PAI's three CSVs, for a file that lives a few seconds.
    """

    schema: TableSchema
    inputs: list[InputFile]
    out: Path
    work: Path
    scratch: bool = False


class Conversion(NamedTuple):
    """What a :class:`FileReader` reports back."""

    rows: int
    warnings: tuple[DriftProblem, ...] = ()


class FileReader(NamedTuple):
    """A reader whose output the catalog converts once and caches as Parquet."""

    name: str
    convert: Callable[[ReadRequest], Conversion]
    row_label: str = "item"  # "line" (physical line of a text file) or "item"
    kind: str = "file"


class ViewReader(NamedTuple):
    """A reader that creates the table's view itself, over data it manages."""

    name: str
    attach: Callable[[Any, TableSchema, Path | None], TableStatus]
    status: Callable[[TableSchema], TableStatus]
    kind: str = "view"
    local_status: Callable[[TableSchema, Path], TableStatus] | None = None
    needs: Callable[[TableSchema], list[str]] | None = None
    attach_over: Callable[[Any, TableSchema, Path | None, Mapping[str, Any]], TableStatus
                          ] | None = None
    prepare: Callable[[TableSchema, Any], None] | None = None


Reader = FileReader | ViewReader
