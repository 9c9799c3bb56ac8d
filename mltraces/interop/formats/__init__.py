"""The simulators' input formats, one module each (see :mod:`.base` for what one declares)."""

from __future__ import annotations

from mltraces.errors import MltracesError
from mltraces.interop.formats import elasticflow, gavel, philly, pollux, pollux_trace, tiresias
from mltraces.interop.formats.base import Format

__all__ = ["FORMATS", "Format", "get_format"]

FORMATS: dict[str, Format] = {m.FORMAT.name: m.FORMAT for m in (
    elasticflow, tiresias, pollux, pollux_trace, gavel, philly)}


def get_format(name: str) -> Format:
    """The format called ``name``; the error lists them."""
    if name not in FORMATS:
        raise MltracesError(f"unknown format {name!r}; formats: {', '.join(FORMATS)}")
    return FORMATS[name]
