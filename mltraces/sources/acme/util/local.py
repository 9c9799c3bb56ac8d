"""Serve utilization files a user already downloaded as ``acme.gpu_metrics`` and friends.

``connect(local={"acme.gpu_metrics": PATH})``, ``--local acme.gpu_metrics=PATH`` or
``MLTRACES_LOCAL`` name a CSV, a folder of them or a whole downloaded dataset
(:mod:`.local_files` has the rules). The files are converted with the same
pipeline as downloads, once, into a part of the cache of their own::

    <cache>/acme-util/local/converted/local-<key>-v<N>/   per file: key = sha256 of its
                                                          resolved path, version, table
    <cache>/acme-util/local/parquet/<name>-<key16>/       per path given: the dataset the
                                                          view reads (same layout as fetched)

so they never mix with verified downloads, a later connect reuses them, a file
that changed (size, mtime, ctime or inode: an edit in place with its mtime
restored too) is converted again (its old conversion removed),
and two local paths, even in two processes at once, never share a partition.
Conversions and datasets whose input is gone are removed at the next connect
of any local copy: derived data never outlives its input.

The view then serves the local files only, not fetched data as well: a local
copy replaces the download, as ``--local`` does for every other table (the
same metric from both would count twice). To compare the two, attach the
fetched data under another schema:
``mltraces.sources.acme.util.views.attach_views(con, schema="fetched")``.

Status: ``ready`` when every file served matches the sha256 a cached Hub file
list gives for its path (:mod:`.local_verify`), else ``unverified`` with the
reason; a file that cannot be read is an error naming it and the layout expected.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from mltraces.catalog.status import READY, UNVERIFIED, TableStatus
from mltraces.errors import MltracesError, SchemaError
from mltraces.logs import get_logger
from mltraces.sources.acme.util import layout
from mltraces.sources.acme.util.assemble import Key, assemble_partition, merge_order
from mltraces.sources.acme.util.convert import Settings, convert_into
from mltraces.sources.acme.util.local_files import LocalFile, find
from mltraces.sources.acme.util.local_verify import (
    DIFFERS,
    UNHASHED,
    UNLISTED,
    VERIFIED,
    Verdict,
    check,
)

log = get_logger(__name__)

#: the layout each table's files must have, for conversion errors
LAYOUTS = {
    "gpu_metrics": "the Hub's wide layout: Time, then one column per GPU named <ip>-<gpu index>",
    "node_metrics": "the Hub's wide layout: Time, then one column per node named <ip> "
    "(or <ip>-<device>)",
    "ipmi_power": "the Hub's long IPMI layout: Time,node,CPU_Power,...,Sys_Total_Power",
}

__all__ = ["LocalData", "peek", "prepare"]


class LocalData(NamedTuple):
    """A local copy made ready for one view: where its dataset is and what is known of it."""

    table: str
    given: Path
    root: Path  # the dataset the view reads
    files: list[LocalFile]  # the files served (a whole file hides split files of its metric)
    verdicts: dict[str, Verdict]

    def status(self, name: str, months: list[str] | None) -> TableStatus:
        """The ``mltraces.status`` row: ready only when every file served is verified.

        ``months`` None: not converted yet, so no span is claimed.
        """
        span = ("" if months is None else "no rows; " if not months
                else f"{months[0]}; " if len(months) == 1 else f"{months[0]} to {months[-1]}; ")
        kinds = [self.verdicts[f.hub.path].kind for f in self.files]
        origin = f"local: {self.given}"
        if all(k == VERIFIED for k in kinds):
            commits = sorted({v.detail for v in self.verdicts.values()})
            return TableStatus(name, READY, f"{origin} ({span}{len(kinds)} file(s) verified "
                               f"against {', '.join(commits)})")
        files = f"{len(kinds)} file(s)"
        return TableStatus(name, UNVERIFIED, f"{origin} ({span}{files})", None,
                           self._reason(kinds))

    def _reason(self, kinds: list[str]) -> str:
        """Why not verified, and the fix."""
        parts = [f"built from local files: checked against the Hub's layout; "
                 f"{kinds.count(VERIFIED)} of {len(kinds)} verified against the published hashes"]
        if UNLISTED in kinds:
            parts.append(f"{kinds.count(UNLISTED)} in no cached Hub file list (`mltraces list "
                         "acme-util` caches it; connect again to verify them)")
        if UNHASHED in kinds:
            parts.append(f"{kinds.count(UNHASHED)} listed but not hashed yet (a connect "
                         "compares them)")
        differ = [f for f in self.files if self.verdicts[f.hub.path].kind == DIFFERS]
        if differ:
            shown = "; ".join(f"{f.path} ({self.verdicts[f.hub.path].detail})" for f in differ[:3])
            parts.append(f"{len(differ)} differ from the Hub's: {shown}")
        return "; ".join(parts)


# --------------------------------------------------------------------------- conversion


def _read_meta(folder: Path) -> dict | None:
    try:
        return json.loads((folder / "meta.json").read_text())
    except (OSError, ValueError, RecursionError):
        return None


def _conversion_error(file: LocalFile, error: Exception) -> SchemaError:
    """One line naming the file, what is wrong and the layout expected."""
    text = str(error).splitlines()[0] if str(error) else type(error).__name__
    text = text.removeprefix(f"{file.path.name}: ")
    if isinstance(error, UnicodeDecodeError):
        text = "not UTF-8 text"
    return SchemaError(f"{file.path}: {text}; expected {LAYOUTS[file.hub.table or '']}")


def _discard(area: layout.Area, key: str) -> None:
    with layout.lock(f"convert-{key[:24]}"):
        shutil.rmtree(area.converted_dir(key), ignore_errors=True)


def _prune_superseded(area: layout.Area, file: LocalFile) -> None:
    """Remove conversions of earlier versions of ``file`` (datasets keep their hard links)."""
    real = str(file.real)
    for meta_path in area.converted.glob("local-*/meta.json"):
        meta = _read_meta(meta_path.parent)
        if meta and meta.get("real_path") == real and meta.get("table") == file.hub.table \
                and meta.get("key") != file.key:
            _discard(area, meta["key"])


def converted(area: layout.Area, file: LocalFile, settings: Settings | None = None) -> dict:
    """The conversion record of ``file`` (this version of it), converting it the first time."""
    key = file.key
    meta = _read_meta(area.converted_dir(key))
    if meta is not None:
        return meta
    extra = {"local_path": str(file.path), "real_path": str(file.real), "mtime_ns": file.mtime_ns}
    try:
        folder = convert_into(area, key, file.hub, file.path, settings, extra)
    except (SchemaError, UnicodeDecodeError) as error:
        raise _conversion_error(file, error) from error
    except OSError as error:
        raise MltracesError(f"{file.path}: cannot be read ({error})") from error
    if file.changed():
        _discard(area, key)
        raise MltracesError(f"{file.path} changed while it was being converted; connect again "
                            "once it is complete")
    _prune_superseded(area, file)
    return _read_meta(folder) or {}


# --------------------------------------------------------------------------- assembly


def _by_metric(files: Iterable[LocalFile]) -> dict[Key, list[LocalFile]]:
    """Files grouped per metric, in merge order (a whole file hides split ones, as on the Hub)."""
    groups: dict[Key, list[LocalFile]] = {}
    for file in files:
        groups.setdefault((file.hub.table or "", file.hub.group, file.hub.metric), []).append(file)
    ordered = {}
    for key, members in sorted(groups.items()):
        by_path = {m.hub.path: m for m in members}
        chosen = [by_path[h.path] for h in merge_order([m.hub for m in members])]
        ignored = [str(m.path) for m in members if m not in chosen]
        if ignored:
            log.info("%s: the whole file is used, not the split files %s (as on the Hub)",
                     "/".join(key[1:]), ", ".join(ignored))
        ordered[key] = chosen
    return ordered


def _partitions(area: layout.Area, table: str) -> set[Path]:
    """Partition folders present in ``area`` for ``table``."""
    base = area.dataset / table
    pattern = "server_group=*" if table == "ipmi_power" else "cluster=*/metric=*"
    return {p for p in base.glob(pattern) if p.is_dir()}


def _assemble(area: layout.Area, table: str, groups: dict[Key, list[LocalFile]],
              metas: dict[str, dict], settings: Settings | None) -> None:
    """Bring the area's partitions of ``table`` up to date; drop those of files now gone."""
    for key, files in groups.items():
        assemble_partition(key, [metas[f.hub.path] for f in files], settings, area)
    wanted = {area.partition_dir(*key) for key in groups}
    for stale in _partitions(area, table) - wanted:
        layout.remove_dir(stale)


