"""Build the user-facing dataset from converted files: merge, de-duplicate, swap in.

One metric of one cluster is either a single file (``GPU_UTIL.csv``) or monthly
split files (``GPU_UTIL-2023-07.csv``, ...) whose edges overlap. As in the
authors' notebook, the single file wins when both exist, split files are taken
in name order, and a ``Time`` row already present in an earlier file is dropped
(the first one wins). Only months where two files' time ranges overlap need
that anti-join; every other month is a hard link to the converted file.

Each month folder is built in a work folder and swapped in whole (see
:func:`mltraces.sources.acme.util.layout.replace_dir`), and ``_mltraces.json`` records
which converted files made it, so re-running is a no-op and fetching one more
month rebuilds only the months it touches.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

from mltraces.logs import get_logger
from mltraces.schema import sql_path
from mltraces.sources.acme.hub import HubFile, Manifest
from mltraces.sources.acme.util import layout
from mltraces.sources.acme.util.convert import (
    Settings,
    _sql_text,
    converted_meta,
    duckdb_connection,
)

log = get_logger(__name__)

Key = tuple[str, str, str]  # (table, group, metric)

__all__ = ["assemble", "assemble_partition", "merge_order", "sources_for"]


def sources_for(manifest: Manifest, key: Key) -> list[HubFile]:
    """The upstream files of one metric, in merge order (the whole file if there is one)."""
    return merge_order([f for f in manifest.files if (f.table, f.group, f.metric) == key])


def merge_order(files: list[HubFile]) -> list[HubFile]:
    """One metric's files in merge order: the whole file alone if there is one, else by name."""
    whole = [f for f in files if f.period is None]
    if whole:
        return whole[:1]
    return sorted(files, key=lambda f: f.name)


def conversion_key(meta: dict) -> str:
    """The key a conversion is filed under (older upstream records carry only the sha256)."""
    return meta.get("key") or meta["sha256"]


def _overlaps(meta: dict, low: int, high: int) -> bool:
    start, end = meta.get("time_min_us"), meta.get("time_max_us")
    return start is not None and start <= high and low <= end


def plan(metas: list[dict], table: str) -> dict[str, list[tuple[dict, list[dict]]]]:
    """month → [(converted file, earlier files whose times it must not repeat)]."""
    months: dict[str, list[tuple[dict, list[dict]]]] = {}
    for k, meta in enumerate(metas):
        for month, stat in meta["months"].items():
            earlier = []
            if table != "ipmi_power":  # long IPMI rows repeat times legitimately
                earlier = [m for m in metas[:k] if _overlaps(m, stat["min_us"], stat["max_us"])]
            months.setdefault(month, []).append((meta, earlier))
    return dict(sorted(months.items()))


def _recipe(contributions: list[tuple[dict, list[dict]]]) -> list:
    return [
        [conversion_key(meta), [conversion_key(e) for e in earlier]]
        for meta, earlier in contributions
    ]


def _read_state(folder: Path) -> dict:
    try:
        return json.loads((folder / layout.STATE_FILE).read_text())
    except (OSError, ValueError, RecursionError):
        return {}


def _write_state(folder: Path, state: dict) -> None:
    tmp = folder / f".{layout.STATE_FILE}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(state, indent=1))
    os.replace(tmp, folder / layout.STATE_FILE)


def _files(area: layout.Area, meta: dict, month: str) -> list[Path]:
    folder = area.converted_dir(conversion_key(meta))
    return [folder / name for name in meta["months"][month]["files"]]


def _deduplicated(
    con, area: layout.Area, meta: dict, month: str, earlier: list[dict], target: Path
) -> int:
    """Write ``meta``'s rows of ``month`` minus times found in ``earlier`` files."""
    sources = ", ".join(sql_path(p) for p in _files(area, meta, month))
    times = ", ".join(
        sql_path(area.converted_dir(conversion_key(e)) / "times.parquet") for e in earlier
    )
    con.execute(
        f"COPY (SELECT * FROM read_parquet([{sources}]) "
        f"WHERE time NOT IN (SELECT time FROM read_parquet([{times}]))) "
        f"TO {_sql_text(str(target))} (FORMAT parquet, COMPRESSION zstd)"
    )
    (rows,) = con.execute(f"SELECT count(*) FROM read_parquet({sql_path(target)})").fetchone()
    if rows == 0:
        target.unlink()
    return rows


def _build_month(con, area: layout.Area, month: str, contributions, work: Path) -> bool:
    """Fill ``work`` with the month's files; False when nothing is left."""
    for meta, earlier in contributions:
        stem = f"part-{conversion_key(meta)[:16]}"
        if earlier:
            _deduplicated(con, area, meta, month, earlier, work / f"{stem}-dedup.parquet")
            continue
        for i, source in enumerate(_files(area, meta, month)):
            layout.link_or_copy(source, work / f"{stem}-{i}.parquet")
    return any(work.iterdir())


def assemble_partition(
    key: Key,
    metas: list[dict],
    settings: Settings | None = None,
    area: layout.Area | None = None,
) -> Path:
    """Bring one metric's folder of ``area`` (default: verified downloads) up to date."""
    area = area or layout.upstream()
    table, group, metric = key
    folder = area.partition_dir(table, group, metric)
    months = plan(metas, table)
    with area.lock(f"partition-{table}-{group}-{metric}"):
        state = _read_state(folder)
        done = state.get("months", {}) if state.get("format") == layout.FORMAT_VERSION else {}
        con = None
        try:
            for month, contributions in months.items():
                recipe = _recipe(contributions)
                if done.get(month) == recipe and (folder / f"month={month}").is_dir():
                    continue
                con = con or duckdb_connection(settings or Settings())
                with layout.work_dir(f"month-{month}") as work:
                    built = work / "built"
                    built.mkdir()
                    if _build_month(con, area, month, contributions, built):
                        layout.replace_dir(built, folder / f"month={month}")
                    else:
                        layout.remove_dir(folder / f"month={month}")
        finally:
            if con is not None:
                con.close()
        for stale in set(done) - set(months):
            layout.remove_dir(folder / f"month={stale}")
        if months:
            folder.mkdir(parents=True, exist_ok=True)
            _write_state(
                folder,
                {
                    "format": layout.FORMAT_VERSION,
                    "table": table,
                    "group": group,
                    "metric": metric,
                    "sources": [
                        {"key": conversion_key(m), "sha256": m["sha256"], "path": m["path"]}
                        for m in metas
                    ],
                    "months": {m: _recipe(c) for m, c in months.items()},
                },
            )
    return folder


def keys(manifest: Manifest) -> list[Key]:
    """Every (table, group, metric) the manifest has files for."""
    return sorted({(f.table, f.group, f.metric) for f in manifest.files if f.table})


def assemble(
    manifest: Manifest, which: Iterable[Key] | None = None, settings: Settings | None = None
) -> list[Path]:
    """Update the dataset for ``which`` metrics (default: all) from what is converted."""
    folders = []
    for key in which if which is not None else keys(manifest):
        metas = [m for f in sources_for(manifest, key) if (m := converted_meta(f)) is not None]
        if metas:
            folders.append(assemble_partition(key, metas, settings))
    return folders
