"""Parse a Philly job log with Blox's own workload/parse_philly_jobs.parse_jobs; print the jobs.

argv: SRC LOG [multigpu]. Attempts summed, as Blox's Workload does by default.
"""

import contextlib
import io
import json
import os
import sys

src, path = sys.argv[1:3]
multigpu = len(sys.argv) > 3 and sys.argv[3] == "multigpu"
sys.path.insert(0, os.path.join(src, "workload"))
with contextlib.redirect_stdout(io.StringIO()):  # it prints its settings
    import parse_philly_jobs

    jobs = parse_philly_jobs.parse_jobs(path, sum_attempts=True, multigpu=multigpu)
print(json.dumps([{"job_id": j.job_id, "arrival": j.job_arrival_time,
                   "iterations": j.job_total_iteration, "gpus": j.job_gpu_demand,
                   "queueing": j.job_queueing_delay} for j in jobs]))
