"""Run the ElasticFlow artifact's scheduler on a trace file; print its per-job log as JSON.

argv: SRC TRACE CLUSTER_SPEC POLICY LOG_DIR. Runs in the artifact's own venv
(tests/interop_harness.py); nothing of the artifact is imported by mltraces.
"""

import csv
import json
import os
import subprocess
import sys

src, trace, spec, policy, log = sys.argv[1:6]
scheduler = os.path.join(src, "ElasticFlow", "scheduler")
os.makedirs(log, exist_ok=True)
scheme = "gandiva" if policy == "gandiva" else "elastic"
subprocess.run([sys.executable, "scheduler.py", f"--cluster_spec=cluster_specs/{spec}.csv",
                "--print", f"--scheme={scheme}", f"--trace_file={os.path.abspath(trace)}",
                f"--schedule={policy}", f"--log_path={os.path.abspath(log)}",
                "--simulation=True", "--scheduling_slot=60", "--gpu_type=A100"],
               cwd=scheduler, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
with open(os.path.join(log, "job.csv")) as handle:
    jobs = list(csv.DictReader(handle))
with open(os.path.join(log, "final_result.csv")) as handle:
    final = list(csv.DictReader(handle))[-1]
print(json.dumps({"jobs": jobs, "ratio": float(final["ddl_satis_ratio"])}))
