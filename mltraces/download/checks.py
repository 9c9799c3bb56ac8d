"""Is this the pinned file? The checks every byte passes before it is trusted.

Two kinds: a cheap *sniff* of a finished body (Git LFS pointer, HTML page, wrong
length) that names the classic failures before any hashing, and the comparison
of a full :class:`~mltraces.hashing.Digest` (one pass: size, sha256, git blob)
with the registry's pins. Both return a problem as text (None when fine) so the
callers decide what to delete and whether to retry.
"""

from __future__ import annotations

from pathlib import Path

from mltraces.errors import VerificationError
from mltraces.hashing import Digest
from mltraces.registry import RemoteFile

LFS_POINTER = b"version https://git-lfs.github.com/spec/v1"
SNIFF_BYTES = 512
STALE_HINT = "if this persists the upstream file changed or a mirror is stale"

__all__ = ["SNIFF_BYTES", "mismatch", "rejected", "sniff", "sniff_file"]


def sniff(head: bytes, size: int, file: RemoteFile) -> str | None:
    """Name what a finished body of ``size`` bytes starting with ``head`` is, if not data."""
    if head.startswith(LFS_POINTER):
        return (
            "got a Git LFS pointer file instead of the data "
            "(the URL serves the pointer; use the LFS/resolve URL)"
        )
    lowered = head.lstrip().lower()
    if lowered.startswith((b"<!doctype html", b"<html")) and not file.filename.endswith(".html"):
        return f"got an HTML page ({size:,} bytes) instead of the data (an error or login page?)"
    if file.size is not None and size != file.size:
        kind = "truncated" if size < file.size else "too long"
        return f"download is {kind}: {size:,} bytes, expected {file.size:,}"
    return None


def sniff_file(path: Path, file: RemoteFile) -> str | None:
    """:func:`sniff` applied to a file on disk (reads its first bytes only)."""
    with path.open("rb") as handle:
        head = handle.read(SNIFF_BYTES)
    return sniff(head, path.stat().st_size, file)


def mismatch(file: RemoteFile, found: Digest) -> str | None:
    """How ``found`` differs from the pins of ``file`` (size, sha256, else git blob)."""
    if file.size is not None and found.size != file.size:
        return f"size mismatch: expected {file.size:,} bytes, got {found.size:,}"
    if file.sha256 and found.sha256 != file.sha256:
        return f"sha256 mismatch: expected {file.sha256}, got {found.sha256}"
    if not file.sha256 and found.git_blob != file.git_blob:
        return f"git-blob-sha1 mismatch: expected {file.git_blob}, got {found.git_blob}"
    return None


def rejected(file: RemoteFile, problem: str) -> VerificationError:
    """The error for bytes that failed a check (they have been deleted by then)."""
    return VerificationError(
        f"{file.id}: {problem}. The file was deleted and not used; {STALE_HINT}"
    )
