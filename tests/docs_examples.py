"""The code blocks of the README and the guides, run as a reader would run them.

A page's blocks run in order in one fresh folder with a fresh cache and a mirror (the
tests: a loopback server over ../shared/upstream): ``bash`` blocks as scripts (``bash
-e``), ``python`` blocks with this interpreter, ``json`` blocks parsed (a jobs mapping
through the loader). A ``text`` block titled ``output`` right after a block is what that
block prints on stdout, compared line by line. A block preceded by
``<!-- not run: REASON -->`` is left out, with its reason (the README's set-up and test
commands). Run as a script to write every shown output again from what the blocks print::

    python tests/docs_examples.py --update [PAGE ...]
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: the pages whose blocks run: the README and every hand-written page of the site
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
RUN = ("bash", "python", "json")
_FENCE = re.compile(r"^(`{3,})([^\n`]*)\n(.*?)^\1[ \t]*$\n?", re.S | re.M)
_NOT_RUN = re.compile(r"<!-- not run: (.+?) -->\s*$")
#: the README's three commands: installing the package and running the whole test suite
#: from inside the tests is neither possible nor meaningful; they are the one exception
README_SKIPS = 1


@dataclass
class Block:
    """One fenced block of a page, and the output block that follows it, if any."""

    page: Path
    line: int
    language: str
    body: str
    skip: str | None = None  # why it is not run
    output: str | None = None
    output_span: tuple[int, int] | None = None  # where the output's text sits in the page


def blocks(page: Path) -> list[Block]:
    """The page's blocks in order, each with its shown output and whether it runs."""
    text = page.read_text(encoding="utf-8")
    found: list[Block] = []
    previous_end = 0
    for match in _FENCE.finditer(text):
        info = match.group(2).strip()
        language = info.split()[0] if info else ""
        if language == "text" and 'title="output"' in info and found:
            previous = found[-1]
            between = text[previous_end:match.start()]
            if not between.strip() and previous.output is None:
                previous.output = match.group(3)
                previous.output_span = (match.start(3), match.end(3))
                previous_end = match.end()
                continue
        if language not in RUN:
            previous_end = match.end()
            continue
        head = text[:match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        skipped = _NOT_RUN.search(head)
        found.append(Block(page, text.count("\n", 0, match.start()) + 1, language,
                           match.group(3), skip=skipped.group(1) if skipped else None))
        previous_end = match.end()
    return found


def environment(mirror: str, folder: Path) -> dict[str, str]:
    """A reader's shell: this interpreter's scripts first, a fresh cache, the mirror."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLTRACES_")}
    env.update({"MLTRACES_MIRROR": mirror, "MLTRACES_CACHE": str(folder / ".cache"),
                "MLTRACES_SOURCES": str(folder / ".sources"), "MPLBACKEND": "Agg",
                "XDG_CONFIG_HOME": str(folder / ".config"), "COLUMNS": "100",
                "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"})
    return env


@dataclass
class Ran:
    block: Block
    code: int
    stdout: str
    stderr: str


def run(block: Block, env: dict[str, str], folder: Path) -> Ran:
    """Run one block in ``folder``."""
    if block.language == "json":
        try:
            _check_json(block.body)
        except Exception as error:  # reported as the block's failure
            return Ran(block, 1, "", f"{type(error).__name__}: {error}")
        return Ran(block, 0, "", "")
    command = (["bash", "-e", "-o", "pipefail", "-c", block.body] if block.language == "bash"
               else [sys.executable, "-c", block.body])
    done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True,
                          timeout=1200)
    return Ran(block, done.returncode, done.stdout, done.stderr)


def _check_json(body: str) -> None:
    """A JSON block parses; a jobs mapping entry passes the loader."""
    value = json.loads(body)
    if isinstance(value, dict) and isinstance(value.get("tables"), list):
        from mltraces.jobmap import parse_table

        for entry in value["tables"]:
            parse_table(entry, entry["table"].split(".")[0], "the page's example")


def run_page(page: Path, mirror: str, folder: Path) -> list[Ran]:
    """Every block of the page that runs, in order, in ``folder``."""
    env = environment(mirror, folder)
    return [run(b, env, folder) for b in blocks(page) if b.skip is None]


def same(shown: str, printed: str) -> bool:
    """Equal but for trailing spaces at line ends and blank lines at the end."""
    def lines(text: str) -> list[str]:
        return [line.rstrip() for line in text.rstrip().splitlines()]

    return lines(shown) == lines(printed)


def update(page: Path, mirror: str) -> int:
    """Write every shown output of ``page`` again from what its block prints; changes made."""
    with tempfile.TemporaryDirectory() as folder:
        ran = run_page(page, mirror, Path(folder))
    text = page.read_text(encoding="utf-8")
    changes = 0
    for result in sorted(ran, key=lambda r: -(r.block.output_span or (0, 0))[0]):
        block = result.block
        if result.code != 0:
            raise SystemExit(f"{page}:{block.line}: exit {result.code}\n{result.stderr[-2000:]}")
        if block.output_span is None or same(block.output or "", result.stdout):
            continue
        start, end = block.output_span
        text = text[:start] + result.stdout.rstrip("\n") + "\n" + text[end:]
        changes += 1
    page.write_text(text, encoding="utf-8")
    return changes


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="write the shown outputs of the docs again")
    parser.add_argument("--update", action="store_true", required=True)
    parser.add_argument("pages", nargs="*", type=Path)
    parser.add_argument("--mirror", default=str(ROOT.parent / "shared" / "upstream"))
    args = parser.parse_args()
    for path in args.pages or PAGES:
        print(f"{path}: {update(path.resolve(), args.mirror)} outputs written")
