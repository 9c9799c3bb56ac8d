"""Load a workload with the Pollux simulator's own code and replay it; print what it parsed.

argv: SRC WORKLOAD POLICY. Runs simulator.simulate (pandas.read_csv, Cluster) in
Pollux's venv (Python 3.8, its pinned packages).
"""

import argparse
import contextlib
import io
import json
import os
import sys

src, workload = (os.path.abspath(a) for a in sys.argv[1:3])
policy = sys.argv[3]
sys.path.insert(0, os.path.join(src, "simulator"))
os.chdir(os.path.join(src, "simulator"))
with contextlib.redirect_stdout(io.StringIO()):  # the simulator prints every step
    import simulator

    args = argparse.Namespace(workload=os.path.abspath(workload), policy=policy, min_nodes=16,
                              max_nodes=None, interval=60, interference=0.0, num_gpus=4,
                              low_util=None, high_util=None, output=None)
    logs, jcts = simulator.simulate(args)
jobs = [{k: j[k] for k in ("name", "submission_time", "completion_time", "batch_size")}
        for j in logs[-1]["submitted_jobs"]]
print(json.dumps({"jobs": jobs, "jcts": jcts}))
