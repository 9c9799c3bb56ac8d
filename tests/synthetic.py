"""Helpers for tests that edit synthetic files.

The synthetic files themselves are written by the source folders' own
``synthetic.py`` (found by :mod:`mltraces.synthetic`); the AcmeTrace job-trace
writers are re-exported here for the tests that edit those traces line by line.
"""

from __future__ import annotations

from mltraces.datasets.acme.synthetic import (  # noqa: F401 - re-exported for the tests
    KALOS_COLUMNS,
    SEREN_COLUMNS,
    write_kalos_trace,
    write_seren_trace,
)
from mltraces.datasets.zeus.synthetic import write_alibaba_groups_xz  # noqa: F401


def edit_cell(line: str, column: str, value: str) -> str:
    """One Seren CSV line with ``column`` set to ``value`` (a bad value for a validation test)."""
    cells = line.split(",")
    cells[SEREN_COLUMNS.index(column)] = value
    return ",".join(cells)


def single_finding(report, rule: str) -> dict:
    """The one row of a validation report for ``rule``, as a dict (fails if not exactly one)."""
    found = report[report.rule == rule]
    assert len(found) == 1, f"no single {rule!r} row in\n{report[['rule', 'failing_rows']]}"
    return found.iloc[0].to_dict()
