"""Pollux's trace CSV (``simulator/traces/philly.csv``): what its workload generator samples.

Pollux's simulator does not replay a cluster trace directly: ``workload.py``
reads ``traces/philly.csv`` and samples workloads (the ``pollux`` format) from
it. Writing any trace in this layout lets Pollux's (and Sia's) own generator
draw its workloads from that trace. Checked against ``petuum/adaptdl@c793c70``
``simulator/workload.py`` ``generate`` and the published file:

- ``pandas.read_csv(path, parse_dates=["timestamp"])``: a header line, no comment
  line (sidecar provenance); columns ``timestamp, duration, num_gpus, gpu_time,
  cluster``.
- ``timestamp`` is a wall-clock time without a zone (``YYYY-MM-DD HH:MM:SS``; the
  generator keeps jobs by their hour of the day); ``duration`` is seconds written
  as a float (``1.0``); ``gpu_time`` = duration x num_gpus; ``cluster`` the VC.
- The generator keeps rows with ``duration >= 60`` and ``gpu_time < 1000 * 3600``
  (the ``pollux`` recipe), so the published file holds rows outside both.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from mltraces.interop.formats.base import Format, ImportTemplate, Written, exact_header
from mltraces.interop.formats.pollux import FORMAT as POLLUX

HEADER = ("timestamp", "duration", "num_gpus", "gpu_time", "cluster")
TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
DEFAULT_ZONE = "America/Los_Angeles"


def write(jobs: pd.DataFrame, path: Path, options: Mapping[str, Any]) -> Written:
    """One row per job in the trace's order; times on its wall clock."""
    with open(path, "w", newline="", encoding="utf-8") as handle:
        out = csv.writer(handle, lineterminator="\n")
        out.writerow(HEADER)
        for moment, duration, gpus, vc in jobs[["submit_time", "duration", "gpus", "vc"]
                                               ].itertuples(index=False):
            out.writerow([pd.Timestamp(moment).strftime(TIME_FORMAT), f"{float(duration)!r}",
                          int(gpus), f"{float(duration) * int(gpus)!r}",
                          "" if vc is None or pd.isna(vc) else vc])
    return Written(["gpu_time = duration x num_gpus; cluster = the job's VC (empty when the "
                    "trace has none)"])


def template(first_line: str | None) -> ImportTemplate:
    exact_header(first_line, HEADER, "Pollux trace")
    fields = [
        {"name": "timestamp", "type": "datetime", "format": TIME_FORMAT,
         "constraints": {"required": True}},
        {"name": "duration", "type": "number", "unit": "s",
         "constraints": {"required": True, "minimum": 0}},
        {"name": "num_gpus", "type": "integer", "constraints": {"required": True, "minimum": 0}},
        {"name": "gpu_time", "type": "number", "unit": "GPU s",
         "constraints": {"required": True, "minimum": 0}},
        {"name": "cluster", "type": "string"}]
    derived = [{"name": "line", "type": "integer", "sql": "_row",
                "description": "Derived: the row's line in the file (it has no job id)."}]
    columns = {"job_id": "'line' || line", "vc": "cluster", "submit": "timestamp",
               "duration": "duration", "num_gpu": "num_gpus"}
    return ImportTemplate(fields, {"time": {"kind": "clock", "zone": DEFAULT_ZONE},
                                   "columns": columns, "replay": ["all"]}, derived=derived)


FORMAT = Format(
    name="pollux-trace",
    simulator="Pollux (OSDI'21) workload generator (simulator/workload.py)",
    parser="petuum/adaptdl@c793c70 (osdi21-artifact) simulator/workload.py generate",
    suffix=".csv",
    summary=", ".join(HEADER),
    write=write,
    needs=("gpus", "duration", "clock"),
    template=template,
    homepage=POLLUX.homepage,
    citation=POLLUX.citation,
    provenance_note="pandas.read_csv with its defaults reads a '#' line as a row: no comment "
                    "line is tolerated",
    quirks=("naive wall-clock timestamps", "duration and gpu_time as floats"),
)
