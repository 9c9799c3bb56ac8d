"""``python -m mltraces``: the same command as ``mltraces`` (handy in a venv without the script)."""

import sys

from mltraces.cli import main

sys.exit(main())
