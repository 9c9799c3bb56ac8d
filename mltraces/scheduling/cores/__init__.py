"""The compiled kernels of the scheduling policies, and how a process chooses to run them.

Cython pure-Python-mode modules (:mod:`.efcore`, :mod:`.efrounds`, :mod:`.gandivacore`,
:mod:`.leasecore`, :mod:`.chronuscore`), compiled by ``setup.py`` at install and run as
plain Python where they could not be (:mod:`.native` decides, once per process;
:mod:`mltraces.cyshim` stands in for ``cython`` then). They take arrays and typed objects only:
no pandas, no catalog, no policy objects.
"""
