"""The AcmeTrace (NSDI'24) notebook's cells, read by ``notebooks/make_notebooks.py``.

Plain data: the notebook they go into, the paper's modules its setup cell imports
(name in the notebook -> module of this folder), its introduction, and (markdown,
code) pairs. See the generator's docstring.
"""

NOTEBOOK = "acme_nsdi24.ipynb"
MODULES = {"acme": "figures"}
INTRO = (
    "# AcmeTrace (NSDI'24): LLM development in the datacenter\n\n"
    "Six months of jobs on Shanghai AI Lab's Seren and Kalos A100 clusters, which were "
    "used to develop large language models. Two kinds of data:\n\n"
    "- the processed utilization curves the authors released (`acme.util_cdf`) and their "
    "per-cluster summary (`acme.cluster_summary`): small, always drawn, and the authors' own "
    "numbers, so those figures are the paper's by construction;\n"
    "- the job traces (`acme.seren_jobs`, ~99 MB; `acme.kalos_jobs`, 9 MB): "
    "`mltraces fetch acme` downloads them. Without them the job figures below say what to "
    "fetch instead of drawing. Your own copies work too: "
    "`MLTRACES_LOCAL=acme.seren_jobs=trace_seren.csv,acme.kalos_jobs=trace_kalos.csv`. "
    "The released Seren trace is filtered (818,327 of the 1,031,550 jobs the paper counts), "
    "so its numbers differ from the paper's, which are printed beside ours.\n\n"
    "Headings carry the paper's figure numbers; each title also names the file the "
    "AcmeTrace repository's `analysis.ipynb` draws. GPU jobs are jobs with at least one GPU; "
    "GPU time is duration × GPUs."
)
CELLS = [
    (
        "## The clusters, as the authors summarise them\n\n"
        "`cluster_summary.csv` compares Seren and Kalos with three earlier traces (Philly, "
        "Helios, PAI). Look at the median run time (about two minutes) against the mean "
        "(over twenty): LLM clusters run many short jobs and a few enormous ones.",
        'figures.show("acme_cluster_summary", con, OUT)',
    ),
    (
        "## AcmeTrace Fig. 2: GPU jobs are short, GPUs are busy\n\n"
        "(a) CDF of GPU job duration, from the job traces (the prior traces' job files are not "
        "part of the release).",
        'figures.show("acme_fig2a", con, OUT)',
    ),
    (
        "(b) GPU utilization, compared with Philly and PAI. About a third of Seren's and Kalos' "
        "samples are idle GPUs; the rest sit mostly near 100 %, far above the earlier "
        "deep-learning clusters.",
        'figures.show("acme_fig2b", con, OUT)',
    ),
    (
        "## AcmeTrace Fig. 3: few jobs, most GPUs\n\n"
        "CDF of GPUs per job, counting jobs (a) and weighting by GPU time (b). The median job "
        "uses one GPU; large multi-node jobs consume most of the GPU time.",
        'figures.show("acme_fig3", con, OUT)',
    ),
    (
        "## AcmeTrace Fig. 4: how jobs end\n\n"
        "Final states of GPU jobs by count and by GPU time, from `cluster_summary.csv` exactly "
        "as published. Many jobs fail, but failures are mostly cheap; cancelled jobs hold most "
        "of the GPU time.",
        'figures.show("acme_fig4", con, OUT)',
    ),
    (
        "The same bars recomputed from the job traces (our companion), the published values "
        "as black ticks.",
        'figures.show("acme_fig4_recomputed", con, OUT)',
    ),
    (
        "## AcmeTrace Fig. 5: what the jobs are\n\n"
        "Job types by count and by GPU time, the paper's share in brackets. Evaluation jobs "
        "are the majority by count while pretraining takes most of the GPU time.",
        'figures.show("acme_fig5", con, OUT)',
    ),
    (
        "## AcmeTrace Fig. 6: duration and queueing per job type\n\n"
        "Compare the types' duration curves (how long each kind runs) with their queueing "
        "curves (how long each kind waits).",
        'figures.show("acme_fig6", con, OUT)',
    ),
    (
        "GPUs per job by type (the repository's `box_gpu_num.pdf`; boxes: quartiles; "
        "whiskers: 5th–95th percentiles; triangle: mean). Pretraining jobs stand above the "
        "rest.",
        'figures.show("acme_type_gpu_count", con, OUT)',
    ),
    (
        "CPU jobs' duration (the repository's `cdf_job_jobtime.pdf`, panel b).",
        'figures.show("acme_cpu_duration", con, OUT)',
    ),
    (
        "## AcmeTrace Fig. 7: inside the GPUs and the servers\n\n"
        "Four panels as the paper groups them: SM and TC activity (DCGM), CPU and GPU memory, "
        "CPU utilization (Kalos exceeds 100 %; the axis is clipped as published), and "
        "InfiniBand send and receive (Seren; they nearly coincide).",
        'figures.show("acme_fig7", con, OUT)',
    ),
    (
        "## AcmeTrace Fig. 8: power\n\n"
        "GPU power against the A100's 400 W TDP, and the power of Seren's GPU and CPU servers.",
        'figures.show("acme_fig8", con, OUT)',
    ),
    (
        "GPU core and memory temperature in August 2023 (the repository's "
        "`cdf_temperature.pdf`).",
        'figures.show("acme_temperature", con, OUT)',
    ),
    (
        "## Checking the summary against the job traces (our analysis)\n\n"
        "`cluster_summary.csv` next to the same statistics recomputed from the job tables. "
        "Seren's counts are expected to differ: the summary counts jobs before the authors' "
        "filtering (1,031,550), the released trace holds 818,327.",
        'figures.show("acme_summary_check", con, OUT)',
    ),
]
