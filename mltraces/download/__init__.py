"""Download, verify and cache upstream files, with pooch as the engine.

The pipeline for one file: look for a verified copy (a stamp records size, mtime
and hash, so a warm call is a stat and a small read, and hashes nothing) → take
a per-file lock → :meth:`pooch.Pooch.fetch` on the source's pooch with
mltraces's resumable downloader (``<name>.part`` kept across attempts and
processes, HTTP Range, size and time limits, mirrors, remembered unreachable
hosts) and verifying processors (LFS/HTML sniffing, sha256 by pooch, git blob
ids and sizes, stamp, safe untar) → pooch's atomic move into place. A file that
fails verification is deleted, never used.

One module per concern:

- :mod:`.paths` cache layout and the proof that every path stays under its root
- :mod:`.stamps` what was verified, so warm calls hash nothing
- :mod:`.checks` sniffing finished bodies and comparing digests with the pins
- :mod:`.http` one bounded, resumable HTTP transfer
- :mod:`.mirrors` candidate URLs and directory mirrors
- :mod:`.hosts` remembered unreachable hosts
- :mod:`.engine` the pooch objects, the downloader and the locked retrieve loop
- :mod:`.processors` pooch processors: verify + stamp, safe untar
- :mod:`.firstuse` files no publisher hash pins, pinned by their first download
- :mod:`.cleanup` leftovers of killed runs

Examples
--------
>>> paths = fetch("itp")                                      # doctest: +SKIP
>>> paths["itp/raw-traces.tar.gz/cluster01.csv"]              # doctest: +SKIP
>>> pooch_for("zeus").fetch("summary_train.csv")              # doctest: +SKIP
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mltraces import config
from mltraces.download import stamps
from mltraces.download.paths import (
    PART_SUFFIX,
    STAMP_SUFFIX,
    cache_root,
    extracted_dir,
    local_path,
)
from mltraces.errors import MltracesError, OfflineError, VerificationError
from mltraces.hashing import file_sha256
from mltraces.logs import get_logger
from mltraces.registry import RemoteFile

if TYPE_CHECKING:
    from mltraces.download.archives import Limits

log = get_logger(__name__)

RETRY_WAIT_S = 0.5  # times the attempt number, between retries of one URL
LARGE_DOWNLOAD_BYTES = 1 << 30

__all__ = [
    "LARGE_DOWNLOAD_BYTES",
    "PART_SUFFIX",
    "STAMP_SUFFIX",
    "SafeUntar",
    "VerifyPins",
    "VerifyResult",
    "cached_path",
    "candidate_urls",
    "expand",
    "fetch",
    "fetch_file",
    "fetch_members",
    "file_sha256",
    "local_path",
    "member_limits",
    "pooch_for",
    "pooch_for_files",
    "set_progress",
    "verified_hash",
    "verify_cached",
]

# the cold-path machinery (pooch, HTTP, archives) loads on first use: warm calls never need it
_LAZY = {
    "pooch_for": "mltraces.download.engine",
    "pooch_for_files": "mltraces.download.engine",
    "candidate_urls": "mltraces.download.mirrors",
    "SafeUntar": "mltraces.download.processors",
    "VerifyPins": "mltraces.download.processors",
    "chain": "mltraces.download.processors",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


_progress_default: bool | None = None


def set_progress(enabled: bool | None) -> None:
    """Force progress bars on/off (``--quiet``); None means "when stderr is a TTY"."""
    global _progress_default
    _progress_default = enabled


def _show_progress(progress: bool | None) -> bool:
    if progress is not None:
        return progress
    if _progress_default is not None:
        return _progress_default
    return sys.stderr.isatty()


# --------------------------------------------------------------------------- single files


def cached_path(file: RemoteFile) -> Path | None:
    """The verified cached copy of ``file``, or None; never downloads or hashes.

    A local file of a user's source is its own path while it exists.
    """
    path = local_path(file)
    if file.local:
        return path if path.exists() else None
    return path if stamps.is_current(path, _pinned(file)) else None


def _pinned(file: RemoteFile) -> RemoteFile:
    """``file`` held to its recorded first download when it is a first-use file."""
    if not file.first_use:
        return file
    from mltraces.download.firstuse import effective

    return effective(file)


def _local_file(file: RemoteFile) -> Path:
    """A user's local file, checked against its pin when it has one (never downloaded)."""
    from mltraces.errors import FetchError
    from mltraces.hashing import digest

    path = local_path(file)
    if not path.exists():
        raise FetchError(f"{file.id} is a local file of source {file.source} and is missing: "
                         f"put it at {path} (its source.json names it)")
    if file.pinned and path.is_dir():
        raise VerificationError(f"{file.id}: {path} is a folder, which no single hash pins; "
                                "list its files one by one to pin them")
    if file.pinned:
        found = digest(path)
        if (file.sha256 or found.sha256) != found.sha256 or (
                file.git_blob or found.git_blob) != found.git_blob:
            raise VerificationError(
                f"{file.id}: {path} does not match the hash its source.json pins; if the "
                f"file changed on purpose, pin it again (`mltraces pin {path}`)")
    return path