def prepare(table: str, given: Path, settings: Settings | None = None) -> LocalData:
    """Find, convert (once), assemble and verify the local files feeding ``acme.<table>``."""
    files = find(table, given)
    area = layout.local_area(given)
    groups = _by_metric(files)
    served = [f for members in groups.values() for f in members]
    metas = {f.hub.path: converted(area, f, settings) for f in served}
    _assemble(area, table, groups, metas, settings)
    _record_source(area, given)
    _prune_orphans(area)
    return LocalData(table, given, area.dataset, served, check(served))


def peek(table: str, given: Path) -> LocalData:
    """What ``prepare`` would serve, without converting or hashing (for ``mltraces tables``)."""
    served = [f for members in _by_metric(find(table, given)).values() for f in members]
    return LocalData(table, given, layout.local_area(given).dataset, served,
                     check(served, hash_now=False))


def _gone(path: object) -> bool:
    return isinstance(path, str) and bool(path) and not os.path.lexists(path)


def _prune_orphans(area: layout.Area) -> None:
    """Remove conversions and datasets whose local input is gone: derived data never
    outlives its input, and a folder the user deleted stops costing cache space."""
    for meta_path in area.converted.glob("local-*/meta.json"):
        meta = _read_meta(meta_path.parent)
        if meta and _gone(meta.get("real_path")):
            _discard(area, meta["key"])
    for note in area.dataset.parent.glob(f"*/{layout.STATE_FILE}"):
        try:
            source = json.loads(note.read_text()).get("resolved")
        except (OSError, ValueError, RecursionError, AttributeError):
            continue
        if _gone(source):
            log.info("removing the local dataset of %s (gone)", source)
            layout.remove_dir(note.parent)


def _record_source(area: layout.Area, given: Path) -> None:
    """Say in the dataset folder which local path it was built from (for people browsing)."""
    note = area.dataset / layout.STATE_FILE
    text = json.dumps({"local_path": str(given), "resolved": str(given.resolve())})
    if not note.is_file() or note.read_text() != text:
        note.parent.mkdir(parents=True, exist_ok=True)
        tmp = note.with_name(f".{note.name}.tmp-{os.getpid()}")
        tmp.write_text(text)
        tmp.replace(note)
