"""The Pollux simulator's workload CSV (OSDI'21), which Sia's simulator extends.

Checked against ``petuum/adaptdl@c793c70`` (branch ``osdi21-artifact``)
``simulator/simulator.py`` ``simulate`` and ``Cluster.__init__``, and the
workloads ``simulator/workload.py`` writes:

- ``pandas.read_csv(path)`` with its defaults: the first line is the header, and
  a ``#`` line is a row like any other, so the provenance goes to a sidecar file.
- Columns ``name, time, application, num_replicas, batch_size``; each row becomes
  ``Job(row.name, APPLICATIONS[row.application], row.time, ...)``: ``application``
  must be one of Pollux's six (bert, cifar10, deepspeech2, imagenet, ncf, yolov3),
  ``time`` is the submission in seconds from the start, ``name`` a unique key.
  Its own workloads name jobs ``<application>-<index>``; we keep the trace's job
  id when the ids are unique.
- Only the Tiresias and Optimus policies read ``num_replicas`` and ``batch_size``
  (Pollux's own policy chooses both; ncf jobs get 32,768); a batch size must lie
  in the application's profiled range or its statistical-efficiency lookup asserts.
- The format has no run time: a job runs until its application reaches its
  target, so a trace's durations survive only in the choice of application (by
  GPU-hours, as Pollux's own script chooses it). Imported, such a workload is in
  ``mltraces.jobs`` but cannot replay through mltraces's schedulers.

Sia (SOSP'23) reads an extension of this CSV; its repository is not available to
this project, so what it adds is not stated here.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from mltraces.interop.annotate import POLLUX_BATCH_SIZES
from mltraces.interop.formats.base import Format, ImportTemplate, Written, exact_header

HEADER = ("name", "time", "application", "num_replicas", "batch_size")


def write(jobs: pd.DataFrame, path: Path, options: Mapping[str, Any]) -> Written:
    """Rows in submission order; names are the job ids when unique, else Pollux's own."""
    ordered = jobs.sort_values("submit", kind="stable").reset_index(drop=True)
    notes = ["rows in submission order (as Pollux's workload.py sorts them)"]
    names = ordered["job_id"].astype(str)
    if names.duplicated().any() or (names == "").any():
        names = ordered["model"] + "-" + ordered.index.astype(str)
        notes.append("job ids are not unique: names are <application>-<index>, as Pollux's own")
    with open(path, "w", newline="", encoding="utf-8") as handle:
        out = csv.writer(handle, lineterminator="\n")
        out.writerow(HEADER)
        for name, (submit, model, gpus, batch) in zip(
                names, ordered[["submit", "model", "gpus", "batch_size"]].itertuples(index=False),
                strict=True):
            out.writerow([name, int(submit), model, int(gpus), int(batch)])
    return Written(notes)


def template(first_line: str | None) -> ImportTemplate:
    exact_header(first_line, HEADER, "Pollux workload")
    fields = [
        {"name": "name", "type": "string", "constraints": {"required": True}},
        {"name": "time", "type": "number", "unit": "s", "constraints": {"required": True,
                                                                       "minimum": 0}},
        {"name": "application", "type": "string",
         "constraints": {"required": True, "enum": sorted(POLLUX_BATCH_SIZES)}},
        {"name": "num_replicas", "type": "integer", "constraints": {"required": True,
                                                                    "minimum": 1}},
        {"name": "batch_size", "type": "integer", "constraints": {"required": True,
                                                                  "minimum": 1}},
    ]
    columns = {"job_id": "name", "submit": "time", "num_gpu": "num_replicas",
               "model": "application", "batch_size": "batch_size"}
    return ImportTemplate(fields, {"time": {"kind": "relative"}, "columns": columns,
                                   "synthetic": True}, primary_key=["name"],
                          notes=["A Pollux workload has no run time: its jobs are in "
                                 "mltraces.jobs but replay only in Pollux's simulator."])


FORMAT = Format(
    name="pollux",
    simulator="Pollux (OSDI'21) cluster simulator (Sia's simulator extends its CSV)",
    parser="petuum/adaptdl@c793c70 (osdi21-artifact) simulator/simulator.py simulate, "
           "Cluster.__init__",
    suffix=".csv",
    summary=", ".join(HEADER),
    write=write,
    needs=("gpus", "duration", "annotation"),
    template=template,
    homepage="https://github.com/petuum/adaptdl/tree/osdi21-artifact/simulator",
    citation="""@inproceedings{qiao2021pollux,
  title = {Pollux: Co-adaptive Cluster Scheduling for Goodput-Optimized Deep Learning},
  author = {Qiao, Aurick and Choe, Sang Keun and Subramanya, Suhas Jayaram and
            Neiswanger, Willie and Ho, Qirong and Zhang, Hao and Ganger, Gregory R. and
            Xing, Eric P.},
  booktitle = {OSDI},
  year = {2021}
}""",
    provenance_note="pandas.read_csv with its defaults reads a '#' line as a row: no comment "
                    "line is tolerated",
    quirks=("application one of bert, cifar10, deepspeech2, imagenet, ncf, yolov3",
            "no run time: the application stands for the work",
            "batch_size within the application's profiled range"),
)
