"""CLI verbs, one module each.

Every verb module defines ``configure(parser)`` and
``run(args) -> int``; :mod:`mltraces.cli` maps verb names to modules and imports
only the one that is called, so ``mltraces --help`` does not import DuckDB.
"""

VERBS: dict[str, str] = {
    "list": "mltraces.commands.list_files",
    "info": "mltraces.commands.info",
    "fetch": "mltraces.commands.fetch",
    "verify": "mltraces.commands.verify",
    "pin": "mltraces.commands.pin",
    "cache-path": "mltraces.commands.cache_path",
    "tables": "mltraces.commands.tables",
    "sql": "mltraces.commands.sql",
    "validate": "mltraces.commands.validate",
    "simulate": "mltraces.commands.simulate",
    "schedule": "mltraces.commands.schedule",
    "figures": "mltraces.commands.figures",
    "cache": "mltraces.commands.cache",
    "export": "mltraces.commands.export",
    "import": "mltraces.commands.import_workload",
    "completion": "mltraces.commands.completion",
    "docs": "mltraces.docs.command",  # the documentation site: a part above the commands
}

# One-line help per verb, kept here so the top-level --help imports no verb module.
SUMMARIES: dict[str, str] = {
    "list": "list sources and files: URL pin, size, hash kind, cached or not",
    "info": "describe a source (license, citation, anomalies) or a table (schema, rows)",
    "fetch": "download and verify files: all, a source, or file ids",
    "verify": "re-hash every cached file against the registry",
    "pin": "print a ready source.json files entry (size, sha256, git blob) for a URL or file",
    "cache-path": "print the cache directory",
    "tables": "list catalog tables",
    "sql": "run a SQL query against the catalog",
    "validate": "check every schema constraint; exit 1 on violations",
    "simulate": "replay recurring training jobs on the Zeus traces",
    "schedule": "replay job traces through cluster schedulers (ElasticFlow Fig. 8(b))",
    "figures": "draw the papers' figures (PNG + PDF)",
    "cache": "replay a request trace's prefix blocks through a KV cache (LRU, LFU, FIFO, "
             "Belady) at several capacities",
    "export": "write a job trace in another simulator's format (ElasticFlow, Tiresias, Pollux, "
              "Gavel, Philly JSON)",
    "import": "make another simulator's workload file a source (mltraces.jobs, replays)",
    "completion": "print a shell completion script (bash, zsh, tcsh)",
    "docs": "build the documentation site into a folder (needs the docs extra)",
}
