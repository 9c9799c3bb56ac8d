"""ServeGen's probability tables, parsed as data: bounded, checked as text, never evaluated.

``chunk-N-dataset.json`` maps each 6-hour window start to tables of request sizes,
each table a Python dict literal stored as a JSON string::

    {"0": {"input_tokens": "{45: 0.0096, 46: 0.0117}", "reason_ratio": "{0.0: 0.0, ...}"}}

ServeGen loads them with ``eval``; ``ast.literal_eval`` would evaluate them too (and
recurse on nested literals). Here a file is bounded before it is parsed, and each table
is matched as text against the one shape it may have, then converted by numpy:

- the file: at most :data:`MAX_BYTES`, nested at most :data:`MAX_DEPTH` levels (a
  scan of its brackets outside strings, before ``json`` sees it), an object of window
  starts (whole seconds) to objects of table strings;
- a table: ``{}`` or ``{K: V, K: V, ...}`` exactly as Python prints a dict, ``K`` a
  whole number of at most 9 digits (token counts) or, for ratios, a decimal number,
  ``V`` a decimal number; probabilities finite in [0, 1], ratios in [0, 1].

Anything else is refused in one line naming the file, the window and the table.

>>> parse_table("{45: 0.25, 46: 0.75}", whole=True)
(array([45., 46.]), array([0.25, 0.75]))
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import NamedTuple

import numpy as np

__all__ = ["MAX_BYTES", "MAX_DEPTH", "RATIO_TABLES", "TableError", "Window", "parse_table",
           "read_dataset"]

#: largest dataset.json read (the largest published one here is 4.1 MB; 55 language ones
#: are over 4 MiB with their sizes unpublished)
MAX_BYTES = 64 << 20
#: {window: {table: "string"}}: two levels of objects, nothing deeper
MAX_DEPTH = 2
#: tables whose keys are ratios in [0, 1] rather than whole numbers
RATIO_TABLES = frozenset({"reason_ratio"})

_DECIMAL = r"\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"
_WHOLE = r"\d{1,9}"
_WHOLE_TABLE = re.compile(rf"\{{(?:{_WHOLE}: {_DECIMAL}(?:, {_WHOLE}: {_DECIMAL})*)?\}}")
_RATIO_TABLE = re.compile(rf"\{{(?:{_DECIMAL}: {_DECIMAL}(?:, {_DECIMAL}: {_DECIMAL})*)?\}}")
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_WINDOW = re.compile(r"\d{1,7}")


class TableError(ValueError):
    """A dataset file or one of its tables is not what ServeGen publishes (one line)."""


class Window(NamedTuple):
    """One window's tables: window start (s) -> table name -> (values, probabilities)."""

    start: int
    tables: dict[str, tuple[np.ndarray, np.ndarray]]


def parse_table(text: str, *, whole: bool) -> tuple[np.ndarray, np.ndarray]:
    """(values, probabilities) of one table string; :class:`TableError` for anything else."""
    pattern = _WHOLE_TABLE if whole else _RATIO_TABLE
    if not isinstance(text, str) or pattern.fullmatch(text) is None:
        shown = repr(text)[:60] + ("..." if len(repr(text)) > 60 else "")
        kind = "whole numbers" if whole else "decimal numbers"
        raise TableError(f"is not a flat table of {kind}: probabilities ({shown})")
    if text == "{}":
        return np.empty(0), np.empty(0)
    numbers = np.array(text[1:-1].replace(": ", ", ").split(", "), dtype=np.float64)
    values, probabilities = numbers[0::2], numbers[1::2]
    if not (np.isfinite(probabilities).all() and (probabilities <= 1.0).all()):
        raise TableError("holds a probability above 1 or not finite")
    if not np.isfinite(values).all() or (not whole and (values > 1.0).any()):
        raise TableError("holds a ratio above 1 or a value not finite")
    return values, probabilities


_STEP = np.zeros(256, dtype=np.int32)
_STEP[[ord("{"), ord("[")]], _STEP[[ord("}"), ord("]")]] = 1, -1
_CHUNK = 1 << 20


def _outside_strings(data: bytes) -> bytes:
    """The bytes of ``data`` outside its JSON strings (their brackets are text, not nesting)."""
    if b"\\" not in data:  # no escapes: every other quote opens a string
        return b"".join(data.split(b'"')[0::2])
    return _STRING.sub(b'""', data)


def _depth(data: bytes, limit: int = MAX_DEPTH) -> int:
    """How deep objects and arrays nest outside strings, counted a chunk at a time and
    stopping at the first chunk that goes past ``limit`` (bounded memory, no parsing)."""
    bare = np.frombuffer(_outside_strings(data), dtype=np.uint8)
    depth = deepest = 0
    for start in range(0, bare.size, _CHUNK):
        levels = np.cumsum(_STEP[bare[start:start + _CHUNK]], dtype=np.int64) + depth
        deepest = max(deepest, int(levels.max()))
        if deepest > limit:
            return deepest
        depth = int(levels[-1])
    return deepest


def _load(path: Path, label: str) -> dict:
    size = path.stat().st_size
    if size > MAX_BYTES:
        raise TableError(f"{label}: {size:,} bytes, more than any ServeGen dataset.json "
                         f"({MAX_BYTES:,} allowed); refusing it unread")
    data = path.read_bytes()
    depth = _depth(data)
    if depth > MAX_DEPTH:
        raise TableError(f"{label}: nested more than {MAX_DEPTH} levels deep (at least "
                         f"{depth:,}) where ServeGen's files nest {MAX_DEPTH} "
                         "({window: {table: \"...\"}}); refusing it unparsed")
    try:
        found = json.loads(data)
    except (ValueError, RecursionError) as error:
        raise TableError(f"{label}: not JSON ({str(error)[:80]})") from None
    if not isinstance(found, dict):
        raise TableError(f"{label}: not a JSON object of windows")
    return found


def read_dataset(path: Path, label: str, names: frozenset[str]) -> list[Window]:
    """Every window of one ``chunk-N-dataset.json``; ``names`` are the tables it may hold."""
    windows = []
    for start, tables in _load(path, label).items():
        if not _WINDOW.fullmatch(start) or not isinstance(tables, dict):
            raise TableError(f"{label}: window {start[:40]!r} is not a start in whole seconds "
                             "holding an object of tables")
        parsed = {}
        for name, text in tables.items():
            if name not in names:
                raise TableError(f"{label}, window {start}: unknown table {name[:40]!r} "
                                 f"(known: {', '.join(sorted(names))})")
            try:
                parsed[name] = parse_table(text, whole=name not in RATIO_TABLES)
            except TableError as error:
                raise TableError(f"{label}, window {start}, table {name}: {error}") from None
        windows.append(Window(int(start), parsed))
    return windows
