"""A fake HuggingFace Hub for the AcmeTrace utilization files, and their generators.

The generators of the files themselves live beside the code that reads them,
:mod:`mltraces.sources.acme.util.synthetic` (re-exported here). :class:`FakeHub`
serves such files on 127.0.0.1 the way the Hub does: the revision API, the
recursive tree API (paginated with a ``Link`` header), and ``resolve`` URLs that
redirect to a content-addressed URL with Range support. It records every request
and can drop a connection mid-file once.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlsplit

from mltraces.sources.acme.util.synthetic import (  # noqa: F401 - re-exported for the tests
    IPMI_COLUMNS,
    JULY_1,
    SHANGHAI,
    IpmiTable,
    WideTable,
    gpu_columns,
    ipmi_csv_bytes,
    ipmi_table,
    node_ips,
    time_text,
    wide_csv_bytes,
    wide_csv_with_repeats,
    wide_table,
    write_big_wide_csv,
)

REPO = "Qinghao/AcmeTrace"
HOST = "huggingface.co"
COMMIT = "0123456789abcdef0123456789abcdef01234567"


# --------------------------------------------------------------------------- fake Hub


@dataclass
class FakeHub:
    """A loopback stand-in for the HuggingFace Hub endpoints mltraces uses.

    ``files`` maps repo paths (``data/utilization/seren/GPU_UTIL.csv``) to bytes.
    Use it as ``MLTRACES_MIRROR=<hub.url>``: requests arrive as
    ``/huggingface.co/<path>``.
    """

    files: dict[str, bytes] = field(default_factory=dict)
    commit: str = COMMIT
    page_size: int = 1000
    drop_after: dict[str, int] = field(default_factory=dict)  # path → bytes, dropped once
    corrupt: set[str] = field(default_factory=set)  # paths served with one byte changed
    requests: list[tuple[str, str | None]] = field(default_factory=list)
    url: str = ""
    _server: http.server.ThreadingHTTPServer | None = None

    # -- content

    def add(self, path: str, data: bytes) -> None:
        """Publish ``data`` at ``path`` in the repository."""
        self.files[path] = data

    def entry(self, path: str) -> dict:
        """The tree API entry of one file (LFS, as every utilization CSV is)."""
        data = self.files[path]
        blob = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
        sha = hashlib.sha256(data).hexdigest()
        return {
            "type": "file",
            "oid": blob,
            "size": len(data),
            "lfs": {"oid": sha, "size": len(data), "pointerSize": 134},
            "path": path,
        }

    def tree(self, folder: str) -> list[dict]:
        """Directories then files under ``folder``, as the recursive tree API lists them."""
        paths = sorted(p for p in self.files if p.startswith(folder.rstrip("/") + "/"))
        dirs = sorted({p.rsplit("/", 1)[0] for p in paths} - {folder})
        dir_entries = [{"type": "directory", "oid": "0" * 40, "size": 0, "path": d} for d in dirs]
        return dir_entries + [self.entry(p) for p in paths]

    def count(self, fragment: str) -> int:
        """How many requests asked for a path containing ``fragment``."""
        return sum(fragment in path for path, _ in self.requests)

    # -- server

    def start(self) -> str:
        """Serve on 127.0.0.1 (ephemeral port); returns the base URL."""
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        ).start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        return self.url

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def _answer(self, path: str, query: dict[str, list[str]]) -> tuple[int, dict, bytes | str]:
        """Route one GET: (status, headers, body); a str body is a file path to serve."""
        prefix = f"/{HOST}/api/datasets/{REPO}/"
        resolve = f"/{HOST}/datasets/{REPO}/resolve/"
        if path.startswith(prefix + "revision/"):
            info = {"id": REPO, "sha": self.commit, "private": False}
            return 200, {"Content-Type": "application/json"}, json.dumps(info).encode()
        if path.startswith(prefix + "tree/"):
            revision, _, folder = path.removeprefix(prefix + "tree/").partition("/")
            if revision not in {"main", self.commit}:
                return 404, {}, b'{"error": "Invalid rev id"}'
            entries = self.tree(folder)
            start = int(query.get("cursor", ["0"])[0])
            page = entries[start : start + self.page_size]
            headers = {"Content-Type": "application/json"}
            if start + self.page_size < len(entries):
                api_path = path.removeprefix(f"/{HOST}")
                nxt = f"https://{HOST}{api_path}?recursive=true&cursor={start + self.page_size}"
                headers["Link"] = f'<{nxt}>; rel="next"'
            return 200, headers, json.dumps(page).encode()
        if path.startswith(resolve):
            revision, _, repo_path = path.removeprefix(resolve).partition("/")
            if revision != self.commit or repo_path not in self.files:
                return 404, {}, b"Entry not found"
            sha = hashlib.sha256(self.files[repo_path]).hexdigest()
            return 302, {"Location": f"/cdn/{sha}?path={repo_path}"}, b""
        if path.startswith("/cdn/"):
            return 200, {}, query["path"][0]
        return 404, {}, b"not found"

    def _handler(self) -> type[http.server.BaseHTTPRequestHandler]:
        hub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                hub.requests.append((self.path, self.headers.get("Range")))
                parts = urlsplit(self.path)
                status, headers, body = hub._answer(parts.path, parse_qs(parts.query))
                if isinstance(body, str):
                    self._send_file(body)
                    return
                self.send_response(status)
                for key, value in {**headers, "Content-Length": str(len(body))}.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(body)

            def _send_file(self, repo_path: str) -> None:
                data = hub.files[repo_path]
                if repo_path in hub.corrupt:
                    data = data[:-2] + bytes([data[-2] ^ 1]) + data[-1:]
                start = 0
                range_header = self.headers.get("Range")
                if range_header:
                    start = int(range_header.removeprefix("bytes=").split("-")[0])
                    if start >= len(data):
                        self.send_response(416)
                        self.end_headers()
                        return
                self.send_response(206 if range_header else 200)
                self.send_header("Content-Length", str(len(data) - start))
                if range_header:
                    self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
                self.end_headers()
                payload = data[start:]
                limit = hub.drop_after.pop(repo_path, None)
                if limit is not None:
                    self.wfile.write(payload[:limit])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.wfile.write(payload)

        return Handler


def running(hub: FakeHub) -> Iterator[FakeHub]:
    """Start ``hub``, yield it, stop it (for fixtures)."""
    hub.start()
    try:
        yield hub
    finally:
        hub.stop()
