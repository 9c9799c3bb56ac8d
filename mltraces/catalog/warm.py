"""Warm builds remembered: a verified table's reuse decision, served while its inputs stand.

A warm :func:`~mltraces.catalog.build.materialize` of a registry table re-derives the
same answer every time from the registry, the download stamps and the conversion
record, and importing that machinery is most of a warm ``mltraces sql`` (~15 ms).
Once a build has been reused, :func:`remember` saves the answer in
``<cache>/tables/.warm/<table>.json`` together with what it was derived from, keyed
the way the cache keys everything by its inputs:

- the schema's digest and the code that decides (each ``.py`` of the package, the
  catalog, the downloads and the table's source folder, by name, size and mtime);
- the identity (size, mtime_ns, ctime_ns, inode) of every file the decision read:
  the Parquet and its record, the inputs the record stamps, each downloaded file and
  its download stamp, the record of a first-use pin (a file no publisher hash pins:
  Azure's 2024 weeks), and every ``source.json`` / ``citation.bib`` (the pins);
- the resolved folder of each download and of the cache root (no symlink swapped in).

:func:`recall` serves the answer only while all of these are unchanged; anything
else (a file replaced, pruned or re-verified, an upgrade, a registry override in
tests) falls back to the full path, which saves the new answer. Local files
(``--local``) are never remembered: their plans are cheap and unverified anyway.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mltraces.atomic import write_text_atomic
from mltraces.catalog import store

if TYPE_CHECKING:
    from mltraces.schema import TableSchema

__all__ = ["code_version", "recall", "remember", "warm_path"]

#: Bump when the record's layout or meaning changes, so old records are never read.
VERSION = 2
#: the origins of a verified download the full path gives (:func:`.plan.plan_for`)
_ORIGINS = ("upstream", "upstream, first-use pinned")
WARM_DIR = ".warm"
_PACKAGE = Path(__file__).resolve().parents[1]


def warm_path(table: str) -> Path:
    """Where the remembered build of ``table`` lives."""
    return store.tables_dir() / WARM_DIR / f"{table}.json"


def code_version(source: str) -> str:
    """Digest of the code that decides a reuse: changed code never trusts an old answer."""
    digest = hashlib.sha256()
    for folder in (_PACKAGE, _PACKAGE / "catalog", _PACKAGE / "download",
                   _PACKAGE / "sources" / source):
        with contextlib.suppress(OSError), os.scandir(folder) as entries:
            for entry in sorted(entries, key=lambda e: e.name):
                if entry.name.endswith(".py"):
                    stat = entry.stat()
                    digest.update(f"{entry.path}:{stat.st_size}:{stat.st_mtime_ns}\0".encode())
    return digest.hexdigest()[:32]


def _identity(path: str) -> list[int] | None:
    """What changes whenever a file is written, replaced or removed (as in input stamps)."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return [stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino]


def _overridden() -> bool:
    """True while tests replace the registry: the pins are not the files' then."""
    registry = sys.modules.get("mltraces.registry")  # not imported: nothing overrides it
    return registry is not None and getattr(registry, "_override", None) is not None


def _key(schema: TableSchema) -> dict[str, Any]:
    return {"version": VERSION, "table": schema.name, "schema": schema.digest,
            "cache": str(store.tables_dir()), "code": code_version(schema.schema_name)}


def recall(schema: TableSchema) -> store.Built | None:
    """The remembered build of ``schema`` while everything it came from is unchanged."""
    if _overridden():
        return None
    try:
        record = json.loads(warm_path(schema.name).read_text())
        if record["key"] != _key(schema):
            return None
        if any(_identity(path) != stamp for path, stamp in record["files"]):
            return None
        if any(os.path.realpath(path) != real for path, real in record["folders"]):
            return None
        if not _in_tables_dir(record["built"]["parquet"]):
            return None
        return _built(schema, record["built"])
    except (OSError, ValueError, RecursionError, KeyError, TypeError):
        return None


