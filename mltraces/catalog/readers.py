"""Readers, registered by name: how a table's input files become rows.

A schema names its reader (``"reader": "csv"`` in its ``mltraces`` block). The
name resolves to a built-in reader first (``csv``), then to the ``READERS`` dict
of the schema's own source folder, ``mltraces/sources/<source>/readers.py``,
imported the first time a table of that source needs it. A source that
publishes a new format (say, a wide throughput CSV that must be unpivoted)
adds a reader there and names it in its schemas; the catalog does not change.

The protocol (plain callables, like pooch's processors):

:class:`FileReader` converts the inputs to one Parquet file, which the catalog
caches, keys by the inputs' bytes, and serves as a view::

    convert(request: ReadRequest) -> Conversion

- Write ``request.out`` (Parquet): the schema's fields in schema order, as
  their DuckDB types, then ``_source`` (VARCHAR: the input's label) and
  ``_row`` (BIGINT: where the row is in that input, in the unit ``row_label``
  names: ``"line"``, the physical line of a text file, or ``"item"``, a 1-based
  position). ``mltraces validate`` cites ``<_source> <row_label> <_row>``.
- Raise :class:`~mltraces.catalog.problems.SchemaDriftError` listing every
  problem found (file, line, column, value); raise a
  :class:`~mltraces.catalog.problems.ConversionError` for failures of the machine
  (:func:`~mltraces.catalog.problems.disk_problem` classifies them).
- Return :class:`Conversion`: the row count and the problems that did not stop
  the build (an ignored extra column), which ``validate`` reports.
- Scratch files go to ``request.work`` (deleted afterwards); nothing else is written.
  Name files to DuckDB with :func:`~mltraces.schema.sql_path` when reading (it
  escapes glob characters: the cache may live in ``/data/[team]/``) and with
  :func:`~mltraces.schema.sql_literal` when writing (``COPY ... TO`` takes a path
  literally).

The catalog owns everything around it: which bytes are read (verified cache
or a literal local path), cache keys, locks, atomic renames, provenance and
pruning.

:class:`ViewReader` serves data a source manages itself (converted by its own
pipeline, too large for one Parquet file)::

    attach(con, schema, local) -> TableStatus   # create the view schema.qualified on con
    status(schema) -> TableStatus               # the same answer without a connection
    local_status(schema, local) -> TableStatus  # optional: a local override's, at once
                                                # (nothing converted, hashed or fetched)
    needs(schema) -> list[str]                  # optional: catalog tables the view reads
    attach_over(con, schema, local, members) -> TableStatus
                                                # optional: attach, given the needed
                                                # tables' conversions (table -> Built)
    prepare(schema, built) -> None              # optional: derive the view's own files
                                                # from one needed table's new conversion

The view has the schema's fields in order; the status row says whether there is
anything to read and, if not, how to get it. A view that reads other catalog
tables (``mltraces.jobs``, the union of every mapped job table) names them in
``needs``: ``connect()`` sets them up first, from the cache unless they were asked
for by name, and ``attach`` finds their state in ``mltraces.status``. With
``attach_over``, ``connect()`` also hands it the conversions those tables' views
read, so it can derive its own Parquet from exactly those files (:mod:`.parts`);
``prepare``, when given, derives it as soon as each of them is converted, beside the
other conversions (it must not raise: ``attach_over`` reports what failed).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from functools import cache
from typing import TYPE_CHECKING, ClassVar

from mltraces.catalog.protocol import (
    Conversion,
    FileReader,
    InputFile,
    Reader,
    ReadRequest,
    ViewReader,
)
from mltraces.errors import SchemaError

if TYPE_CHECKING:
    from mltraces.schema import TableSchema

__all__ = ["BUILTIN", "Conversion", "FileReader", "InputFile", "ReadRequest", "ViewReader",
           "reader_for", "reader_problem", "resolve"]


def _convert_csv(request: ReadRequest) -> Conversion:
    """The built-in CSV reader, loaded only to convert."""
    from mltraces.catalog.csv_reader import convert_csv

    return convert_csv(request)


class _BuiltinReaders(Mapping[str, "Reader"]):
    """Readers every source can name: ``csv`` (the CSV reader, loaded to convert) and those
    defined by their own module as ``READER`` (``jobs``: ``mltraces.jobs``, the union of
    the mapped job tables), imported when a table first names one (they follow the
    protocol above, so this module cannot import them up front).
    """

    CSV: ClassVar[FileReader] = FileReader("csv", _convert_csv, row_label="line")
    MODULES: ClassVar[dict[str, str]] = {"jobs": "mltraces.catalog.jobs",
                                         "requests": "mltraces.catalog.requests"}

    def __getitem__(self, name: str) -> Reader:
        if name == "csv":
            return self.CSV
        if name not in self.MODULES:
            raise KeyError(name)
        return _builtin(self.MODULES[name])

    def __iter__(self) -> Iterator[str]:
        return iter(["csv", *self.MODULES])

    def __len__(self) -> int:
        return 1 + len(self.MODULES)

    def __contains__(self, name: object) -> bool:  # no import to answer
        return name == "csv" or name in self.MODULES


@cache
def _builtin(module: str) -> Reader:
    return importlib.import_module(module).READER


#: Readers every source can name; a source folder's own ``READERS`` come after.
BUILTIN: Mapping[str, Reader] = _BuiltinReaders()


@cache
def source_readers(source: str) -> Mapping[str, Reader]:
    """``READERS`` of the source folder's ``readers.py`` (empty when it has none)."""
    from mltraces.registry import source_module

    module = source_module(source, "readers")
    if module is None:
        return {}
    readers = getattr(module, "READERS", None)
    if not isinstance(readers, Mapping) or not all(
            isinstance(r, FileReader | ViewReader) and r.name == n for n, r in readers.items()):
        raise SchemaError(f"{module.__name__}.READERS must map each name to a FileReader or "
                          "ViewReader carrying that name")
    return readers


def resolve(name: str, source: str) -> Reader:
    """The reader called ``name`` for a table of ``source``: built-in first, then the source's."""
    if name in BUILTIN:
        return BUILTIN[name]
    found = source_readers(source).get(name)
    if found is None:
        raise SchemaError(reader_problem(name, source) or f"unknown reader {name!r}")
    return found


def reader_problem(name: str, source: str) -> str | None:
    """Why ``name`` is not a usable reader for ``source`` (None when it is)."""
    if name in BUILTIN:
        return None
    own = source_readers(source)
    if name in own:
        return None
    choices = sorted({*BUILTIN, *own})
    return (f"reader {name!r} is neither built in nor in mltraces/sources/{source}/readers.py "
            f"READERS; choose from {', '.join(choices)}")


def reader_for(schema: TableSchema) -> Reader:
    """The reader a schema names; an unknown name is an error naming the schema file."""
    try:
        return resolve(schema.reader, schema.schema_name)
    except SchemaError as error:
        raise SchemaError(f"{schema.path or schema.name}: {error}") from None

