"""`mltraces validate [TABLE ...]`: check every schema constraint; exit 1 on violations."""

from __future__ import annotations

import argparse
import sys

from mltraces.commands.common import add_table_options, command_line_local


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("tables", nargs="*", metavar="TABLE",
                        help="tables or sources to check (default: all; tables whose files "
                        "cannot be obtained are then skipped)")
    parser.add_argument("--all", action="store_true", help="also list the rules that pass")
    parser.add_argument("--format", choices=("text", "csv", "json"), default="text")
    add_table_options(parser)


def _count(failing) -> str:
    import pandas as pd

    if pd.isna(failing):
        return "not checked"
    return "ok" if failing == 0 else f"{int(failing):,} failing rows"


def _text(report, show_all: bool) -> str:
    """Per table: a headline, then each rule with findings and its examples."""
    import pandas as pd

    lines = []
    for table, rows in report.groupby("table", sort=True):
        records = rows.to_dict("records")
        found = [r for r in records if pd.isna(r["failing_rows"]) or r["failing_rows"] > 0]
        checked = rows.checked_rows.dropna()
        if not len(checked) and all(pd.isna(r["failing_rows"]) for r in records):
            lines.append(f"{table}: not checked")  # the reason follows
        else:
            size = f"{int(checked.iloc[0]):,} rows, " if len(checked) else ""
            lines.append(f"{table}: {size}{len(records)} rules, {len(found)} with findings")
        for record in records if show_all else found:
            lines.append(f"  [{record['severity']}] {record['rule']}: "
                         f"{_count(record['failing_rows'])} - {record['description']}")
            lines.extend(f"      {example}" for example in record["examples"])
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from mltraces.catalog.validation import failed, validate

    report = validate(args.tables or None, local=command_line_local(args))
    if args.format == "csv":
        report.assign(examples=report.examples.map(" | ".join)).to_csv(sys.stdout, index=False)
    elif args.format == "json":
        sys.stdout.write(report.to_json(orient="records", lines=True))
    else:
        print(_text(report, args.all))
    if failed(report):
        print("validation failed: see the [error] rules above", file=sys.stderr)
        return 1
    return 0
