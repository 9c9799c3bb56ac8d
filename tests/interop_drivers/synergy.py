"""Parse a Philly job log with Synergy's parse_philly_trace_full.parse_jobs_full; print the jobs.

argv: SRC LOG. Attempts summed, multi-GPU, as Synergy's Philly replay (--multigpu).
"""

import contextlib
import io
import json
import logging
import os
import sys

src, path = sys.argv[1:3]
sys.path.insert(0, os.path.join(src, "simulator"))
with contextlib.redirect_stdout(io.StringIO()):  # it prints its settings
    from helpers import parse_philly_trace_full

    jobs = parse_philly_trace_full.parse_jobs_full(path, sum_attempts=True, multigpu=True,
                                                   logger=logging.getLogger("synergy"))
print(json.dumps([{"job_id": j.job_id, "arrival": j.job_arrival_time,
                   "iterations": j.job_total_iteration, "gpus": j.job_gpu_demand,
                   "queueing": j.job_queueing_delay} for j in jobs]))
