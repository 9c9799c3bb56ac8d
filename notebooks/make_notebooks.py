"""Write the three paper notebooks from the cell lists below (outputs never stored).

Run ``python notebooks/make_notebooks.py`` after editing a story; the notebooks
are generated so their setup cells, figure calls and wording stay consistent,
and so the repository never carries rendered outputs. Each figure is one call
to :func:`mltraces.figures.show`, which draws it (or says what to fetch) and,
when ``MLTRACES_FIGURES_DIR`` is set, also writes PNG + PDF there.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent

SETUP_NOTE = (
    "The first call downloads the files it needs (or takes them from `MLTRACES_MIRROR`), "
    "verifies them against pinned hashes and builds the catalog. Set "
    "`MLTRACES_FIGURES_DIR=figures` to also write every figure as PNG and PDF; "
    "`mltraces figures {source} --output figures/` does the same from the shell."
)


def setup_code(source: str, module: str) -> str:
    return (
        "%matplotlib inline\n"
        "import mltraces\n"
        "from mltraces import figures\n"
        f"from mltraces.datasets.{module} import figures as {module}\n"
        "\n"
        f'con = mltraces.connect(figures.tables_for("{source}"))  # the tables these figures read\n'
        "OUT = figures.output_dir_from_env()  # None: display only"
    )


def show(name: str) -> str:
    return f'figures.show("{name}", con, OUT)'


ZEUS = [
    (
        "# Zeus (NSDI'23): GPU energy of DNN training, redrawn from the traces\n\n"
        "Zeus shows that the batch size and the GPU power limit of a recurring training job "
        "trade energy against time, and that an online optimizer can find a good pair while the "
        "job keeps recurring. The released traces record, for six workloads, how many epochs "
        "each batch size needs to reach the target metric (`zeus.train`, several repetitions) "
        "and how long an epoch takes and how much power it draws at every power limit on four "
        "GPUs (`zeus.power`). Energy to accuracy (ETA) is epochs × time per epoch × average "
        "power; time to accuracy (TTA) leaves out the power.\n\n" + SETUP_NOTE.format(source="zeus"),
        setup_code("zeus", "zeus"),
    ),
    (
        "## Fig. 1: how much energy is there to save?\n\n"
        "Baseline: the workload's default batch size b0 at the GPU's maximum power limit. "
        "Orange: keep b0 and pick the power limit with the lowest ETA. Blue: pick the batch "
        "size and the power limit together. Only configurations whose every repetition reaches "
        "the target within the workload's epoch budget count. Look for the gap between the two "
        "bars: the power limit alone saves a little, the batch size most of the rest.",
        show("zeus_savings"),
    ),
    (
        "The reproduced ranges (one decimal, as the paper prints them; the paper's V100 "
        "numbers are 3.0%–31.5% and 23.8%–74.7%):",
        "print(zeus.savings_report(con))",
    ),
    (
        "The same question on the other three GPUs. The ranges move, the story does not: the "
        "batch size is the bigger lever everywhere.",
        show("zeus_savings_gpus"),
    ),
    (
        "## Fig. 2: the energy–time tradeoff\n\n"
        "Every (batch size, power limit) configuration of DeepSpeech2 on V100, placed by its "
        "TTA and ETA. The line is the Pareto front: configurations that no other beats on "
        "both. The star (b0 at max power) sits well off the front, so energy can be saved "
        "without giving up time, and along the front energy is traded for time.",
        show("zeus_tradeoff"),
    ),
    (
        "The same picture for every workload. Log axes: the smallest batch sizes are far "
        "slower and costlier than the rest.",
        show("zeus_tradeoff_all"),
    ),
    (
        "## Fig. 3: trace-driven evaluation with the simulator\n\n"
        "`mltraces.simulate` replays each workload as a recurring job on V100 (η = 0.5, "
        "β = 2, 2·|B|·|P| recurrences, 10 seeds). Zeus explores batch sizes with pruning and "
        "then Thompson sampling and profiles power limits just in time; Grid Search tries every "
        "configuration once; Default always runs b0 at max power.\n\n"
        "Cumulative ETA and TTA of DeepSpeech2: Zeus' curve bends below Default's after a few "
        "recurrences; Grid Search pays for its exhaustive exploration first.",
        show("zeus_cumulative"),
    ),
    (
        "Once the optimizers have settled: ETA and TTA of the last five recurrences relative "
        "to Default (below the dashed line is better). Zeus should sit close to Oracle, the "
        "configuration with the lowest expected cost known in advance.",
        show("zeus_final"),
    ),
    (
        "Cumulative regret: how much more cost than Oracle each policy has paid so far. A "
        "curve that flattens has stopped paying for exploration.",
        show("zeus_regret"),
    ),
    (
        "Sensitivity. Top: η weighs energy against time in the cost; raising it lowers Zeus' "
        "ETA and raises its TTA. Bottom: β is the early-stopping threshold (a multiple of the "
        "best cost so far); without it (β = ∞) a bad exploration run can cost many times "
        "Default.",
        show("zeus_sensitivity"),
    ),
    (
        "## Recurring jobs from the Alibaba trace\n\n"
        "Groups of recurring jobs from Alibaba's GPU cluster, mapped to the six workloads, "
        "replayed with their real arrival times (runs overlap; results arrive when runs end). "
        "Needs `zeus/alibaba_groups.csv.xz` (`mltraces fetch zeus`); skipped otherwise.",
        show("zeus_alibaba"),
    ),
]

ITP = [
    (
        "# Microsoft ITP traces, as released with ElasticFlow (ASPLOS'23)\n\n"
        "Two months of deep-learning jobs on ten GPU clusters of Microsoft's ITP platform: "
        "when each job was submitted, how long it ran and on how many GPUs (`itp.jobs`). "
        "ElasticFlow's release gives every job a model, a batch size and a deadline "
        "(`itp.elasticflow_jobs`). GPU time is duration × GPUs.\n\n" + SETUP_NOTE.format(source="itp"),
        setup_code("itp", "itp"),
    ),
    (
        "## The clusters at a glance\n\n"
        "Jobs and GPU hours per cluster; the totals must match the published 69,351 jobs and "
        "1,632,719.7 GPU hours. Note how unequal the clusters are: one holds over 40 % of the "
        "GPU hours.",
        show("itp_clusters"),
    ),
    ("The reproduced totals:", "print(itp.totals_report(con))"),
    (
        "## How long do jobs run?\n\n"
        "CDF of job duration per cluster (the trace keeps jobs of at least ten minutes). Most "
        "jobs finish within a day, and a long tail runs for a week or more.",
        show("itp_duration_cdf"),
    ),
    (
        "## How many GPUs do jobs use?\n\n"
        "Share of jobs and share of GPU time per GPU count. Single-GPU jobs are most of the "
        "jobs but a minority of the GPU time: multi-GPU jobs, 8 GPUs above all, consume most "
        "of the cluster.",
        show("itp_gpu_count"),
    ),
    (
        "## When are jobs submitted?\n\n"
        "Jobs submitted per day in total (top) and per cluster (bottom; white: none). Some "
        "clusters start or stop part-way through the two months.",
        show("itp_submissions"),
    ),
    (
        "## ElasticFlow's deadlines\n\n"
        "ElasticFlow gives each job a deadline of submission + U[0.5, 1.5] × duration. The "
        "slack (deadline − submission) / duration should therefore follow the dashed uniform "
        "CDF in every cluster; slack below 1 means the job cannot meet its deadline at its "
        "original GPU count and needs to scale out.",
        show("itp_deadline_slack"),
    ),
    (
        "## ElasticFlow's model mix\n\n"
        "Which DNN model ElasticFlow assigned to the jobs, by job count and by GPU time. The "
        "mix is the same in every cluster by count; by GPU time it varies with which jobs "
        "happened to be long.",
        show("itp_model_mix"),
    ),
]

ACME = [
    (
        "# AcmeTrace (NSDI'24): LLM development in the datacenter\n\n"
        "Six months of jobs on Shanghai AI Lab's Seren and Kalos A100 clusters, which were "
        "used to develop large language models. Two kinds of data:\n\n"
        "- the processed utilization curves the authors released (`acme.util_cdf`) and their "
        "per-cluster summary (`acme.cluster_summary`): small, always drawn;\n"
        "- the job traces (`acme.seren_jobs`, ~99 MB; `acme.kalos_jobs`, 9 MB): "
        "`mltraces fetch acme` downloads them. Without them the job figures below say what to "
        "fetch instead of drawing. Your own copies work too: "
        "`MLTRACES_LOCAL=acme.seren_jobs=trace_seren.csv,acme.kalos_jobs=trace_kalos.csv`.\n\n"
        "GPU jobs are jobs with at least one GPU; GPU time is duration × GPUs.\n\n"
        + SETUP_NOTE.format(source="acme"),
        setup_code("acme", "acme"),
    ),
    (
        "## The clusters, as the authors summarise them\n\n"
        "`cluster_summary.csv` compares Seren and Kalos with three earlier traces (Philly, "
        "Helios, PAI). Look at the median run time (about two minutes) against the mean "
        "(over twenty): LLM clusters run many short jobs and a few enormous ones.",
        show("acme_cluster_summary"),
    ),
    (
        "## GPU jobs are short, GPUs are busy\n\n"
        "CDF of GPU job duration (from the job traces).",
        show("acme_duration_cdf"),
    ),
    (
        "GPU utilization, compared with Philly and PAI. About a third of Seren's and Kalos' "
        "samples are idle GPUs; the rest sit mostly near 100 %, far above the earlier "
        "deep-learning clusters.",
        show("acme_gpu_util"),
    ),
    (
        "## Few jobs, most GPUs\n\n"
        "CDF of GPUs per job, counting jobs (left) and weighting by GPU time (right). The "
        "median job uses one GPU (see the summary above); look at how far right the GPU-time "
        "curve sits: large multi-node jobs consume most of the GPU time.",
        show("acme_gpu_count_cdf"),
    ),
    (
        "## How jobs end\n\n"
        "Final states of GPU jobs, by count and by GPU time. Many jobs fail, but failures are "
        "mostly cheap; cancelled jobs hold much of the GPU time.",
        show("acme_states"),
    ),
    (
        "## What the jobs are\n\n"
        "Job types by count and by GPU time. The paper's finding to look for: evaluation jobs "
        "are the majority by count while pretraining takes most of the GPU time.",
        show("acme_job_types"),
    ),
    (
        "GPUs per job by type (boxes: quartiles; whiskers: 5th–95th percentiles; triangle: "
        "mean). Look for pretraining jobs standing above the rest.",
        show("acme_type_gpu_count"),
    ),
    (
        "Duration and queueing delay per job type. Compare the types' duration curves (how "
        "long each kind runs) with their queueing curves (how long each kind waits).",
        show("acme_type_duration_queue"),
    ),
    (
        "## Inside the GPUs and the servers\n\n"
        "SM activity and occupancy, GPU memory, host CPU and memory, and InfiniBand traffic, "
        "from the released curves. The occupancy curve is identical to the tensor-activity one "
        "in the released files, so it is drawn once.",
        show("acme_resource_util"),
    ),
    ("GPU core and memory temperature (August 2023).", show("acme_temperature")),
    (
        "GPU power against the A100's 400 W TDP, and the power of GPU and CPU servers.",
        show("acme_power"),
    ),
    (
        "## Checking the summary against the job traces\n\n"
        "`cluster_summary.csv` next to the same statistics recomputed from the job tables. "
        "Seren's counts are expected to differ: the summary counts jobs before the authors' "
        "filtering (1,031,550), the released trace holds 818,327.",
        show("acme_summary_check"),
    ),
]

NOTEBOOKS = {
    "zeus_nsdi23.ipynb": ZEUS,
    "itp_elasticflow.ipynb": ITP,
    "acme_nsdi24.ipynb": ACME,
}


def build(cells: list[tuple[str, str]]) -> nbformat.NotebookNode:
    """A notebook of (markdown, code) pairs, with a python3 kernel and no outputs."""
    notebook = new_notebook()
    for markdown, code in cells:
        notebook.cells.append(new_markdown_cell(markdown))
        notebook.cells.append(new_code_cell(code))
    for index, cell in enumerate(notebook.cells):
        cell["id"] = f"cell-{index:02d}"  # stable ids: regenerating gives a clean diff
    notebook.metadata["kernelspec"] = {
        "display_name": "Python 3",
        "language": "python",
        "name": "python3",
    }
    notebook.metadata["language_info"] = {"name": "python"}
    return notebook


def main() -> None:
    for name, cells in NOTEBOOKS.items():
        path = HERE / name
        nbformat.write(build(cells), path)
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
