"""Choose, download, verify and convert AcmeTrace utilization files.

Selection works on the Hub manifest alone (nothing is downloaded to decide):
``cluster`` picks folders (``seren``, ``kalos``, ``ipmi``), ``metrics`` picks file
stems (``GPU_UTIL``, ``NODE_CPU_UTILIZATION``, ``GPU_AB_Power``), and
``since``/``until`` (inclusive days) pick the split files ``<METRIC>-2023-MM.csv``
whose span meets the range. A metric published as one file is always taken
whole (it cannot be fetched in parts).

Each file downloads with :func:`mltraces.download.fetch_file` (resumed with HTTP
Range after a dropped connection, verified against its LFS sha256, renamed into
place only when it matches) and is then converted once. A file whose conversion
already exists is not downloaded again, so ``keep_csv=False`` (``--delete-csv``)
keeps only the Parquet and needs disk for one CSV at a time.
"""

from __future__ import annotations

import calendar
import json
import os
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from pathlib import Path

from mltraces import config
from mltraces import download as fetch
from mltraces.errors import ConfigError, FetchError
from mltraces.logs import get_logger
from mltraces.registry import RemoteFile
from mltraces.sources.acme.hub import HubFile, Manifest, manifest
from mltraces.sources.acme.util import layout
from mltraces.sources.acme.util.assemble import Key, assemble, keys, sources_for
from mltraces.sources.acme.util.convert import Settings, convert, converted_meta

log = get_logger(__name__)

__all__ = ["UtilFetch", "fetch_util", "parse_day", "select"]


# --------------------------------------------------------------------------- selection


def parse_day(value: str | date | datetime | None, *, end: bool = False) -> date | None:
    """``2023-07-01``, ``2023-07`` (its first day, or its last with ``end=True``) or a date."""
    if value is None or isinstance(value, date):
        return value.date() if isinstance(value, datetime) else value
    text = str(value).strip()
    try:
        if len(text) == 7:
            year, month = (int(p) for p in text.split("-"))
            day = calendar.monthrange(year, month)[1] if end else 1
            return date(year, month, day)
        return date.fromisoformat(text[:10])
    except ValueError:
        raise ConfigError(f"bad date {value!r}: expected YYYY-MM-DD or YYYY-MM") from None


def _names(values: str | Iterable[str] | None) -> list[str]:
    if values is None:
        return []
    items = [values] if isinstance(values, str) else list(values)
    return [part.strip() for item in items for part in item.split(",") if part.strip()]


def _pick(requested: list[str], known: list[str], what: str, flag: str) -> set[str] | None:
    """Match names case-insensitively; unknown ones raise with the valid list."""
    if not requested:
        return None
    lookup = {k.lower(): k for k in known}
    bad = [r for r in requested if r.lower() not in lookup]
    if bad:
        raise KeyError(f"unknown {what} {', '.join(bad)} ({flag}); known: {', '.join(known)}")
    return {lookup[r.lower()] for r in requested}


def _span(file: HubFile, siblings: list[HubFile]) -> tuple[date | None, date | None]:
    """Days a file covers: a split file up to the next one's start (or its month's end)."""
    start = file.start()
    if start is None:
        return None, None
    later = [s.start() for s in siblings if s.start() and s.start() > start]
    if later:
        return start, min(later) - timedelta(days=1)
    if file.period and len(file.period) == 7:
        return start, date(start.year, start.month, calendar.monthrange(start.year, start.month)[1])
    return start, None


def _meets(span: tuple[date | None, date | None], since: date | None, until: date | None) -> bool:
    start, end = span
    if since is not None and end is not None and end < since:
        return False
    return not (until is not None and start is not None and start > until)


def select(
    manifest: Manifest,
    cluster: str | Iterable[str] | None = None,
    metrics: str | Iterable[str] | None = None,
    since: str | date | None = None,
    until: str | date | None = None,
) -> list[HubFile]:
    """The manifest's files for these clusters, metrics and days (None = all)."""
    groups = _pick(_names(cluster), manifest.groups(), "cluster", "--cluster")
    wanted = _pick(_names(metrics), manifest.metrics(), "metric", "--metric")
    first, last = parse_day(since), parse_day(until, end=True)
    chosen: list[HubFile] = []
    for key in keys(manifest):
        _, group, metric = key
        if (groups and group not in groups) or (wanted and metric not in wanted):
            continue
        files = sources_for(manifest, key)
        chosen.extend(f for f in files if _meets(_span(f, files), first, last))
    if not chosen:
        raise KeyError(
            f"no utilization file matches cluster={cluster} metrics={metrics} "
            f"since={since} until={until}; see `mltraces list acme-util`"
        )
    return chosen


# --------------------------------------------------------------------------- disk


def _free_bytes(path: Path) -> int:
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    return shutil.disk_usage(probe).free


