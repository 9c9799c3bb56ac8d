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
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from mltraces.interop.annotate import POLLUX_BATCH_SIZES
from mltraces.interop.formats.base import Format, ImportTemplate, Written, exact_header, rows_of

HEADER = ("name", "time", "application", "num_replicas", "batch_size")
#: the strings ``pandas.read_csv`` reads as missing by default (its ``na_values``), quoted or
#: not: Pollux's parser would see a job so named as nameless
PANDAS_MISSING = ("", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan",
                  "1.#IND", "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan",
                  "null")


def write(jobs: Iterable[pd.DataFrame], path: Path, options: Mapping[str, Any]) -> Written:
    """Rows in submission order; names are the job ids when unique (``options["unique_ids"]``,
    from :func:`facts`), else Pollux's own ``<application>-<index>``."""
    notes = ["rows in submission order (as Pollux's workload.py sorts them)"]
    unique = bool(options.get("unique_ids", False))
    if not unique:
        notes.append("job ids are not unique: names are <application>-<index>, as Pollux's own")
    elif options.get("missing_like_ids"):
        shown = ", ".join(repr(i) for i in options["missing_like_ids"])
        notes.append(f"{options['missing_like_count']} job id(s) ({shown}) are strings "
                     "pandas.read_csv reads as missing by default, as Pollux's simulator reads "
                     "this file: they are written as they are; read the names with "
                     "keep_default_na=False (mltraces import does) to get them back")
    with open(path, "w", newline="", encoding="utf-8") as handle:
        out = csv.writer(handle, lineterminator="\n")
        out.writerow(HEADER)
        for index, (job_id, submit, model, gpus, batch) in enumerate(rows_of(
                jobs, ["job_id", "submit", "model", "gpus", "batch_size"])):
            name = str(job_id) if unique else f"{model}-{index}"
            out.writerow([name, int(submit), model, int(gpus), int(batch)])
    return Written(notes)


def facts(con: Any, jobs: str) -> dict[str, Any]:
    """Whether every job id is unique and not empty (then they are the names), and the ids
    pandas' defaults would read as missing (said in the provenance)."""
    [(distinct, total, empty)] = con.execute(
        f"SELECT count(DISTINCT job_id), count(*), count(*) FILTER (WHERE job_id = '' OR "
        f"job_id IS NULL) FROM {jobs}").fetchall()
    missing = ", ".join("'" + v.replace("'", "''") + "'" for v in PANDAS_MISSING)
    [(count, examples)] = con.execute(
        f"SELECT count(*), list(DISTINCT job_id ORDER BY job_id)[:5] FROM {jobs} "
        f"WHERE job_id IN ({missing})").fetchall()
    return {"unique_ids": bool(distinct == total and not empty),
            "missing_like_count": int(count), "missing_like_ids": list(examples or [])}


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
    by_submission=True,
    facts=facts,
)
