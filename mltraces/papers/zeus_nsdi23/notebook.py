"""The Zeus (NSDI'23) notebook's cells, read by ``notebooks/make_notebooks.py``.

Plain data: the notebook they go into, the paper's modules its setup cell imports
(name in the notebook -> module of this folder), its introduction, and (markdown,
code) pairs. See the generator's docstring.
"""

NOTEBOOK = "zeus_nsdi23.ipynb"
MODULES = {"zeus": "figures"}
INTRO = (
    "# Zeus (NSDI'23): GPU energy of DNN training, redrawn from the traces\n\n"
    "Zeus shows that the batch size and the GPU power limit of a recurring training job "
    "trade energy against time, and that an online optimizer can find a good pair while the "
    "job keeps recurring. The released traces record, for six workloads, how many epochs "
    "each batch size needs to reach the target metric (`zeus.train`, several repetitions) "
    "and how long an epoch takes and how much power it draws at every power limit on four "
    "GPUs (`zeus.power`). Energy to accuracy (ETA) is epochs × time per epoch × average "
    "power; time to accuracy (TTA) leaves out the power.\n\n"
    "Figures 1 and 2 reproduce the paper's. The paper's evaluation is trace-driven simulation "
    "on these very traces: the figures after them replay it with `mltraces.simulate`, in the "
    "paper's layout, named by what they show (their figure numbers could not be confirmed)."
)
CELLS = [
    (
        "## Zeus Fig. 1: how much energy is there to save?\n\n"
        "Energy to accuracy on V100, normalised to the baseline (the workload's default batch "
        "size b0 at the GPU's maximum power limit, dotted line), for the best batch size alone "
        "(at max power), the best power limit alone (at b0), and the best of both. Only "
        "configurations whose every repetition reaches the target within the workload's epoch "
        "budget count. Black ticks are the paper's bars, read off its figure.",
        'figures.show("zeus_fig1", con, OUT)',
    ),
    (
        "Our numbers beside the paper's: the ranges its text quotes (3.0%–31.5% for the power "
        "limit alone, 23.8%–74.7% for both) and every bar of the figure.",
        "print(zeus.savings_report(con))",
    ),
    (
        "Our extension, the same bars on the other three GPUs (the paper shows V100). The "
        "ranges move, the story does not: the batch size is the bigger lever everywhere.",
        'figures.show("zeus_fig1_gpus", con, OUT)',
    ),
    (
        "## Zeus Fig. 2: the energy–time tradeoff\n\n"
        "(a) Every (batch size, power limit) configuration of DeepSpeech2 on V100, placed by its "
        "training time and energy, on the paper's linear axes, with the Pareto front: "
        "configurations that no other beats on both. (b) The front zoomed in, each point "
        "labelled with its batch size and power limit; the ringed ones are on the paper's front.",
        'figures.show("zeus_fig2", con, OUT)',
    ),
    (
        "Our front beside the paper's (the labels of its zoomed panel):",
        "print(zeus.pareto_report(con))",
    ),
    (
        "Our extension: the tradeoff of every workload (log axes, colour = batch size).",
        'figures.show("zeus_fig2_workloads", con, OUT)',
    ),
    (
        "## The evaluation, replayed: converged energy and time\n\n"
        "`mltraces.simulate` replays each workload as a recurring job on V100 the way the "
        "paper's artifact does (η = 0.5, β = 2, 2·|B|·|P| recurrences, seed 1 as its "
        "`run_single.py`; seeds 1–10 for the spread). Zeus explores batch sizes with pruning "
        "and then Thompson sampling and profiles power limits just in time; Grid Search "
        "(not in the artifact; written from the paper's description) tries every "
        "configuration once, then keeps the cheapest; Default always runs b0 at the maximum "
        "power limit. Results are cached beside the trace tables, so re-running the notebook "
        "does not simulate again.\n\n"
        "Energy (a) and time (b) to accuracy of the last five recurrences, relative to Default "
        "(below the dashed line is better); bars are seed 1, whiskers the range over seeds.",
        'figures.show("zeus_converged", con, OUT)',
    ),
    (
        "The abstract's headline beside ours. Against Default over the last five recurrences of "
        "seed 1, the energy saved is the paper's 15.3%–75.8% to the digit; the largest time "
        "saving there is 62.9% where the paper says 60.6% (no baseline, window or seed set we "
        "tried gives 60.6%). Taken literally, the largest batch size at the maximum power "
        "limit cannot be the abstract's baseline: Zeus converges to NeuMF's largest batch "
        "size, so NeuMF saves at most 8.4% against it, below the paper's 15.3% low end.",
        "print(zeus.headline_report(con))",
    ),
    (
        "## Cumulative energy and time over the recurrences\n\n"
        "Zeus' curves bend below Default's after a few recurrences; Grid Search pays for its "
        "exhaustive exploration first (mean over seeds, band = min–max).",
        'figures.show("zeus_cumulative", con, OUT)',
    ),
    (
        "Cumulative regret: how much more cost than Oracle (the configuration with the lowest "
        "expected cost, known in advance) each policy has paid so far. A curve that flattens "
        "has stopped paying for exploration.",
        'figures.show("zeus_regret", con, OUT)',
    ),
    (
        "## Zeus' search path\n\n"
        "The batch size of every run Zeus makes (seed 1), coloured by the power limit its "
        "just-in-time profiling chose; crosses are runs stopped early or that failed, the "
        "dashed line is Oracle's batch size. Pruning sweeps down and up from b0 twice, then "
        "Thompson sampling settles.",
        'figures.show("zeus_search_path", con, OUT)',
    ),
    (
        "## Sensitivity to η and β\n\n"
        "Top: η weighs energy against time in the cost; raising it lowers Zeus' ETA and raises "
        "its TTA. Bottom: β is the early-stopping threshold (a multiple of the best cost so "
        "far); without it (β = ∞, drawn past the finite values) a bad exploration run can cost "
        "many times Default.",
        'figures.show("zeus_sensitivity", con, OUT)',
    ),
    (
        "## The other GPUs\n\n"
        "The converged figure on A40, RTX6000 and P100, whose traces the artifact also ships.",
        'figures.show("zeus_other_gpus", con, OUT)',
    ),
    (
        "## Recurring jobs from the Alibaba trace\n\n"
        "Groups of recurring jobs from Alibaba's GPU cluster, mapped to the six workloads, "
        "replayed with their real arrival times (runs overlap; results arrive when runs end), "
        "Zeus against Default. Needs `zeus/alibaba_groups.csv.xz` (`mltraces fetch zeus`); "
        "skipped otherwise.",
        'figures.show("zeus_alibaba", con, OUT)',
    ),
]
