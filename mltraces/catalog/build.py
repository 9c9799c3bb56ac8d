"""Build a table: reuse its Parquet while it still vouches for its inputs, else convert.

:func:`materialize` computes the plan (cheap), reuses a conversion whose record
still vouches for it (same key, every input still the very file that was read,
Parquet size and footer intact) and otherwise converts under a per-file lock
(:mod:`.convert`, imported only then), then prunes what the new file supersedes
(:mod:`.upkeep`). A warm build stats files and reads two small JSON files; it
never hashes, locks or downloads.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from mltraces.catalog import store
from mltraces.catalog.plan import Plan, plan_for
from mltraces.catalog.problems import DriftProblem
from mltraces.catalog.readers import FileReader, reader_for
from mltraces.catalog.store import CONVERTER_VERSION, Built
from mltraces.errors import SchemaError
from mltraces.logs import get_logger
from mltraces.schema import TableSchema, get_schema

log = get_logger(__name__)

__all__ = ["CONVERTER_VERSION", "Built", "materialize"]


def _conversion_key(schema: TableSchema, keys: list[str]) -> str:
    text = "\n".join([f"converter={CONVERTER_VERSION}", f"schema={schema.digest}", *sorted(keys)])
    return hashlib.sha256(text.encode()).hexdigest()


def _file_reader(schema: TableSchema) -> FileReader:
    reader = reader_for(schema)
    if not isinstance(reader, FileReader):
        raise SchemaError(f"{schema.name} is provided by reader {schema.reader!r} of its source, "
                          "not converted by the catalog; query it through connect()")
    return reader


def materialize(schema: TableSchema | str, local: str | os.PathLike[str] | None = None, *,
                fetch: bool = True) -> Built:
    """Convert a table's inputs to Parquet once (reusing an earlier conversion).

    ``fetch=False`` never downloads: a table whose files are not cached raises
    :class:`~mltraces.catalog.problems.NotFetchedError`. Raises a
    :class:`~mltraces.errors.MltracesError` when the inputs cannot be fetched,
    are unsafe or do not match the schema (:class:`SchemaDriftError`).
    """
    if isinstance(schema, str):
        schema = get_schema(schema)
    reader = _file_reader(schema)
    plan = plan_for(schema, Path(local) if local is not None else None, fetch=fetch)
    target = store.target_path(schema.name, plan.kind, _conversion_key(schema, plan.keys))
    built = reuse(schema, target, plan)
    if built is not None:
        return built
    from filelock import FileLock  # only now: importing it costs more than a warm build

    from mltraces.catalog import convert, upkeep
    from mltraces.catalog.problems import disk_problem
    from mltraces.config import cache_dir
    from mltraces.containment import proven_folder

    try:
        proven_folder(cache_dir(), target.parent, "the tables folder", create=True)
        with FileLock(str(target) + ".lock"):
            built = reuse(schema, target, plan, quiet=True)  # another process finished it?
            if built is None:
                built = convert.convert_table(schema, reader, plan, target)
    except OSError as error:  # a read-only cache reads what it holds, and cannot convert
        raise disk_problem(schema.name, target.parent, error) or error from None
    upkeep.prune(schema.name)
    return built


def reuse(schema: TableSchema, target: Path, plan: Plan, *, quiet: bool = False
          ) -> Built | None:
    """The conversion at ``target`` when its record still vouches for it, else None."""
    record = store.read_record(target)
    if record is None:
        return None
    problem = store.damage(target, record)
    if problem is not None:
        if not quiet:
            log.warning("%s: %s; converting it again", schema.name, problem)
        return None
    if not store.inputs_current(record):
        return None
    warnings = tuple(DriftProblem(**w) for w in record.get("warnings", []))
    return Built(schema, target, plan.verified, plan.origin, int(record["rows"]),
                 tuple(record["inputs"]), warnings)
