"""Source names with hyphens (``alibaba-pai``, as the repositories spell them) name the
package's ``alibaba_pai`` wherever a source starts a name: sources, file ids, tables,
traces, ``--local`` keys."""

from __future__ import annotations

import pytest

from mltraces import jobmap, registry
from mltraces.catalog import resolve_local, select_schemas
from mltraces.cli import main
from mltraces.download import expand
from mltraces.names import canonical
from mltraces.schema import get_schema


@pytest.mark.parametrize(("typed", "meant"), [
    ("alibaba-pai", "alibaba_pai"),
    ("alibaba-pai/all", "alibaba_pai/all"),
    ("alibaba-openb.pods", "alibaba_openb.pods"),
    ("alibaba-openb/openb_node_list_gpu_node.csv", "alibaba_openb/openb_node_list_gpu_node.csv"),
    ("itp/raw-traces.tar.gz", "itp/raw-traces.tar.gz"),  # only the source part
    ("philly/trace-data.tar.gz", "philly/trace-data.tar.gz"),
    ("alibaba_pai", "alibaba_pai"),
    ("", ""),
    ("../alibaba-pai", "../alibaba-pai"),  # not a name that starts with a source
])
def test_canonical_reads_hyphens_only_in_the_source_part(typed: str, meant: str) -> None:
    assert canonical(typed) == meant


def test_every_lookup_takes_the_hyphenated_name() -> None:
    assert registry.get_source("alibaba-pai") is registry.get_source("alibaba_pai")
    node = "alibaba_openb/openb_node_list_gpu_node.csv"
    assert registry.get_file(node.replace("_openb", "-openb")) is registry.get_file(node)
    assert expand(["alibaba-openb"]) == expand(["alibaba_openb"])
    assert get_schema("alibaba-openb.pods") is get_schema("alibaba_openb.pods")
    assert select_schemas(["alibaba-pai"]) == select_schemas(["alibaba_pai"])
    assert jobmap.resolve_replay("alibaba-pai/all").entry.table == "alibaba_pai.jobs"
    assert list(resolve_local({"alibaba-openb.pods": "/x"})) == ["alibaba_openb.pods"]


def test_a_hyphen_in_a_name_that_is_no_source_still_fails_with_the_known_names() -> None:
    with pytest.raises(KeyError, match=r"unknown source 'no-such'.*alibaba_pai"):
        registry.get_source("no-such")
    with pytest.raises(KeyError, match="unknown trace 'alibaba_pai/none'"):
        jobmap.resolve_replay("alibaba-pai/none")


def test_info_prints_the_card_of_a_hyphenated_source(capsys) -> None:
    assert main(["info", "alibaba-pai"]) == 0
    assert "name:     alibaba_pai" in capsys.readouterr().out
