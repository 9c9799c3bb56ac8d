"""Drawing and saving figures, in this process or in a pool of worker processes.

Saving is most of the cost of a figure run (Agg rasterising a 200-dpi PNG,
the PDF backend subsetting and embedding TrueType fonts), and it is CPU-bound
Python: threads do not help, processes do. The main process computes every
figure's data (SQL on its catalog connection) and hands the small frames to
workers that only plot and save. Workers come from a *forkserver* that has
imported matplotlib and pandas once, so a worker costs a fork, not an import,
and never inherits the main process's DuckDB threads.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import pickle
import shutil
import sys
from concurrent.futures import Executor
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

#: Modules the forkserver imports once, so each worker starts warm.
#: what the forkserver imports once for every worker (third-party only: see workers.process_pool)
PRELOAD = ["matplotlib", "matplotlib.figure", "pandas"]


def mark_unverified(figure: Any, tables: list[str]) -> None:
    """A red line above the figure naming the inputs that were not hash-verified."""
    from mltraces.figures import style

    with style.context():
        figure.text(  # above the figure: the tight bounding box grows to include it
            0.0,
            1.0,
            "Drawn from unverified local files: " + ", ".join(tables),
            fontsize=6,
            color="#aa0000",
            ha="left",
            va="bottom",
        )


def plot(name: str, frame: pd.DataFrame, unverified: list[str], style_name: str = "default"
         ) -> Any:
    """Figure ``name`` drawn from its data ``frame`` in a figure style, marked when unverified."""
    from mltraces.figures import style
    from mltraces.figures.specs import get

    with style.using(style_name):
        figure = get(name).plot(frame)
    if unverified:
        mark_unverified(figure, unverified)
    return figure


def render(name: str, frame: pd.DataFrame, unverified: list[str], output_dir: str,
           style_name: str = "default") -> list[Path]:
    """Plot ``name`` and write it into ``output_dir`` in its style's formats (a worker's task).

    The default style writes ``<name>.png`` and ``.pdf``, the paper style ``.pdf`` and ``.svg``.
    """
    from mltraces.figures import style

    return style.save(plot(name, frame, unverified, style_name), Path(output_dir) / name,
                      formats=style.STYLES[style_name], tight=bool(unverified))


# --------------------------------------------------------------------------- render cache
#
# Renders are byte-stable: the same data drawn by the same code with the same
# libraries gives the same bytes. So a rendered figure is derived data like any
# other, kept under ``<cache>/renders/<name>/<key>/`` with the key hashing the
# data frame, the unverified note, the figure's plotting module, the shared style
# and render code, the source's source.json (published numbers the plots print)
# and the matplotlib/seaborn versions. A warm figure run copies
# unchanged figures instead of drawing them again; anything else changes the key.

RENDERS = "renders"


def render_key(name: str, frame: pd.DataFrame, unverified: list[str],
               style_name: str = "default") -> str:
    """What a render of ``name`` depends on, as one sha256."""
    from mltraces.figures import style
    from mltraces.figures.specs import get

    digest = hashlib.sha256()
    formats = style.STYLES[style.check_style(style_name)]
    extra = () if style_name == "default" else (style_name,)
    digest.update(pickle.dumps((name, sorted(unverified), formats, *extra), protocol=5))
    digest.update(pickle.dumps(frame, protocol=5))
    spec = get(name)
    digest.update(_code_fingerprint(spec.plot.__module__).encode())
    digest.update(_published_fingerprint(spec.source).encode())
    return digest.hexdigest()


@cache
def _published_fingerprint(source: str) -> str:
    """The source's ``source.json``: plot functions print the published numbers it holds."""
    from mltraces.registry import get_source

    folder = get_source(source).folder
    path = folder / "source.json" if folder is not None else None
    return hashlib.sha256(path.read_bytes() if path and path.is_file() else b"").hexdigest()


@cache
def _code_fingerprint(module: str) -> str:
    """The plotting module's source, the shared style and render code, the libraries' versions."""
    digest = hashlib.sha256()
    for name in (module, "mltraces.figures.style", __name__):
        source = getattr(sys.modules.get(name), "__file__", None)
        digest.update(Path(source).read_bytes() if source else name.encode())
    for package in ("matplotlib", "seaborn", "numpy", "pandas"):
        try:
            digest.update(importlib.metadata.version(package).encode())
        except importlib.metadata.PackageNotFoundError:
            digest.update(package.encode())
    return digest.hexdigest()


def _entry(name: str, key: str, style_name: str = "default") -> Path:
    """``renders/<name>/<key>``; another style keeps its own folder, so styles never evict."""
    from mltraces import config

    folder = name if style_name == "default" else f"{name}@{style_name}"
    return config.cache_dir() / RENDERS / folder / key


def reuse(name: str, key: str, output_dir: str, style_name: str = "default"
          ) -> list[Path] | None:
    """Copy a cached render of ``name`` into ``output_dir`` (unchanged files are left alone)."""
    from mltraces.figures import style

    entry = _entry(name, key, style_name)
    cached = [entry / f"{name}.{fmt}" for fmt in style.STYLES[style_name]]
    if not all(path.is_file() for path in cached):
        return None
    from mltraces.errors import OutputError
    from mltraces.outputs import replace_file

    written = []
    for source in cached:
        target = Path(output_dir) / source.name
        if not (target.is_file() and target.read_bytes() == source.read_bytes()):
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                with replace_file(target) as tmp:
                    shutil.copyfile(source, tmp)
            except OSError as error:
                raise OutputError(f"cannot write {target}: {error.strerror or error}; "
                                  "it was not changed") from None
        written.append(target)
    return written


