"""The elasticflow source's cells: its scheduling figures, appended to the ITP notebook.

Read by ``notebooks/make_notebooks.py`` (see its docstring): ``ORDER = 10`` puts
them after the itp source's characterisation of the traces.
"""

NOTEBOOK = "itp_elasticflow.ipynb"
ORDER = 10
CELLS = [
    (
        "## Replaying the schedulers: ElasticFlow Fig. 8(b)\n\n"
        "ElasticFlow's headline result is trace-driven: the share of jobs that meet their "
        "deadline under EDF, Gandiva, Tiresias, Themis, Chronus and ElasticFlow on each ITP "
        "cluster and a Philly trace, each on the cluster the artifact gives it (n64g8, n128g8 "
        "or n32g8). `mltraces.scheduling` replays the artifact's schedulers round by round on "
        "the catalog's traces, its cluster specs and its A100 throughput profiles "
        "(`elasticflow.cluster_specs`, `elasticflow.throughputs`); on every trace the artifact "
        "itself could run here, each job's outcome is the artifact's. Chronus is the "
        "artifact's separate `chronus-scheduler`: its lease programs, which it hands to "
        "Gurobi, are solved with HiGHS. The top panel is the paper's bars, the bottom one our "
        "replay: the paper's bars come from an earlier state of the artifact's code (its "
        "Philly EDF bar is .01, a fresh artifact run gives .44).\n\n"
        "The 66 replays take a few minutes on two cores the first time, then come from "
        "the cache. For a quick look, name a few traces below.",
        "FIG8B_TRACES = None  # None: all eleven; e.g. [\"cluster10\", \"philly_103959\"]\n"
        'figures.show("elasticflow_fig8b", con, OUT, labels=FIG8B_TRACES)',
    ),
    (
        "Ours beside the published ratio, per trace and policy:",
        "elasticflow.fig8b_data(con, FIG8B_TRACES).df().pivot_table(\n"
        '    index="trace", columns="name", values=["ours", "published"], sort=False).round(3)',
    ),
    (
        "## Fig. 8(a): the Pollux trace on 16 x 4 T4 GPUs\n\n"
        "The same schedulers on the trace the artifact ships for its comparison with Pollux "
        "(195 jobs, T4 throughput profiles). The artifact run on this setup gives our EDF, "
        "Gandiva, Tiresias, Themis and ElasticFlow ratios exactly; Pollux comes from its own "
        "simulator and is shown as published. The paper's legend swaps the names of the "
        "Gandiva and Tiresias bars; here each bar is named by what it holds.",
        'figures.show("elasticflow_fig8a", con, OUT)',
    ),
    (
        "## GPUs allocated over time: an ElasticFlow Fig. 7(a)-style replay\n\n"
        "The paper's Fig. 7(a) is measured on its testbed (16 servers of 8 GPUs) running the "
        "195-job testbed trace. We replay the same trace on `n16g8` in the simulator: EDF "
        "scales every job out and fills the cluster, the rigid schedulers leave GPUs idle, "
        "and ElasticFlow grows and shrinks jobs to meet deadlines it admitted.",
        'figures.show("elasticflow_fig7a", con, OUT)',
    ),
    (
        "## Your own scheduler\n\n"
        "A policy is a small object (see `mltraces.scheduling.AllocationPolicy`): here a "
        "largest-job-first rigid scheduler, replayed on cluster10 beside FIFO.",
        "from mltraces.scheduling import AllocationPolicy, inputs, schedule\n"
        "\n"
        "class LargestFirst(AllocationPolicy):\n"
        '    """Run waiting jobs biggest first, each on the GPUs it asked for."""\n'
        '    name = "largest-first"\n'
        "\n"
        "    def allocate(self, now, view):\n"
        "        chosen = {j.index: view.gpus[j.index] for j in view.running()}  # no preemption\n"
        "        free = view.free_gpus()\n"
        "        for job in sorted(view.waiting(), key=lambda j: -j.num_gpu):\n"
        "            if job.num_gpu <= free:\n"
        "                chosen[job.index], free = job.num_gpu, free - job.num_gpu\n"
        "        return chosen\n"
        "\n"
        'jobs = inputs.load_jobs(con, "itp/cluster10")\n'
        'cluster, profiles = inputs.load_cluster(con, "n32g8"), inputs.load_profiles(con)\n'
        'result = schedule(jobs, cluster, profiles, [LargestFirst(), "fifo"], '
        'trace_name="cluster10")\n'
        'result.summary[["policy", "ddl_satis_ratio", "mean_jct", "makespan"]]',
    ),
]
