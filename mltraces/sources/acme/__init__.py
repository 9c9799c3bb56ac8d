"""acme source folder: see source.json."""
