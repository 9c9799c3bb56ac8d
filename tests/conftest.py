"""Shared fixtures: an isolated cache, the real upstream files, a loopback mirror.

No test touches the user's cache or any address but 127.0.0.1.
"""

from __future__ import annotations

import http.server
import os
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

# Each worker imports ~180 test modules, rewriting their asserts, and the package's modules:
# cached bytecode halves that on every run after the first, even where the environment sets
# PYTHONDONTWRITEBYTECODE (the caches go to __pycache__ folders, which git ignores).
sys.dont_write_bytecode = False

import pytest  # noqa: E402
from fakes import DemoRegistry, FakeServer  # noqa: E402

from mltraces import download as fetch_module  # noqa: E402
from mltraces.registry import set_override  # noqa: E402

UPSTREAM = Path(__file__).resolve().parents[2] / "shared" / "upstream"
ENV_VARS = (
    "MLTRACES_CACHE",
    "MLTRACES_MIRROR",
    "MLTRACES_OFFLINE",
    "MLTRACES_LOCAL",
    "MLTRACES_HF_REVISION",
    "MLTRACES_HF_ENDPOINT",
    "MLTRACES_FIGURES_DIR",
    "MLTRACES_DOWNLOAD_TIMEOUT",
    "MLTRACES_MAX_DOWNLOAD",
    "MLTRACES_HOST_DOWN_TTL",
    "MLTRACES_MAX_UNPACKED",
    "MLTRACES_MAX_MEMBERS",
    "MLTRACES_SOURCES",
)


@pytest.fixture(scope="session")
def cache_folders(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the tests' own caches go: one folder, so that making one costs the same for
    the last test as for the first (``mktemp`` lists its whole folder for each new one)."""
    return tmp_path_factory.mktemp("caches")


@pytest.fixture(autouse=True)
def isolated_cache(cache_folders: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets an empty cache of its own and a clean environment."""
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    cache = Path(tempfile.mkdtemp(prefix="cache", dir=cache_folders))
    monkeypatch.setenv("MLTRACES_CACHE", str(cache))
    monkeypatch.setenv("MLTRACES_SOURCES", "")  # never a user's own source folders
    return cache


@pytest.fixture(scope="session")
def upstream_dir() -> Path:
    """The real upstream files (../shared/upstream); skips when they are absent."""
    if not (UPSTREAM / "MANIFEST.tsv").is_file():
        reason = f"real upstream files not found at {UPSTREAM}"
        if os.environ.get("MLTRACES_REQUIRE_UPSTREAM"):
            pytest.fail(reason + " and MLTRACES_REQUIRE_UPSTREAM is set (CI)")
        pytest.skip(reason + " (CI always has them)")
    return UPSTREAM


@pytest.fixture(scope="session")
def shared_real_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache for every fixture that only reads the real upstream files, shared by the
    session's workers (xdist's workers share the parent of their temp folders).

    The catalog converts each file once under a lock per file, and downloads under a lock
    too, so workers and fixtures reuse each other's downloads and conversions instead of
    fetching and converting the same real files four times. Tests that change a cache
    keep using ``isolated_cache`` or a folder of their own.
    """
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent
    cache = root / "shared-real-cache"
    cache.mkdir(exist_ok=True)
    return cache


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    """Serves a folder, with HTTP Range support and no request logging."""

    def log_message(self, format: str, *args: object) -> None:
        pass

    def send_head(self):  # type: ignore[override]
        range_header = self.headers.get("Range")
        path = Path(self.translate_path(self.path))
        if not range_header or not path.is_file():
            return super().send_head()
        start = int(range_header.removeprefix("bytes=").split("-")[0])
        size = path.stat().st_size
        if start >= size:
            self.send_error(416)
            return None
        handle = path.open("rb")
        handle.seek(start)
        self.send_response(206)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Range", f"bytes {start}-{size - 1}/{size}")
        self.send_header("Content-Length", str(size - start))
        self.end_headers()
        return handle


def serve_directory(
    root: Path, handler: type = _QuietHandler
) -> tuple[str, http.server.ThreadingHTTPServer]:
    """Start a loopback HTTP server over ``root`` on an ephemeral port."""

    class Handler(handler):  # type: ignore[misc, valid-type]
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, directory=str(root), **kwargs)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    # a short poll: shutdown() waits for it, 0.5 s by default, after every test
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02},
                              daemon=True)
    thread.start()
    return f"http://127.0.0.1:{server.server_address[1]}", server


@pytest.fixture(scope="session")
def upstream_server(upstream_dir: Path) -> Iterator[str]:
    """Base URL of a loopback server over the real upstream files."""
    url, server = serve_directory(upstream_dir)
    yield url
    server.shutdown()
    server.server_close()


@pytest.fixture
def http_mirror(upstream_server: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """MLTRACES_MIRROR pointed at the loopback server over ../shared/upstream."""
    monkeypatch.setenv("MLTRACES_MIRROR", upstream_server)
    return upstream_server


@pytest.fixture
def dir_mirror(upstream_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """MLTRACES_MIRROR pointed at ../shared/upstream as a directory."""
    monkeypatch.setenv("MLTRACES_MIRROR", str(upstream_dir))
    return upstream_dir


# The slow run's longest files (a notebook, a page of examples, a solver at its limit take
# 10-45 s each): run first, and handed out one test at a time (--maxschedchunk 1) while the
# other workers are busy, so that none of them starts last and holds the run alone. Files
# stay whole, so module fixtures are made as often as before.
RUN_FIRST = ("test_notebooks.py", "test_docs_examples.py", "test_hostile_round3_scheduling.py",
             "test_scheduling_upstream.py", "test_request_sources.py", "test_docs.py",
             "test_interop_stream.py")


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("markexpr", "") == "slow" and hasattr(config.option, "maxschedchunk"):
        config.option.maxschedchunk = config.option.maxschedchunk or 1


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    rank = {name: place for place, name in enumerate(RUN_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(RUN_FIRST)))


def pytest_report_header(config: pytest.Config) -> str:
    state = "present" if (UPSTREAM / "MANIFEST.tsv").is_file() else "ABSENT (real-data tests skip)"
    return f"mltraces upstream files: {UPSTREAM} {state}; cpu count {os.cpu_count()}"


@pytest.fixture
def fake_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeServer]:
    """A FakeServer on 127.0.0.1 set as the mirror for https://files.example.org/..."""
    fake = FakeServer()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), fake.handler())
    # a short poll: shutdown() waits for it, 0.5 s by default, after every test
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02},
                              daemon=True)
    thread.start()
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    monkeypatch.setenv("MLTRACES_MIRROR", fake.url)
    monkeypatch.setattr(fetch_module, "RETRY_WAIT_S", 0.0)
    yield fake
    server.shutdown()
    server.server_close()


@pytest.fixture
def demo_registry() -> Iterator[DemoRegistry]:
    """Install a test-only registry; the shipped one is restored afterwards."""
    yield DemoRegistry()
    set_override(None)


@pytest.fixture
def acme_files(tmp_path: Path) -> dict[str, Path]:
    """Small synthetic Seren and Kalos traces (300 and 200 jobs), as ``local=`` files."""
    import synthetic  # (pandas: loaded by the tests that ask for these only)

    return {"acme.seren_jobs": synthetic.write_seren_trace(tmp_path / "trace_seren.csv", 300,
                                                           seed=3),
            "acme.kalos_jobs": synthetic.write_kalos_trace(tmp_path / "trace_kalos.csv", 200,
                                                           seed=4)}
