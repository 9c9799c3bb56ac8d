"""What every simulator format declares: how to write jobs, and how to read its files back.

A format module defines one :class:`Format`: the simulator it feeds, the parser
it was checked against (repository, commit, file and function), how the jobs
must look before writing (:meth:`Format.prepare`), the writer, and the schema
and jobs mapping that let a file in this format be imported as a source of its
own (:mod:`mltraces.interop.importing`).

The jobs handed to a writer are a pandas frame with one row per job:
``job_id`` (text), ``submit`` and ``duration`` (whole seconds from the trace's
origin), ``gpus`` (whole GPUs), and where known ``model``, ``batch_size``,
``iterations``, ``deadline`` (whole seconds), ``user``, ``vc``, ``state``,
``num_nodes`` and the instants ``submit_time``, ``start_time``, ``end_time``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

#: the columns a writer may rely on
JOB_COLUMNS = ("job_id", "submit", "duration", "gpus", "model", "batch_size", "iterations",
               "deadline", "user", "vc", "state", "num_nodes", "submit_time", "start_time",
               "end_time")


def exact_header(first_line: str | None, header: tuple[str, ...], what: str) -> None:
    """Refuse a file whose first line is not exactly ``header`` (naming what it is)."""
    import csv

    from mltraces.errors import MltracesError

    found = next(csv.reader([first_line or ""]), [])
    if found != list(header):
        raise MltracesError(f"not a {what} header ({', '.join(found) or 'empty'}); expected "
                            f"{', '.join(header)}")


@dataclass(frozen=True)
class Written:
    """What a writer did beyond writing every job it was given."""

    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ImportTemplate:
    """A source's schema and mapping for files in this format (``NAME`` is the source)."""

    fields: list[dict[str, Any]]
    mapping: dict[str, Any]  # one entry of jobs.json "tables", without "table"/"trace"
    dialect: dict[str, Any] = field(default_factory=dict)
    derived: list[dict[str, Any]] = field(default_factory=list)
    reader: str = "csv"
    readers_module: str | None = None  # a module whose READERS the source's readers.py re-exports
    primary_key: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Format:
    """One simulator's input format."""

    name: str  # the --to / --from value
    simulator: str  # "ElasticFlow (ASPLOS'23)"
    parser: str  # repository@commit path: function, the code the format was checked against
    suffix: str  # the file name's usual ending
    summary: str  # one line: fields
    write: Callable[[pd.DataFrame, Path, Mapping[str, Any]], Written]
    #: what the format needs: "gpus" (GPU jobs only), "duration" (a known run time), "clock"
    #: (wall-clock times), "annotation" (model and work, drawn when the trace lacks them)
    needs: tuple[str, ...]
    #: the schema and mapping for a file of this format, from its first line (None:
    #: headerless or not text); raises MltracesError naming what does not fit
    template: Callable[[str | None], ImportTemplate]
    homepage: str
    citation: str  # BibTeX of the simulator's paper, for an imported source
    provenance_note: str  # why the provenance is a sidecar (what the parser tolerates)
    quirks: tuple[str, ...] = ()
