"""Not the package: the top folder of a clone of mltraces.

Python reads this file when it was started in the folder that *holds* the clone: there,
``import mltraces`` finds the clone's folder before the installed package, and without
this file it would be an empty namespace package, failing later with
``AttributeError: module 'mltraces' has no attribute 'connect'`` and no hint. This file
imports the real package in its place (the installed one, else the clone's own
``mltraces/mltraces``) and says so in a warning. Run Python from the clone or any other
folder to be rid of it (the documentation's Troubleshooting page says the same).
"""

import importlib
import os
import sys
import warnings

_HERE = os.path.dirname(os.path.abspath(__file__))
_HOLDER = os.path.dirname(_HERE)


def _real_package():
    """The package ``mltraces`` as it would be found from anywhere but the clone's parent."""
    saved = sys.path[:]
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HOLDER]
    sys.modules.pop(__name__, None)
    try:
        try:
            return importlib.import_module(__name__), "the installed package"
        except ImportError:
            sys.modules.pop(__name__, None)
            sys.path.insert(0, _HERE)  # not installed: the clone's own package
            return importlib.import_module(__name__), f"the clone's package in {_HERE}"
    except ImportError as error:
        raise ImportError(f"{_HERE} is a clone of mltraces, not the package: Python was started "
                          f"in {_HOLDER}, the folder that holds it; install it (pip install -e "
                          f"{_HERE}) or run Python from another folder") from error
    finally:
        sys.path[:] = saved  # the package's submodules are found by its own __path__


if __name__ == "mltraces":  # else a tool imports the clone's folder by its own name (pytest)
    _package, _which = _real_package()
    sys.modules[__name__] = _package  # `import mltraces` returns what sys.modules holds
if __name__ == "mltraces" and os.path.abspath(os.getcwd()) == _HOLDER:
    warnings.warn(f"Python was started in {_HOLDER}, the folder that holds the clone {_HERE}: "
                  f"`import mltraces` found the clone's folder, so {_which} was imported in "
                  "its place; run Python from another folder (the clone itself, or your own)",
                  stacklevel=2)
