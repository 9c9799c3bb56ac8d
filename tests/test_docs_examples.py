"""Every code block of the README and the guides runs, and prints what the page shows.

Each page runs in a fresh folder and cache against the loopback mirror over
../shared/upstream (``docs_examples``); ``python tests/docs_examples.py --update`` writes
the shown outputs again.
"""

from __future__ import annotations

from pathlib import Path

import docs_examples
import pytest

RUNNABLE = [p for p in docs_examples.PAGES if any(
    b.skip is None for b in docs_examples.blocks(p))]


def test_every_page_with_code_is_run_and_only_the_readme_set_up_is_skipped() -> None:
    skipped = [(b.page.name, b.skip) for p in docs_examples.PAGES
               for b in docs_examples.blocks(p) if b.skip]
    readme = [s for s in skipped if s[0] == "README.md"]
    assert len(readme) == docs_examples.README_SKIPS
    assert docs_examples.blocks(docs_examples.ROOT / "README.md")[0].skip  # the three commands
    others = [s for s in skipped if s[0] != "README.md"]
    assert others == [("figures.md", "installs packages and starts a server")], others
    assert len(RUNNABLE) >= 10


def test_a_shown_output_belongs_to_the_block_before_it(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# x\n\n```bash\necho hi\n```\n\n```text title=\"output\"\nhi\n```\n\n"
                    "<!-- not run: a reason -->\n```python\nprint(1)\n```\n\n"
                    "```text\nnot an output\n```\n")
    first, second = docs_examples.blocks(page)
    assert (first.language, first.output, first.skip) == ("bash", "hi\n", None)
    assert (second.skip, second.output) == ("a reason", None)
    assert docs_examples.same("a  \nb\n\n", "a\nb")
    assert not docs_examples.same("a\nb", "a\nc")


@pytest.mark.upstream
@pytest.mark.slow
@pytest.mark.parametrize("page", RUNNABLE, ids=[p.name for p in RUNNABLE])
def test_the_pages_code_runs_and_prints_what_it_shows(page: Path, upstream_server: str,
                                                      tmp_path: Path) -> None:
    for result in docs_examples.run_page(page, upstream_server, tmp_path):
        where = f"{page.name}:{result.block.line}"
        assert result.code == 0, f"{where} exited {result.code}:\n{result.stderr[-3000:]}"
        if result.block.output is not None:
            assert docs_examples.same(result.block.output, result.stdout), (
                f"{where} printed\n{result.stdout}\nbut the page shows\n{result.block.output}"
                "\n(python tests/docs_examples.py --update writes it again)")
