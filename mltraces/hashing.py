"""File hashes: sha256 and the git blob sha1 that GitHub publishes.

A git blob id is ``sha1(b"blob <size>\\0" + content)``; GitHub's tree API lists
it for every file, so it pins files whose sha256 nobody published. Both are
computed in one pass because multi-gigabyte files should be read once.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

CHUNK = 1 << 20


@dataclass(frozen=True)
class Digest:
    """What one pass over a file yields."""

    size: int
    sha256: str
    git_blob: str


def digest(path: str | os.PathLike[str]) -> Digest:
    """Hash a file once, returning its size, sha256 and git blob sha1."""
    path = Path(path)
    size = path.stat().st_size
    sha256 = hashlib.sha256()
    blob = hashlib.sha1(f"blob {size}\0".encode())
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            sha256.update(chunk)
            blob.update(chunk)
    return Digest(size=size, sha256=sha256.hexdigest(), git_blob=blob.hexdigest())


def file_sha256(path: str | os.PathLike[str]) -> str:
    """sha256 of a file, hex."""
    import pooch

    return pooch.file_hash(str(path), alg="sha256")


def git_blob_sha1(data: bytes) -> str:
    """git blob id of in-memory bytes (``git hash-object``).

    >>> git_blob_sha1(b"hello\\n")
    'ce013625030ba8dba906f756967f9e9ca394464a'
    """
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
