"""Parse a trace with Gavel's own utils.parse_trace; print the jobs as JSON.

argv: SRC TRACE. Runs in Gavel's venv (its utils imports the policies: cvxpy).
"""

import json
import os
import sys

src, trace = sys.argv[1:3]
sys.path.insert(0, os.path.join(src, "scheduler"))
import utils  # noqa: E402

jobs, arrivals = utils.parse_trace(trace)
print(json.dumps({"jobs": [{"job_type": j.job_type, "total_steps": j.total_steps,
                            "scale_factor": j.scale_factor,
                            "priority_weight": j.priority_weight, "SLO": j.SLO}
                           for j in jobs], "arrivals": arrivals}))
