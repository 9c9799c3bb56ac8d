"""Reference pages drawn from the code: the CLI from its argparse parser, the API from the
docstrings (mkdocstrings directives), the settings from :data:`mltraces.config.SETTINGS`."""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from contextlib import contextmanager

from mltraces.docs import markdown as md

#: the packages the API reference documents in full, one page each
API_PACKAGES = ("mltraces.simulation", "mltraces.scheduling", "mltraces.prefixcache",
                "mltraces.interop")


@contextmanager
def _columns(width: int) -> Iterator[None]:
    """argparse wraps help to ``$COLUMNS``: fixed while the page is written, so it is stable."""
    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(width)
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = saved


def verbs(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The parser's verbs (subcommands) by name."""
    for action in parser._actions:  # argparse keeps subparsers only here
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def cli_page() -> str:
    """Every verb's ``--help``, as the parser prints it (``build_parser(every_verb=True)``)."""
    from mltraces.cli import build_parser

    with _columns(100):
        parser = build_parser(None, every_verb=True)
        found = verbs(parser)
        parts = ["# Command line\n",
                 "Generated from the `mltraces` command's own parser: what `mltraces VERB --help` "
                 "prints. `python -m mltraces` is the same command.\n",
                 md.code(parser.format_help(), "text")]
        parts += ["| verb | what it does |\n|---|---|\n" + "".join(
            f"| [{name}](#{md.anchor('mltraces ' + name)}) | "
            f"{md.cell(sub.description or '')} |\n" for name, sub in found.items())]
        for name, sub in found.items():
            parts += [f"## mltraces {name}\n", md.code(sub.format_help(), "text")]
    return "\n".join(parts)


def api_page(package: str) -> str:
    """One package's reference, rendered by mkdocstrings from its docstrings."""
    return (f"# `{package}`\n\n::: {package}\n    options:\n      show_submodules: false\n"
            f"      members_order: source\n")


def api_root_page() -> str:
    """``import mltraces``: the package's docstring and each public name it serves lazily."""
    import importlib

    import mltraces

    parts = ["# `mltraces`\n", "::: mltraces\n    options:\n      members: false\n",
             "The names `import mltraces` serves (each loaded on first use):\n"]
    for name, target in mltraces._LAZY.items():
        module, _, attribute = target.partition(":")
        if not attribute:
            parts.append(f"- `mltraces.{name}`: the module `{module}`\n")
            continue
        value = getattr(importlib.import_module(module), attribute)
        where = f"{value.__module__}.{value.__qualname__}"  # where griffe finds it
        parts.append(f"## `mltraces.{name}`\n\n::: {where}\n    options:\n"
                     f"      show_root_heading: false\n")
    return "\n".join(parts)


def settings_table() -> str:
    """The environment variables, from :data:`mltraces.config.SETTINGS`."""
    from mltraces.config import SETTINGS

    return md.table(["variable", "meaning"],
                    [[md.inline(s.name), s.meaning] for s in SETTINGS])


def api_pages() -> dict[str, str]:
    """Every API page by path."""
    pages = {"reference/api/mltraces.md": api_root_page()}
    pages.update({f"reference/api/{p}.md": api_page(p) for p in API_PACKAGES})
    return pages
