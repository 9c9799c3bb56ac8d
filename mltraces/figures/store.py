"""Figure data cached beside the Parquet it came from, keyed the same way.

The catalog converts every table once to Parquet whose file name carries the
hash of the bytes it came from. A figure's data is a SQL query over such views,
so the query text plus the identity (name, size, mtime) of the Parquet files its
views read determine the result: that is the cache key. The result is written
once as a small Parquet file in ``figure-data/`` next to the table files and
served as a DuckDB relation, so a warm figure-data call reads a few kilobytes
instead of scanning an 800k-row trace, and never needs pandas.

Anything that is not a view over Parquet (an unavailable table, a registered
frame) is simply not cached: the query runs as it is. Results computed in
Python (simulations) are cached the same way with :func:`stored_path`.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import weakref
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import duckdb

#: Folder, beside the table Parquet files, that holds cached figure data.
FOLDER = "figure-data"
#: Bump when the cache layout changes, so old entries are never read.
VERSION = "1"

_PARQUET_CALL = re.compile(r"read_parquet\((.*?)\)", re.S)
_QUOTED = re.compile(r"'((?:[^']|'')*)'")


_views: weakref.WeakKeyDictionary[Any, dict[str, list[Path]]] = weakref.WeakKeyDictionary()
_nested: weakref.WeakKeyDictionary[Any, dict[str, str]] = weakref.WeakKeyDictionary()


def _mentions(name: str, sql: str) -> bool:
    """True when ``sql`` names the view ``schema.view`` (plain or quoted)."""
    schema, _, view = name.partition(".")
    quoted = rf'"{re.escape(schema)}"\."{re.escape(view)}"'
    return bool(re.search(rf"\b{re.escape(name)}\b|{quoted}", sql))


def view_parquet(con: duckdb.DuckDBPyConnection) -> dict[str, list[Path]]:
    """Every catalog view (``schema.view``) with the Parquet files it reads (may be empty).

    A view over other views (``mltraces.jobs``) reads their files. Read once per
    connection: a catalog connection's views do not change (and asking DuckDB
    costs about as much as a cached figure query).
    """
    if con not in _views:
        rows = con.execute(
            "SELECT schema_name, view_name, sql FROM duckdb_views() WHERE NOT internal"
        ).fetchall()
        sqls = {f"{schema}.{view}": sql or "" for schema, view, sql in rows}
        direct = {name: parquet_paths(sql) for name, sql in sqls.items()}
        nested = {name: sql for name, sql in sqls.items() if not direct[name]
                  and any(_mentions(other, sql) for other in sqls if other != name)}
        for name, sql in nested.items():  # one level: the catalog's views read tables
            used = [other for other in sqls if other != name and _mentions(other, sql)]
            if used and all(direct[other] for other in used):
                direct[name] = sorted({p for other in used for p in direct[other]})
        _views[con], _nested[con] = direct, nested
    return _views[con]


def identity(con: duckdb.DuckDBPyConnection, sql: str) -> list[Path] | None:
    """The Parquet files ``sql`` reads, directly or through views; None if any view has none."""
    views = view_parquet(con)
    used = [name for name in views if re.search(rf"\b{re.escape(name)}\b", sql)]
    if any(not views[name] for name in used):
        return None
    files = {p for name in used for p in views[name]} | set(parquet_paths(sql))
    if not files or not all(p.is_file() for p in files):
        return None
    return sorted(files)


def definitions(con: duckdb.DuckDBPyConnection, sql: str) -> list[str]:
    """The SQL of the views over views that ``sql`` reads: a changed mapping is a new key."""
    view_parquet(con)
    return [text for name, text in sorted(_nested[con].items())
            if re.search(rf"\b{re.escape(name)}\b", sql)]


def parquet_paths(sql: str) -> list[Path]:
    """The files named in ``read_parquet('...')`` calls of ``sql``."""
    return [
        Path(text.replace("''", "'"))
        for call in _PARQUET_CALL.findall(sql or "")
        for text in _QUOTED.findall(call)
    ]


def key(parts: Iterable[str], files: Iterable[Path]) -> str:
    """Hex digest of ``parts`` and each file's name, size and mtime."""
    digest = hashlib.sha256(VERSION.encode())
    for part in parts:
        digest.update(part.encode() + b"\0")
    for path in files:
        stat = path.stat()
        digest.update(f"{path.name}:{stat.st_size}:{stat.st_mtime_ns}\0".encode())
    return digest.hexdigest()[:32]


def stored_path(files: list[Path], parts: Iterable[str], write: Callable[[Path], None]) -> Path:
    """The cached Parquet for ``parts`` + ``files``, written by ``write(path)`` if absent.

    It lives in ``figure-data/`` beside the first input file; when that folder
    cannot be written (a read-only cache) it goes to a temporary folder of this
    process instead, so callers always get a file.
    """
    name = f"{key(parts, files)}.parquet"
    for folder in _folders(files[0].parent / FOLDER):
        target = folder / name
        if target.is_file():
            return target
        try:
            folder.mkdir(exist_ok=True)
            tmp = target.with_name(f"{target.stem}.{os.getpid()}.tmp")
            write(tmp)
            os.replace(tmp, target)
            return target
        except OSError:
            continue
    raise OSError(f"cannot write figure data to {files[0].parent / FOLDER} or a temporary folder")


def _folders(beside: Path) -> Iterator[Path]:
    """Where figure data may go: beside its input, else (only then) this process's scratch."""
    yield beside
    yield _scratch()


@functools.cache
def _scratch() -> Path:
    """A temporary folder of this process, made when first needed and removed at its exit."""
    import atexit
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="mltraces-figure-data-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


def stored(
    con: duckdb.DuckDBPyConnection,
    files: list[Path],
    parts: Iterable[str],
    write: Callable[[Path], None],
) -> duckdb.DuckDBPyRelation:
    """A relation over :func:`stored_path`'s file."""
    return con.sql(f"SELECT * FROM read_parquet({literal(stored_path(files, parts, write))})")


def query(con: duckdb.DuckDBPyConnection, sql: str) -> duckdb.DuckDBPyRelation:
    """``sql`` as a relation, served from the cache when its inputs are catalog Parquet.

    The cached result is computed on one thread: DuckDB's parallel sums of
    floating-point values depend on how rows were split between threads in
    their last bits, which is enough to move a pixel in a rendered figure.
    """
    files = identity(con, sql)
    if files is None:
        return con.sql(sql)

    def write(path: Path) -> None:
        with single_threaded(con):
            con.execute(f"COPY ({sql}) TO {literal(path)} (FORMAT parquet)")

    return stored(con, files, [sql, *definitions(con, sql)], write)


@contextlib.contextmanager
def single_threaded(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """Run the block with DuckDB on one thread (sums in one fixed order), then restore."""
    threads = con.execute("SELECT current_setting('threads')").fetchone()[0]  # type: ignore[index]
    con.execute("SET threads = 1")
    try:
        yield
    finally:
        con.execute(f"SET threads = {int(threads)}")


def source_version(package: str) -> str:
    """Hash of a package's Python source: results computed by changed code are never reused.

    >>> len(source_version("mltraces.simulation"))
    16
    """
    import importlib

    folder = Path(importlib.import_module(package).__file__).parent  # type: ignore[arg-type]
    digest = hashlib.sha256()
    for path in sorted(folder.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def literal(path: Path) -> str:
    """``path`` as a SQL string literal."""
    return "'" + str(path).replace("'", "''") + "'"
