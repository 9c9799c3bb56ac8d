"""Safe, bounded unpacking of tarballs.

Only regular files and folders are extracted; a member with an absolute path, a
``..`` component, a backslash or control character, an over-long name, a link,
a device or a sparse map is refused before anything is written. Sizes are
bounded before any byte is written too: headers are read first (lazily, so a
bomb is stopped at the first header past the limit, not after inflating it all)
against :class:`Limits` — for a pinned archive exactly the members the registry
lists, for any other (a local archive) ``MLTRACES_MAX_MEMBERS`` members and
``MLTRACES_MAX_UNPACKED`` bytes in all.

Extraction goes to ``<target>.staging-<pid>`` beside the target, renamed into
place when complete; a ``.members.json`` manifest records each member's size,
mtime and sha256 so later reads can trust (and ``mltraces verify`` can re-check)
the extracted bytes. Every failure is one :class:`~mltraces.errors.MltracesError`
line: unreadable archives, unsafe members, limits, and a full or read-only disk.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from mltraces import config
from mltraces.errors import CacheError, UnsafeArchiveError
from mltraces.hashing import file_sha256

if TYPE_CHECKING:  # tarfile & co. load only when something is unpacked (not on warm reads)
    import tarfile

MANIFEST = ".members.json"
MAX_NAME_CHARS = 1024
MAX_PART_BYTES = 255

__all__ = ["MANIFEST", "Limits", "check_member", "discard", "extract_verified", "verify_members"]


@dataclass(frozen=True)
class Limits:
    """What an archive may unpack to: a pinned member list, or counts and bytes."""

    max_members: int
    max_bytes: int
    expected: Mapping[str, int] | None = field(default=None)  # name → size, when pinned

    @classmethod
    def local(cls) -> Limits:
        """For archives the registry does not describe (``MLTRACES_MAX_*`` settings)."""
        return cls(max_members=config.max_members(), max_bytes=config.max_unpacked())

    @classmethod
    def pinned(cls, members: Mapping[str, int]) -> Limits:
        """Exactly these members (name → size), as the registry lists them."""
        return cls(len(members), sum(members.values()), dict(members))


def _shown(name: str) -> str:
    return repr(name if len(name) <= 80 else f"{name[:60]}…({len(name)} characters)")


def check_member(member: tarfile.TarInfo, archive: Path) -> None:
    """Raise if ``member`` could write outside the target or is not a plain file/folder."""
    name = PurePosixPath(member.name)
    shown = _shown(member.name)
    if (
        name.is_absolute()
        or ".." in name.parts
        or member.name.startswith(("/", "\\"))
        or "\\" in member.name
    ):
        raise UnsafeArchiveError(
            f"{archive.name}: member {shown} would escape the extraction folder; "
            "refusing to unpack this archive"
        )
    if any(ord(c) < 32 or ord(c) == 127 for c in member.name):
        raise UnsafeArchiveError(
            f"{archive.name}: member {shown} has a control character in its name; refusing it"
        )
    too_long = [p for p in name.parts if len(p.encode("utf-8", "surrogateescape")) > MAX_PART_BYTES]
    if too_long or len(member.name) > MAX_NAME_CHARS:
        raise UnsafeArchiveError(
            f"{archive.name}: member name {shown} is too long (at most {MAX_PART_BYTES} bytes "
            f"per part, {MAX_NAME_CHARS} characters in all); refusing this archive"
        )
    if str(name) == MANIFEST:
        raise UnsafeArchiveError(f"{archive.name}: a member is named {MANIFEST}; refusing it")
    if member.issparse() or not (member.isfile() or member.isdir()):
        kind = "link" if member.issym() or member.islnk() else "special file"
        raise UnsafeArchiveError(
            f"{archive.name}: member {shown} is a {kind}; only regular files "
            "are unpacked, refusing this archive"
        )


@dataclass
class _Tally:
    """Members seen so far and their total size."""

    names: set[str] = field(default_factory=set)
    total: int = 0


def _check_budget(member: tarfile.TarInfo, seen: _Tally, limits: Limits, archive: Path) -> None:
    """Raise once ``member`` goes past the member list, the count or the byte limit."""
    name = str(PurePosixPath(member.name))
    size = member.size if member.isfile() else 0
    if name in seen.names:
        raise UnsafeArchiveError(
            f"{archive.name}: member {_shown(name)} appears twice; refusing this archive"
        )
    if limits.expected is not None:
        _check_pinned(name, member, size, limits.expected, archive)
    seen.names.add(name)
    seen.total += size
    if len(seen.names) > limits.max_members and limits.expected is None:
        raise UnsafeArchiveError(
            f"{archive.name}: more than {limits.max_members:,} members; refusing it "
            "(raise MLTRACES_MAX_MEMBERS if this archive is trusted)"
        )
    if seen.total > limits.max_bytes:
        raise UnsafeArchiveError(
            f"{archive.name}: members add up to more than {limits.max_bytes:,} bytes "
            f"(at {_shown(name)}); refusing it as a possible decompression bomb "
            "(raise MLTRACES_MAX_UNPACKED if this archive is trusted)"
        )


def _check_pinned(name: str, member: tarfile.TarInfo, size: int, expected: Mapping[str, int],
                  archive: Path) -> None:
    """A pinned archive holds its listed files (at their sizes) and their folders only."""
    if member.isdir():
        if not any(m.startswith(name.rstrip("/") + "/") for m in expected):
            raise UnsafeArchiveError(
                f"{archive.name}: folder {_shown(name)} holds none of the members the registry "
                "pins; refusing this archive"
            )
        return
    if name not in expected:
        raise UnsafeArchiveError(
            f"{archive.name}: member {_shown(name)} is not among the {len(expected)} "
            "members the registry pins; refusing this archive"
        )
    if size != expected[name]:
        raise UnsafeArchiveError(
            f"{archive.name}: member {_shown(name)} is {size:,} bytes, the registry pins "
            f"{expected[name]:,}; refusing this archive"
        )


def _read_manifest(target: Path) -> dict[str, dict] | None:
    try:
        manifest = json.loads((target / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    return manifest if isinstance(manifest, dict) else None


def _members_intact(target: Path, manifest: dict[str, dict]) -> bool:
    """Every member is there as extracted (size and mtime, like a download's stamp)."""
    for name, record in manifest.items():
        try:
            stat = (target / name).stat()
        except OSError:
            return False
        if (stat.st_size, stat.st_mtime_ns) != (record.get("size"), record.get("mtime_ns")):
            return False
    return True


def reusable(target: Path) -> dict[str, Path] | None:
    """Member name → path of an intact earlier extraction into ``target``, else None."""
    manifest = _read_manifest(target)
    if manifest is None or not _members_intact(target, manifest):
        return None
    return {name: target / name for name in manifest}


def disk_error(error: OSError, what: str, where: Path) -> CacheError:
    """One line for a write that failed on the disk (full, read-only, not a folder)."""
    causes = {
        errno.ENOSPC: "the disk is full",
        errno.EDQUOT: "the disk quota is exhausted",
        errno.EROFS: "the file system is read-only",
        errno.EACCES: "permission denied",
        errno.EPERM: "permission denied",
        errno.ENOTDIR: "a path component is a file, not a folder",
        errno.EEXIST: "a file is in the way of a folder",
        errno.ENAMETOOLONG: "a name is too long for the file system",
    }
    cause = causes.get(error.errno or 0, error.strerror or type(error).__name__)
    return CacheError(
        f"{what} failed: {cause} ({where}). Free space or fix the permissions there, "
        "or point MLTRACES_CACHE at a writable folder with room"
    )


def extract_verified(archive: Path, target: Path, limits: Limits | None = None) -> dict[str, Path]:
    """Unpack ``archive`` into ``target`` once; return member name → path.

    A complete earlier extraction (manifest present, members unchanged since) is
    reused; a lock keeps two processes from replacing a folder the other reads.
    ``limits`` defaults to :meth:`Limits.local`.
    """
    found = reusable(target)
    if found is not None:
        return found
    from filelock import FileLock

    from mltraces.download.paths import inside

    inside(config.cache_dir(), target.parent, "the extraction folder")
    limits = limits or Limits.local()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(target) + ".lock"):
            found = reusable(target)  # another process finished it meanwhile
            if found is not None:
                return found
            _sweep(target.parent)
            return _extract_into_place(archive, target, limits)
    except OSError as error:
        raise disk_error(error, f"unpacking {archive.name}", target.parent) from error


