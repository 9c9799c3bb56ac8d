"""`mltraces export`: write a job trace in another simulator's input format, or a request
trace in a serving tool's.

Job formats: the trace is any ``SOURCE/NAME`` that ``mltraces.jobs`` or ``mltraces
schedule`` knows; ``--recipe`` filters it as a paper's artifact does; what the format
needs and the trace lacks is drawn with ``--seed``. Request formats (``vidur``,
``splitwise-sim``, ``mooncake``, ``schedule``): the trace is a ``SOURCE/NAME`` of
``mltraces.requests``; ``--start``/``--end`` keep a window of its arrivals (seconds),
``--speed`` divides its times by a factor, ``--rate`` rescales them to a mean rate
(:mod:`mltraces.interop.request_export`). Either way the file's provenance is written
beside it as ``FILE.provenance.json``. See :mod:`mltraces.interop`.
"""

from __future__ import annotations

import argparse

from mltraces.commands.common import add_table_options, command_line_local


def configure(parser: argparse.ArgumentParser) -> None:
    from mltraces.interop.names import FORMAT_NAMES, RECIPE_NAMES, REQUEST_FORMAT_NAMES

    parser.add_argument("--trace", help="the trace: SOURCE/NAME of mltraces.jobs, or a replay id "
                        "of `mltraces schedule --list-traces` (one cluster or VC); for a request "
                        "format, SOURCE/NAME of mltraces.requests")
    parser.add_argument("--to", choices=[*FORMAT_NAMES, *REQUEST_FORMAT_NAMES],
                        help="the format to write")
    parser.add_argument("--output", "-o", help="the file to write (FILE.provenance.json is "
                        "written beside it)")
    parser.add_argument("--recipe", help=f"a published filter: {', '.join(RECIPE_NAMES)}")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the annotation (model, batch size, work, deadline) "
                        "where the trace lacks what the format needs (default 0)")
    parser.add_argument("--origin", help="formats with wall-clock times (the job log): the instant "
                        "of second 0 of a trace without a clock (default 2000-01-01 "
                        "00:00:00+00:00), or to shift a clock trace")
    parser.add_argument("--zone", help="formats with wall-clock times: the IANA zone they are "
                        "written in (default: the trace's own, else UTC)")
    parser.add_argument("--gavel-throughputs", metavar="PATH", help="gavel: Gavel's "
                        "scheduler/simulation_throughputs.json (its steps per second per job "
                        "type and GPU count)")
    timing = parser.add_argument_group("request formats: which requests, on what clock")
    timing.add_argument("--start", type=float, metavar="S",
                        help="keep the requests arriving at or after S s (arrival_s)")
    timing.add_argument("--end", type=float, metavar="S",
                        help="keep the requests arriving before S s (arrival_s)")
    timing.add_argument("--speed", type=float, metavar="F",
                        help="divide every time by F (2: twice as fast; default 1)")
    timing.add_argument("--rate", type=float, metavar="R",
                        help="instead of --speed: rescale the times to a mean of R requests/s")
    parser.add_argument("--list", action="store_true", help="list the formats and recipes")
    add_table_options(parser)


def _listing() -> str:
    from mltraces.interop.formats import FORMATS
    from mltraces.interop.recipes import RECIPES
    from mltraces.interop.request_formats import REQUEST_FORMATS

    lines = ["formats (--to):"]
    for fmt in FORMATS.values():
        lines += [f"  {fmt.name:12} {fmt.simulator}", f"  {'':12} {fmt.summary}",
                  f"  {'':12} checked against {fmt.parser}"]
    lines.append("request formats (--to, a trace of mltraces.requests):")
    for rfmt in REQUEST_FORMATS.values():
        lines += [f"  {rfmt.name:13} {rfmt.tool}", f"  {'':13} {rfmt.summary}",
                  f"  {'':13} checked against {rfmt.parser}"]
    lines.append("recipes (--recipe):")
    for recipe in RECIPES.values():
        lines += [f"  {recipe.name:16} {recipe.title}", f"  {'':16} {recipe.artifact}"]
        lines += [f"  {'':16} - {rule.description}" for rule in recipe.rules]
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> int:
    from mltraces.errors import MltracesError

    if args.list:
        print(_listing(), end="")
        return 0
    missing = [flag for flag, value in (("--trace", args.trace), ("--to", args.to),
                                        ("--output", args.output)) if not value]
    if missing:
        raise MltracesError(f"mltraces export needs {', '.join(missing)} (--list shows the "
                            "formats and recipes)")
    from mltraces.interop.names import REQUEST_FORMAT_NAMES

    timing = {"--start": args.start, "--end": args.end, "--speed": args.speed,
              "--rate": args.rate}
    if args.to in REQUEST_FORMAT_NAMES:
        return _export_requests(args)
    given = [flag for flag, value in timing.items() if value is not None]
    if given:
        raise MltracesError(f"{', '.join(given)} apply to the request formats "
                            f"({', '.join(REQUEST_FORMAT_NAMES)}), not to {args.to}")
    from mltraces.interop.exporting import export

    result = export(args.trace, args.to, args.output, recipe=args.recipe, seed=args.seed,
                    origin=args.origin, zone=args.zone,
                    gavel_throughputs=args.gavel_throughputs, local=command_line_local(args),
                    quiet=args.quiet)
    if not args.quiet:
        rows = result.provenance["rows"]
        dropped = "; ".join(f"{n} {why}" for why, n in rows["dropped"].items()) or "none"
        print(f"{rows['written']} of {rows['read']} jobs of {args.trace} written as {args.to}"
              + (f" (recipe {args.recipe} kept {rows['after_recipe']})" if args.recipe else "")
              + f"; dropped: {dropped}")
    return 0


def _export_requests(args: argparse.Namespace) -> int:
    from mltraces.errors import MltracesError
    from mltraces.interop.request_export import Timing, export_requests

    if args.recipe:
        raise MltracesError("--recipe filters job traces; a request format takes --start, "
                            "--end, --speed and --rate")
    timing = Timing(speed=args.speed, start_s=args.start, end_s=args.end, rate=args.rate)
    result = export_requests(args.trace, args.to, args.output, timing,
                             local=command_line_local(args), quiet=args.quiet)
    if not args.quiet:
        rows = result.provenance["rows"]
        dropped = "; ".join(f"{n} {why}" for why, n in rows["dropped"].items()) or "none"
        speed = result.provenance["time"]["speed"]
        print(f"{rows['written']} of {rows['read']} requests of {args.trace} written as "
              f"{args.to} (times / {speed:.6g}); dropped: {dropped}")
    return 0
