"""The ``mltraces`` command: a dispatcher over the verb modules.

Each verb lives in :mod:`mltraces.commands` and is imported only when called.
Errors that mltraces raises on purpose print as one line on stderr with exit 1;
anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from mltraces import __version__
from mltraces.commands import SUMMARIES, VERBS


def _add_global_flags(parser: argparse.ArgumentParser, default: object) -> None:
    """``-q``/``-v`` work before or after the verb (the verb's copy never resets them)."""
    parser.add_argument(
        "-q", "--quiet", action="store_true", default=default, help="no progress bars or notices"
    )
    parser.add_argument(
        "-v", "--verbose", action="store_true", default=default, help="log what is being done"
    )


def build_parser(verb: str | None, *, every_verb: bool = False, alone: bool = False
                 ) -> argparse.ArgumentParser:
    """The command's parser; only ``verb``'s options are loaded, or all with ``every_verb``.

    ``alone`` leaves the other verbs out altogether (each costs a parser to build); only
    for a command line that :func:`_leads_with` the verb, which parses the same either way.
    """
    parser = argparse.ArgumentParser(
        prog="mltraces",
        description="Public GPU-cluster and LLM-serving traces (`mltraces list`): verified "
        "downloads, SQL, simulation and figures.",
        epilog="Environment: MLTRACES_CACHE, MLTRACES_MIRROR, MLTRACES_OFFLINE=1, "
        "MLTRACES_LOCAL='TABLE=PATH,...'. Run `mltraces VERB --help` for a verb's options.",
    )
    parser.add_argument("--version", action="version", version=f"mltraces {__version__}")
    _add_global_flags(parser, default=False)
    subparsers = parser.add_subparsers(dest="verb", metavar="VERB")
    for name, summary in SUMMARIES.items():
        if alone and name != verb:
            continue
        sub = subparsers.add_parser(name, help=summary, description=summary)
        _add_global_flags(sub, default=argparse.SUPPRESS)
        if name == verb or every_verb:
            module = importlib.import_module(VERBS[name])
            module.configure(sub)
            sub.set_defaults(_run=module.run)
    return parser


def _verb_in(argv: list[str]) -> str | None:
    return next((arg for arg in argv if arg in VERBS), None)


_LEADING_FLAGS = frozenset({"-q", "--quiet", "-v", "--verbose"})


def _leads_with(argv: list[str], verb: str | None) -> bool:
    """True when only ``-q``/``-v`` come before ``verb``: no top-level help, no other verb."""
    return verb is not None and all(arg in _LEADING_FLAGS for arg in argv[:argv.index(verb)])


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``mltraces`` console script."""
    from mltraces.errors import MltracesError

    argv = sys.argv[1:] if argv is None else argv
    verb = _verb_in(argv)
    try:  # a verb's options may name sources: a broken source folder is one line here too
        parser = build_parser(verb, alone=_leads_with(argv, verb))
    except MltracesError as error:
        print(f"mltraces{' ' + verb if verb else ''}: error: {error}", file=sys.stderr)
        return 1
    args = parser.parse_args(argv)
    if args.verb is None:
        parser.print_help()
        return 0
    from mltraces import logs

    if args.verbose or args.quiet:  # the format from the start (with -v: others' INFO too)
        import logging
    logs.configure(verbose=args.verbose)  # else installed once something logs (often never)
    if args.quiet:
        from mltraces.download import set_progress

        set_progress(False)
        package_logger = logs.get_logger("mltraces")
        level = package_logger.level
        package_logger.setLevel(logging.ERROR)
    import warnings

    from mltraces.errors import PartialViewWarning

    try:
        from mltraces.config import check_settings

        check_settings()  # a setting that means nothing is one line now, whatever the verb
        with warnings.catch_warnings():  # each verb says what a partial view lacks, in words
            warnings.simplefilter("ignore", PartialViewWarning)
            return int(args._run(args) or 0)
    except MltracesError as error:
        print(f"mltraces {args.verb}: error: {error}", file=sys.stderr)
        return 1
    except KeyError as error:  # unknown source/file/table names carry their hint
        print(f"mltraces {args.verb}: error: {error.args[0]}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 0
    finally:  # main() is also called in-process (tests, scripts): leave no global state
        logs.configure(verbose=None)
        if args.quiet:
            set_progress(None)
            package_logger.setLevel(level)


if __name__ == "__main__":
    sys.exit(main())
