"""One HTTP transfer into a persistent partial file, resumable and bounded.

:func:`transfer` appends to ``<name>.part`` with an HTTP Range request when the
part already holds bytes (a previous attempt or process was interrupted), reads
the body as it arrives (``read1``: a last partial chunk is never lost when the
connection drops), and stops at the first of:

- the pinned size: reading stops there, whatever follows is never read (the hash
  judges what came); without a pin, the ``Content-Length`` the server announced,
  else ``MLTRACES_MAX_DOWNLOAD``: a body that goes past it is refused;
- the overall :class:`Deadline` (``MLTRACES_DOWNLOAD_TIMEOUT``): a server that
  trickles bytes cannot hold the per-file lock for ever; the part is kept;
- the end of the body. The result says whether the server *finished* it (all
  the announced bytes arrived), so a complete answer shorter than the pin is
  named at once instead of being asked again with Range requests.

Errors are classified here without importing :mod:`requests` for it: a failure
of the requests stack is recognised once requests is loaded anyway.
"""

from __future__ import annotations

import os
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mltraces.errors import FetchError, LimitError

CHUNK = 1 << 16
CONNECT_TIMEOUT_S = 10.0
READ_TIMEOUT_S = 60.0
_ERRNO = re.compile(r"\[Errno -?\d+\] ([^'\")]+)")
PERMANENT_STATUS = frozenset({400, 401, 403, 404, 405, 410, 451})

__all__ = [
    "Deadline",
    "DeadlineExceeded",
    "Document",
    "Outcome",
    "TooLong",
    "connect_reason",
    "describe_failure",
    "get_document",
    "is_permanent",
    "is_unreachable",
    "transfer",
]


class TooLong(LimitError):
    """The server sent more bytes than the file can have (the part was deleted)."""


class DeadlineExceeded(LimitError):
    """The file's time (``MLTRACES_DOWNLOAD_TIMEOUT``) ran out; the part is kept."""


class RangeMismatch(FetchError):
    """A 206 answer for other bytes than asked for (the part was deleted: start over)."""


@dataclass
class Deadline:
    """The time left for one file, across every URL and retry."""

    seconds: float
    what: str
    started: float = 0.0

    def __post_init__(self) -> None:
        self.started = self.started or time.monotonic()

    def remaining(self) -> float:
        return self.seconds - (time.monotonic() - self.started)

    def check(self, detail: str = "") -> None:
        """Raise :class:`DeadlineExceeded` once the time is up."""
        if self.remaining() <= 0:
            raise DeadlineExceeded(
                f"gave up on {self.what} after {self.seconds:g} s "
                f"(MLTRACES_DOWNLOAD_TIMEOUT={self.seconds:g}){detail}; raise "
                "MLTRACES_DOWNLOAD_TIMEOUT or run again (a partial download resumes)"
            )

    def sleep(self, seconds: float) -> None:
        time.sleep(max(0.0, min(seconds, self.remaining())))


@dataclass(frozen=True)
class Outcome:
    """What one transfer did."""

    resumed: bool  # appended to bytes from an earlier attempt
    finished: bool  # the server sent every byte it announced (or had nothing left)
    received: int  # bytes added by this transfer


def _requests_error(error: BaseException, name: str) -> bool:
    """``isinstance(error, requests.<name>)`` without importing requests."""
    requests = sys.modules.get("requests")
    return requests is not None and isinstance(error, getattr(requests, name))


def is_unreachable(error: BaseException) -> bool:
    """True when no connection could be opened (DNS, refused, connect timeout)."""
    if _requests_error(error, "ConnectTimeout"):
        return True
    if not _requests_error(error, "ConnectionError"):
        return False
    reason = error.args[0] if error.args else None
    reason = getattr(reason, "reason", reason)
    names = {cls.__name__ for cls in type(reason).__mro__}
    return bool(names & {"NewConnectionError", "NameResolutionError", "ConnectTimeoutError"})


def is_permanent(error: BaseException) -> bool:
    """True for failures that retrying the same URL cannot fix."""
    if isinstance(error, FileNotFoundError | TooLong):
        return True
    status = getattr(getattr(error, "response", None), "status_code", None)
    return _requests_error(error, "HTTPError") and status in PERMANENT_STATUS


def connect_reason(error: BaseException) -> str:
    """Why a connection could not be opened, in a few words (``Connection refused``)."""
    reason = _ERRNO.search(str(error))
    return reason.group(1).strip() if reason else type(error).__name__


def describe_failure(url: str, error: BaseException) -> str:
    """One line naming what went wrong with ``url``."""
    if is_unreachable(error):
        return f"could not connect to {url} ({connect_reason(error)})"
    status = getattr(getattr(error, "response", None), "status_code", None)
    if _requests_error(error, "HTTPError") and status is not None:
        return f"HTTP {status} from {url}"
    if _requests_error(error, "Timeout") or type(error).__name__ == "ReadTimeoutError":
        return f"timed out reading {url}"
    if _requests_error(error, "ConnectionError") or type(error).__name__ in {
        "ProtocolError",
        "IncompleteRead",
    }:
        return f"connection to {url} failed or dropped ({type(error).__name__})"
    if isinstance(error, FileNotFoundError | LimitError):
        return str(error)
    return f"{url}: {type(error).__name__}: {error}"


def _timeouts(deadline: Deadline) -> tuple[float, float]:
    """requests' (connect, read) timeouts, never past the deadline."""
    left = max(0.1, deadline.remaining())
    return min(CONNECT_TIMEOUT_S, left), min(READ_TIMEOUT_S, left)