def keep(name: str, key: str, paths: list[Path], style_name: str = "default") -> None:
    """Store a fresh render under its key; older renders of the same figure and style go.

    The render cache only saves time: a cache that cannot be written (read-only,
    full) or whose folder resolves outside it (a planted link) is left alone.
    """
    from mltraces import config
    from mltraces.containment import proven_folder
    from mltraces.errors import UnsafePathError

    entry = _entry(name, key, style_name)
    folder = entry.parent
    staging = folder / f".{key}.{os.getpid()}.tmp"
    try:
        proven_folder(config.cache_dir(), folder, "the render cache", create=True)
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
        for path in paths:
            shutil.copyfile(path, staging / path.name)
        shutil.rmtree(entry, ignore_errors=True)
        os.replace(staging, entry)
    except (OSError, UnsafePathError) as error:
        shutil.rmtree(staging, ignore_errors=True)
        from mltraces.logs import get_logger

        get_logger(__name__).debug("not keeping the render of %s: %s", name, error)
        return
    for other in folder.iterdir():
        if other != entry:
            shutil.rmtree(other, ignore_errors=True)


# --------------------------------------------------------------------------- the output's record
#
# The output folder records, in ``renders.json``, the render key of each figure
# it holds and the sha256 of each of its files. A figure whose key (its data,
# code and libraries, as above) and bytes are both as recorded is up to date:
# drawing it again would write the same bytes, so a run leaves it alone. That is
# what makes a fresh clone's first figure run skip drawing the committed
# figures: it still computes every figure's data (every replay) to find the key.

#: the record's file name in the output folder
RECORD = "renders.json"
#: a record this large is not one we wrote (29 figures take about 9 kB)
RECORD_LIMIT = 4 << 20
_SHA256 = frozenset("0123456789abcdef")


def _entry_name(name: str, style_name: str) -> str:
    return name if style_name == "default" else f"{name}@{style_name}"


def _is_digest(value: Any) -> bool:
    return isinstance(value, str) and len(value) == 64 and set(value) <= _SHA256


def read_record(output_dir: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
    """The output folder's record of renders; empty when absent or not one we wrote.

    The record is a local file like any other: one that is too large, unreadable or
    malformed is ignored (its figures are drawn again and the record rewritten), and
    only well-formed entries are kept.
    """
    path = Path(output_dir) / RECORD
    try:
        if not path.is_file() or path.stat().st_size > RECORD_LIMIT:
            return {}
        data = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError) as error:
        from mltraces.logs import get_logger

        get_logger(__name__).info("ignoring %s: %s", path, error)
        return {}
    figures = data.get("figures") if isinstance(data, dict) else None
    if not isinstance(figures, dict):
        return {}
    return {name: entry for name, entry in figures.items()
            if isinstance(entry, dict) and _is_digest(entry.get("key"))
            and isinstance(entry.get("files"), dict)
            and all(isinstance(f, str) and _is_digest(h) for f, h in entry["files"].items())}


def _file_digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def up_to_date(name: str, key: str, output_dir: str | os.PathLike[str],
               record: dict[str, dict[str, Any]], style_name: str = "default"
               ) -> list[Path] | None:
    """The files of ``name`` in ``output_dir`` if the record gives them this key and their
    bytes are as recorded; None if the figure must be drawn (or copied) again."""
    from mltraces.figures import style

    entry = record.get(_entry_name(name, style_name))
    if entry is None or entry["key"] != key:
        return None
    paths = [Path(output_dir) / f"{name}.{fmt}" for fmt in style.STYLES[style_name]]
    if sorted(entry["files"]) != sorted(p.name for p in paths):
        return None
    if any(_file_digest(p) != entry["files"][p.name] for p in paths):
        return None
    return paths


def note_render(record: dict[str, dict[str, Any]], name: str, key: str, paths: list[Path],
                style_name: str = "default") -> None:
    """Record that ``paths`` in the output folder are the render of ``name`` under ``key``."""
    files = {p.name: _file_digest(p) for p in paths}
    if all(files.values()):
        record[_entry_name(name, style_name)] = {"key": key, "files": files}


def write_record(output_dir: str | os.PathLike[str], record: dict[str, dict[str, Any]]) -> None:
    """Write the record when it changed (atomically; a stable text, so an unchanged
    folder stays byte-identical). A folder that cannot take it only loses the saving."""
    from mltraces.outputs import replace_file

    path = Path(output_dir) / RECORD
    text = json.dumps({"about": "mltraces figures: each figure's render key (its data, "
                                "plotting code and libraries) and the sha256 of its files; "
                                "a figure whose key and bytes match is not drawn again "
                                "(`mltraces figures --redraw` draws it anyway)",
                       "figures": record}, indent=1, sort_keys=True) + "\n"
    try:
        if path.is_file() and path.read_text(encoding="utf-8", errors="replace") == text:
            return
        with replace_file(path) as tmp:
            tmp.write_text(text, encoding="utf-8")
    except OSError as error:
        from mltraces.logs import get_logger

        get_logger(__name__).info("not recording the renders in %s: %s", path, error)


def workers(count: int | None = None) -> int:
    """How many rendering processes to use: one per core, at most ``count``."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(count or cores or 1, cores or 1))


def pool(count: int) -> Executor:
    """A process pool of ``count`` workers forked from a preloaded forkserver."""
    from mltraces.workers import process_pool

    return process_pool(count, preload=PRELOAD)
