"""Test doubles shared by the data-layer tests: a programmable loopback server and a
test-only registry (the shipped registry keeps the real pins)."""

from __future__ import annotations

import hashlib
import http.server
import io
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

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
    """Every file left in the cache except lock files (locks are harmless and reused)."""
    return sorted(
        str(p.relative_to(cache)) for p in cache.rglob("*") if p.is_file() and p.suffix != ".lock"
    )
