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
        "## Generated traces: ElasticFlow Figs. 9, 10 and 11\n\n"
        "The paper's other simulation figures run on traces from the artifact's generator. "
        "`mltraces.scheduling.generate_trace` draws the same jobs from the same seeded random "
        "streams (the Fig. 10 trace is the artifact's byte for byte), and our schedulers "
        "equal the artifact's on them job for job. Fig. 10 is the cluster efficiency (GPUs "
        "weighted by their speed-up, over the cluster) after every scheduling round, drawn "
        "as the artifact's script draws its logs; beside each policy its final ratio and the "
        "one the artifact's shipped logs give.",
        'figures.show("elasticflow_fig10", con, OUT)',
    ),
    (
        "The artifact draws Figs. 9 and 11's deadlines (and which jobs are best-effort) "
        "without a seed, so each of our seeds is one such draw over the artifact's jobs; "
        "the bars are the mean over the seeds, the whiskers their range, the published "
        "values in black. Fig. 9 adds the two halves of ElasticFlow to EDF: admission "
        "control (`edf-admission`) and elastic scaling (`edf-elastic`).",
        "SEEDS = None  # None: the figures' 10 deadline seeds; e.g. (1, 2) for a quick look\n"
        'figures.show("elasticflow_fig9", con, OUT, seeds=SEEDS)',
    ),
    (
        "Fig. 11 turns a share of the 200 jobs into best-effort jobs (no deadline): (a) the "
        "ratio over the jobs with deadlines, (b) how much faster the best-effort jobs finish "
        "than under Gandiva.",
        'figures.show("elasticflow_fig11", con, OUT, seeds=SEEDS)',
    ),
    (
        "Fig. 9's numbers, ours beside the published ones:",
        "elasticflow.fig9_data(con, SEEDS).df().pivot_table(\n"
        '    index="gpus", columns="name", values=["mean", "published"], sort=False).round(3)',
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
        "A policy is a small object (see `mltraces.scheduling.AllocationPolicy`): here a rigid "
        "scheduler that starts the waiting jobs asking for the fewest GPUs first, replayed "
        "beside FIFO on the 195-job testbed trace on `n8g8` (64 GPUs, half the paper's "
        "testbed, so that jobs queue: on a cluster where nothing waits, every rigid order is "
        "FIFO).",
        "from mltraces.scheduling import AllocationPolicy, inputs, schedule\n"
        "\n"
        "class FewestGpusFirst(AllocationPolicy):\n"
        '    """Start waiting jobs smallest request first, each on the GPUs it asked for."""\n'
        '    name = "fewest-gpus-first"\n'
        "\n"
        "    def allocate(self, now, view):\n"
        "        chosen = {j.index: view.gpus[j.index] for j in view.running()}  # no preemption\n"
        "        free = view.free_gpus()\n"
        "        for job in sorted(view.waiting(), key=lambda j: (j.num_gpu, j.index)):\n"
        "            if job.num_gpu <= free:\n"
        "                chosen[job.index], free = job.num_gpu, free - job.num_gpu\n"
        "        return chosen\n"
        "\n"
        'jobs = inputs.load_jobs(con, "itp/testbed")\n'
        'cluster, profiles = inputs.load_cluster(con, "n8g8"), inputs.load_profiles(con)\n'
        'result = schedule(jobs, cluster, profiles, [FewestGpusFirst(), "fifo"], '
        'trace_name="testbed")\n'
        'summary = result.summary.set_index("policy")\n'
        'mine, fifo = summary.loc["fewest-gpus-first"], summary.loc["fifo"]\n'
        'print(f"deadlines met: {mine.ddl_satis_ratio:.3f} vs FIFO {fifo.ddl_satis_ratio:.3f}; "\n'
        '      f"mean queueing {mine.mean_queueing_delay / 3600:.1f} h vs FIFO "\n'
        '      f"{fifo.mean_queueing_delay / 3600:.1f} h")\n'
        'summary[["ddl_satis_ratio", "mean_jct", "mean_queueing_delay", "makespan"]]',
    ),
]
