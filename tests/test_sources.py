"""Every source folder against the real files: its tables hold the rows its card promises."""

from __future__ import annotations

import pytest
from catalog_fixtures import REAL_TABLES, loopback_only, real_catalog, scalar  # noqa: F401

from mltraces.registry import all_sources
from mltraces.schema import all_schemas, get_schema

EXPECTED = {t: n for s in all_sources().values() for t, n in s.expected_rows.items()}


def test_every_expected_count_names_a_table() -> None:
    assert set(EXPECTED) <= set(all_schemas())


@pytest.mark.parametrize("table", [t for t in REAL_TABLES if t in EXPECTED])
def test_table_has_the_expected_rows(real_catalog, table: str) -> None:  # noqa: F811
    count = scalar(real_catalog.con, f"SELECT count(*) FROM {get_schema(table).qualified}")
    assert count == EXPECTED[table]


def test_every_real_table_states_its_row_count() -> None:
    assert set(REAL_TABLES) <= set(EXPECTED)
