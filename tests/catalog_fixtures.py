"""Session fixtures for the catalog tests: catalogs built once, reused read-only.

Building the real tables takes a couple of seconds, so the real-data catalog
and the synthetic AcmeTrace catalog are built once per session, each in a cache
folder of its own (never the user's), then handed to tests as connections.
Views point at absolute Parquet paths, so the connections keep working while
the autouse ``isolated_cache`` fixture gives each test a fresh cache.

Import the fixtures you use into a test module (``loopback_only`` is autouse
once imported: any lookup of a host other than loopback fails the test)::

    from catalog_fixtures import loopback_only, real_catalog  # noqa: F401
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from upstream_files import OWN_CATALOGS, synthetic_tables, tables_with_upstream_files

# Tables whose upstream files exist in ../shared/upstream (from its manifests), but those of
# sources their own tests build once (OWN_CATALOGS: ServeGen's hundreds of small files)
REAL_TABLES = [t for t in tables_with_upstream_files() if t.split(".")[0] not in OWN_CATALOGS]
# Tables whose files are absent here, written by their source folder's synthetic.py.
SYNTHETIC_TABLES = synthetic_tables()


_LOOPBACK = {"127.0.0.1", "localhost", "::1"}


@pytest.fixture(autouse=True)
def loopback_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Refuse, and fail the test on, any lookup of a host other than loopback.

    Download code catches network errors (and falls back), so refusing alone
    could go unnoticed: the attempts are recorded and checked after the test.
    """
    real = socket.getaddrinfo
    attempts: list[str] = []

    def guarded(host, *args, **kwargs):
        if host not in _LOOPBACK:
            attempts.append(str(host))
            raise OSError(f"test tried to reach {host!r}; only loopback is allowed")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", guarded)
    yield
    assert not attempts, f"the test tried to reach {sorted(set(attempts))}"


@dataclass
class Catalog:
    """A connection plus where its cache and inputs live."""

    con: object
    cache: Path
    local: dict[str, Path]


@pytest.fixture(scope="session")
def real_catalog(upstream_server: str, shared_real_cache: Path) -> Iterator[Catalog]:
    """The real tables, fetched over the loopback mirror into the session's shared cache."""
    from mltraces.catalog import connect

    cache = shared_real_cache
    with pytest.MonkeyPatch.context() as patch:
        for name in ("MLTRACES_OFFLINE", "MLTRACES_LOCAL"):
            patch.delenv(name, raising=False)
        patch.setenv("MLTRACES_CACHE", str(cache))
        patch.setenv("MLTRACES_MIRROR", upstream_server)
        con = connect(tables=REAL_TABLES, strict=True, comments=True)  # column docs too
    yield Catalog(con, cache, {})
    con.close()


@pytest.fixture(scope="session")
def synthetic_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every absent table's files, synthetic in the upstream formats (each writer's test size)."""
    from mltraces.synthetic import write_tables

    folder = tmp_path_factory.mktemp("synthetic")
    return write_tables(folder, SYNTHETIC_TABLES, seed=10)


@pytest.fixture(scope="session")
def synthetic_catalog(synthetic_files: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
                      ) -> Iterator[Catalog]:
    """The tables of the absent upstream files, loaded from synthetic files via ``local=``."""
    from mltraces.catalog import connect

    cache = tmp_path_factory.mktemp("synthetic-catalog-cache")
    with pytest.MonkeyPatch.context() as patch:
        for name in ("MLTRACES_OFFLINE", "MLTRACES_LOCAL", "MLTRACES_MIRROR"):
            patch.delenv(name, raising=False)
        patch.setenv("MLTRACES_CACHE", str(cache))
        con = connect(tables=list(synthetic_files), local=synthetic_files, strict=True)
    yield Catalog(con, cache, synthetic_files)
    con.close()


def rows(con: object, query: str) -> list[tuple]:
    """All result rows of a query (DuckDB 2 relations keep no result to fetch one row)."""
    return con.execute(query).fetchall()  # type: ignore[attr-defined]


def scalar(con: object, query: str) -> object:
    """The single value a query returns."""
    [(value,)] = rows(con, query)
    return value


SEREN, KALOS = "acme.seren_jobs", "acme.kalos_jobs"