def check_disk(pending: list[HubFile], keep_csv: bool) -> int:
    """Bytes needed for ``pending`` downloads; raises early when the disk is too small."""
    if not pending:
        return 0
    sizes = [f.size for f in pending]
    need = sum(sizes) if keep_csv else max(sizes)
    free = _free_bytes(config.cache_dir())
    if need > free:
        raise FetchError(
            f"the selected files need {need / 1e9:.1f} GB but only {free / 1e9:.1f} GB are free "
            f"in {config.cache_dir()}. Select fewer files (--cluster/--metric/--since/--until), "
            "pass --delete-csv to keep only the Parquet, or point MLTRACES_CACHE at a bigger disk"
        )
    return need


# --------------------------------------------------------------------------- fetch


def _reuse_other_revision(remote: RemoteFile, file: HubFile) -> None:
    """Hard-link an identical verified copy downloaded for another commit, if any.

    Resolve URLs carry the commit, so a new revision means new cache paths even
    for unchanged files; ``fetch_file`` re-hashes the linked copy once instead of
    downloading gigabytes again.
    """
    target = fetch.local_path(remote)
    if target.exists() or not file.sha256:
        return
    commit_dir = target.parents[len(Path(file.path).parts) - 1]
    inside_commit = target.relative_to(commit_dir)  # no glob: names may hold [ ] * ?
    if not commit_dir.parent.is_dir():
        return
    for other_commit in sorted(p for p in commit_dir.parent.iterdir() if p != commit_dir):
        other = other_commit / inside_commit
        stamp = other.with_name(other.name + fetch.STAMP_SUFFIX)
        try:
            if json.loads(stamp.read_text()).get("sha256") != file.sha256:
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            os.link(other, target)
            log.info("reusing %s from another revision", file.path)
            return
        except (OSError, ValueError, RecursionError, AttributeError):
            continue


def _delete_csv(remote: RemoteFile) -> None:
    path = fetch.local_path(remote)
    path.unlink(missing_ok=True)
    path.with_name(path.name + fetch.STAMP_SUFFIX).unlink(missing_ok=True)


@dataclass
class UtilFetch:
    """What :func:`fetch_util` did: the files chosen, their CSVs and conversions."""

    manifest: Manifest
    files: list[HubFile]
    csv: dict[str, Path] = field(default_factory=dict)
    converted: dict[str, Path] = field(default_factory=dict)
    downloaded_bytes: int = 0

    @property
    def dataset(self) -> Path:
        """Root of the hive-partitioned Parquet dataset."""
        return layout.dataset_root()


def _announce(pending: list[HubFile], report: Callable[[str], None]) -> None:
    total = sum(f.size for f in pending)
    if total >= fetch.LARGE_DOWNLOAD_BYTES:
        log.warning(
            "about to download %.1f GB in %d file(s) into %s (resumable; progress per file)",
            total / 1e9,
            len(pending),
            config.cache_dir(),
        )
    elif pending:
        report(f"downloading {total / 1e6:.1f} MB in {len(pending)} file(s)")


def fetch_util(
    cluster: str | Iterable[str] | None = None,
    metrics: str | Iterable[str] | None = None,
    since: str | date | None = None,
    until: str | date | None = None,
    *,
    revision: str | None = None,
    convert_files: bool = True,
    keep_csv: bool = True,
    progress: bool | None = None,
    settings: Settings | None = None,
    report: Callable[[str], None] | None = None,
) -> UtilFetch:
    """Download (verified) and convert the chosen utilization files.

    Examples
    --------
    >>> from mltraces.sources.acme.util import fetch_util
    >>> done = fetch_util("seren", "GPU_UTIL,SM_ACTIVE", since="2023-07-01",
    ...                   until="2023-07-31")                       # doctest: +SKIP
    >>> done.dataset                                                # doctest: +SKIP
    PosixPath('~/.cache/mltraces/acme-util/parquet')
    """
    report = report or log.info
    found = manifest(revision)
    chosen = select(found, cluster, metrics, since, until)
    result = UtilFetch(found, chosen)
    done = {f.id for f in chosen if convert_files and converted_meta(f) is not None}
    pending = [
        f for f in chosen if f.id not in done and fetch.cached_path(f.remote(found.commit)) is None
    ]
    check_disk(pending, keep_csv)
    _announce(pending, report)
    for index, file in enumerate(chosen, 1):
        if file.id in done:
            result.converted[file.id] = layout.converted_dir(file.sha256 or "")
            continue
        remote = file.remote(found.commit)
        _reuse_other_revision(remote, file)
        if file in pending:
            report(f"[{index}/{len(chosen)}] {file.path} ({file.size / 1e6:,.1f} MB)")
            result.downloaded_bytes += file.size
        path = fetch.fetch_file(remote, progress=progress)
        result.csv[file.id] = path
        if convert_files:
            result.converted[file.id] = convert(file, path, settings)
            if not keep_csv:
                _delete_csv(remote)
                del result.csv[file.id]
    if convert_files:
        touched: set[Key] = {(f.table or "", f.group, f.metric) for f in chosen}
        assemble(found, sorted(touched), settings)
    return result
