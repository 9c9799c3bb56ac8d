"""The scheduling cores: C extensions built by Cython at install, or the same source as Python.

ElasticFlow's planner and rounds (:mod:`.efcore`, :mod:`.efrounds`),
Gandiva's rounds (:mod:`.gandivacore`) and Chronus's lease packing and
per-job loops (:mod:`.leasecore`, :mod:`.chronuscore`) are written in
Cython's *pure Python mode*: valid Python
with C types in its annotations and a few decorators.
``pip install`` compiles them ahead of time (``setup.py``; Cython is a build
requirement), so nothing is compiled when a replay runs. Where they could not
be compiled (no C compiler), the same files run as plain Python: same
results, about 100 times slower, and the CLI says so in one line.

Which one runs is decided here, once per process, for all cores together:
the source runs when ``MLTRACES_INTERPRETED=1`` is set (the tests compare the
two), when a core has no extension, or when an extension was built from another
version of its source (``setup.py`` writes the source's sha256 beside each
extension): after editing a core in an editable install, the edit runs,
interpreted, until ``pip install -e .`` compiles it again. :func:`install`
puts a finder in front of Python's own that serves the source in those cases
(an extension would otherwise win, being found first).
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from mltraces import config

#: the modules written for Cython (see ``setup.py``)
CORES = ("efcore", "efrounds", "gandivacore", "leasecore", "chronuscore")
PACKAGE = __name__.rpartition(".")[0]
FOLDER = Path(__file__).parent
#: Cython's utility code (memoryviews) that ``setup.py`` compiles once for every core,
#: ``mltraces._cyutility``: a compiled core imports it, so without it none can run
SHARED = (Path(__file__).parents[1], "_cyutility")


@dataclass(frozen=True)
class Build:
    """Whether the compiled cores run, and if not, why (one line for the user)."""

    compiled: bool
    reason: str = ""


def extension(name: str, folder: Path = FOLDER) -> Path | None:
    """The built extension of core ``name`` beside its source, if there is one."""
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = folder / f"{name}{suffix}"
        if path.is_file():
            return path
    return None


def _compiled_from_source(path: Path, source: Path) -> bool:
    """Whether ``path`` was built from ``source`` as it is now (its ``.sha256`` stamp)."""
    stamp = Path(f"{path}.sha256")
    try:
        recorded = stamp.read_text().strip()
    except OSError:
        return False
    return recorded == hashlib.sha256(source.read_bytes()).hexdigest()


@cache
def build() -> Build:
    """Which cores this process runs (decided once: a process never mixes the two)."""
    if config.interpreted():
        return Build(False, "MLTRACES_INTERPRETED is set")
    for name in CORES:
        path = extension(name)
        if path is None:
            return Build(False, "they were not compiled at install (no C compiler?); "
                                "`pip install -e .` with one compiles them")
        if not _compiled_from_source(path, FOLDER / f"{name}.py"):
            return Build(False, f"{name}.py changed since it was compiled; "
                                "`pip install -e .` compiles it again")
    if extension(SHARED[1], SHARED[0]) is None:
        return Build(False, "their shared Cython module (mltraces._cyutility) was not compiled "
                            "at install; `pip install -e .` compiles it with them")
    return Build(True)


def notice(what: str) -> str | None:
    """One line to print before ``what`` runs interpreted; None when it runs compiled."""
    state = build()
    if state.compiled:
        return None
    return f"{what} runs as plain Python, about 100 times slower: {state.reason}"


class _SourceFirst(importlib.abc.MetaPathFinder):
    """Serves a core's ``.py`` when :func:`build` says the extensions must not run."""

    def find_spec(self, fullname: str, path: object = None, target: object = None):
        package, _, name = fullname.rpartition(".")
        if package != PACKAGE or name not in CORES or build().compiled:
            return None
        return importlib.util.spec_from_file_location(fullname, FOLDER / f"{name}.py")


def install() -> None:
    """Put the finder in place (idempotent); before any core is imported."""
    if not any(isinstance(finder, _SourceFirst) for finder in sys.meta_path):
        sys.meta_path.insert(0, _SourceFirst())


__all__ = ["CORES", "Build", "build", "extension", "install", "notice"]
