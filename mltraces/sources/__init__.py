"""One folder per trace release, found by scanning (see :mod:`mltraces.registry`).

A folder ``<name>/`` is the source as data: ``source.json`` (files with URL, size
and hashes; SPDX licence; pins; anomalies; expected row counts), ``citation.bib``,
optionally ``jobs.json`` (how its job tables map onto ``mltraces.jobs``), and the
code only its format needs: ``readers.py`` (catalog readers registered by name) and
``synthetic.py`` (files in the exact upstream format, for tests). Its table schemas
live in ``schemas/<name>/`` at the top of the project. A source imports no engine,
figure, paper or command (``tests/test_layers.py`` holds that), so adding a trace is
adding this folder and its schemas, and nothing else changes.

The package is also callable: ``mltraces.sources()`` is every known source by name
(:func:`mltraces.registry.all_sources`), the public function users already call.

>>> import mltraces
>>> "zeus" in mltraces.sources()
True
"""

from __future__ import annotations

import sys
import types
from typing import Any


class _Sources(types.ModuleType):
    """This package, callable as :func:`mltraces.registry.all_sources`."""

    def __call__(self) -> dict[str, Any]:
        """Every known source by name (shipped ones, then the user's own folders)."""
        from mltraces.registry import all_sources

        return all_sources()


sys.modules[__name__].__class__ = _Sources
