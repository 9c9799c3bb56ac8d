"""`mltraces info`: a source's data card, or a table's schema."""

from __future__ import annotations

import argparse
import textwrap

from mltraces.commands.common import add_table_options


def configure(parser: argparse.ArgumentParser) -> None:
    from mltraces.registry import all_sources

    parser.add_argument("name", nargs="?", help=f"a source ({', '.join(all_sources())}) or a "
                        "table (SOURCE.TABLE; `mltraces tables` lists them)")
    add_table_options(parser)


def format_source(name: str) -> str:
    """The data card of one source as plain text."""
    from mltraces.registry import get_source

    source = get_source(name)
    lines = [
        f"{source.title}",
        f"name:     {source.name}",
        f"homepage: {source.homepage}",
        f"license:  {source.license}" + (f" ({source.license_note})"
                                          if source.license_note else ""),
        "pins:     " + ", ".join(f"{k} {v}" for k, v in source.pins.items()),
        f"files:    {len(source.files)}",
        "",
        *textwrap.wrap(source.description, 88, break_on_hyphens=False, break_long_words=False),
        "",
        "Known anomalies:",
        *(
            textwrap.fill(a, 88, initial_indent="  - ", subsequent_indent="    ",
                          break_on_hyphens=False, break_long_words=False)
            for a in source.anomalies
        ),
        "",
        "Cite as:",
        textwrap.indent(source.citation, "  "),
    ]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from mltraces.names import canonical
    from mltraces.registry import all_sources

    if args.name is None:
        from mltraces.commands.list_files import say_broken

        for source in all_sources().values():
            print(format_source(source.name))
            print()
        say_broken()
        return 0
    name = canonical(args.name)
    if name in all_sources():
        print(format_source(name))
        return 0
    if "." in name:
        from mltraces.catalog import describe_table
        from mltraces.commands.common import command_line_local

        print(describe_table(name, local=command_line_local(args)))
        return 0
    from mltraces.catalog.selection import raise_if_broken

    raise_if_broken(name)
    raise KeyError(
        f"unknown source or table {args.name!r}; sources: "
        f"{', '.join(all_sources())}; tables: see `mltraces tables`"
    )
