"""The LLM-serving notebook's Mooncake (FAST'25) cells, read by ``notebooks/make_notebooks.py``."""

NOTEBOOK = "llm_serving.ipynb"
ORDER = 2
MODULES = {"mooncake": "figures"}
INTRO = (
    "## Mooncake (FAST'25): prefix KV-cache reuse\n\n"
    "Kimi's traces give each request's 512-token prefix block ids: equal ids are a KV-cache "
    "prefix another request computed before. `mltraces cache` and "
    "`mltraces.workloads.requests` replay them through a cache of N blocks under LRU, LFU, "
    "FIFO and Belady's optimal (`mltraces.prefixcache`)."
)
CELLS = [
    (
        "### Mooncake Table 2: the workloads\n\n"
        "Requests and average lengths reproduce the paper's table exactly (the tool & agent "
        "trace is not obtainable here); the cache ratio is ours from a cache that never "
        "evicts.",
        'figures.show("mooncake_table2", con, OUT)',
    ),
    (
        "The same as text:",
        "print(mooncake.table2_report(con))",
    ),
    (
        "### Mooncake Fig. 9: hit rate against cache capacity\n\n"
        "The paper's curve from the sequence of requests alone, per eviction policy (the "
        "paper does not say which it used). At its 3M-token local cache LRU reaches about "
        "the share of the maximum the paper reads off its figure.",
        'figures.show("mooncake_fig9", con, OUT)',
    ),
    (
        "The same replay from the shell, all four policies at ten capacities "
        "(`mltraces cache --trace mooncake/conversation --capacity 1000,2000,...`), or from "
        "Python:",
        "from mltraces.workloads import requests\n"
        "trace = requests.read_blocks(con, \"mooncake/conversation\")\n"
        "result = requests.replay_blocks(trace, requests.plan([1000, 8000, 64000], \"all\"))\n"
        "result.frame()[[\"policy\", \"capacity\", \"token_hit_ratio\"]]",
    ),
]
