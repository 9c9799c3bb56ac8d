"""A table read from a first-use pinned file (no publisher hash: Azure's 2024 weeks) is
recalled warm like any verified table, while its pin record stands."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import pytest

from mltraces import registry
from mltraces.catalog import build, connect, materialize, warm
from mltraces.download import firstuse
from mltraces.schema import get_schema
from mltraces.sources.azure_llm import synthetic

TABLE = "azure_llm.code_2024"


@pytest.fixture
def fetched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The week file in a folder mirror, fetched and pinned by its first download."""
    [file_id] = get_schema(TABLE).file_ids
    url = urlsplit(registry.get_file(file_id).url)
    target = tmp_path / "mirror" / url.netloc / url.path.lstrip("/")
    target.parent.mkdir(parents=True)
    synthetic.write_code_week(target, 50, seed=3)
    monkeypatch.setenv("MLTRACES_MIRROR", str(tmp_path / "mirror"))
    connect(tables=[TABLE]).close()
    return firstuse.record_path(registry.get_file(file_id))


def test_a_first_use_pinned_table_is_recalled_warm(fetched, monkeypatch) -> None:
    schema = get_schema(TABLE)
    recalled = warm.recall(schema)
    assert recalled is not None and recalled == materialize(schema, fetch=False)
    assert recalled.origin == "upstream, first-use pinned"

    def refuse(*args: object, **kwargs: object) -> None:
        pytest.fail("the full build path ran")

    monkeypatch.setattr(build, "materialize", refuse)
    con = connect(tables=[TABLE])
    try:
        assert con.execute(f"SELECT count(*) FROM {TABLE}").fetchone() == (50,)
    finally:
        con.close()


def test_a_changed_pin_record_is_not_recalled(fetched) -> None:
    schema = get_schema(TABLE)
    assert warm.recall(schema) is not None
    fetched.write_text(fetched.read_text())  # the same text, written again: another file
    assert warm.recall(schema) is None
