"""Files the last fetch could not obtain here, remembered so the listings say so plainly.

A file that no URL, mirror or cache could serve (not in the mirror, a host that does not
answer, offline) is written to ``<cache>/state/unavailable.json`` with the reason; a
file that is later verified is struck off. ``mltraces tables`` then says a table is
*unavailable here* with the reason and how to give a local copy, where it would say
"fetched on first use" of a file that will not come. Only cold paths read this file.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from mltraces import config
from mltraces.atomic import write_text_atomic
from mltraces.logs import get_logger

__all__ = ["ADVICE", "clear", "note", "reasons", "record_path", "short"]

#: what to do about a file that cannot be fetched here
ADVICE = ("give a local copy (--local TABLE=PATH, or MLTRACES_LOCAL) or a mirror that holds "
          "it (MLTRACES_MIRROR); see the documentation's Troubleshooting page")


def record_path() -> Path:
    """``<cache>/state/unavailable.json``."""
    return config.cache_dir() / "state" / "unavailable.json"


def reasons() -> dict[str, str]:
    """File id -> why the last fetch could not obtain it."""
    try:
        data = json.loads(record_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v["reason"] for k, v in data.items()
            if isinstance(v, dict) and isinstance(v.get("reason"), str)}


def short(reason: str) -> str:
    """The reason without the generic advice the download error appends."""
    return reason.split(". Check the network")[0].split("\n")[0]


def _save(data: dict[str, dict]) -> None:
    path = record_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, json.dumps(data, indent=1, sort_keys=True))
    except OSError as error:  # an aid to the listings: never fail a fetch over it
        get_logger(__name__).debug("could not record %s: %s", path, error)


def _load() -> dict[str, dict]:
    try:
        data = json.loads(record_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def note(file_id: str, reason: str) -> None:
    """Remember that ``file_id`` could not be obtained, and why."""
    data = _load()
    data[file_id] = {"reason": short(reason), "at": round(time.time())}
    _save(data)


def clear(file_id: str) -> None:
    """Strike ``file_id`` off once it is verified here."""
    if not record_path().is_file():
        return
    data = _load()
    if data.pop(file_id, None) is not None:
        _save(data)
