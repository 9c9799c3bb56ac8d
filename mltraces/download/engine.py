"""pooch as the engine: a :class:`pooch.Pooch` per source, mltraces's pieces plugged in.

:func:`pooch_for` builds a plain pooch from the registry (``pooch.create`` with
the source's URLs and ``sha256:`` pins, its path the source's folder in the
cache), so a pooch user can fetch from it directly. mltraces fetches through the
same object with :meth:`pooch.Pooch.fetch` and its two extension points:

``downloader=`` :class:`PinnedDownloader`
    tries the file's URLs (or the mirror's) in order with the resumable, bounded
    transfer of :mod:`.http` into a persistent ``<name>.part`` (pooch's own
    temporary file is only the hand-over: the part survives a killed process and
    the next one resumes it with a Range request), retries dropped connections,
    remembers unreachable hosts (:mod:`.hosts`), and sniffs the finished body
    (LFS pointer, HTML page, short body) before pooch hashes it.
``processor=`` :class:`~.processors.VerifyPins` (+ :class:`~.processors.SafeUntar`)
    verifies what pooch cannot (git blob ids, sizes), stamps the file, unpacks.

pooch then does what it is for: a strict sha256 check of the temporary file and
an atomic move into place, or a deletion. Around it, :func:`retrieve` holds the
per-file lock, sweeps leftovers of killed runs, and turns a hash mismatch into
one restart from byte 0 (when the bytes were resumed: a corrupted ``.part``) or
the next URL.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import functools
import logging
import os
import posixpath
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mltraces import config
from mltraces.download import cleanup, hosts, http
from mltraces.download.archives import disk_error
from mltraces.download.checks import STALE_HINT, sniff_file
from mltraces.download.mirrors import candidate_urls, copy_from_directory, is_http
from mltraces.download.paths import cache_root, local_path, lock_path, part_path, url_parts
from mltraces.download.processors import PinMismatch, Processor, StaleCopy
from mltraces.errors import (
    ConfigError,
    FetchError,
    HostDownError,
    MltracesError,
    OfflineError,
    VerificationError,
)
from mltraces.logs import get_logger
from mltraces.registry import RemoteFile

log = get_logger(__name__)

ATTEMPTS_PER_URL = 3
LOCK_GRACE_S = 600.0  # a lock holder may hash and move for this long after its deadline
_POOCH_GOT = re.compile(r"but got ([0-9a-fA-F]+)")

__all__ = ["PinnedDownloader", "known_hash", "pooch_for", "pooch_for_files", "retrieve"]


# --------------------------------------------------------------------------- pooch objects


def known_hash(file: RemoteFile) -> str | None:
    """The pooch registry value: ``sha256:<hex>``, or None for git-blob-only pins."""
    return f"sha256:{file.sha256}" if file.sha256 else None


def _layout(files: Sequence[RemoteFile]) -> tuple[list[str], dict[str, str]]:
    """The common folder of the files' ``host/path`` and each file's name under it.

    Computed once per set of files: fetching each of a source's N files asks for the
    layout of all N, which checked every part of N URLs N times (ServeGen's 846 files:
    10 s of its 216 downloads here went to this alone).
    """
    common, names = _layout_of(tuple(files))
    return list(common), dict(names)


_Layout = tuple[tuple[str, ...], tuple[tuple[str, str], ...]]


@functools.lru_cache(maxsize=64)
def _layout_of(files: tuple[RemoteFile, ...]) -> _Layout:
    """:func:`_layout` of a hashable tuple, as tuples (the cached value cannot be changed)."""
    keys = {f.id: "/".join(url_parts(f.url, f"the URL of {f.id}")) for f in files}
    common = posixpath.commonpath([posixpath.dirname(k) for k in keys.values()]) if keys else ""
    names = tuple((fid, key[len(common) :].lstrip("/")) for fid, key in keys.items())
    return (tuple(common.split("/")) if common else ()), names


def pooch_for_files(files: Sequence[RemoteFile]) -> Any:
    """A :class:`pooch.Pooch` over ``files``: cache folder, base URL, sha256 registry."""
    import pooch

    common, names = _layout(files)
    root = cache_root().joinpath("files", *common)
    base = "https://" + "/".join(common) + "/" if common else "https://"
    registry = {names[f.id]: known_hash(f) for f in files}
    urls = {names[f.id]: f.url for f in files if base + names[f.id] != f.url}
    return pooch.create(path=root, base_url=base, registry=registry, urls=urls,
                        retry_if_failed=0, allow_updates=True)


def pooch_for(source: str) -> Any:
    """The pooch of a registered source, e.g. ``pooch_for("zeus").fetch("summary_train.csv")``.

    Registry names are the files' paths under the source's common folder; files
    pinned only by a git blob have ``None`` (pooch does not check them: pass
    ``processor=VerifyPins.for_id(...)``, or use :func:`mltraces.download.fetch_file`).
    """
    from mltraces.registry import get_source

    return pooch_for_files(get_source(source).files)


def _pooch_and_name(file: RemoteFile) -> tuple[Any, str]:
    """The source's pooch when ``file`` is its registry entry, else a one-file pooch."""
    from mltraces.registry import all_sources

    source = all_sources().get(file.source)
    files = source.files if source is not None and file in source.files else (file,)
    pup = pooch_for_files(files)
    _, names = _layout(files)
    return pup, names[file.id]