def _size_of(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def _announced(response: Any, have: int, resumed: bool) -> int | None:
    """Total file size the server announces (Content-Length, plus kept bytes on a 206)."""
    length = response.headers.get("content-length")
    if length is None or not length.strip().isdigit():
        return None
    return int(length) + (have if resumed else 0)


def _range_start(response: Any) -> int | None:
    """First byte of a 206 answer, from ``Content-Range: bytes START-END/TOTAL``."""
    value = response.headers.get("content-range", "")
    unit, _, spec = value.partition(" ")
    start = spec.split("-", 1)[0]
    return int(start) if unit == "bytes" and start.isdigit() else None


def transfer(
    url: str,
    part: Path,
    *,
    size: int | None,
    limit: int,
    deadline: Deadline,
    progressbar: Any = False,
    label: str = "",
) -> Outcome:
    """Fill ``part`` from ``url``, resuming; see the module docstring for the limits.

    ``size`` is the pinned size (None if unpublished); ``limit`` caps unsized bodies.
    """
    import requests

    have = _size_of(part)
    if size is not None and have > size:  # an impossible part: start over
        part.unlink()
        have = 0
    if size is not None and have == size:
        return Outcome(resumed=True, finished=True, received=0)
    headers = {"Accept-Encoding": "identity"}  # the bytes on the wire are the file
    if have:
        headers["Range"] = f"bytes={have}-"
    with requests.get(url, stream=True, timeout=_timeouts(deadline), headers=headers) as response:
        if response.status_code == 416 and have:  # nothing after what we have
            return Outcome(resumed=True, finished=True, received=0)
        response.raise_for_status()
        resumed = bool(have) and response.status_code == 206
        if resumed and _range_start(response) != have:
            part.unlink()  # an answer for other bytes than asked: never splice it in
            raise RangeMismatch(
                f"{url} answered a Range request for byte {have:,} with "
                f"{response.headers.get('content-range')!r}; starting over"
            )
        if not resumed:
            have = 0
        announced = _announced(response, have, resumed)
        if size is not None:  # read exactly up to the pin; the hash judges those bytes
            cap, why = size, "the pinned size"
        else:
            cap, why = limit, "MLTRACES_MAX_DOWNLOAD, for a file of unknown size"
            if announced is not None and announced > limit:
                raise TooLong(f"{url} announces {announced:,} bytes, more than {why} ({limit:,})")
            cap = announced if announced is not None else limit
        bar = _progress(progressbar, size or announced, have, label or part.name)
        try:
            received = _stream(response, part, have, resumed, (cap, why, size is not None),
                               deadline, bar)
        finally:
            if isinstance(progressbar, bool):
                bar.close()
    total = have + received
    finished = total == size or (announced is not None and total >= announced)
    return Outcome(resumed=resumed, finished=finished, received=received)


def _progress(progressbar: Any, total: int | None, initial: int, label: str) -> Any:
    """pooch's convention: True for a tqdm bar, or a tqdm-like object to update."""
    if isinstance(progressbar, bool):
        from tqdm.auto import tqdm

        return tqdm(
            total=total,
            initial=initial,
            unit="B",
            unit_scale=True,
            desc=label,
            disable=not progressbar,
            leave=False,
        )
    progressbar.reset(total=total)
    progressbar.update(initial)
    return progressbar


def _stream(
    response: Any,
    part: Path,
    have: int,
    resumed: bool,
    cap: tuple[int, str, bool],
    deadline: Deadline,
    bar: Any,
) -> int:
    """Copy the body into ``part`` as it arrives, within the cap and the deadline.

    A pinned cap is where reading stops (what follows is never read); any other cap
    is a ceiling: one byte past it and the download is refused.
    """
    limit, why, pinned = cap
    raw = response.raw
    read = getattr(raw, "read1", None) or raw.read
    received = 0
    with open(part, "ab" if resumed else "wb") as out:
        while (room := limit - have - received) > 0 or not pinned:
            chunk = read(min(CHUNK, room) if pinned else min(CHUNK, room + 1),
                         decode_content=False)
            if not chunk:
                break
            if len(chunk) > room:
                out.close()
                part.unlink(missing_ok=True)
                raise TooLong(
                    f"{response.url} sent more than {why} ({limit:,} bytes); stopped "
                    "reading and deleted what came"
                )
            out.write(chunk)
            received += len(chunk)
            bar.update(len(chunk))
            deadline.check(f" ({have + received:,} bytes so far, kept to resume)")
    return received


def remove_placeholder(path: str | os.PathLike[str]) -> None:
    """Delete pooch's empty temp file at once: the bytes live in ``.part`` until complete."""
    Path(path).unlink(missing_ok=True)


@dataclass(frozen=True)
class Document:
    """A small HTTP answer read whole (API JSON): status, body, next-page link."""

    status: int
    body: bytes
    next_url: str | None


def get_document(url: str, *, limit: int, deadline: Deadline) -> Document:
    """GET ``url`` into memory, refusing bodies over ``limit`` bytes or past the deadline."""
    import requests

    with requests.get(url, stream=True, timeout=_timeouts(deadline)) as response:
        announced = _announced(response, 0, False)
        if announced is not None and announced > limit:
            raise TooLong(f"{url} announces {announced:,} bytes; an API answer may have {limit:,}")
        read = getattr(response.raw, "read1", None) or response.raw.read
        body = bytearray()
        while chunk := read(CHUNK, decode_content=True):
            body += chunk
            if len(body) > limit:
                raise TooLong(f"{url} sent more than {limit:,} bytes; an API answer may not")
            deadline.check(f" (reading {url})")
        next_url = response.links.get("next", {}).get("url")
        return Document(response.status_code, bytes(body), next_url)
