"""The LLM-serving notebook's ServeGen cells, read by ``notebooks/make_notebooks.py``."""

NOTEBOOK = "llm_serving.ipynb"
ORDER = 4
MODULES = {"servegen": "figures"}
INTRO = (
    "## ServeGen (arXiv 2505.09999): per-client workloads\n\n"
    "ServeGen releases descriptions, not logs: per client of a model service, 600-s windows "
    "of request rate and arrival distribution, and length tables. `mltraces.sources."
    "servegen.generator` samples request traces from them."
)
CELLS = [
    (
        "### Per-client request rates (our own analysis)\n\n"
        "How the DeepSeek-R1 and Qwen-VL image services' load splits over their clients "
        "during the day, and each client's mean rate ranked.",
        'figures.show("servegen_client_rates", con, OUT)',
    ),
    (
        "How concentrated each service's load is:",
        "data = figures.frame(\"servegen_client_rates\", con)\n"
        "for service in servegen.SERVICES:\n"
        "    print(servegen.shares_text(data, service).replace(\"\\n\", \" \"))",
    ),
]
