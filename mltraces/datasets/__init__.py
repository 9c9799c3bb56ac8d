"""One folder per public trace release, found by scanning (see :mod:`mltraces.registry`).

A folder ``<name>/`` holds ``source.json`` and ``citation.bib`` (the source as
data) and, optionally, the source's own code: ``readers.py`` (catalog readers
registered by name), ``figures.py`` (its paper's figures) and analyses. Its table
schemas live in ``schemas/<name>/`` at the top of the project.
"""
