"""The scheduling cores: C extensions built by Cython at install, or the same source as Python.

ElasticFlow's planner and rounds (:mod:`.efcore`, :mod:`.efrounds`), Gandiva's rounds
(:mod:`.gandivacore`) and Chronus's lease packing and per-job loops (:mod:`.leasecore`,
:mod:`.chronuscore`) are written in Cython's pure Python mode. Which run, compiled or as
their source, is decided once per process for all of them together, as
:class:`mltraces.compiled.Cores` describes; this module is that set and its functions.
"""

from __future__ import annotations

from pathlib import Path

from mltraces.compiled import Build, Cores

#: the modules written for Cython (see ``setup.py``)
CORES = ("efcore", "efrounds", "gandivacore", "leasecore", "chronuscore", "mergesort")
PACKAGE = __name__.rpartition(".")[0]
FOLDER = Path(__file__).parent
SET = Cores(PACKAGE, FOLDER, CORES, "the scheduling cores")

extension = SET.extension
build = SET.build
notice = SET.notice
announce = SET.announce
install = SET.install

__all__ = ["CORES", "Build", "announce", "build", "extension", "install", "notice"]
