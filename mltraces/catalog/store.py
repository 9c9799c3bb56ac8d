"""The Parquet cache under ``<cache>/tables``: names, records, integrity, readers' leases.

A build's outcome (:class:`Built`) is defined here, beside the records it is read
from, so a warm ``connect()`` can hold one without loading the build machinery.

Each conversion is ``<table>-<origin>-<key>.parquet`` plus a ``.parquet.json``
record (written last, so it marks a complete file). The key hashes the inputs'
verified sha256 (local files: path, size, mtime), the schema and the converter
version. The record also stamps each input file as it was read (size,
mtime_ns, ctime_ns, inode): a Parquet is served only while every input is still
that very file, so when ``mltraces verify`` deletes a tampered input (or an
archive is unpacked again) the Parquet built from those bytes goes with it,
even though the good file has the same key. The record keeps the Parquet's own
size and sha256: a warm read checks the size and the footer magic (no hashing);
:func:`verify_tables` re-hashes on demand.

``connect()`` leases the files its views read (``.readers/<host>-<pid>.json``,
written only when the set grows), so :mod:`.upkeep` never prunes a file
underneath an open view.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from mltraces import config
from mltraces.atomic import write_text_atomic

if TYPE_CHECKING:
    from mltraces.catalog.problems import DriftProblem
    from mltraces.schema import TableSchema

__all__ = ["CONVERTER_VERSION", "TABLES_DIR", "Built", "InputStamp", "damage", "inputs_current",
           "lease", "leased_names", "new_record", "pid_alive", "read_record", "record_path",
           "target_path", "write_record"]

TABLES_DIR = "tables"
#: Bumped when converted files change meaning (2: ``_row`` is the physical line).
CONVERTER_VERSION = 2
LOCAL_EXTRACTED = "local-extracted"
READERS_DIR = ".readers"
_MAGIC = b"PAR1"
_FOREIGN_LEASE_S = 7 * 24 * 3600  # leases from other hosts (shared caches) count this long


def tables_dir() -> Path:
    """Where converted tables live (``<cache>/tables``)."""
    return config.cache_dir() / TABLES_DIR


def target_path(table: str, origin_kind: str, key: str) -> Path:
    """The Parquet path of one conversion."""
    return tables_dir() / f"{table}-{origin_kind}-{key[:24]}.parquet"


def record_path(target: Path) -> Path:
    """The record (``.json`` sidecar) of a Parquet file."""
    return target.with_name(target.name + ".json")


class Built(NamedTuple):
    """A table converted to Parquet, ready for a view."""

    schema: TableSchema
    parquet: Path
    verified: bool
    origin: str
    rows: int
    inputs: tuple[str, ...]
    warnings: tuple[DriftProblem, ...] = ()


# --------------------------------------------------------------------------- input stamps


class InputStamp(NamedTuple):
    """One input file exactly as it was read: a replaced or deleted file no longer matches."""

    path: str
    size: int
    mtime_ns: int
    ctime_ns: int
    inode: int

    @classmethod
    def of(cls, path: Path) -> InputStamp:
        stat = path.stat()
        return cls(str(path), stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino)

    def current(self) -> bool:
        """True while the file at ``path`` is the one that was read."""
        try:
            stat = os.stat(self.path)
        except OSError:
            return False
        return (stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino) == (
            self.size, self.mtime_ns, self.ctime_ns, self.inode)


def inputs_current(record: dict[str, Any]) -> bool:
    """True when every input stamped in ``record`` is still the file that was read."""
    stamps = record.get("stamps")
    if not stamps:  # written before stamps existed: cannot vouch for its inputs
        return False
    return all(InputStamp(**s).current() for s in stamps)


# --------------------------------------------------------------------------- records


def read_record(target: Path) -> dict[str, Any] | None:
    """The record of ``target``, or None when missing or unreadable."""
    try:
        record = json.loads(record_path(target).read_text())
    except (OSError, ValueError, RecursionError):
        return None
    return record if isinstance(record, dict) else None


def write_record(target: Path, record: dict[str, Any]) -> None:
    """Write ``target``'s record atomically (it marks the Parquet as complete)."""
    final = record_path(target)
    tmp = final.with_name(f"{final.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(record, indent=1))
    os.replace(tmp, final)


def damage(target: Path, record: dict[str, Any]) -> str | None:
    """What is wrong with the Parquet file itself (size, footer), or None; no hashing."""
    try:
        size = target.stat().st_size
        with target.open("rb") as handle:
            if size >= 8:
                handle.seek(size - 4)
            tail = handle.read(4)
    except OSError as error:
        return f"cannot read {target.name} ({error.strerror or error})"
    expected = record.get("parquet_size")
    if expected is not None and size != expected:
        return f"{target.name} is {size:,} bytes, {expected:,} were written (truncated or replaced)"
    if tail != _MAGIC:
        return f"{target.name} does not end with a Parquet footer (damaged)"
    return None


def file_sha256(path: Path) -> str:
    """sha256 of a file (the Parquet's own hash, recorded when written)."""
    import hashlib

    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


# --------------------------------------------------------------------------- leases


_leased: dict[Path, set[str]] = {}
_written: set[Path] = set()  # lease files this process wrote (the only ones it removes)


def _host() -> str:
    return os.uname().nodename if hasattr(os, "uname") else os.environ.get("COMPUTERNAME", "")


def _lease_file(folder: Path) -> Path:
    return folder / READERS_DIR / f"{_host()}-{os.getpid()}.json"


def readers_dir(folder: Path, *, create: bool = False) -> Path:
    """``folder/.readers``, proven inside the cache (a link planted there cannot redirect it)."""
    from mltraces.containment import proven_folder

    return proven_folder(config.cache_dir(), folder / READERS_DIR,
                         "the lease folder", create=create)


def lease(paths: list[Path]) -> None:
    """Record that this process has views on ``paths`` (one small write when the set grows).

    A cache this process cannot write (a lab's read-only share) is read without a
    lease: the lease only stops *this* process's peers from pruning, and a reader
    of a read-only cache has no peers that write through it. A lease folder that
    resolves outside the cache is never written (one warning).
    """
    by_folder: dict[Path, set[str]] = {}
    for path in paths:
        by_folder.setdefault(path.parent, set()).add(path.name)
    for folder, names in by_folder.items():
        held = _leased.setdefault(folder, set())
        if names <= held:
            continue
        held |= names
        _write_lease(folder, held)


def _write_lease(folder: Path, held: set[str]) -> None:
    from mltraces.errors import UnsafePathError

    target = _lease_file(folder)
    lease_record = {"host": _host(), "pid": os.getpid(), "parquet": sorted(held)}
    try:
        readers_dir(folder, create=True)
        write_text_atomic(target, json.dumps(lease_record))
    except UnsafePathError as error:
        _note_once(f"not leasing converted tables: {error}", warning=True)
        return
    except OSError as error:  # read-only or full: reading must still work
        _note_once(f"cannot lease converted tables in {target.parent} ({error.strerror}); "
                   "reading without a lease")
        return
    _written.add(target)
    _release_at_exit()


@functools.cache
def _note_once(message: str, *, warning: bool = False) -> None:
    from mltraces.logs import get_logger  # only when there is something to say

    logger = get_logger(__name__)
    (logger.warning if warning else logger.debug)("%s", message)


@functools.cache
def _release_at_exit() -> None:
    atexit.register(_release)


def _release() -> None:
    for path in _written:
        with contextlib.suppress(OSError):
            path.unlink()


def pid_alive(pid: int) -> bool:
    """True unless process ``pid`` is known to be gone (unknown counts as alive)."""
    if pid == os.getpid():
        return True
    if os.name == "nt":  # os.kill would terminate it: keep whatever it owns
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def leased_names(folder: Path) -> set[str]:
    """Parquet names leased by live processes; leases of dead ones are removed."""
    from mltraces.errors import UnsafePathError

    names: set[str] = set()
    host = _host()
    try:
        readers = readers_dir(folder)
        removable = True
    except UnsafePathError:  # read what is there, delete nothing through the link
        readers, removable = folder / READERS_DIR, False
    for path in readers.glob("*.json"):
        try:
            lease_record = json.loads(path.read_text())
            stale = (lease_record["pid"] if lease_record["host"] == host else None)
        except (OSError, ValueError, RecursionError, KeyError, TypeError):
            continue
        if stale is not None and not pid_alive(int(stale)):
            if removable:
                with contextlib.suppress(OSError):
                    path.unlink()
            continue
        if stale is None and time.time() - path.stat().st_mtime > _FOREIGN_LEASE_S:
            continue
        names.update(lease_record.get("parquet", []))
    return names


# --------------------------------------------------------------------------- pruning


def new_record(**fields: Any) -> dict[str, Any]:
    """A record with its creation time; stamps are stored as plain dicts."""
    stamps = [s._asdict() for s in fields.pop("stamps")]
    now = time.time_ns()  # one reading: seconds and fraction from separate clocks reads misorder
    seconds, fraction = divmod(now, 10**9)
    created = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{fraction:09d}Z"
    return {**fields, "stamps": stamps, "created": created}
