"""The format and recipe names, for the command line's help without importing pandas.

``tests/test_interop.py`` holds them equal to :data:`~mltraces.interop.formats.FORMATS`
and :data:`~mltraces.interop.recipes.RECIPES`.
"""

FORMAT_NAMES = ("elasticflow", "tiresias", "pollux", "pollux-trace", "gavel", "philly")
RECIPE_NAMES = ("pollux", "elasticflow-itp", "synergy-philly")