def _in_tables_dir(parquet: str) -> bool:
    """A record is a file anyone with the cache can edit: the table it names must be a
    Parquet file of the catalog's own folder (after links), as the full path makes them."""
    root = os.path.realpath(store.tables_dir())
    real = os.path.realpath(parquet)
    return real.endswith(".parquet") and os.path.commonpath([real, root]) == root


def _built(schema: TableSchema, saved: dict[str, Any]) -> store.Built:
    warnings: tuple = ()
    if saved["warnings"]:
        from mltraces.catalog.problems import DriftProblem

        warnings = tuple(DriftProblem(**w) for w in saved["warnings"])
    origin = saved["origin"] if saved["origin"] in _ORIGINS else _ORIGINS[0]
    return store.Built(schema, Path(saved["parquet"]), True, origin, int(saved["rows"]),
                       tuple(saved["inputs"]), warnings)


def remember(built: store.Built) -> None:
    """Save a verified build for :func:`recall`, if it holds still while being checked.

    The files' identities are taken, the reuse checks run again, and the identities
    taken once more: only an answer checked on exactly the recorded files is saved.
    A cache that cannot be written just stays on the full path.
    """
    from mltraces.catalog.build import materialize
    from mltraces.errors import MltracesError, UnsafePathError

    if _overridden() or not built.verified or built.origin not in _ORIGINS:
        return  # a user's pinned local file: checked again on each build, never recalled
    try:
        files, folders = _derived_from(built)
        before = [_identity(p) for p in files]
        if None in before or materialize(built.schema, fetch=False) != built:
            return
        if [_identity(p) for p in files] != before:
            return
        _write(built, list(zip(files, before, strict=True)), folders)
    except UnsafePathError as error:  # say so: the user has a link to remove
        from mltraces.logs import get_logger

        get_logger(__name__).warning("not remembering %s: %s", built.schema.name, error)
    except (OSError, MltracesError, KeyError):
        return


def _derived_from(built: store.Built) -> tuple[list[str], list[tuple[str, str]]]:
    """Every file the reuse decision of ``built`` reads, and the folders it proves safe."""
    from mltraces import registry
    from mltraces.download.paths import cache_root, local_path, stamp_path

    record = store.read_record(built.parquet) or {}
    files = [built.parquet, store.record_path(built.parquet)]
    files += [Path(s["path"]) for s in record.get("stamps", [])]
    folders = [cache_root()]
    for file_id in built.schema.file_ids:
        remote = registry.get_file(file_id)
        download = local_path(remote)
        files += [download, stamp_path(download)]
        folders.append(download.parent)
        if remote.first_use:  # what its bytes are held to
            from mltraces.download.firstuse import record_path

            files.append(record_path(remote))
    files.append(registry.SOURCES_DIR)  # a source folder added or removed
    for source in registry.source_folders():
        files += [source / registry.SOURCE_FILE, source / registry.CITATION_FILE]
    unique = list(dict.fromkeys(str(p) for p in files))  # record stamps name the downloads too
    return unique, [(str(f), os.path.realpath(f)) for f in dict.fromkeys(folders)]


def _write(built: store.Built, files: list[tuple[str, list[int] | None]],
           folders: list[tuple[str, str]]) -> None:
    saved = {"parquet": str(built.parquet), "rows": built.rows, "inputs": list(built.inputs),
             "origin": built.origin, "warnings": [w._asdict() for w in built.warnings]}
    record = {"key": _key(built.schema), "built": saved, "files": files, "folders": folders}
    target = warm_path(built.schema.name)
    writable(target.parent)
    write_text_atomic(target, json.dumps(record, indent=1))


def writable(folder: Path) -> Path:
    """``folder`` created and proven inside the cache: a ``.warm`` link planted in the
    cache never takes a record (or the simulator's arrays) outside it."""
    from mltraces import config
    from mltraces.containment import proven_folder

    return proven_folder(config.cache_dir(), folder, "the warm-build folder", create=True)
