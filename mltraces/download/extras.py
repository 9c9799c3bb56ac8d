"""Names a source answers to on the command line beyond its registry files, found by scanning.

Some data is not a list of pinned files: AcmeTrace's raw utilization metrics
are ~80 GB on HuggingFace, listed by the Hub's tree API and chosen by cluster,
metric and month. A source folder that has such data says so in its own
``cli.py``::

    EXTRAS = {"acme-util": Extra(name="acme-util", summary="...", list=..., fetch=...)}

and ``mltraces list|fetch|verify NAME`` hand over to it. The verbs know no
source by name: they ask :func:`extras` (every source folder's ``cli.py``, read
when a verb that takes source names is configured).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from functools import cache
from typing import Any, NamedTuple

__all__ = ["Extra", "extras", "size_text", "source_names"]


class Extra(NamedTuple):
    """One extra name: what ``mltraces list``, ``fetch`` and ``verify`` do with it."""

    name: str  # "acme-util"
    summary: str  # one line for `mltraces list`
    list: Callable[[argparse.Namespace], None]  # print its files (`mltraces list NAME`)
    fetch: Callable[[argparse.Namespace], None] | None = None  # `mltraces fetch NAME`
    #: options of `mltraces fetch` that only apply to NAME: add them, return their dests
    fetch_options: Callable[[argparse.ArgumentParser], list[str]] | None = None
    #: options of `mltraces list` that only apply to NAME
    list_options: Callable[[argparse.ArgumentParser], list[str]] | None = None
    #: the downloaded files `mltraces verify` re-hashes (no network)
    verify_files: Callable[[], list[Any]] | None = None
    #: what killed runs left (partial conversions): removed by `mltraces verify`, paths returned
    verify_cleanup: Callable[[], list[Any]] | None = None


@cache
def extras() -> dict[str, Extra]:
    """Every shipped source's extra names, from the ``EXTRAS`` of its folder's ``cli.py``.

    Only shipped sources have one: a user's source folder runs no ``cli.py`` (the only
    Python files of such a folder that run are its ``readers.py`` and ``synthetic.py``,
    when that source is used).
    """
    from mltraces.errors import RegistryError
    from mltraces.registry import SOURCE_FILE, SOURCES_DIR, source_module

    found: dict[str, Extra] = {}
    for folder in sorted(p.parent for p in SOURCES_DIR.glob(f"*/{SOURCE_FILE}")):
        if not (folder / "cli.py").is_file():
            continue
        module = source_module(folder.name, "cli")
        declared = getattr(module, "EXTRAS", None)
        if not isinstance(declared, dict) or not all(
                isinstance(e, Extra) and e.name == n for n, e in declared.items()):
            raise RegistryError(f"{folder / 'cli.py'}: EXTRAS must map each name to an Extra "
                                "carrying that name (mltraces.download.extras)")
        found.update(declared)
    return found


def source_names() -> str:
    """``zeus, itp, ... or acme-util``: every source and extra name, for help texts."""
    from mltraces.registry import all_sources

    return ", ".join([*all_sources(), *extras()])


def split(names: list[str]) -> tuple[list[str], list[Extra]]:
    """Registry names and the extras among ``names``."""
    known = extras()
    return [n for n in names if n not in known], [known[n] for n in names if n in known]


def size_text(n: int | None) -> str:
    """``1.2 MB``; a file pinned by hash only (a git blob id) has no published size."""
    if n is None:
        return "size not published"
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return str(n)
