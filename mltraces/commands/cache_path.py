"""`mltraces cache-path`: where downloads live."""

from __future__ import annotations

import argparse


def configure(parser: argparse.ArgumentParser) -> None:
    """No options."""


def run(args: argparse.Namespace) -> int:
    from mltraces.config import cache_dir

    print(cache_dir())
    return 0
