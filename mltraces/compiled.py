"""Compiled cores: C extensions built by Cython at install, or the same source run as Python.

Both engines keep their hot loops in Cython's *pure Python mode* (valid Python with C
types in annotations and a few decorators): the scheduling policies' cores
(:mod:`mltraces.scheduling.cores`) and the prefix-cache replay's
(:mod:`mltraces.prefixcache.cachecore`). ``pip install`` compiles them ahead of time
(``setup.py``, which writes the sha256 of each source beside its extension); where
they could not be compiled the same files run as plain Python: same results, about
100 times slower, and the process says so once.

A :class:`Cores` is one engine's set of cores. Which one runs is decided once per
process, for the whole set: the source runs when ``MLTRACES_INTERPRETED=1`` is set
(the tests compare the two), when a core has no extension, or when an extension was
built from another version of its source (after an edit in an editable install, until
``pip install -e .`` compiles it again). :meth:`Cores.install` puts a finder in front
of Python's own that serves the source in those cases (an extension would otherwise
win, being found first).
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mltraces import config

__all__ = ["SHARED", "Build", "Cores", "compiled_from_source"]

#: Cython's utility code (memoryviews) that ``setup.py`` compiles once for every core,
#: ``mltraces._cyutility``: a compiled core imports it, so without it none can run
SHARED = "_cyutility"


@dataclass(frozen=True)
class Build:
    """Whether the compiled cores run, and if not, why (one line for the user)."""

    compiled: bool
    reason: str = ""


def compiled_from_source(path: Path, source: Path) -> bool:
    """Whether the extension ``path`` was built from ``source`` as it is now (its stamp)."""
    try:
        recorded = Path(f"{path}.sha256").read_text().strip()
    except OSError:
        return False
    return recorded == hashlib.sha256(source.read_bytes()).hexdigest()


def _extension(folder: Path, name: str) -> Path | None:
    """The built extension of module ``name`` in ``folder``, if there is one."""
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = folder / f"{name}{suffix}"
        if path.is_file():
            return path
    return None


@dataclass
class Cores:
    """One engine's compiled cores: the package they live in, their names, what they do.

    ``what`` names them in the notice (``"the scheduling cores"``); the decision and
    whether it was said are kept per instance, once per process.
    """

    package: str
    folder: Path
    names: tuple[str, ...]
    what: str
    _build: Build | None = field(default=None, init=False, repr=False)
    _said: bool = field(default=False, init=False, repr=False)

    def extension(self, name: str) -> Path | None:
        """The built extension of core ``name`` beside its source, if there is one."""
        return _extension(self.folder, name)

    def build(self) -> Build:
        """Which this process runs (decided once: a process never mixes the two)."""
        if self._build is None:
            self._build = self._decide()
        return self._build

    def _decide(self) -> Build:
        if config.interpreted():
            return Build(False, "MLTRACES_INTERPRETED is set")
        for name in self.names:
            path = self.extension(name)
            if path is None:
                return Build(False, "they were not compiled at install (no C compiler?); "
                                    "`pip install -e .` with one compiles them")
            if not compiled_from_source(path, self.folder / f"{name}.py"):
                return Build(False, f"{name}.py changed since it was compiled; "
                                    "`pip install -e .` compiles it again")
        if _extension(Path(__file__).parent, SHARED) is None:
            return Build(False, f"their shared Cython module (mltraces.{SHARED}) was not "
                                "compiled at install; `pip install -e .` compiles it with them")
        return Build(True)

    def notice(self, what: str | None = None, *, plural: bool = True) -> str | None:
        """One line to print before ``what`` (default: these cores) runs interpreted; None
        when it runs compiled."""
        state = self.build()
        if state.compiled:
            return None
        return (f"{what or self.what} {'run' if plural else 'runs'} as plain Python, about "
                f"100 times slower: {state.reason}")

    def announce(self, what: str | None = None, *, plural: bool = True,
                 quiet: bool = False) -> bool:
        """Say on stderr, once per process, that ``what`` runs interpreted (with the process
        and the folder its code comes from); True when this call said it. Every process
        says it for itself, a replay worker too (:func:`mltraces.workers.process_pool`);
        ``quiet`` counts as said, without a word."""
        message = self.notice(what, plural=plural)
        if message is None or self._said:
            return False
        self._said = True
        if quiet:
            return False
        print(f"mltraces: {message} (process {os.getpid()}, {self.folder})", file=sys.stderr)
        return True

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> Any:
        """A meta path finder's answer: a core's ``.py`` when the extensions must not run."""
        package, _, name = fullname.rpartition(".")
        if package != self.package or name not in self.names or self.build().compiled:
            return None
        self.announce()
        return importlib.util.spec_from_file_location(fullname, self.folder / f"{name}.py")

    def install(self) -> None:
        """Put this set's finder in front of Python's own (idempotent); before any core is
        imported."""
        if not any(finder is self for finder in sys.meta_path):
            sys.meta_path.insert(0, self)