def _resolve(file: RemoteFile | str) -> RemoteFile:
    if isinstance(file, RemoteFile):
        return file
    from mltraces.registry import get_file

    return get_file(file)


def _retrieve(file: RemoteFile, processor: object, progress: bool | None) -> None:
    """The cold path: offline check, then the locked pooch fetch."""
    from mltraces.download.engine import retrieve
    from mltraces.download.mirrors import is_http

    path = local_path(file)
    mirror = config.mirror()
    directory_mirror = mirror is not None and not is_http(mirror)  # serves without a network
    if config.offline() and not path.exists() and not directory_mirror:
        raise OfflineError.for_file(file.id, path, file.url)
    retrieve(file, processor, progressbar=_show_progress(progress), retry_wait=RETRY_WAIT_S)


def fetch_file(file: RemoteFile | str, *, progress: bool | None = None) -> Path:
    """Return the verified local path of ``file``, downloading it if needed.

    Examples
    --------
    >>> path = fetch_file("zeus/summary_train.csv")  # doctest: +SKIP
    """
    file = _resolve(file)
    if file.local:
        return _local_file(file)
    file = _pinned(file)
    path = local_path(file)
    if not stamps.is_current(path, file):
        from mltraces.download import unavailable
        from mltraces.download.processors import VerifyPins

        _retrieve(file, VerifyPins(file), progress)
        unavailable.clear(file.id)
    return path


def fetch_members(file: RemoteFile | str, *, progress: bool | None = None) -> dict[str, Path]:
    """Unpack a verified archive once (safely, bounded) and return member name → path."""
    from mltraces.download import archives

    file = _resolve(file)
    if file.local:  # a folder of a user's source: its files are the members
        folder = _local_file(file)
        if not folder.is_dir():
            from mltraces.errors import FetchError

            raise FetchError(f"{file.id}: {folder} is a file; a table that picks members "
                             "needs a folder of files")
        return {p.name: p for p in sorted(folder.iterdir()) if p.is_file()}
    if not file.unpacked:
        raise MltracesError(f"{file.id} is not unpacked (unpack: false in its source.json): "
                            "its tables read one member at a time (member_limits, open_member)")
    path = local_path(file)
    stamp = stamps.current(path, file)
    if stamp is not None:  # warm: a stat per member, no hashing, no pooch
        found = archives.reusable(extracted_dir(path, stamp["sha256"]))
        if found is not None:
            return found
    from mltraces.download.processors import SafeUntar, VerifyPins, chain

    untar = SafeUntar.for_file(file)
    if stamp is None:
        _retrieve(file, chain(VerifyPins(file), untar), progress)
    return untar.members_of(path)


def member_limits(file: RemoteFile) -> Limits:
    """What reading one member of a verified registry archive is held to.

    Its listed members (names, sizes and sha256 where published) when the registry
    lists them; else any number of bytes (the archive matched its publisher's
    hash, so its headers are the publisher's, and a stream writes nothing) in at
    most ``MLTRACES_MAX_MEMBERS`` headers. An archive no hash pins (a user's own
    file) is held to the local-archive limits (``MLTRACES_MAX_*``).
    """
    from mltraces.download.archives import UNBOUNDED, Limits

    if not file.pinned:
        return Limits.local()
    if file.members:
        return Limits.pinned([(m.name, m.size, m.sha256) for m in file.members])
    return Limits(max_members=config.max_members(), max_bytes=UNBOUNDED)


def verified_hash(file: RemoteFile) -> str:
    """sha256 of the verified cached copy (stable key for derived data)."""
    path = fetch_file(file)
    stamp = stamps.read(path)
    return stamp["sha256"] if stamp else file_sha256(path)


# --------------------------------------------------------------------------- many files


