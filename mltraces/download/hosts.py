"""Host health: an unreachable host fails once, fast, and is remembered for a while.

Without a network every file on a host would otherwise pay its own connection
attempts and retries (three tables on one host: nine failures, seconds each).
When a connection cannot even be opened (name not resolved, refused, connect
timeout) the host is written to ``<cache>/state/hosts.json`` with the time it
was found down; for ``MLTRACES_HOST_DOWN_TTL`` seconds from then (default 300,
the current setting, so ``0`` turns it off at once) requests to it fail at once
with the remembered reason. A record dated in the future is ignored. A successful answer
clears the record. Only cold paths read this file; warm ones never look.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from urllib.parse import urlsplit

from mltraces import config
from mltraces.atomic import write_text_atomic
from mltraces.errors import HostDownError
from mltraces.logs import get_logger

log = get_logger(__name__)

__all__ = ["check", "mark_down", "mark_up", "record_path"]


def record_path() -> Path:
    """``<cache>/state/hosts.json``."""
    return config.cache_dir() / "state" / "hosts.json"


def _host(url: str) -> str:
    return urlsplit(url).netloc


def _load() -> dict[str, dict]:
    try:
        data = json.loads(record_path().read_text())
    except (OSError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def _save(data: dict[str, dict]) -> None:
    path = record_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, json.dumps(data, indent=1))
    except OSError as error:  # remembering is an optimisation: never fail a fetch over it
        log.debug("could not record host health in %s: %s", path, error)


def _down_since(record: object, ttl: float, now: float) -> float | None:
    """When the host was found down, if that record still counts now; else None.

    The record counts for the *current* ``MLTRACES_HOST_DOWN_TTL`` from the moment
    it was written: ``0`` turns the memory off at once, a shorter TTL applies to
    old records too, and a record from the future (written while the clock was
    ahead) is ignored rather than trusted for however long it claims.
    """
    if not isinstance(record, dict):
        return None
    at = record.get("at")
    if not isinstance(at, int | float) or isinstance(at, bool):
        return None
    age = now - at
    return at if 0 <= age < ttl else None


def check(url: str) -> None:
    """Raise :class:`HostDownError` if ``url``'s host was recently unreachable."""
    ttl = config.host_down_ttl()
    if ttl <= 0:
        return
    record = _load().get(_host(url))
    now = time.time()
    at = _down_since(record, ttl, now)
    if at is None:
        return
    assert isinstance(record, dict)
    when = time.strftime("%H:%M:%S", time.localtime(at + ttl))
    raise HostDownError(
        f"{_host(url)} was unreachable {now - at:.0f} s ago "
        f"({record.get('reason', 'no reason recorded')}) and is not asked again until {when} "
        f"(MLTRACES_HOST_DOWN_TTL={ttl:g}; 0 turns this off). Check the network, set "
        f"MLTRACES_MIRROR or MLTRACES_OFFLINE=1, or delete {record_path()} to retry now"
    )


def mark_down(url: str, reason: str) -> None:
    """Remember that ``url``'s host could not be reached (no-op when the TTL is 0)."""
    ttl = config.host_down_ttl()
    if ttl <= 0:
        return
    data = _load()
    now = time.time()
    data[_host(url)] = {"at": now, "until": now + ttl, "reason": reason[:200]}
    _save(data)


def mark_up(url: str) -> None:
    """Forget a failure of ``url``'s host (it answered)."""
    data = _load()
    if data.pop(_host(url), None) is not None:
        _save(data)
