"""Gavel's trace file (OSDI'20): one tab-separated job per line, no header.

Checked against ``stanford-futuredata/gavel@c4fa400`` ``scheduler/utils.py``
``parse_trace`` (and ``job.py`` ``Job.__str__``, which writes the same fields):

- each line is ``line.split('\\t')`` into exactly ten fields: ``job_type, command,
  working_directory, num_steps_arg, needs_data_dir, total_steps, scale_factor,
  priority_weight, SLO, arrival_time``; a blank or comment line fails to unpack,
  so the provenance goes to a sidecar file. A tab inside a field is impossible.
- ``needs_data_dir``, ``total_steps`` and ``scale_factor`` are read with ``int()``
  (``scale_factor >= 1`` is asserted), ``priority_weight``, ``SLO`` and
  ``arrival_time`` with ``float()``; ``SLO`` -1 means none.
- The simulator looks each job up by ``(job_type, scale_factor)`` in its
  throughputs file, so the job type must be one Gavel measured at that scale
  factor (1, 2, 4 or 8); ``total_steps`` is its work in steps. The command,
  working directory and steps argument are only used on a physical cluster: we
  write placeholders that name the exported job.
- Gavel's own traces in its repository (``traces/msr/seed=*/*.trace``) hold seven
  fields per line, an older layout this ``parse_trace`` no longer reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from mltraces.interop.formats.base import Format, ImportTemplate, Written

FIELDS = ("job_type", "command", "working_directory", "num_steps_arg", "needs_data_dir",
          "total_steps", "scale_factor", "priority_weight", "SLO", "arrival_time")
_TYPES = {"needs_data_dir": "integer", "total_steps": "integer", "scale_factor": "integer",
          "priority_weight": "number", "SLO": "number", "arrival_time": "number"}


def _plain(text: object) -> str:
    """A field without tabs or line breaks (they would split the line)."""
    return " ".join(str(text).split())


def write(jobs: pd.DataFrame, path: Path, options: Mapping[str, Any]) -> Written:
    """In submission order, arrival times as seconds with six decimals (as Gavel writes)."""
    ordered = jobs.sort_values("submit", kind="stable")
    trace = _plain(options.get("trace", "trace"))
    with open(path, "w", encoding="utf-8", newline="") as handle:
        for job_id, submit, job_type, gpus, steps in ordered[
                ["job_id", "submit", "model", "gpus", "iterations"]].itertuples(index=False):
            handle.write("\t".join([
                _plain(job_type), f"mltraces replay of {trace} job {_plain(job_id)}", ".",
                "--num_steps", "0", str(int(steps)), str(int(gpus)), "1", "-1.000000",
                f"{float(submit):f}"]) + "\n")
    return Written(["rows in submission order; command, working_directory and num_steps_arg "
                    "are placeholders (a simulation never runs them); priority 1, SLO -1 "
                    "(none): deadlines are not written"])


def template(first_line: str | None) -> ImportTemplate:
    from mltraces.errors import MltracesError

    if first_line is not None and len(first_line.rstrip("\r\n").split("\t")) != len(FIELDS):
        raise MltracesError(f"not a Gavel trace line: {len(first_line.split(chr(9)))} "
                            f"tab-separated fields, parse_trace expects {len(FIELDS)} "
                            f"({', '.join(FIELDS)})")
    fields = [{"name": c, "type": _TYPES.get(c, "string"), "constraints": {"required": True}}
              for c in FIELDS]
    derived = [
        {"name": "line", "type": "integer", "sql": "_row",
         "description": "Derived: the job's line in the file (Gavel numbers jobs in order)."},
        {"name": "batch_size", "type": "integer",
         "sql": "TRY_CAST(regexp_extract(job_type, 'batch size (\\d+)', 1) AS INTEGER)",
         "description": "Derived: the batch size the job type names, if any."}]
    columns = {"job_id": "'line' || line", "submit": "arrival_time", "num_gpu": "scale_factor",
               "model": "job_type", "batch_size": "batch_size", "iterations": "total_steps"}
    return ImportTemplate(fields, {"time": {"kind": "relative"}, "columns": columns,
                                   "synthetic": True},
                          dialect={"header": False, "delimiter": "\t"}, derived=derived,
                          notes=["Gavel's steps need its throughputs to become time: the jobs "
                                 "are in mltraces.jobs but replay only in Gavel's simulator."])


FORMAT = Format(
    name="gavel",
    simulator="Gavel (OSDI'20) scheduler simulator",
    parser="stanford-futuredata/gavel@c4fa400 scheduler/utils.py parse_trace",
    suffix=".trace",
    summary="tab-separated, no header: " + ", ".join(FIELDS),
    write=write,
    needs=("gpus", "duration", "annotation"),
    template=template,
    homepage="https://github.com/stanford-futuredata/gavel",
    citation="""@inproceedings{narayanan2020gavel,
  title = {Heterogeneity-Aware Cluster Scheduling Policies for Deep Learning Workloads},
  author = {Narayanan, Deepak and Santhanam, Keshav and Kazhamiaka, Fiodar and
            Phanishayee, Amar and Zaharia, Matei},
  booktitle = {OSDI},
  year = {2020}
}""",
    provenance_note="parse_trace splits every line into exactly ten tab-separated fields: no "
                    "header or comment line is tolerated",
    quirks=("ten tab-separated fields, no header", "job type measured at its scale factor",
            "SLO -1 = none"),
)
