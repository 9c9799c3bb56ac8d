"""Run the Tiresias simulator (Python 2.7) on a trace file; print its per-job log as JSON.

argv: SRC TRACE CLUSTER_SPEC SCHEDULE LOG_DIR.
"""

import csv
import json
import os
import subprocess
import sys

src, trace, spec, schedule, log = sys.argv[1:6]
simulator = os.path.join(src, "simulator")
if not os.path.isdir(log):
    os.makedirs(log)
with open(os.devnull, "w") as quiet:
    subprocess.check_call([sys.executable, "run_sim.py", "--cluster_spec=" + spec,
                           "--scheme=count", "--trace_file=" + os.path.abspath(trace),
                           "--schedule=" + schedule, "--log_path=" + os.path.abspath(log)],
                          cwd=simulator, stdout=quiet, stderr=subprocess.STDOUT)
with open(os.path.join(log, "job.csv")) as handle:
    rows = list(csv.reader(handle))
print(json.dumps({"header": rows[0], "jobs": rows[1:]}))
