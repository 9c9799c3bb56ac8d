"""The LLM-serving notebook's BurstGPT (KDD'25) cells, read by ``notebooks/make_notebooks.py``."""

NOTEBOOK = "llm_serving.ipynb"
ORDER = 3
MODULES = {"burstgpt": "figures"}
INTRO = (
    "## BurstGPT (KDD'25): ChatGPT and GPT-4 requests\n\n"
    "Two months of a campus service's requests to ChatGPT and GPT-4 (`BurstGPT_1.csv`), "
    "conversation and API logs. Its clock counts seconds from 00:00 of the first day in "
    "UTC+8. The two figures redraw the repository README's own overview (its figure "
    "numbers, not the paper's)."
)
CELLS = [
    (
        "### Daily periodicity (the README's Figure 2)\n\n"
        "Requests in each hour of the day, one box per hour over the days.",
        'figures.show("burstgpt_daily", con, OUT)',
    ),
    (
        "### Request and response tokens (the README's Figure 4)\n\n"
        "For conversation requests: the response tokens' median, mean and 5–95% band against "
        "the request tokens.",
        'figures.show("burstgpt_tokens", con, OUT)',
    ),
]
