"""itp source folder: see source.json."""
