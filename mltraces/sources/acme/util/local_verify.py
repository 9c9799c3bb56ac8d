"""Whether a user's local utilization files are the Hub's: sha256 against cached file lists.

No network: only the Hub file lists already cached (``mltraces list acme-util``
or ``mltraces fetch acme-util`` leave one per commit) are consulted. A local
file whose Hub path such a list names is hashed once (streaming; the result is
stamped with the file's size, mtime, ctime and inode under
``<cache>/acme-util/local/hashes``) and is *verified* when its sha256 equals the
LFS oid listed for that path (or its git blob id the listed oid, for a file not
in LFS), at any cached commit.

A listed file that differs is a warning naming the file and both hashes, and is
served as unverified; a file no cached list names is unverified without
hashing (there is nothing to compare with).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from mltraces.logs import get_logger
from mltraces.sources.acme.hub import REPO, HubFile
from mltraces.sources.acme.util import layout
from mltraces.sources.acme.util.local_files import LocalFile

log = get_logger(__name__)

VERIFIED, UNLISTED, DIFFERS = "verified", "unlisted", "differs"
UNHASHED = "unhashed"  # listed with its size, not hashed yet (a look that must stay cheap)

__all__ = ["DIFFERS", "UNHASHED", "UNLISTED", "VERIFIED", "Verdict", "check", "digest_once"]


class Verdict(NamedTuple):
    """What is known about one local file: ``kind`` and a short text saying why."""

    kind: str  # VERIFIED, UNLISTED, DIFFERS or UNHASHED
    detail: str


class Listing(NamedTuple):
    """One cached list's entry for a path."""

    file: HubFile
    commit: str


def listed() -> dict[str, list[Listing]]:
    """Every Hub path of the cached file lists, with each commit's entry (no network)."""
    from mltraces.sources.acme.hub import cached_manifests

    found: dict[str, list[Listing]] = {}
    for manifest in cached_manifests():
        for file in manifest.files:
            found.setdefault(file.path, []).append(Listing(file, manifest.commit))
    return found


# --------------------------------------------------------------------------- hashing


def _stamp_path(file: LocalFile) -> Path:
    name = hashlib.sha256(str(file.real).encode("utf-8", "surrogateescape")).hexdigest()[:32]
    return layout.root() / "local" / "hashes" / f"{name}.json"


def _read_stamp(path: Path, file: LocalFile) -> dict | None:
    """The stamped hashes when they are of this very version of the file."""
    try:
        stamp = json.loads(path.read_text())
    except (OSError, ValueError, RecursionError):
        return None
    same = (stamp.get("path"), stamp.get("version")) == (str(file.real), list(file.version))
    return stamp if same and isinstance(stamp.get("sha256"), str) else None


def digest_once(file: LocalFile) -> dict:
    """``{"sha256", "git_blob"}`` of a local file, hashed once per version (size, mtime,
    ctime, inode: an edit in place with the mtime restored is hashed again)."""
    from mltraces.hashing import digest

    path = _stamp_path(file)
    stamp = _read_stamp(path, file)
    if stamp is not None:
        return stamp
    log.info("hashing %s (%.1f MB) to compare it with the Hub's file list", file.path,
             file.size / 1e6)
    found = digest(file.path)
    stamp = {"path": str(file.real), "version": list(file.version),
             "sha256": found.sha256, "git_blob": found.git_blob}
    if file.changed():  # rewritten while being read: the hash is of no version in particular
        return stamp | {"sha256": "", "git_blob": ""}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(stamp))
    os.replace(tmp, path)
    return stamp


# --------------------------------------------------------------------------- verdicts


def _matches(stamp: dict, entry: HubFile) -> bool:
    if entry.sha256:
        return stamp["sha256"] == entry.sha256
    return bool(entry.git_blob) and stamp["git_blob"] == entry.git_blob


def verdict(file: LocalFile, entries: list[Listing], hash_now: bool = True) -> Verdict:
    """Compare one local file with the cached lists' entries for its Hub path.

    Without ``hash_now`` only a hash already stamped is used (``mltraces tables``
    must answer at once, even for files of many GB).
    """
    if not entries:
        return Verdict(UNLISTED, "in no cached Hub file list")
    sized = [e for e in entries if e.file.size == file.size]
    if not sized:
        sizes = ", ".join(f"{e.file.size:,} at {e.commit[:12]}" for e in entries)
        return Verdict(DIFFERS, f"{file.size:,} bytes, but the Hub lists {sizes}")
    if hash_now:
        stamp = digest_once(file)
    elif (stamp := _read_stamp(_stamp_path(file), file)) is None:
        return Verdict(UNHASHED, "not hashed yet (a connect compares it with the Hub's list)")
    for entry in sized:
        if _matches(stamp, entry.file):
            return Verdict(VERIFIED, f"{REPO}@{entry.commit[:12]}")
    listed_as = ", ".join(f"{e.file.sha256 or e.file.git_blob} at {e.commit[:12]}" for e in sized)
    return Verdict(DIFFERS, f"sha256 {stamp['sha256'] or '(changed while hashed)'}, but the "
                   f"Hub lists {listed_as}")


def check(files: Iterable[LocalFile], hash_now: bool = True) -> dict[str, Verdict]:
    """Verdict per Hub path; a file that differs from the Hub's list is a warning."""
    entries = listed()
    verdicts = {}
    for file in files:
        result = verdict(file, entries.get(file.hub.path, []), hash_now)
        if result.kind == DIFFERS and hash_now:
            log.warning("%s is not the Hub's %s: %s. Serving it as unverified (the published "
                        "file: `mltraces fetch acme-util --cluster %s --metric %s`)", file.path,
                        file.hub.path, result.detail, file.hub.group, file.hub.metric)
        verdicts[file.hub.path] = result
    return verdicts
