"""The LLM-serving notebook's Splitwise (ISCA'24) cells, read by ``notebooks/make_notebooks.py``.

Plain data (see the generator's docstring); several papers share ``llm_serving.ipynb``,
in their ``ORDER``.
"""

NOTEBOOK = "llm_serving.ipynb"
ORDER = 1
MODULES = {"splitwise": "figures"}
INTRO = (
    "# LLM serving: request traces, prefix caches and the papers behind them\n\n"
    "Per-request logs of LLM inference services, in one view (`mltraces.requests`: arrival, "
    "input and output tokens, model, kind, prefix block ids where given), redrawn beside "
    "the numbers their papers publish: Azure's 2023 traces (Splitwise, ISCA'24), Kimi's "
    "Mooncake traces (FAST'25) replayed through a prefix KV cache, BurstGPT (KDD'25) and "
    "ServeGen's per-client descriptions. Each figure says whether it reproduces a numbered "
    "figure or table of its paper or is our own analysis."
)
CELLS = [
    (
        "## Azure LLM inference 2023 (Splitwise): token lengths\n\n"
        "An hour of Azure's coding and conversation services. Coding sends long prompts and "
        "gets a few tokens back; conversation the reverse. The medians quoted for the paper "
        "(circles) are shown as *unconfirmed*: its text could not be read here to check them "
        "(`published.json` says so).",
        'figures.show("splitwise_tokens", con, OUT)',
    ),
    (
        "Our medians beside the quoted ones (prompt / generated tokens):",
        "print(splitwise.medians_report(con))",
    ),
    (
        "The request rate over the hour, per minute (our own analysis): conversation is "
        "steady, coding comes in bursts.",
        'figures.show("splitwise_rate", con, OUT)',
    ),
]