@contextlib.contextmanager
def _quiet_pooch() -> Iterator[None]:
    """pooch logs every download at INFO on its own handler; mltraces logs its own."""
    import pooch

    logger = pooch.get_logger()
    level = logger.level
    logger.setLevel(max(level, logging.WARNING))
    try:
        yield
    finally:
        logger.setLevel(level)


# --------------------------------------------------------------------------- downloader


@dataclass
class PinnedDownloader:
    """pooch downloader for one registry file: mirrors, resume, limits, body sniffing.

    Called by pooch as ``downloader(url, output_file, pooch)``. pooch's ``url`` is
    the upstream one; the candidates (mirror-mapped when ``MLTRACES_MIRROR`` is
    set, minus those whose bytes failed a hash) are tried in order, and the
    verified-length body is handed over by renaming the ``.part`` onto
    ``output_file``. ``last_url`` and ``resumed`` say where the bytes came from.
    """

    file: RemoteFile
    urls: list[str]
    deadline: http.Deadline
    progressbar: Any = False
    retry_wait: float = 0.5
    rejected: dict[str, str] = field(default_factory=dict)
    last_url: str = ""
    resumed: bool = False
    down: int = 0  # candidates skipped because their host is remembered as unreachable
    no_contact: int = 0  # failures without any answer (down, unreachable, offline)

    def reject(self, url: str, reason: str) -> bool:
        """Never use ``url`` again for this file; True while other candidates remain."""
        self.rejected[url] = reason
        return any(u not in self.rejected for u in self.urls)

    def __call__(self, url: str, output_file: str, pooch: Any = None) -> None:
        if config.offline() and all(is_http(u) for u in self.urls):
            raise OfflineError.for_file(self.file.id, local_path(self.file), self.file.url)
        output = Path(output_file)
        failures: list[str] = []
        bad_bytes: list[str] = []
        self.resumed = False
        self.down = self.no_contact = 0
        for candidate in (u for u in self.urls if u not in self.rejected):
            self.deadline.check()
            try:
                if self._fetch_from(candidate, output, failures):
                    self.last_url = candidate
                    return
            except (http.TooLong, VerificationError) as error:
                bad_bytes.append(str(error))
                self.rejected[candidate] = str(error)
        if bad_bytes or self.no_contact < len(failures):  # keep a part only while unreachable
            part_path(local_path(self.file)).unlink(missing_ok=True)
        if bad_bytes:
            raise VerificationError(
                f"{self.file.id}: {'; '.join(bad_bytes)}. The file was deleted and not used; "
                + STALE_HINT
            )
        from mltraces.download import unavailable

        unavailable.note(self.file.id, "; ".join(failures))  # listings say so from now on
        if failures and self.down == len(failures):  # the message says what to do
            raise HostDownError(f"could not download {self.file.id}: " + "; ".join(failures))
        raise FetchError(
            f"could not download {self.file.id}: " + "; ".join(failures)
            + ". Check the network or MLTRACES_MIRROR and run again (a partial download "
            "resumes); MLTRACES_OFFLINE=1 works from the cache alone"
        )

    def _fetch_from(self, url: str, output: Path, failures: list[str]) -> bool:
        """Put the file's bytes from ``url`` into ``output``; False if ``url`` failed."""
        if not is_http(url):
            return self._copy(Path(url), output, failures)
        if config.offline():  # a directory mirror may serve offline; the network may not
            failures.append(f"{url}: not asked, MLTRACES_OFFLINE is set")
            self.no_contact += 1
            return False
        try:
            hosts.check(url)
        except HostDownError as error:
            failures.append(str(error))
            self.down += 1
            self.no_contact += 1
            return False
        return self._download(url, output, failures)

    def _copy(self, source: Path, output: Path, failures: list[str]) -> bool:
        """A directory mirror: copy (via the part, so the file gets normal permissions)."""
        part = part_path(local_path(self.file))
        try:
            copy_from_directory(source, part, _cap(self.file))
        except BaseException as error:
            part.unlink(missing_ok=True)  # a failed copy (say, disk full) leaves nothing
            if isinstance(error, FileNotFoundError):
                failures.append(str(error))
                return False
            if isinstance(error, OSError):
                what = f"copying {self.file.id} from the mirror"
                raise disk_error(error, what, output.parent) from error
            raise
        self._sniff(part, str(source))
        self.resumed = False
        os.replace(part, output)
        return True

    def _download(self, url: str, output: Path, failures: list[str]) -> bool:
        part = part_path(local_path(self.file))
        http.remove_placeholder(output)
        limit = config.max_download()  # read before the loop: a bad value is no network error
        for attempt in range(1, ATTEMPTS_PER_URL + 1):
            try:
                outcome = http.transfer(
                    url, part, size=self.file.size, limit=limit,
                    deadline=self.deadline, progressbar=self.progressbar, label=self.file.id,
                )
            except (http.DeadlineExceeded, http.TooLong, ConfigError):
                raise
            except Exception as error:  # network trouble: classify, maybe retry (resuming)
                if _is_disk(error):
                    raise
                failures.append(http.describe_failure(url, error))
                if http.is_unreachable(error):
                    hosts.mark_down(url, http.connect_reason(error))
                    self.no_contact += 1
                    return False
                if http.is_permanent(error):
                    return False
                self.deadline.sleep(self.retry_wait * attempt)
                continue
            hosts.mark_up(url)
            have = part.stat().st_size if part.exists() else 0
            short = self.file.size is not None and have < self.file.size
            if short and not outcome.finished and outcome.received:
                failures.append(f"{url}: body ended after {have:,} bytes")
                continue  # the next request resumes
            self.resumed |= outcome.resumed
            self._sniff(part, url)  # raises for a finished short body, a pointer, a page
            os.replace(part, output)
            return True
        return False

    def _sniff(self, path: Path, where: str) -> None:
        """Name a finished body that is not the data (deleting it) before pooch hashes it."""
        # a first-use file's length is judged with its hash (one refusal naming the record)
        file = dataclasses.replace(self.file, size=None) if self.file.first_use else self.file
        problem = sniff_file(path, file)
        if problem is not None:
            path.unlink(missing_ok=True)
            raise VerificationError(f"{problem} (from {where})")


