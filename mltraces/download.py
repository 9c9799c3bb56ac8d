"""Download, verify and cache upstream files.

The pipeline for one file is: look for a verified copy (a stamp records size,
mtime and hash, so a warm call hashes nothing) → take a per-file lock → download
to ``<name>.part`` beside the target (resuming with an HTTP Range request when a
previous attempt was interrupted) → reject LFS pointers, HTML pages and short
bodies → check the hash → atomically rename into place → write the stamp.

A file that fails verification is deleted, never used. Downloaders follow
pooch's ``(url, output_file, pooch)`` protocol so any pooch downloader (FTP,
SFTP, DOI) plugs in; we do not call ``pooch.retrieve`` itself because it can
neither verify git blob ids nor resume a multi-gigabyte transfer.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from mltraces import config
from mltraces.errors import FetchError, OfflineError, VerificationError
from mltraces.hashing import Digest, digest, file_sha256
from mltraces.registry import RemoteFile

log = logging.getLogger(__name__)

STAMP_SUFFIX = ".verified.json"
PART_SUFFIX = ".part"
ATTEMPTS_PER_URL = 3
RETRY_WAIT_S = 0.5
LARGE_DOWNLOAD_BYTES = 1 << 30
_LFS_POINTER = b"version https://git-lfs.github.com/spec/v1"

__all__ = [
    "LARGE_DOWNLOAD_BYTES",
    "cached_path",
    "candidate_urls",
    "fetch",
    "fetch_file",
    "fetch_members",
    "file_sha256",
    "local_path",
    "verified_hash",
    "verify_cached",
]

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


# --------------------------------------------------------------------------- paths


def local_path(file: RemoteFile) -> Path:
    """Where ``file`` lives in the cache: ``<cache>/files/<host>/<url path>``."""
    parts = urlsplit(file.url)
    return config.cache_dir() / "files" / parts.netloc / parts.path.lstrip("/")


def _stamp_path(path: Path) -> Path:
    return path.with_name(path.name + STAMP_SUFFIX)


def _part_path(path: Path) -> Path:
    return path.with_name(path.name + PART_SUFFIX)


# --------------------------------------------------------------------------- stamps


def _expected_matches(file: RemoteFile, found: Digest) -> bool:
    if file.sha256 and found.sha256 != file.sha256:
        return False
    if file.git_blob and not file.sha256 and found.git_blob != file.git_blob:
        return False
    return file.size is None or found.size == file.size


def _write_stamp(path: Path, file: RemoteFile, found: Digest) -> None:
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
    # per process: stamps of an existing file are also written outside the lock
    tmp = _stamp_path(path).with_name(f"{_stamp_path(path).name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(record, indent=1))
    os.replace(tmp, _stamp_path(path))


def _read_stamp(path: Path) -> dict | None:
    try:
        return json.loads(_stamp_path(path).read_text())
    except (OSError, ValueError):
        return None


def _stamp_is_current(path: Path, file: RemoteFile) -> bool:
    """True when the stamp vouches for the file as it is now (no hashing)."""
    stamp = _read_stamp(path)
    if stamp is None or not path.is_file():
        return False
    stat = path.stat()
    if (stamp.get("size"), stamp.get("mtime_ns")) != (stat.st_size, stat.st_mtime_ns):
        return False
    if file.sha256:
        return stamp.get("sha256") == file.sha256
    return stamp.get("git_blob") == file.git_blob


def cached_path(file: RemoteFile) -> Path | None:
    """The verified cached copy of ``file``, or None; never downloads or hashes."""
    path = local_path(file)
    return path if _stamp_is_current(path, file) else None


def verified_hash(file: RemoteFile) -> str:
    """sha256 of the verified cached copy (stable key for derived data)."""
    path = fetch_file(file)
    stamp = _read_stamp(path)
    return stamp["sha256"] if stamp else file_sha256(path)


# --------------------------------------------------------------------------- checks


def _sniff_problem(path: Path, file: RemoteFile) -> str | None:
    """Name the classic failure modes before hashing: LFS pointer, HTML, short body."""
    size = path.stat().st_size
    with path.open("rb") as handle:
        head = handle.read(512)
    if head.startswith(_LFS_POINTER):
        return (
            "got a Git LFS pointer file instead of the data "
            "(the URL serves the pointer; use the LFS/resolve URL)"
        )
    lowered = head.lstrip().lower()
    if lowered.startswith((b"<!doctype html", b"<html")) and not file.filename.endswith(".html"):
        return "got an HTML page instead of the data (an error or login page?)"
    if file.size is not None and size != file.size:
        kind = "truncated" if size < file.size else "too long"
        return f"download is {kind}: {size:,} bytes, expected {file.size:,}"
    return None


def _verify(path: Path, file: RemoteFile) -> Digest:
    """Check a downloaded file; delete it and raise on any mismatch."""
    problem = _sniff_problem(path, file)
    if problem is None:
        found = digest(path)
        if not _expected_matches(file, found):
            expected = file.sha256 or file.git_blob
            got = found.sha256 if file.sha256 else found.git_blob
            problem = f"{file.hash_kind} mismatch: expected {expected}, got {got}"
    if problem is not None:
        path.unlink(missing_ok=True)
        raise VerificationError(
            f"{file.id}: {problem}. The file was deleted and not used; "
            "if this persists the upstream file changed or a mirror is stale"
        )
    return found


# --------------------------------------------------------------------------- sources of bytes


def candidate_urls(file: RemoteFile) -> list[str]:
    """URLs to try, in order: the mirror's copies when one is set, else the real ones.

    A mirror is a deliberate setting (air-gapped sites, tests), so it replaces the
    upstream hosts instead of falling back to them.
    """
    prefix = config.mirror()
    if prefix is None:
        return list(file.urls)
    mapped = []
    for url in file.urls:
        parts = urlsplit(url)
        mapped.append(f"{prefix}/{parts.netloc}{parts.path}")
    return mapped


Downloader = Callable[[str, str, object], None]


@dataclass
class ResumableHTTPDownloader:
    """A pooch-style downloader that appends to a partial file via HTTP Range.

    Called as ``downloader(url, output_file, pooch)``. When ``output_file``
    already holds bytes it asks for the rest; a server that ignores the Range
    header (200 instead of 206) makes it start over.
    """

    progress: bool = False
    timeout: float = 60.0
    chunk_size: int = 1 << 16  # bytes lost when a connection drops mid-chunk
    label: str = ""

    def __call__(self, url: str, output_file: str, pooch: object = None) -> None:
        import requests
        from tqdm.auto import tqdm

        have = os.path.getsize(output_file) if os.path.exists(output_file) else 0
        # identity encoding: the bytes on the wire are the file, so Range offsets and
        # hashes refer to the same thing
        headers = {"Accept-Encoding": "identity"}
        if have:
            headers["Range"] = f"bytes={have}-"
        with requests.get(url, stream=True, timeout=self.timeout, headers=headers) as response:
            if response.status_code == 416:  # the partial file is already complete
                return
            response.raise_for_status()
            resumed = have and response.status_code == 206
            mode = "ab" if resumed else "wb"
            total = int(response.headers.get("content-length", 0)) + (have if resumed else 0)
            bar = tqdm(
                total=total or None,
                initial=have if resumed else 0,
                unit="B",
                unit_scale=True,
                desc=self.label or os.path.basename(output_file),
                disable=not self.progress,
                leave=False,
            )
            with open(output_file, mode) as out, bar:
                for chunk in response.iter_content(chunk_size=self.chunk_size):
                    out.write(chunk)
                    bar.update(len(chunk))


def _copy_from_directory(url: str, output_file: str, pooch: object = None) -> None:
    """Downloader for a directory mirror (``MLTRACES_MIRROR=/path``)."""
    source = Path(url)
    if not source.is_file():
        raise FileNotFoundError(f"not in the mirror directory: {source}")
    tmp = output_file + ".copy"
    shutil.copyfile(source, tmp)
    os.replace(tmp, output_file)


def _downloader_for(url: str, file: RemoteFile, progress: bool) -> Downloader:
    if urlsplit(url).scheme in {"http", "https"}:
        return ResumableHTTPDownloader(progress=progress, label=file.id)
    return _copy_from_directory


def _describe_failure(url: str, error: BaseException) -> str:
    import requests

    if isinstance(error, requests.HTTPError) and error.response is not None:
        return f"HTTP {error.response.status_code} from {url}"
    if isinstance(error, requests.ConnectionError | requests.exceptions.ChunkedEncodingError):
        return f"connection to {url} failed or dropped ({type(error).__name__})"
    if isinstance(error, requests.Timeout):
        return f"timed out reading {url}"
    if isinstance(error, FileNotFoundError):
        return str(error)
    return f"{url}: {error}"


def _download_to_part(file: RemoteFile, part: Path, progress: bool) -> Digest:
    """Fill ``part`` from the first URL that yields verified bytes."""
    failures: list[str] = []
    rejected: VerificationError | None = None
    for url in candidate_urls(file):
        downloader = _downloader_for(url, file, progress)
        for attempt in range(1, ATTEMPTS_PER_URL + 1):
            try:
                downloader(url, str(part), None)
            except Exception as error:  # network errors: retry, resuming the part file
                failures.append(_describe_failure(url, error))
                if _is_permanent(error):
                    break
                time.sleep(RETRY_WAIT_S * attempt)
                continue
            if file.size is not None and part.stat().st_size < file.size:
                failures.append(f"{url}: body ended after {part.stat().st_size:,} bytes")
                continue  # try again: the next request resumes
            try:
                return _verify(part, file)
            except VerificationError as error:  # bad bytes from this URL: try the next
                rejected = error
                break
        part.unlink(missing_ok=True)
    part.unlink(missing_ok=True)
    if rejected is not None:
        raise rejected
    raise FetchError(f"could not download {file.id}: " + "; ".join(failures))


def _is_permanent(error: BaseException) -> bool:
    import requests

    if isinstance(error, FileNotFoundError):
        return True
    if isinstance(error, requests.HTTPError) and error.response is not None:
        return error.response.status_code in {400, 401, 403, 404, 410}
    return False


# --------------------------------------------------------------------------- public API


def _offline_error(file: RemoteFile, path: Path) -> OfflineError:
    return OfflineError(
        f"{file.id} is not in the cache ({path}) and MLTRACES_OFFLINE is set. "
        f"Unset MLTRACES_OFFLINE and run `mltraces fetch {file.id}`, point MLTRACES_MIRROR "
        f"at a copy, or download {file.url} to that path"
    )


def fetch_file(file: RemoteFile | str, *, progress: bool | None = None) -> Path:
    """Return the verified local path of ``file``, downloading it if needed.

    Examples
    --------
    >>> path = fetch_file("zeus/summary_train.csv")  # doctest: +SKIP
    """
    from filelock import FileLock

    file = _resolve(file)
    path = local_path(file)
    if _stamp_is_current(path, file):
        return path
    if path.is_file() and _adopt_existing(path, file):
        return path
    if config.offline():
        raise _offline_error(file, path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(path) + ".lock"):
        if _stamp_is_current(path, file):  # another process finished it meanwhile
            return path
        part = _part_path(path)
        log.info("downloading %s", file.id)
        found = _download_to_part(file, part, _show_progress(progress))
        os.replace(part, path)
        _write_stamp(path, file, found)
    return path


def _adopt_existing(path: Path, file: RemoteFile) -> bool:
    """Verify a cached file that has no valid stamp (copied in, or touched)."""
    try:
        found = _verify(path, file)
    except VerificationError as error:
        log.warning("%s; downloading it again", error)
        _stamp_path(path).unlink(missing_ok=True)
        return False
    _write_stamp(path, file, found)
    return True


def _resolve(file: RemoteFile | str) -> RemoteFile:
    if isinstance(file, RemoteFile):
        return file
    from mltraces.registry import get_file

    return get_file(file)


def expand(names: Iterable[str] = ()) -> list[RemoteFile]:
    """Files named by source names and/or file ids; no names means every file."""
    from mltraces.registry import all_sources, get_file

    sources = all_sources()
    names = list(names)
    if not names:
        return [f for s in sources.values() for f in s.files]
    files: list[RemoteFile] = []
    for name in names:
        chosen = list(sources[name].files) if name in sources else [get_file(name)]
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
    pending = [f for f in files if cached_path(f) is None]
    total = sum(f.size or 0 for f in pending)
    if total >= LARGE_DOWNLOAD_BYTES:
        log.warning("about to download %.1f GB in %d files", total / 1e9, len(pending))
    result: dict[str, Path] = {}
    for file in files:
        result[file.id] = fetch_file(file, progress=progress)
        if file.kind == "tar.gz":
            for member, path in fetch_members(file).items():
                result[f"{file.id}/{member}"] = path
    return result


def fetch_members(file: RemoteFile | str) -> dict[str, Path]:
    """Unpack a verified archive once (safely) and return member name → path."""
    from mltraces.archives import extract_verified

    file = _resolve(file)
    archive = fetch_file(file)
    stamp = _read_stamp(archive) or {}
    sha = stamp.get("sha256") or file_sha256(archive)
    target = config.cache_dir() / "extracted" / f"{file.filename}-{sha[:16]}"
    return extract_verified(archive, target)


@dataclass(frozen=True)
class VerifyResult:
    """Outcome of re-hashing one cached file."""

    id: str
    path: Path
    status: str  # "ok", "missing", "corrupt"
    detail: str = ""


def verify_cached(files: Iterable[RemoteFile] | None = None) -> list[VerifyResult]:
    """Re-hash every cached file (ignoring stamps); corrupt ones are deleted."""
    from mltraces.archives import discard, verify_members

    results = []
    for file in files if files is not None else expand():
        path = local_path(file)
        if not path.is_file():
            results.append(VerifyResult(file.id, path, "missing"))
            continue
        try:
            found = _verify(path, file)
        except VerificationError as error:
            _stamp_path(path).unlink(missing_ok=True)
            results.append(VerifyResult(file.id, path, "corrupt", str(error)))
            continue
        _write_stamp(path, file, found)
        results.append(VerifyResult(file.id, path, "ok", f"{file.hash_kind} matches"))
        if file.kind == "tar.gz":
            target = config.cache_dir() / "extracted" / f"{file.filename}-{found.sha256[:16]}"
            problems = verify_members(target)
            for member, problem in problems.items():
                status = "ok" if problem is None else "corrupt"
                results.append(
                    VerifyResult(f"{file.id}/{member}", target / member, status, problem or "")
                )
            if any(problems.values()):
                discard(target)  # unpacked again from the verified archive on next use
    return results
