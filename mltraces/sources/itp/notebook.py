"""The ITP / ElasticFlow notebook's cells, read by ``notebooks/make_notebooks.py``.

The ``itp`` source opens ``itp_elasticflow.ipynb`` (``ORDER = 0``); a future
``elasticflow`` source adds its scheduling figures to the same notebook from its
own folder with a larger ``ORDER``. See the generator's docstring.
"""

NOTEBOOK = "itp_elasticflow.ipynb"
ORDER = 0
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
]
