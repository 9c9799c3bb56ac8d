"""Interop: hand any job trace to the simulators the field uses, and read their workloads back.

- :func:`export` writes a trace of ``mltraces.jobs`` in one of :data:`FORMATS`
  (ElasticFlow's trace CSV, the Tiresias simulator's CSV, Pollux's workload CSV,
  Gavel's trace file, Philly's ``cluster_job_log`` JSON that Blox and Synergy
  parse), optionally filtered by a named recipe (:data:`RECIPES`), with a
  provenance record beside it;
- :func:`import_workload` makes a file in one of those formats a source of its
  own, so it appears in ``mltraces.jobs`` and replays through the schedulers.

Modules: ``jobs`` (a trace through its mapping), ``recipes`` (published filters),
``annotate`` (seeded annotations, by each artifact's rule), ``formats/`` (one per
simulator: fields, quirks, writer, import schema), ``exporting``, ``importing``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["FORMATS", "RECIPES", "export", "import_workload"]


def __getattr__(name: str) -> Any:
    if name == "export":
        from mltraces.interop.exporting import export

        return export
    if name == "import_workload":
        from mltraces.interop.importing import import_workload

        return import_workload
    if name == "FORMATS":
        from mltraces.interop.formats import FORMATS

        return FORMATS
    if name == "RECIPES":
        from mltraces.interop.recipes import RECIPES

        return RECIPES
    raise AttributeError(f"module 'mltraces.interop' has no attribute {name!r}")
