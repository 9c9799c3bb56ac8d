"""`mltraces completion SHELL`: a completion script for every verb and option.

Generated from the same argparse parser the command uses (by shtab), so it
cannot drift from the options. Install it once, e.g. for bash:
``mltraces completion bash > ~/.local/share/bash-completion/completions/mltraces``.
"""

from __future__ import annotations

import argparse

SHELLS = ("bash", "zsh", "tcsh")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("shell", choices=SHELLS, help="the shell to complete for")


def run(args: argparse.Namespace) -> int:
    import shtab

    from mltraces.cli import build_parser

    print(shtab.complete(build_parser(None, every_verb=True), shell=args.shell))
    return 0
