"""`mltraces figures`: draw the papers' figures as PNG and PDF."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from mltraces.commands.common import add_table_options, local_overrides, open_catalog
from mltraces.figures import figure_sources  # the package's top imports only the stdlib


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "sources",
        nargs="*",
        metavar="SOURCE",
        help=f"sources to draw: {', '.join(figure_sources())} (default: all)",
    )
    parser.add_argument(
        "-o", "--output", default="figures", metavar="DIR", help="output folder (default: figures)"
    )
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="NAME",
        help="draw only this figure (repeatable; see --list)",
    )
    parser.add_argument(
        "--list", action="store_true", help="list the figures and the tables they need, then exit"
    )
    parser.add_argument(
        "-j", "--processes", type=int, default=None, metavar="N",
        help="render with N worker processes (default: one per core)",
    )
    parser.add_argument(
        "--style", choices=("default", "paper"), default="default",
        help="default: titled with where each figure comes from, PNG + PDF; paper: no such "
             "title, column or page width, PDF + SVG",
    )
    parser.add_argument(
        "--redraw", action="store_true",
        help="draw every figure, even those whose data and code are unchanged since the last run",
    )
    add_table_options(parser)


def run(args: argparse.Namespace) -> int:
    from mltraces import figures

    known = figure_sources()
    sources = list(dict.fromkeys(args.sources)) or known
    unknown = [s for s in sources if s not in known]
    if unknown:
        hint = (f"{unknown[0]!r} is a figure: draw it with --only {unknown[0]}"
                if unknown[0] in figures.registry() else
                f"unknown source {unknown[0]!r}; choose from {', '.join(known)} "
                "(or a figure with --only NAME; --list shows them)")
        print(f"mltraces figures: error: {hint}", file=sys.stderr)
        return 2
    specs = figures.registry(sources)
    if args.only:
        specs = {name: figures.get(name) for name in args.only}
        stray = [n for n, spec in specs.items() if args.sources and spec.source not in sources]
        if stray:
            print(
                f"mltraces figures: error: --only {stray[0]} is not a figure of "
                f"{', '.join(sources)}; drop the source names or add "
                f"{specs[stray[0]].source}",
                file=sys.stderr,
            )
            return 2
    if args.list:
        for spec in specs.values():
            needs = ", ".join(spec.tables)
            if spec.any_of:
                needs += (", " if needs else "") + "one of " + " / ".join(spec.any_of)
            print(f"{spec.name:26} {spec.reproduces:34} {spec.title}  [{needs}]")
        return 0
    from mltraces.outputs import prepare_folder

    prepare_folder(args.output)  # before any work: a folder that cannot take files loses none
    tables = sorted({t for spec in specs.values() for t in spec.inputs})  # nothing more
    local = [t for t in local_overrides(args) if t in tables]
    with _said_at_the_end():  # a table that cannot be had is told once, after the figures
        con = open_catalog(args, tables)
    try:
        missing = _unavailable(con, tables, local)
        broken = {t: p for t in local if (p := figures.table_problem(con, t))}
        results = figures.render_all(
            con, output_dir=args.output, names=list(specs), processes=args.processes,
            local=local, redraw=args.redraw, style=args.style,
        )
    finally:
        con.close()
    code = _report(args, results, broken)
    if missing:
        print(_unavailable_text(missing), file=sys.stderr)
    return code


@contextmanager
def _said_at_the_end() -> Iterator[None]:
    """Hold back the catalog's line per unavailable table while it is set up."""
    import logging

    from mltraces.logs import get_logger

    logger = get_logger("mltraces.catalog.connection")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def _unavailable(con: Any, tables: list[str], local: list[str]) -> dict[str, str]:
    """The tables the figures need that cannot be read here, with why (not --local ones)."""
    from mltraces.catalog import read_status

    statuses = read_status(con) or {}
    return {t: str(s.reason) for t, s in sorted(statuses.items())
            if t in tables and t not in local and not s.usable}


def _unavailable_text(missing: dict[str, str]) -> str:
    """One paragraph: which tables, why (the first reason), and how to give them."""
    from mltraces.download.unavailable import ADVICE, short

    first = short(next(iter(missing.values())))
    return (f"unavailable here: {', '.join(missing)} (the figures that need them were skipped; "
            f"{first}{'; and so on' if len(missing) > 1 else ''}): "
            f"{ADVICE.replace('it (', 'them (')}")


def _report(args: argparse.Namespace, results: list, broken: dict[str, str]) -> int:
    """Say what was written, left alone and skipped; 1 when a --local file failed or nothing
    was drawn."""
    drawn = [r for r in results if r.paths]
    written = [r for r in drawn if r.written]
    skipped: dict[str, list[str]] = {}
    for result in results:
        if result.paths and not args.quiet and (result.written or result.data_written):
            files = [*(result.paths if result.written else ()),
                     *((result.data,) if result.data_written else ())]
            others = " ".join(p.suffix for p in files[1:])
            unchanged = "" if result.written else " (the figure itself unchanged)"
            print(f"wrote {files[0]} (+ {others}){unchanged}" if others
                  else f"wrote {files[0]}{unchanged}")
        elif result.skipped:
            skipped.setdefault(result.skipped, []).append(result.name)
    for reason, names in skipped.items():
        print(f"skipped {', '.join(names)}: {reason}", file=sys.stderr)
    if not args.quiet:
        print(f"{len(written)} figures written to {args.output}, {len(drawn) - len(written)} "
              f"already there unchanged, {len(results) - len(drawn)} skipped")
    for table, problem in broken.items():
        print(
            f"mltraces figures: error: the local file given for {table} could not be used: "
            f"{problem}; fix the file or drop --local {table}=... (or its MLTRACES_LOCAL entry)",
            file=sys.stderr,
        )
    if broken:
        return 1
    return 0 if drawn or not results else 1
