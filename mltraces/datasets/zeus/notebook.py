"""The Zeus (NSDI'23) notebook's cells, read by ``notebooks/make_notebooks.py``.

Plain data: the notebook they go into, where they go in it (``ORDER``), its
introduction, and (markdown, code) pairs. See the generator's docstring.
"""

NOTEBOOK = "zeus_nsdi23.ipynb"
ORDER = 0
INTRO = (
    "# Zeus (NSDI'23): GPU energy of DNN training, redrawn from the traces\n\n"
    "Zeus shows that the batch size and the GPU power limit of a recurring training job "
    "trade energy against time, and that an online optimizer can find a good pair while the "
    "job keeps recurring. The released traces record, for six workloads, how many epochs "
    "each batch size needs to reach the target metric (`zeus.train`, several repetitions) "
    "and how long an epoch takes and how much power it draws at every power limit on four "
    "GPUs (`zeus.power`). Energy to accuracy (ETA) is epochs × time per epoch × average "
    "power; time to accuracy (TTA) leaves out the power.\n\n"
    "Figures 1 and 2 reproduce the paper's; the simulator figures after them are our own "
    "analysis with `mltraces.simulate`, not figures of the paper."
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
        "## Our simulations (not paper figures)\n\n"
        "`mltraces.simulate` replays each workload as a recurring job on V100 (η = 0.5, "
        "β = 2, 2·|B|·|P| recurrences, 10 seeds). Zeus explores batch sizes with pruning and "
        "then Thompson sampling and profiles power limits just in time; Grid Search tries every "
        "configuration once; Default always runs b0 at max power. Results are cached beside "
        "the trace tables, so re-running the notebook does not simulate again.\n\n"
        "Cumulative ETA and TTA of DeepSpeech2: Zeus' curve bends below Default's after a few "
        "recurrences; Grid Search pays for its exhaustive exploration first.",
        'figures.show("zeus_cumulative", con, OUT)',
    ),
    (
        "Once the optimizers have settled: ETA and TTA summed over the last five recurrences "
        "of every seed, relative to Default (below the dashed line is better). Zeus should sit "
        "close to Oracle, the configuration with the lowest expected cost known in advance.",
        'figures.show("zeus_final", con, OUT)',
    ),
    (
        "Cumulative regret: how much more cost than Oracle each policy has paid so far. A "
        "curve that flattens has stopped paying for exploration.",
        'figures.show("zeus_regret", con, OUT)',
    ),
    (
        "Sensitivity. Top: η weighs energy against time in the cost; raising it lowers Zeus' "
        "ETA and raises its TTA. Bottom: β is the early-stopping threshold (a multiple of the "
        "best cost so far); without it (β = ∞, drawn past the finite values) a bad exploration "
        "run can cost many times Default.",
        'figures.show("zeus_sensitivity", con, OUT)',
    ),
    (
        "## Recurring jobs from the Alibaba trace (our simulation)\n\n"
        "Groups of recurring jobs from Alibaba's GPU cluster, mapped to the six workloads, "
        "replayed with their real arrival times (runs overlap; results arrive when runs end). "
        "Needs `zeus/alibaba_groups.csv.xz` (`mltraces fetch zeus`); skipped otherwise.",
        'figures.show("zeus_alibaba", con, OUT)',
    ),
]
