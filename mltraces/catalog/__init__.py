"""The SQL catalog: one DuckDB connection, a schema per source, a typed view per table.

``connect()`` turns verified upstream files into views whose columns and types
come from ``schemas/<source>/<table>.json`` (never sniffed). One module per job:

- :mod:`.selection`: which tables (names, source names, local overrides);
- :mod:`.plan`: what a table is built from (registry files or a literal local
  path), without network unless the table was asked for by name;
- :mod:`.readers`: readers registered by name (``csv`` built in, a source folder's
  own in ``mltraces/sources/<source>/readers.py``) and the protocol they follow;
- :mod:`.csv_reader`, :mod:`.text`: the CSV reader and the bounded text helpers;
- :mod:`.build`, :mod:`.convert`: reuse a Parquet file while it vouches for its
  inputs, else convert once, tied to the bytes it came from;
- :mod:`.store`, :mod:`.upkeep`: the Parquet cache (records, integrity, leases)
  and its upkeep (pruning, leftovers of killed runs, ``verify``);
- :mod:`.warm`: a verified table's reuse decision remembered, keyed by every file
  and the code it came from (a warm ``connect()`` loads neither registry nor downloads);
- :mod:`.views`, :mod:`.status`, :mod:`.connection`: view SQL, the
  ``mltraces.status`` view, ``connect()``;
- :mod:`.describe`: ``describe_table()``.

Conventions (documented in the README and the schemas):

- Times with an offset (AcmeTrace) are ``TIMESTAMPTZ``: absolute instants. The
  files mix ``+08:00`` (Seren) and ``+00:00`` (Kalos); every connection is set to
  ``TimeZone='UTC'`` so both render the same way on every machine.
- ITP times stay integer seconds on the timeline the ten clusters share.
- Derived conveniences (``gpu_hours``, ``energy_per_epoch``, ...) are declared in
  the schemas' ``derived`` lists and computed in the view.
- A table that cannot be built does not break ``connect()``: its view raises
  ``"<table> is unavailable: <reason>"`` when queried and ``mltraces.status``
  says why. Pass ``strict=True`` to raise at once instead.

>>> import mltraces
>>> con = mltraces.connect(tables=["itp.jobs"])                          # doctest: +SKIP
>>> con.sql("SELECT cluster, sum(gpu_hours) FROM itp.jobs GROUP BY ALL")  # doctest: +SKIP
"""

from __future__ import annotations

import importlib
from typing import Any

# public name -> submodule; loaded on first use, so ``mltraces sql`` imports only
# what a warm connect needs (not the CSV reader, the describer or the pruner)
_LAZY = {
    "CONVERTER_VERSION": "build", "Built": "build", "materialize": "build",
    "attach_table": "connection", "connect": "connection",
    "describe_table": "describe",
    "ConversionError": "problems", "DriftProblem": "problems", "NotFetchedError": "problems",
    "SchemaDriftError": "problems",
    "Conversion": "readers", "FileReader": "readers", "InputFile": "readers",
    "ReadRequest": "readers", "ViewReader": "readers", "reader_for": "readers",
    "is_view_table": "selection", "resolve_local": "selection", "select_schemas": "selection",
    "tables": "selection",
    "STATUS_TABLE": "status", "TableStatus": "status", "read_status": "status",
    "TABLES_DIR": "store",
    "ParquetCheck": "upkeep", "prune": "upkeep", "verify_tables": "upkeep",
    "comment_columns": "views",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    try:
        module = importlib.import_module(f"{__name__}.{_LAZY[name]}")
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
