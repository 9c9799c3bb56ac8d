"""``python -m mltraces.docs``: the same as ``mltraces docs``."""

import sys

from mltraces.cli import main

sys.exit(main(["docs", *sys.argv[1:]]))
