"""Small Markdown writers the generated pages share: tables, code blocks, escaping."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any


def cell(value: Any) -> str:
    """One table cell: text on one line, ``|`` escaped, ``None`` as an em dash."""
    if value is None or value == "":
        return "—"
    text = " ".join(str(value).split())
    return text.replace("|", "\\|")


def table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A Markdown table; an empty one says so instead."""
    rows = [list(row) for row in rows]
    if not rows:
        return "*(none)*\n"
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def code(text: str, language: str = "", title: str = "") -> str:
    """A fenced code block (its fence longer than any backtick run inside)."""
    fence = "```"
    while fence in text:
        fence += "`"
    info = language + (f' title="{title}"' if title else "")
    return f"{fence}{info}\n{text.rstrip()}\n{fence}\n"


def inline(text: str) -> str:
    """``text`` as inline code."""
    return f"`{text}`" if "`" not in text else f"`` {text} ``"


def size(value: int | None) -> str:
    """Bytes as a readable size (1,943,846 B -> 1.9 MB)."""
    if value is None:
        return "unpublished"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if value >= scale:
            return f"{value / scale:.1f} {unit}"
    return f"{value} B"


def bullets(items: Iterable[str]) -> str:
    """A bullet list (``*(none)*`` when empty)."""
    items = [" ".join(str(i).split()) for i in items]
    return "\n".join(f"- {i}" for i in items) + "\n" if items else "*(none)*\n"


def value_text(value: Any) -> str:
    """A JSON value in one short line: scalars as they are, the rest as compact JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def flatten(value: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """(dotted key, leaf) pairs of nested objects; lists of scalars stay whole."""
    if isinstance(value, dict):
        pairs: list[tuple[str, Any]] = []
        for key, item in value.items():
            pairs += flatten(item, f"{prefix}.{key}" if prefix else str(key))
        return pairs
    return [(prefix, value)]


def anchor(text: str) -> str:
    """The id mkdocs' ``toc`` extension gives a heading (lower case, words joined by -)."""
    import re

    text = re.sub(r"[^\w\s-]", "", text.lower()).strip()
    return re.sub(r"[\s]+", "-", text)
