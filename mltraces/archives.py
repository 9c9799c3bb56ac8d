"""Safe unpacking of downloaded tarballs.

Only regular files and folders are extracted; a member with an absolute path, a
``..`` component, a link or a device is refused before anything is written.
Extraction goes to a temporary sibling folder that is renamed into place, and a
``.members.json`` manifest records each member's size and sha256 so later reads
can trust (and ``mltraces verify`` can re-check) the extracted bytes.
"""

from __future__ import annotations

import json
import os
import shutil
import tarfile
import tempfile
from pathlib import Path, PurePosixPath

from mltraces.errors import UnsafeArchiveError
from mltraces.hashing import file_sha256

MANIFEST = ".members.json"


def check_member(member: tarfile.TarInfo, archive: Path) -> None:
    """Raise if ``member`` could write outside the target or is not a plain file/folder."""
    name = PurePosixPath(member.name)
    if name.is_absolute() or ".." in name.parts or member.name.startswith(("/", "\\")):
        raise UnsafeArchiveError(
            f"{archive.name}: member {member.name!r} would escape the extraction folder; "
            "refusing to unpack this archive"
        )
    if not (member.isfile() or member.isdir()):
        kind = "link" if member.issym() or member.islnk() else "special file"
        raise UnsafeArchiveError(
            f"{archive.name}: member {member.name!r} is a {kind}; only regular files "
            "are unpacked, refusing this archive"
        )


def _read_manifest(target: Path) -> dict[str, dict] | None:
    try:
        return json.loads((target / MANIFEST).read_text())
    except (OSError, ValueError):
        return None


def _members_intact(target: Path, manifest: dict[str, dict]) -> bool:
    """Every member is there as extracted (size and mtime, like a download's stamp)."""
    for name, record in manifest.items():
        path = target / name
        if not path.is_file():
            return False
        stat = path.stat()
        if (stat.st_size, stat.st_mtime_ns) != (record["size"], record.get("mtime_ns")):
            return False
    return True


def _reusable(target: Path) -> dict[str, Path] | None:
    manifest = _read_manifest(target)
    if manifest is None or not _members_intact(target, manifest):
        return None
    return {name: target / name for name in manifest}


def extract_verified(archive: Path, target: Path) -> dict[str, Path]:
    """Unpack ``archive`` into ``target`` once; return member name → path.

    A complete earlier extraction (manifest present, members unchanged since) is
    reused; a lock keeps two processes from replacing a folder the other reads.
    """
    from filelock import FileLock

    found = _reusable(target)
    if found is not None:
        return found
    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target) + ".lock"):
        found = _reusable(target)  # another process finished it meanwhile
        if found is not None:
            return found
        staging = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=target.parent))
        try:
            manifest = _extract_all(archive, staging)
            (staging / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True))
            if target.exists():
                shutil.rmtree(target)
            os.replace(staging, target)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    return {name: target / name for name in manifest}


def discard(target: Path) -> None:
    """Remove an extraction (say, a member failed verification): the next read redoes it."""
    shutil.rmtree(target, ignore_errors=True)


def _extract_all(archive: Path, staging: Path) -> dict[str, dict]:
    try:
        with tarfile.open(archive, mode="r:*") as tar:
            members = tar.getmembers()
            for member in members:
                check_member(member, archive)
            manifest = {}
            for member in members:
                if member.isfile():
                    tar.extract(member, staging, filter="data")
                    path = staging / member.name
                    stat = path.stat()
                    manifest[member.name] = {
                        "size": stat.st_size,
                        "mtime_ns": stat.st_mtime_ns,
                        "sha256": file_sha256(path),
                    }
    except tarfile.TarError as error:
        raise UnsafeArchiveError(f"{archive.name}: not a readable tar archive ({error})") from error
    return manifest


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
