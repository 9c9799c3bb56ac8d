"""The format and recipe names, for the command line's help without importing pandas.

``tests/test_interop.py`` holds them equal to :data:`~mltraces.interop.formats.FORMATS`
and :data:`~mltraces.interop.recipes.RECIPES`, ``tests/test_request_export.py`` the request
formats to :data:`~mltraces.interop.request_formats.REQUEST_FORMATS`.
"""

FORMAT_NAMES = ("elasticflow", "tiresias", "pollux", "pollux-trace", "gavel", "philly")
RECIPE_NAMES = ("pollux", "elasticflow-itp", "synergy-philly", "helios-qssf", "helios-qssf-july")
REQUEST_FORMAT_NAMES = ("vidur", "splitwise-sim", "mooncake", "schedule")
