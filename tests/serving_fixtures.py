"""A catalog of the LLM-serving traces the figures draw, built once per session.

Azure 2023, Mooncake's conversation and synthetic traces and ServeGen's DeepSeek-R1 and
Qwen-VL image windows are the real files, fetched from the loopback mirror of
../shared/upstream; BurstGPT_1 and Mooncake's tool & agent trace (absent here) are
synthetic files in their exact formats (their sources' ``synthetic.py``), given as local
files as a user's own copies would be. Import the fixture where it is used::

    from serving_fixtures import serving_con, serving_files  # noqa: F401
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

#: the sources whose figures this catalog serves
SERVING_SOURCES = ("azure_llm", "mooncake", "burstgpt", "servegen")
#: the tables given as synthetic files, and their rows
SYNTHETIC = {"burstgpt.lfs_1": 6000, "mooncake.toolagent": 800}


@pytest.fixture(scope="session")
def serving_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from mltraces.schema import get_schema
    from mltraces.synthetic import write_tables

    folder = tmp_path_factory.mktemp("serving-synthetic")
    rows = {f: n for table, n in SYNTHETIC.items() for f in get_schema(table).file_ids}
    return write_tables(folder, list(SYNTHETIC), seed=7, rows=rows)


@pytest.fixture(scope="session")
def serving_con(upstream_server: str, serving_files: dict[str, Path],
                tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    import mltraces
    from mltraces import figures

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MLTRACES_CACHE", str(tmp_path_factory.mktemp("serving-cache")))
        patch.setenv("MLTRACES_MIRROR", upstream_server)
        patch.delenv("MLTRACES_LOCAL", raising=False)
        con = mltraces.connect(figures.tables_for(list(SERVING_SOURCES)),
                               local={k: str(v) for k, v in serving_files.items()}, strict=True)
    yield con
    con.close()
