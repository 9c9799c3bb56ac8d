"""The Tiresias simulator's job CSV (NSDI'19).

Checked against ``SymbioticLab/Tiresias@959f9b0`` ``simulator/run_sim.py``
``parse_job_file``, ``jobs.py`` ``_TFJobs.add_job`` and ``models.py`` (Python 2.7,
as its README requires):

- ``csv.DictReader`` (``,``; a ``.txt`` name switches to spaces): first line the
  header, then one job per line; no comment line is tolerated (sidecar provenance).
- Fields (README): ``job_id, num_gpu, submit_time, iterations, model_name,
  duration, interval``. A value becomes an ``int`` only when ``str.isdigit()``;
  ``duration`` is read with ``int(float(...))``; ``submit_time`` must be digits
  (``int(-1 * submit_time)`` fails on text), so we write whole non-negative seconds.
- ``model_name`` picks a tensor profile for network load; a name it does not know
  silently becomes ``inception3``. Its schedulers do not read ``iterations``;
  ``interval`` is the gap to the next job's submission (the last job's is 0).
"""

from __future__ import annotations

import csv
import itertools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from mltraces.interop.formats.base import Format, ImportTemplate, Written, exact_header

HEADER = ("job_id", "num_gpu", "submit_time", "iterations", "model_name", "duration", "interval")
_TYPES = {"job_id": "string", "model_name": "string"}


def write(jobs: pd.DataFrame, path: Path, options: Mapping[str, Any]) -> Written:
    """In submission order (``interval`` is to the next submission)."""
    ordered = jobs.sort_values("submit", kind="stable")
    submits = ordered["submit"].astype("int64").tolist()
    intervals = [b - a for a, b in itertools.pairwise(submits)] + [0]
    with open(path, "w", newline="", encoding="utf-8") as handle:
        out = csv.writer(handle, lineterminator="\n")
        out.writerow(HEADER)
        for (job_id, gpus, submit, iterations, model, duration), gap in zip(
                ordered[["job_id", "gpus", "submit", "iterations", "model", "duration"]]
                .itertuples(index=False), intervals, strict=True):
            out.writerow([job_id, int(gpus), int(submit), int(iterations), model, int(duration),
                          gap])
    return Written(["rows in submission order; interval = next submission - this one "
                    "(0 for the last job)"])


def template(first_line: str | None) -> ImportTemplate:
    exact_header(first_line, HEADER, "Tiresias job trace")
    fields = [{"name": c, "type": _TYPES.get(c, "integer"),
               "constraints": {"required": True, **({} if c in _TYPES else {"minimum": 0})}}
              for c in HEADER]
    columns = {"job_id": "job_id", "submit": "submit_time", "duration": "duration",
               "num_gpu": "num_gpu", "model": "model_name", "iterations": "iterations"}
    return ImportTemplate(fields, {"time": {"kind": "relative"}, "columns": columns,
                                   "synthetic": True, "replay": ["all"]})


FORMAT = Format(
    name="tiresias",
    simulator="Tiresias (NSDI'19) GPU cluster simulator",
    parser="SymbioticLab/Tiresias@959f9b0 simulator/run_sim.py parse_job_file, jobs.py add_job",
    suffix=".csv",
    summary=", ".join(HEADER),
    write=write,
    needs=("gpus", "duration", "annotation"),
    template=template,
    homepage="https://github.com/SymbioticLab/Tiresias",
    citation="""@inproceedings{gu2019tiresias,
  title = {Tiresias: A GPU Cluster Manager for Distributed Deep Learning},
  author = {Gu, Juncheng and Chowdhury, Mosharaf and Shin, Kang G. and Zhu, Yibo and
            Jeon, Myeongjae and Qian, Junjie and Liu, Hongqiang and Guo, Chuanxiong},
  booktitle = {NSDI},
  year = {2019}
}""",
    provenance_note="csv.DictReader reads the first line as the header and every other line "
                    "as a job: no comment line is tolerated",
    quirks=("Python 2.7", "values become int only when str.isdigit()",
            "an unknown model_name silently becomes inception3"),
)
