"""Test doubles shared by the data-layer tests: a programmable loopback server and a
test-only registry (the shipped registry keeps the real pins)."""

from __future__ import annotations

import errno
import gzip
import hashlib
import http.server
import io
import socket
import subprocess
import sys
import tarfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mltraces.hashing import git_blob_sha1
from mltraces.registry import RemoteFile, Source, set_override

HOST = "files.example.org"


@dataclass
class Route:
    """What the fake server answers for one path."""

    body: bytes
    status: int = 200
    drop_after: int | None = None  # close the socket after this many body bytes
    drops_left: int = 1_000_000  # how many requests are dropped before serving fully
    content_length: int | None = None


@dataclass
class FakeServer:
    """A loopback HTTP server with programmable answers; it records each request."""

    routes: dict[str, Route] = field(default_factory=dict)
    requests: list[tuple[str, str | None]] = field(default_factory=list)
    url: str = ""

    def handler(self) -> type[http.server.BaseHTTPRequestHandler]:
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                server.requests.append((self.path, self.headers.get("Range")))
                route = server.routes.get(self.path)
                if route is None:
                    self.send_error(404)
                    return
                body, status = route.body, route.status
                start = 0
                range_header = self.headers.get("Range")
                if range_header and status == 200:
                    start = int(range_header.removeprefix("bytes=").split("-")[0])
                    status = 206
                payload = body[start:]
                self.send_response(status)
                self.send_header("Content-Length", str(route.content_length or len(payload)))
                if status == 206:
                    self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
                self.end_headers()
                if route.drop_after is not None and route.drops_left > 0:
                    route.drops_left -= 1
                    self.wfile.write(payload[: route.drop_after])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.wfile.write(payload)

        return Handler


def synthetic_file(name: str, data: bytes, *, by: str = "sha256", size: bool = True) -> RemoteFile:
    """A registry entry for synthetic bytes, pinned like the real ones."""
    return RemoteFile(
        id=f"demo/{name}",
        url=f"https://{HOST}/pinned/{name}",
        description="synthetic test file",
        size=len(data) if size else None,
        sha256=hashlib.sha256(data).hexdigest() if by == "sha256" else None,
        git_blob=git_blob_sha1(data) if by == "git_blob" else None,
        kind="tar.gz" if name.endswith(".tar.gz") else "file",
    )


class DemoRegistry:
    """A test-only registry with one source, ``demo``; files are added per test."""

    def __init__(self) -> None:
        self.files: list[RemoteFile] = []

    def add(self, file: RemoteFile) -> RemoteFile:
        self.files.append(file)
        source = Source(
            name="demo",
            title="demo",
            description="synthetic",
            homepage="https://example.org",
            license="MIT",
            citation="@misc{demo}",
            files=tuple(self.files),
        )
        set_override({"demo": source})
        return file


def serve(fake: FakeServer, file: RemoteFile, body: bytes, **route: object) -> None:
    path = "/" + file.url.removeprefix("https://")
    fake.routes[path] = Route(body=body, **route)  # type: ignore[arg-type]


def make_tar(members: dict[str, bytes], *, link: str | None = None) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        if link:
            info = tarfile.TarInfo(link)
            info.type = tarfile.SYMTYPE
            info.linkname = "/etc/passwd"
            tar.addfile(info)
    return buffer.getvalue()


KALOS_SAMPLE = (
    b"job_id,user,node_num,gpu_num,cpu_num,mem_per_pod_GB,shared_mem_per_pod,type,state,"
    b"submit_time,start_time,end_time,fail_time,stop_time,duration,queue,gpu_time\n"
    b"dlctk696s0jbvitv,uf794,8,64,960,1000,100.0,Other,FAILED,2023-05-17 11:00:58+00:00,"
    b"2023-05-17 11:01:08+00:00,2023-05-17 11:01:16+00:00,2023-05-17 11:01:16+00:00,,18,10.0,"
    b"1152.0\n"
)


def cache_leftovers(cache: Path) -> list[str]:
    """Every file left in the cache except lock files (locks are harmless and reused) and the
    record of files that could not be fetched (kept on purpose: the listings read it)."""
    return sorted(
        str(p.relative_to(cache)) for p in cache.rglob("*") if p.is_file() and p.suffix != ".lock"
        and p.relative_to(cache).as_posix() != "state/unavailable.json"
    )


# --------------------------------------------------------------------------- hostile inputs


@contextmanager
def serving(answer: Callable[[http.server.BaseHTTPRequestHandler], None]) -> Iterator[str]:
    """A loopback server (ephemeral port) whose every GET is ``answer(handler)``.

    Handler threads are daemons: an endless or trickling answer dies with its client.
    """

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            with suppress(BrokenPipeError, ConnectionResetError):
                answer(self)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02},
                              daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def closed_port_url() -> str:
    """An http URL on 127.0.0.1 where nothing listens (connection refused)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def tar_bomb(members: dict[str, int], block: int = 1 << 20) -> bytes:
    """A .tar.gz of zero-filled members, ~1 KB per MiB declared.

    Built from concatenated gzip members (valid gzip), so a multi-GiB bomb costs
    milliseconds to make: one compressed MiB of zeros, repeated.
    """
    zeros = gzip.compress(bytes(block), compresslevel=9)
    out = bytearray()
    for name, size in members.items():
        info = tarfile.TarInfo(name)
        info.size = size
        out += gzip.compress(info.tobuf(format=tarfile.GNU_FORMAT))
        full, rest = divmod(size + (-size % 512), block)
        out += zeros * full
        if rest:
            out += gzip.compress(bytes(rest))
    out += gzip.compress(bytes(1024))  # end of archive
    return bytes(out)


def dead_pid() -> int:
    """The pid of a process that has exited (and was reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


class FullDisk:
    """A writable file that fails with ENOSPC once ``room`` bytes were written."""

    def __init__(self, real: Any, room: int = 0) -> None:
        self._real, self._room = real, room

    def write(self, data: bytes) -> int:
        if len(data) > self._room:
            raise OSError(errno.ENOSPC, "No space left on device")
        self._room -= len(data)
        return self._real.write(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def __enter__(self) -> FullDisk:
        return self

    def __exit__(self, *exc: object) -> None:
        self._real.close()