def _is_disk(error: BaseException) -> bool:
    """A local write failed (not the network): no retry will help."""
    return isinstance(error, OSError) and error.errno in {
        errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOTDIR
    }


def _cap(file: RemoteFile) -> tuple[int, str]:
    if file.size is not None:
        return file.size, "the pinned size"
    return config.max_download(), "MLTRACES_MAX_DOWNLOAD, for a file of unknown size"


# --------------------------------------------------------------------------- retrieve


def _pooch_mismatch(file: RemoteFile, error: ValueError) -> PinMismatch:
    """pooch's strict sha256 check failed (it deleted the temp file): say it our way."""
    match = _POOCH_GOT.search(str(error))
    got = match.group(1) if match else "a different hash"
    if file.first_use:  # held to its recorded first download: say so, and how to re-pin
        from mltraces.download.firstuse import refused

        return PinMismatch(str(refused(file, got)))
    return PinMismatch(
        f"{file.id}: sha256 mismatch: expected {file.sha256}, got {got}. "
        f"The file was deleted and not used; {STALE_HINT}"
    )


def _fetch_once(pup: Any, name: str, downloader: PinnedDownloader, processor: Processor) -> Any:
    """One :meth:`pooch.Pooch.fetch`; every failure of the bytes becomes a PinMismatch."""
    try:
        with _quiet_pooch():
            return pup.fetch(name, processor=processor, downloader=downloader)
    except (MltracesError, OSError):
        raise
    except ValueError as error:  # pooch.hashes.hash_matches(strict=True)
        raise _pooch_mismatch(downloader.file, error) from error


