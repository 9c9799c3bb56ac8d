"""Philly's ``cluster_job_log`` JSON, as Blox (EuroSys'24) and Synergy (OSDI'22) parse it.

Checked against ``msr-fiddle/blox@c8851b2`` ``workload/parse_philly_jobs.py``
``parse_jobs`` and ``msr-fiddle/synergy@1bb2bed``
``simulator/helpers/parse_philly_trace_full.py`` ``parse_jobs_full`` (the same
reading; they differ in what they keep):

- ``json.load`` of the whole file: one JSON array of job objects ``{status, vc,
  jobid, attempts, submitted_time, user}``, nothing else at the top level, so the
  provenance goes to a sidecar file.
- Jobs with an empty ``attempts`` list are dropped first; then every
  ``submitted_time`` is parsed with ``strptime("%Y-%m-%d %H:%M:%S")`` (a null or
  other spelling fails) and the earliest is second 0.
- An attempt is ``{start_time, end_time, detail: [{ip, gpus: [...]}]}``; its GPUs
  are the sum of ``len(gpus)``. A missing time must be the *string* ``"None"``
  (they test ``"None" in start_time``; a JSON null raises a TypeError).
- Times are the cluster's wall clock without a zone. We write the trace's own
  clock (its declared zone; instants with offsets in UTC); a trace without a
  clock (ITP) is written from an origin instant, recorded with the zone in the
  provenance. Each job becomes one attempt from its start to its end on as many
  machines as the trace says (else as few 8-GPU ones as hold it), machines named
  ``m0``, ``m1``, ... per job: the placement is not in the common columns.
- ``status``: COMPLETED and UNKNOWN are written ``Pass``; FAILED and NODE_FAIL
  ``Failed``; CANCELLED, TIMEOUT and RUNNING ``Killed`` (a running job's end is
  ``"None"``). A job that never started has no attempt, so its GPUs are not carried.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from mltraces.interop.formats.base import Format, ImportTemplate, Written

STATUS = {"COMPLETED": "Pass", "UNKNOWN": "Pass", "FAILED": "Failed", "NODE_FAIL": "Failed",
          "CANCELLED": "Killed", "TIMEOUT": "Killed", "RUNNING": "Killed"}
TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
#: the zone an imported file's times are read in when its provenance does not say
DEFAULT_ZONE = "America/Los_Angeles"


def _clock(moment: Any) -> str:
    """A time as the job log writes it; a missing one is the string "None"."""
    if moment is None or pd.isna(moment):
        return "None"
    return pd.Timestamp(moment).strftime(TIME_FORMAT)


def placement(gpus: int, nodes: Any) -> list[dict]:
    """``gpus`` GPUs spread over ``nodes`` machines (as even as possible; unknown: 8 per
    machine), named m0, m1, ... with their GPUs gpu0, gpu1, ..."""
    if gpus <= 0:  # a CPU job: no GPU on its machine
        return []
    count = int(nodes) if nodes is not None and not pd.isna(nodes) and int(nodes) > 0 \
        else math.ceil(gpus / 8)
    count = max(1, min(count, gpus))
    each, extra = divmod(gpus, count)
    return [{"ip": f"m{i}", "gpus": [f"gpu{g}" for g in range(each + (i < extra))]}
            for i in range(count)]


def _text(value: Any) -> str | None:
    return None if value is None or pd.isna(value) else str(value)


def _job(row: Any) -> dict:
    attempts = []
    if row.start_time is not None and not pd.isna(row.start_time):
        attempts.append({"start_time": _clock(row.start_time), "end_time": _clock(row.end_time),
                         "detail": placement(int(row.gpus), row.num_nodes)})
    return {"status": STATUS.get(row.state, "Pass"), "vc": _text(row.vc),
            "jobid": str(row.job_id), "attempts": attempts,
            "submitted_time": _clock(row.submit_time), "user": _text(row.user)}


def write(jobs: Iterable[pd.DataFrame], path: Path, options: Mapping[str, Any]) -> Written:
    """One JSON array, a job per line (the order of the trace)."""
    states: Counter[str] = Counter()
    index = 0
    with open(path, "w", encoding="utf-8", newline="") as handle:
        handle.write("[\n")
        for batch in jobs:
            frame = batch.assign(**{c: batch.get(c) for c in ("vc", "user", "num_nodes")})
            states.update(frame["state"])
            for row in frame.itertuples(index=False):
                handle.write(("," if index else "") + json.dumps(_job(row)) + "\n")
                index += 1
        handle.write("]\n")
    mapped = ", ".join(f"{state} -> {STATUS.get(state, 'Pass')} ({n})"
                       for state, n in sorted(states.items()))
    return Written([f"status from state: {mapped}",
                    "one attempt per job (first start to last end); machines m0, m1, ... "
                    "per job"])


def template(first_line: str | None) -> ImportTemplate:
    from mltraces.errors import MltracesError

    if first_line is not None and not first_line.lstrip().startswith("["):
        raise MltracesError("not a Philly job log: it must be one JSON array of jobs "
                            f"(it starts with {first_line.strip()[:40]!r})")
    time = {"type": "datetime", "format": TIME_FORMAT}
    fields = [
        {"name": "job_id", "type": "string", "constraints": {"required": True, "unique": True}},
        {"name": "user", "type": "string"}, {"name": "vc", "type": "string"},
        {"name": "status", "type": "string",
         "constraints": {"required": True, "enum": ["Pass", "Killed", "Failed"]}},
        {"name": "submitted_time", **time}, {"name": "num_attempts", "type": "integer",
                                             "constraints": {"required": True, "minimum": 0}},
        {"name": "first_start", **time}, {"name": "last_end", **time},
        {"name": "num_gpu", "type": "integer", "constraints": {"minimum": 0}},
        {"name": "num_machines", "type": "integer", "constraints": {"minimum": 0}}]
    columns = {"job_id": "job_id", "user": "user", "vc": "vc", "submit": "submitted_time",
               "start": "first_start", "end": "last_end", "num_gpu": "num_gpu",
               "num_nodes": "num_machines", "num_attempts": "num_attempts", "state": "status"}
    return ImportTemplate(fields, {"time": {"kind": "clock", "zone": DEFAULT_ZONE},
                                   "columns": columns,
                                   "states": {"Pass": "COMPLETED", "Failed": "FAILED",
                                              "Killed": "CANCELLED"},
                                   "replay": ["all", "vc/{vc}"]},
                          reader="philly_jobs", readers_module="mltraces.sources.philly.readers",
                          primary_key=["job_id"])


FORMAT = Format(
    name="philly",
    simulator="Blox (EuroSys'24) and Synergy (OSDI'22), which parse Philly's cluster_job_log",
    parser="msr-fiddle/blox@c8851b2 workload/parse_philly_jobs.py parse_jobs; "
           "msr-fiddle/synergy@1bb2bed simulator/helpers/parse_philly_trace_full.py "
           "parse_jobs_full",
    suffix="",
    summary="one JSON array of {status, vc, jobid, attempts: [{start_time, end_time, "
            "detail: [{ip, gpus}]}], submitted_time, user}",
    write=write,
    needs=("clock",),
    template=template,
    homepage="https://github.com/msr-fiddle/philly-traces",
    citation="""@inproceedings{jeon2019philly,
  title = {Analysis of Large-Scale Multi-Tenant GPU Clusters for DNN Training Workloads},
  author = {Jeon, Myeongjae and Venkataraman, Shivaram and Phanishayee, Amar and
            Qian, Junjie and Xiao, Wencong and Yang, Fan},
  booktitle = {USENIX ATC},
  year = {2019}
}""",
    provenance_note="json.load of one array of jobs: nothing else may sit at the top level",
    quirks=("missing times are the string \"None\" (null breaks them)",
            "%Y-%m-%d %H:%M:%S wall clock, no zone", "jobs without attempts are dropped"),
)
