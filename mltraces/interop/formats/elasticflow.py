"""The ElasticFlow artifact's trace CSV (ASPLOS'23; also what its ITP traces are published as).

Checked against ``gudiandian/ElasticFlow@b3f5ea4`` ``ElasticFlow/scheduler/scheduler.py``
``parse_job_file`` and ``jobs.py`` ``_TFJobs.add_job``:

- ``csv.DictReader`` with ``,`` (``.csv``; a ``.txt`` name switches to spaces): the
  first line is the header, every other line a job. A comment line would be read
  as the header or as a job, so the provenance goes to a sidecar file.
- Every value is text and becomes an ``int`` only when ``str.isdigit()``: a
  negative number, a decimal point or an exponent stays text and fails later
  (``int(job['duration'])`` or arithmetic on a string). We write non-negative
  integers only; a job submitted before second 0 is dropped.
- Two spellings of the header work: the ITP release's ``submission_time``,
  ``num_iteration``, ``deadline`` are copied to ``submit_time``, ``iteration``,
  ``ddl``. We write the ITP spelling (``job_id, submission_time, num_iteration,
  model_name, deadline, batch_size, num_gpu, duration``), as the issue asks.
- ``model_name`` and ``batch_size`` index its throughput profiles
  (``THROUGHPUTS[model][str(batch_size)]``): only profiled pairs work, which
  ElasticFlow's own annotation guarantees. Jobs are sorted by submission time.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from mltraces.errors import MltracesError
from mltraces.interop.formats.base import Format, ImportTemplate, Written, rows_of

HEADER = ("job_id", "submission_time", "num_iteration", "model_name", "deadline", "batch_size",
          "num_gpu", "duration")
#: every column the artifact's traces use, with its type; the spellings it treats as one
KNOWN = {"job_id": "string", "submission_time": "integer", "submit_time": "integer",
         "num_iteration": "integer", "iteration": "integer", "real_iteration": "integer",
         "model_name": "string", "deadline": "integer", "ddl": "integer",
         "batch_size": "integer", "num_gpu": "integer", "duration": "integer",
         "real_duration": "integer", "best_effort": "integer"}
SPELLINGS = {"submit": ("submission_time", "submit_time"), "iterations": ("num_iteration",
                                                                          "iteration"),
             "deadline": ("deadline", "ddl"), "duration": ("duration",),
             "model": ("model_name",), "batch_size": ("batch_size",), "num_gpu": ("num_gpu",),
             "job_id": ("job_id",)}


def write(jobs: Iterable[pd.DataFrame], path: Path, options: Mapping[str, Any]) -> Written:
    """One line per job in the ITP release's column order, integers as digits."""
    with open(path, "w", newline="", encoding="utf-8") as handle:
        out = csv.writer(handle, lineterminator="\n")
        out.writerow(HEADER)
        for row in rows_of(jobs, ["job_id", "submit", "iterations", "model", "deadline",
                                  "batch_size", "gpus", "duration"]):
            job_id, submit, iterations, model, deadline, batch, gpus, duration = row
            out.writerow([job_id, int(submit), int(iterations), model, int(deadline),
                          int(batch), int(gpus), int(duration)])
    return Written()


def template(first_line: str | None) -> ImportTemplate:
    """Fields from the file's own header (its artifact writes three variants)."""
    header = next(csv.reader([first_line or ""]), [])
    unknown = [c for c in header if c not in KNOWN]
    chosen = {key: next((c for c in names if c in header), None)
              for key, names in SPELLINGS.items()}
    missing = [names[0] for key, names in SPELLINGS.items() if chosen[key] is None]
    if unknown or missing:
        raise MltracesError(
            f"not an ElasticFlow trace header ({', '.join(header) or 'empty'}): "
            + (f"unknown columns {unknown}; " if unknown else "")
            + (f"missing {missing}; " if missing else "")
            + f"expected {', '.join(HEADER)} (or the artifact's submit_time, iteration, ddl)")
    fields = [{"name": c, "type": KNOWN[c], "constraints": {
        "required": c != "best_effort", **({"minimum": 0} if KNOWN[c] == "integer" else {}),
        **({"maximum": 1} if c == "best_effort" else {})}}  # a 0/1 flag
        for c in header]
    columns = {"job_id": chosen["job_id"], "submit": chosen["submit"],
               "duration": chosen["duration"], "num_gpu": chosen["num_gpu"],
               "model": chosen["model"], "batch_size": chosen["batch_size"],
               "iterations": chosen["iterations"], "deadline": chosen["deadline"]}
    if "best_effort" in header:  # the generator's column: such a job asks for no guarantee
        columns["best_effort"] = "best_effort"
    return ImportTemplate(fields, {"time": {"kind": "relative"}, "columns": columns,
                                   "synthetic": True, "replay": ["all"]},
                          primary_key=["job_id"])


FORMAT = Format(
    name="elasticflow",
    simulator="ElasticFlow (ASPLOS'23) scheduler simulator",
    parser="gudiandian/ElasticFlow@b3f5ea4c ElasticFlow/scheduler/scheduler.py parse_job_file, "
           "jobs.py _TFJobs.add_job",
    suffix=".csv",
    summary=", ".join(HEADER),
    write=write,
    needs=("gpus", "duration", "annotation"),
    template=template,
    homepage="https://github.com/gudiandian/ElasticFlow",
    citation="""@inproceedings{gu2023elasticflow,
  title = {ElasticFlow: An Elastic Serverless Training Platform for Distributed Deep Learning},
  author = {Gu, Diandian and Zhao, Yihao and Zhong, Yinmin and Xiong, Yifan and
            Han, Zhenhua and Cheng, Peng and Yang, Fan and Huang, Gang and Jin, Xin and
            Liu, Xuanzhe},
  booktitle = {ASPLOS},
  year = {2023}
}""",
    provenance_note="csv.DictReader reads the first line as the header and every other line "
                    "as a job: no comment line is tolerated",
    quirks=("values become int only when str.isdigit(): non-negative integers only",
            "submission_time/num_iteration/deadline or submit_time/iteration/ddl",
            "model_name and batch_size must have a throughput profile"),
)
