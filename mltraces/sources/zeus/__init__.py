"""zeus source folder: see source.json."""