def expand(names: Iterable[str] = ()) -> list[RemoteFile]:
    """Files named by source names and/or file ids; no names means every file."""
    from mltraces.names import canonical
    from mltraces.registry import all_sources, get_file

    sources = all_sources()
    names = list(names)
    if not names:
        return [f for s in sources.values() for f in s.files]
    files: list[RemoteFile] = []
    for name in names:
        source = canonical(name)  # alibaba-pai is alibaba_pai
        chosen = list(sources[source].files) if source in sources else [get_file(name)]
        files.extend(f for f in chosen if f not in files)
    return files


def fetch(*names: str, progress: bool | None = None) -> dict[str, Path]:
    """Download and verify files by source name or file id; returns id → path.

    Archives are unpacked too, and their members appear as ``<id>/<member>``.

    Examples
    --------
    >>> paths = mltraces.fetch("itp")  # doctest: +SKIP
    >>> paths["itp/raw-traces.tar.gz/cluster01.csv"]  # doctest: +SKIP
    """
    files = expand(names)
    if sum(f.size or 0 for f in files) >= LARGE_DOWNLOAD_BYTES:  # else no warning can be due
        pending = [f for f in files if cached_path(f) is None]
        total = sum(f.size or 0 for f in pending)
        if total >= LARGE_DOWNLOAD_BYTES:
            log.warning("about to download %.1f GB in %d files", total / 1e9, len(pending))
    result: dict[str, Path] = {}
    for file in files:
        if file.unpacked:
            members = fetch_members(file, progress=progress)
            result[file.id] = local_path(file)
            result.update({f"{file.id}/{name}": p for name, p in members.items()})
        else:
            result[file.id] = fetch_file(file, progress=progress)
    return result


@dataclass(frozen=True)
class VerifyResult:
    """Outcome of re-hashing one cached file."""

    id: str
    path: Path
    status: str  # "ok", "missing", "corrupt"
    detail: str = ""


def _recheck(path: Path, file: RemoteFile) -> str | None:
    """Hash ``path`` ignoring its stamp (re-stamped if fine, deleted if not); the problem."""
    from mltraces.download.processors import VerifyPins

    try:
        VerifyPins(file)(str(path), "verify")
    except VerificationError as error:
        return str(error)
    return None


def verify_cached(files: Iterable[RemoteFile] | None = None) -> list[VerifyResult]:
    """Re-hash every cached file (ignoring stamps); corrupt ones are deleted.

    Leftovers of killed runs (temporary files and staging folders whose owner is
    gone) are removed on the way.
    """
    from mltraces.download.archives import disk_error
    from mltraces.download.cleanup import sweep

    root = cache_root()
    sweep([root / "files", root / "extracted", root / "hub", root / "state"])
    try:
        return [r for f in (files if files is not None else expand()) for r in _verify_one(f)]
    except OSError as error:  # a read-only cache can be checked, not re-stamped or cleaned
        raise disk_error(error, "re-stamping the verified files", root) from error


def _verify_one(file: RemoteFile) -> list[VerifyResult]:
    """Results for one file (and, for an archive, one per extracted member)."""
    from mltraces.download.archives import discard, verify_members

    path = local_path(file)
    if file.local:  # a user's file: checked, never deleted
        if not path.exists():
            return [VerifyResult(file.id, path, "missing")]
        if not file.pinned:
            return [VerifyResult(file.id, path, "ok", "local, no hash pinned (unverified)")]
        try:
            _local_file(file)
        except VerificationError as error:
            return [VerifyResult(file.id, path, "mismatch", str(error))]
        return [VerifyResult(file.id, path, "ok", f"{file.hash_kind} matches")]
    if not path.is_file():
        return [VerifyResult(file.id, path, "missing")]
    problem = _recheck(path, file)
    if problem is not None:
        return [VerifyResult(file.id, path, "corrupt", problem)]
    kind = _pinned(file).hash_kind
    detail = f"{kind} matches" + (" (first-use pinned)" if file.first_use else "")
    results = [VerifyResult(file.id, path, "ok", detail)]
    if file.unpacked:
        target = extracted_dir(path, stamps.read(path)["sha256"])  # type: ignore[index]
        problems = verify_members(target)
        for member, trouble in problems.items():
            status = "ok" if trouble is None else "corrupt"
            results.append(
                VerifyResult(f"{file.id}/{member}", target / member, status, trouble or "")
            )
        if any(problems.values()):
            discard(target)  # unpacked again from the verified archive on next use
    return results
