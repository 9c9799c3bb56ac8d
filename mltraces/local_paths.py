"""What a ``--local`` path may be: a regular file or a folder, named in UTF-8.

A local copy is converted once and its conversion is served while the file
stands (same size, mtime, ctime, inode). A pipe (``--local t=<(cat f)``, a FIFO)
can be read once and has no such identity, and a device (``/dev/zero``) never
ends: both are refused in one line with the fix (save the stream to a file),
before anything reads them. Copying a stream into the cache instead would cost
a full copy on every run and a size bound picked for the user; a file costs
neither. DuckDB opens only paths that are UTF-8 text, so a path holding other
bytes is refused too, with the fix (a link under a UTF-8 name).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from mltraces.errors import SchemaError

__all__ = ["check_local_path", "duckdb_cannot_open", "not_utf8"]

_KINDS = (
    (stat.S_ISFIFO, "a pipe (a FIFO or a process substitution such as <(cat FILE))"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def duckdb_cannot_open(path: str) -> bool:
    """True for a POSIX path DuckDB's file functions cannot name exactly.

    DuckDB expands ``[...]``, ``*`` and ``?`` as a glob; escaping them as
    one-character classes works, except in a path that also holds a backslash,
    which DuckDB's matcher reads as an escape.
    """
    return os.sep == "/" and "\\" in path and any(c in path for c in "[*?")


def not_utf8(text: str) -> bool:
    """True when ``text`` holds bytes that were not UTF-8 (Python keeps them as surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def shown(path: str | os.PathLike[str]) -> str:
    """A path for a message: bytes that are not UTF-8 written as ``\\xff``."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def check_local_path(table: str, path: Path) -> None:
    """Refuse a local path that cannot be a table's file or folder (see the module doc).

    A path that does not exist is left to the caller, which says what it expected.
    """
    if not_utf8(str(path)):
        raise SchemaError(
            f"local path for {table} is not UTF-8 text ({shown(path)}); DuckDB opens only "
            "UTF-8 paths: rename it, or link it under a UTF-8 name (ln -s) and give the link")
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as error:
        raise SchemaError(f"local path for {table} cannot be read: {path} "
                          f"({error.strerror or error})") from None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return
    kind = next((what for test, what in _KINDS if test(mode)), "not a regular file")
    raise SchemaError(
        f"local path for {table} is {kind}, not a file: {path}. A local copy is converted "
        "once and served while the file stands, which a stream cannot do; save it to a file "
        f"first (cat {path} > FILE) and give that file")
