"""Which tables a call is about: names, source names and local-file overrides.

Only file names are read here (``schemas/<source>/<table>.json``), so commands
that merely resolve names stay fast; schemas are parsed when first needed.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from mltraces import config
from mltraces.errors import RegistryError
from mltraces.names import canonical
from mltraces.schema import BUILTIN_FILE_READERS, TableSchema, get_schema, schema_files

__all__ = ["is_view_table", "resolve_local", "select_schemas", "tables"]


def tables() -> list[str]:
    """Names of every catalog table (``source.table``), from the schema files.

    >>> "itp.jobs" in tables()
    True
    """
    return sorted(schema_files())


def select_schemas(names: str | Iterable[str] | None) -> list[TableSchema]:
    """Schemas for table names or source names (``"zeus"`` means every zeus table)."""
    known = tables()
    if names is None:
        return [get_schema(n) for n in known]
    if isinstance(names, str):
        names = [names]
    chosen: dict[str, None] = {}
    sources = sorted({n.split(".", 1)[0] for n in known})
    for name in map(canonical, names):
        raise_if_broken(name)  # a broken user folder's tables are named with its reason
        in_source = [n for n in known if n.split(".", 1)[0] == name]
        if not in_source and name not in known:
            raise KeyError(f"unknown table or source {name!r}; sources: {', '.join(sources)}; "
                           f"known tables: {', '.join(known)}")
        chosen.update(dict.fromkeys(in_source or [name]))
    return [get_schema(n) for n in chosen]


def raise_if_broken(name: str) -> None:
    """Raise why ``name``'s source is a broken user folder (what it lacks), if it is one.

    Only a name of a user's folder loads the registry: a warm query of shipped tables
    stays light."""
    source = name.split(".", 1)[0]
    if source not in {folder.name for folder in config.user_source_candidates()}:
        return
    from mltraces.registry import source_problem

    problem = source_problem(name)
    if problem is not None:
        raise RegistryError(problem)


def resolve_local(local: Mapping[str, str | os.PathLike[str]] | None = None) -> dict[str, Path]:
    """``MLTRACES_LOCAL`` overrides updated with ``local``; unknown table names raise.

    Paths are taken literally: ``trace[12].csv`` is that one file, never a pattern.
    """
    from mltraces.local_paths import check_local_path

    overrides = {canonical(k): v for k, v in config.local_tables().items()}
    overrides.update({canonical(k): Path(os.fsdecode(v)).expanduser()
                      for k, v in (local or {}).items()})
    known = schema_files()
    for name, path in overrides.items():
        if name not in known:
            raise KeyError(
                f"unknown table {name!r} in local overrides; "
                f"known tables: {', '.join(sorted(known))}"
            )
        check_local_path(name, path)  # before any of it is used: UTF-8, no pipe, no device
    return overrides


def is_view_table(schema: TableSchema) -> bool:
    """True when the table's reader provides its view over data it manages (no conversion).

    A CSV table is known to be converted without loading the readers (a warm query
    stays light).
    """
    if schema.reader in BUILTIN_FILE_READERS:
        return False
    from mltraces.catalog.readers import reader_for

    return reader_for(schema).kind == "view"