def _sweep(folder: Path) -> None:
    from mltraces.download.cleanup import remove_orphans

    remove_orphans(folder)


def _extract_into_place(archive: Path, target: Path, limits: Limits) -> dict[str, Path]:
    staging = target.with_name(f"{target.name}.staging-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    try:
        manifest = _extract_all(archive, staging, limits)
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True))
        if target.exists():
            shutil.rmtree(target)
        os.replace(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return {name: target / name for name in manifest}


def discard(target: Path) -> None:
    """Remove an extraction (say, a member failed verification): the next read redoes it."""
    shutil.rmtree(target, ignore_errors=True)


def _extract_all(archive: Path, staging: Path, limits: Limits) -> dict[str, dict]:
    import lzma
    import tarfile
    import zlib

    try:
        with tarfile.open(archive, mode="r:*") as tar:
            members = _checked_members(tar, archive, limits)
            manifest = {}
            for member in members:
                if member.isfile():
                    tar.extract(member, staging, filter="data")
                    path = staging / member.name
                    stat = path.stat()
                    manifest[str(PurePosixPath(member.name))] = {
                        "size": stat.st_size,
                        "mtime_ns": stat.st_mtime_ns,
                        "sha256": file_sha256(path),
                    }
    except tarfile.ReadError as error:
        raise UnsafeArchiveError(
            f"{archive.name}: not a readable tar archive ({_read_error(archive, error)})"
        ) from error
    except (tarfile.TarError, EOFError, zlib.error, lzma.LZMAError) as error:
        raise UnsafeArchiveError(
            f"{archive.name}: not a readable tar archive ({type(error).__name__}: "
            f"{str(error).splitlines()[0] if str(error) else 'truncated'})"
        ) from error
    except OSError as error:
        if error.errno in {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM,
                           errno.ENAMETOOLONG}:
            raise
        raise UnsafeArchiveError(
            f"{archive.name}: not a readable tar archive ({type(error).__name__}: {error})"
        ) from error
    if limits.expected is not None and set(limits.expected) - set(manifest):
        missing = sorted(set(limits.expected) - set(manifest))
        raise UnsafeArchiveError(
            f"{archive.name}: lacks members the registry pins: {', '.join(missing[:5])}"
        )
    return manifest


def _read_error(archive: Path, error: tarfile.ReadError) -> str:
    """tarfile's (multi-line) reason as a few words, naming a gzip without a tar inside."""
    lines = str(error).splitlines()
    for line in lines:  # "- method gz: ReadError('invalid header')"
        if line.startswith("- method gz:"):
            with archive.open("rb") as handle:
                if handle.read(2) == b"\x1f\x8b":
                    why = line.split(":", 1)[1].strip().removeprefix("ReadError(").strip("')")
                    return f"{why}: gzip data that holds no tar"
    return lines[0].rstrip(":") if lines else "unreadable"


def _checked_members(tar: tarfile.TarFile, archive: Path, limits: Limits) -> list[tarfile.TarInfo]:
    """Every member header, checked as it is read: nothing is written before all pass."""
    seen = _Tally()
    members = []
    for member in tar:  # reads one header at a time: a bomb stops at its first bad one
        check_member(member, archive)
        _check_budget(member, seen, limits, archive)
        members.append(member)
    return members


def verify_members(target: Path) -> dict[str, str | None]:
    """Re-hash extracted members against the manifest: name → problem (None if fine)."""
    manifest = _read_manifest(target)
    if manifest is None:
        return {}
    problems: dict[str, str | None] = {}
    for name, record in manifest.items():
        path = target / name
        if not path.is_file():
            problems[name] = "missing"
        elif file_sha256(path) != record["sha256"]:
            problems[name] = (
                f"sha256 differs from the one recorded at extraction ({record['sha256']})"
            )
        else:
            problems[name] = None
    return problems
