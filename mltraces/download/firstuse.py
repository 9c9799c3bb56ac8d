"""First-use pins: files whose publisher gives no hash are pinned by their first download.

A registry file marked ``"pin": "first-use"`` (Azure's 2024 week-long traces, the
BurstGPT v1.2 release assets) has no published size or hash to check. Its first
download that passes every other check (not a Git LFS pointer or an HTML page, the
length the server announced) is recorded in the cache's state,
``<cache>/state/first-use/<host>/<url path>.json``: URL, size, sha256, git blob id,
when. From then on the file is held to that record exactly as a published sha256
holds the others: a later download (the copy deleted, ``mltraces verify`` finding it
changed, a new cache sharing the state) whose bytes differ is refused in one line
naming the file and the recorded hash, and deleted.

Until the record exists the file is ``unverified (first use)`` (``mltraces list``,
the reason of a table that reads it in ``mltraces.status``); after, ``first-use
pinned``. Deleting the record (its path is in the refusal) accepts new bytes once.

>>> from mltraces.registry import RemoteFile
>>> file = RemoteFile(id="x/y.csv", url="https://example.org/y.csv", description="",
...                   first_use=True)
>>> effective(file) is file      # nothing recorded yet (an empty cache)  # doctest: +SKIP
True
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

from mltraces.atomic import write_text_atomic
from mltraces.download.paths import cache_root, url_parts
from mltraces.errors import VerificationError
from mltraces.hashing import Digest
from mltraces.registry import RemoteFile

__all__ = ["PINNED", "UNRECORDED", "describe", "effective", "record", "record_path",
           "recorded", "refused"]

#: what ``mltraces list`` and ``mltraces.status`` say about a first-use file
UNRECORDED, PINNED = "unverified (first use)", "first-use pinned"
_STATE = ("state", "first-use")


def record_path(file: RemoteFile) -> Path:
    """Where the first download of ``file`` is recorded (one small JSON file per URL)."""
    parts = url_parts(file.url, f"the URL of {file.id}")
    return cache_root().joinpath(*_STATE, *parts[:-1], parts[-1] + ".json")


def recorded(file: RemoteFile) -> dict | None:
    """The record of ``file``'s first download, or None (never fetched, or not first-use)."""
    if not file.first_use:
        return None
    try:
        found = json.loads(record_path(file).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    ok = (isinstance(found, dict) and found.get("url") == file.url
          and isinstance(found.get("size"), int) and isinstance(found.get("sha256"), str)
          and len(found["sha256"]) == 64 and isinstance(found.get("git_blob"), str))
    return found if ok else None


def effective(file: RemoteFile) -> RemoteFile:
    """``file`` with its recorded size and hashes when it is first-use pinned, else itself."""
    found = recorded(file)
    if found is None:
        return file
    return dataclasses.replace(file, size=found["size"], sha256=found["sha256"],
                               git_blob=found["git_blob"])


def record(file: RemoteFile, found: Digest) -> None:
    """Pin ``file`` to the bytes of its first verified download (atomically)."""
    target = record_path(file)
    target.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(target, json.dumps({
        "id": file.id, "url": file.url, "size": found.size, "sha256": found.sha256,
        "git_blob": found.git_blob,
        "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}, indent=1))


def refused(file: RemoteFile, got_sha256: str, got_size: int | None = None
            ) -> VerificationError:
    """The one-line refusal of bytes that differ from the recorded first download."""
    when = (recorded(file) or {}).get("recorded_at", "an earlier run")
    size = f", {got_size:,} bytes" if got_size is not None else ""
    return VerificationError(
        f"{file.id}: the bytes differ from its first download, pinned {when} "
        f"(sha256 {file.sha256}, {file.size:,} bytes; got sha256 {got_sha256}{size}): "
        "refused and deleted. No hash is published for this file; if the publisher "
        f"changed it on purpose, delete {record_path(file)} to pin the next download instead")


def describe(file: RemoteFile) -> str:
    """``unverified (first use)`` or ``first-use pinned`` (``""`` for other files)."""
    if not file.first_use:
        return ""
    return PINNED if recorded(file) is not None else UNRECORDED
