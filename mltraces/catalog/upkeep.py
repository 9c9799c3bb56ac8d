"""Keeping the Parquet cache tidy: pruning, leftovers of killed runs, ``verify``.

A conversion is pruned when a newer one of the same table reads the same inputs
(superseded) or when its inputs are gone or changed, but never while a live
process leases it (has a view on it): the record is hidden first, leases are
read second, so a reader that leased the file and then finds its record is
safe. Scratch folders and temporary files of dead processes are removed; local
archives unpacked for conversions that no longer exist go too.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import time
from pathlib import Path
from typing import Any, NamedTuple

from mltraces import config
from mltraces.catalog.store import (
    LOCAL_EXTRACTED,
    TABLES_DIR,
    damage,
    file_sha256,
    inputs_current,
    leased_names,
    pid_alive,
    read_record,
    record_path,
    tables_dir,
)

__all__ = ["ParquetCheck", "clean_orphans", "prune", "verify_tables"]

_OLD_LEFTOVER_S = 24 * 3600  # leftovers whose owner cannot be told are removed after a day
_PID_NAME = re.compile(r"(?:\.tmp-|^convert-|\.prune-)(\d+)")


def _delete_conversion(target: Path) -> None:
    for path in (target, record_path(target), target.with_name(target.name + ".lock")):
        with contextlib.suppress(OSError):
            path.unlink()


def _condemn(target: Path) -> bool:
    """Remove ``target`` unless a lease appears; a reader checks the record after leasing."""
    from filelock import FileLock, Timeout

    record = record_path(target)
    hidden = record.with_name(f"{record.name}.prune-{os.getpid()}")
    try:
        with FileLock(str(target) + ".lock", timeout=0):
            try:
                os.replace(record, hidden)
            except OSError:
                return False
            if target.name in leased_names(target.parent):
                os.replace(hidden, record)
                return False
            target.unlink(missing_ok=True)
            hidden.unlink(missing_ok=True)
    except Timeout:  # being rebuilt right now
        return False
    target.with_name(target.name + ".lock").unlink(missing_ok=True)
    return True


def _records(folder: Path, table: str | None) -> list[tuple[Path, dict[str, Any]]]:
    pattern = f"{table}-*.parquet.json" if table else "*.parquet.json"
    found = []
    for record in folder.glob(pattern):
        target = record.with_name(record.name.removesuffix(".json"))
        loaded = read_record(target)
        if loaded is not None:
            found.append((target, loaded))
    return found


def prune(table: str | None = None) -> list[Path]:
    """Remove superseded conversions and those whose inputs are gone, unless leased.

    A conversion is superseded when a newer one of the same table reads the same
    inputs (same registry files or local paths).
    """
    folder = tables_dir()
    if not folder.is_dir():
        return []
    newest: dict[tuple[str, str], tuple[str, Path]] = {}
    records = _records(folder, table)
    for target, record in records:
        group = (str(record.get("table")), json.dumps(record.get("identity")))
        created = str(record.get("created", ""))
        if group not in newest or created >= newest[group][0]:
            newest[group] = (created, target)
    current = {target for _, target in newest.values()}
    removed = []
    leased = leased_names(folder)
    for target, record in records:
        if target in current and inputs_current(record):
            continue
        if target.name not in leased and _condemn(target):
            removed.append(target)
    if removed:
        _prune_local_extractions(folder)
    return removed


def _prune_local_extractions(folder: Path) -> None:
    """Unpacked local archives that no remaining conversion reads."""
    root = config.cache_dir() / LOCAL_EXTRACTED
    if not root.is_dir():
        return
    used = set()
    for _, record in _records(folder, None):
        for stamp in record.get("stamps", []):
            with contextlib.suppress(ValueError):
                used.add(Path(stamp["path"]).relative_to(root).parts[0])
    for extracted in root.iterdir():
        if not extracted.is_dir() or extracted.name in used:
            continue
        if time.time() - extracted.stat().st_mtime > 3600:  # not one being converted now
            shutil.rmtree(extracted, ignore_errors=True)
            extracted.with_name(extracted.name + ".lock").unlink(missing_ok=True)


def clean_orphans(folder: Path | None = None) -> list[Path]:
    """Remove ``*.tmp-PID``, ``convert-PID-*`` and ``*.prune-PID`` left by dead processes."""
    folder = folder or tables_dir()
    if not folder.is_dir():
        return []
    removed = []
    now = time.time()
    for path in folder.iterdir():
        match = _PID_NAME.search(path.name)
        if match:
            orphan = not pid_alive(int(match.group(1)))
        elif path.name.startswith("convert-"):  # older naming, owner unknown
            orphan = now - path.stat().st_mtime > _OLD_LEFTOVER_S
        else:
            continue
        if orphan:
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
            removed.append(path)
    return removed


# --------------------------------------------------------------------------- verify


class ParquetCheck(NamedTuple):
    """Outcome of checking one converted table (same fields as the download layer's)."""

    id: str
    path: Path
    status: str  # "ok", "corrupt" (deleted), "stale" (inputs gone; deleted), "in use"
    detail: str = ""


def _check_one(target: Path, record: dict[str, Any], rehash: bool, leased: set[str]
               ) -> ParquetCheck:
    name = f"{TABLES_DIR}/{target.name}"
    problem = damage(target, record)
    if problem is None and rehash and record.get("parquet_sha256"):
        found = file_sha256(target)
        if found != record["parquet_sha256"]:
            problem = (f"sha256 {found} differs from {record['parquet_sha256']}, "
                       "recorded when it was written")
    if problem is not None:
        _delete_conversion(target)  # broken either way: rebuilt from its inputs on next use
        return ParquetCheck(name, target, "corrupt", problem + "; deleted, rebuilt on next use")
    if not inputs_current(record):
        if target.name in leased:
            return ParquetCheck(name, target, "in use", "its inputs changed; kept while a "
                                "process has a view on it")
        _delete_conversion(target)
        return ParquetCheck(name, target, "stale", "its input files changed or are gone; "
                            "deleted, rebuilt on next use")
    detail = "size, footer" + (" and sha256 match" if rehash else " match")
    return ParquetCheck(name, target, "ok", detail)


def verify_tables(rehash: bool = True) -> list[ParquetCheck]:
    """Check every converted table in the cache; delete the broken and the stale ones.

    Run by ``mltraces verify`` after the input files were re-hashed, so a table
    built from a file that verification just deleted goes too. ``rehash``
    compares each Parquet with the sha256 recorded when it was written.
    """
    folder = tables_dir()
    if not folder.is_dir():
        return []
    leased = leased_names(folder)
    checks = [_check_one(t, r, rehash, leased) for t, r in sorted(_records(folder, None))]
    clean_orphans(folder)
    prune()
    return checks


