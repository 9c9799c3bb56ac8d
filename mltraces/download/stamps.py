"""Stamps: what was verified about a cached file, so a warm call hashes nothing.

A stamp ``<file>.verified.json`` records the size, mtime and hashes found when the
file was last verified. While size and mtime are unchanged the stamp vouches for
the bytes (a stat and a small read); any change sends the file back through
verification.
"""

from __future__ import annotations

import json
import stat as stat_module
import time
from pathlib import Path

from mltraces.atomic import write_text_atomic
from mltraces.download.paths import stamp_path
from mltraces.hashing import Digest
from mltraces.registry import RemoteFile

__all__ = ["current", "is_current", "read", "remove", "write"]


def write(path: Path, file: RemoteFile, found: Digest) -> None:
    """Record ``found`` for ``path`` as it is now (atomically: temp file, then rename)."""
    stat = path.stat()
    record = {
        "id": file.id,
        "url": file.url,
        "size": stat.st_size,
        "mtime_ns": stat.st_mtime_ns,
        "sha256": found.sha256,
        "git_blob": found.git_blob,
        "verified_by": file.hash_kind,
        "verified_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    # per-process temp file: stamps of an already-cached file are also written outside the lock
    write_text_atomic(stamp_path(path), json.dumps(record, indent=1))


def read(path: Path) -> dict | None:
    """The stamp of ``path``, or None when absent or unreadable."""
    try:
        record = json.loads(stamp_path(path).read_text())
    except (OSError, ValueError, RecursionError):
        return None
    return record if isinstance(record, dict) else None


def remove(path: Path) -> None:
    """Forget what was verified about ``path`` (it changed, or was deleted)."""
    stamp_path(path).unlink(missing_ok=True)


def current(path: Path, file: RemoteFile) -> dict | None:
    """The stamp when it vouches for ``path`` as it is now (no hashing), else None."""
    stamp = read(path)
    if stamp is None:
        return None
    try:
        stat = path.stat()
    except OSError:
        return None
    if not stat_module.S_ISREG(stat.st_mode):
        return None
    if (stamp.get("size"), stamp.get("mtime_ns")) != (stat.st_size, stat.st_mtime_ns):
        return None
    if file.sha256:
        return stamp if stamp.get("sha256") == file.sha256 else None
    return stamp if stamp.get("git_blob") == file.git_blob else None


def is_current(path: Path, file: RemoteFile) -> bool:
    """True when the stamp vouches for ``path`` as it is now (no hashing)."""
    return current(path, file) is not None