def _verified(pup: Any, name: str, downloader: PinnedDownloader, processor: Processor) -> Any:
    """Fetch until verified: once more from byte 0 after a resumed download fails its
    hash (a corrupted ``.part``), then the next URL; the last mismatch is raised."""
    restarted = stale_retried = False
    while True:
        try:
            return _fetch_once(pup, name, downloader, processor)
        except StaleCopy as error:  # a cached copy without a valid stamp failed: replace it
            if stale_retried:
                raise
            stale_retried = True
            log.warning("%s; downloading it again", error)
            continue
        except PinMismatch as error:
            if downloader.resumed and not restarted:
                restarted = True
                log.warning("%s: the resumed download failed its hash; starting over from "
                            "byte 0", downloader.file.id)
                continue
            if not downloader.last_url or not downloader.reject(downloader.last_url, str(error)):
                raise


def retrieve(file: RemoteFile, processor: Processor, *, progressbar: Any = False,
             retry_wait: float = 0.5) -> Any:
    """Fetch ``file`` through its pooch under the per-file lock; returns the processor's result
    (None when another process verified the file while this one waited for the lock).

    Raises :class:`~mltraces.errors.CacheError` (one line) when the cache cannot be written.
    """
    config.check_settings()  # a bad setting is one line now, never a retried "network" failure
    path = local_path(file)
    try:
        return _retrieve_locked(file, path, processor, progressbar, retry_wait)
    except OSError as error:
        raise disk_error(error, f"fetching {file.id}", path.parent) from error


def _retrieve_locked(file: RemoteFile, path: Path, processor: Processor, progressbar: Any,
                     retry_wait: float) -> Any:
    from filelock import FileLock, Timeout

    from mltraces.download import stamps

    path.parent.mkdir(parents=True, exist_ok=True)
    cleanup.sweep_folder(path.parent)
    # a holder gives up within its deadline, then hashes and moves: wait that long at most
    lock = FileLock(str(lock_path(path)), timeout=config.download_timeout() + LOCK_GRACE_S)
    try:
        lock.acquire()
    except Timeout:
        raise FetchError(
            f"{file.id}: another process has held {lock_path(path)} for over "
            f"{lock.timeout:.0f} s; wait for it, or stop it and run again"
        ) from None
    try:
        if stamps.is_current(path, file):  # another process finished it meanwhile
            return None
        log.info("downloading %s", file.id)
        deadline = http.Deadline(config.download_timeout(), file.id)
        pup, name = _pooch_and_name(file)
        downloader = PinnedDownloader(file, candidate_urls(file), deadline, progressbar,
                                      retry_wait)
        return _verified(pup, name, downloader, processor)
    finally:
        lock.release()
