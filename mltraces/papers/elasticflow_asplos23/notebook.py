"""The ITP / ElasticFlow notebook's cells, read by ``notebooks/make_notebooks.py``.

Plain data: the notebook they go into, the paper's modules its setup cell imports
(name in the notebook -> module of this folder), its introduction, and (markdown,
code) pairs: first the released ITP traces (Fig. 7(b) and our characterisation),
then the replays of the schedulers (Figs. 7(a), 8 and 9-11).
"""

NOTEBOOK = "itp_elasticflow.ipynb"
MODULES = {"itp": "itp_figures", "elasticflow": "figures"}
INTRO = (
    "# Microsoft ITP traces, as released with ElasticFlow (ASPLOS'23)\n\n"
    "Two months of deep-learning jobs on ten GPU clusters of Microsoft's ITP platform: "
    "when each job was submitted, how long it ran and on how many GPUs (`itp.jobs`). "
    "ElasticFlow's release gives every job a model, a batch size and a deadline "
    "(`itp.elasticflow_jobs`) and adds the 195-job trace of its testbed experiments "
    "(`itp.testbed_jobs`). GPU time is duration × GPUs.\n\n"
    "ElasticFlow's figures are scheduling results; of them, the released traces alone draw "
    "the submitted curve of Fig. 7(b). The characterisation of the traces that follows is "
    "our own."
)
CELLS = [
    (
        "## ElasticFlow Fig. 7(b): the testbed trace's submissions\n\n"
        "Jobs of the 195-job testbed trace submitted per 10 minutes over its 48 hours, as the "
        "paper's plotting script bins them. The paper's second curve (jobs ElasticFlow "
        "accepted in the cluster experiment) needs the testbed run itself.",
        'figures.show("elasticflow_fig7b", con, OUT)',
    ),
    (
        "## The clusters at a glance (our characterisation)\n\n"
        "Jobs and GPU hours per cluster, with the published totals beside ours in the title. "
        "Note how unequal the clusters are: one holds over 40 % of the GPU hours.",
        'figures.show("itp_clusters", con, OUT)',
    ),
    ("The reproduced totals beside the published ones:", "print(itp.totals_report(con))"),
    (
        "## How long do jobs run?\n\n"
        "CDF of job duration per cluster (the trace keeps jobs of at least ten minutes). Most "
        "jobs finish within a day, and a long tail runs for a week or more.",
        'figures.show("itp_duration_cdf", con, OUT)',
    ),
    (
        "## How many GPUs do jobs use?\n\n"
        "Share of jobs and share of GPU time per GPU count. Single-GPU jobs are most of the "
        "jobs but a minority of the GPU time: multi-GPU jobs, 8 GPUs above all, consume most "
        "of the cluster.",
        'figures.show("itp_gpu_count", con, OUT)',
    ),
    (
        "## When are jobs submitted?\n\n"
        "Jobs submitted per day in total (top) and per cluster (bottom; white: none). Some "
        "clusters start or stop part-way through the two months.",
        'figures.show("itp_submissions", con, OUT)',
    ),
    (
        "## ElasticFlow's deadlines\n\n"
        "ElasticFlow gives each job a deadline of submission + U[0.5, 1.5] × duration. The "
        "slack (deadline − submission) / duration should therefore follow the dashed uniform "
        "CDF in every cluster; slack below 1 means the job cannot meet its deadline at its "
        "original GPU count and needs to scale out.",
        'figures.show("itp_deadline_slack", con, OUT)',
    ),
    (
        "## ElasticFlow's model mix\n\n"
        "Which DNN model ElasticFlow assigned to the jobs, by job count and by GPU time. The "
        "mix is the same in every cluster by count; by GPU time it varies with which jobs "
        "happened to be long.",
        'figures.show("itp_model_mix", con, OUT)',
    ),
    # the replays of the schedulers
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
        "from mltraces.scheduling import AllocationPolicy, schedule\n"
        "from mltraces.workloads import cluster as inputs\n"
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
