"""The HuggingFace Hub's file list for AcmeTrace's raw utilization metrics.

The ~80 GB of utilization CSVs live only on the Hub dataset ``Qinghao/AcmeTrace``,
so no static registry can pin them: this module asks the Hub once and keeps the
answer.

- ``resolve_commit()`` turns the revision (``MLTRACES_HF_REVISION``, default
  ``main``) into a commit via ``/api/datasets/<repo>/revision/<rev>`` and caches
  it, so later runs (and offline runs) use the same files. Pin the printed commit
  with ``MLTRACES_HF_REVISION=<sha>`` to reproduce an analysis exactly.
- ``manifest()`` lists ``data/utilization`` recursively with the tree API
  (``/api/datasets/<repo>/tree/<commit>/<folder>?recursive=true``, following
  ``Link: rel="next"`` pages) and caches it as JSON under the commit, which never
  changes. Each entry carries its size and, for LFS files, ``lfs.oid``: the
  sha256 every download is verified against.
- :class:`HubFile` parses the path (cluster, metric, month of a split file) and
  builds the :class:`~mltraces.registry.RemoteFile` that :func:`mltraces.download.fetch_file`
  downloads from ``/datasets/<repo>/resolve/<commit>/<path>``.

Settings: ``MLTRACES_HF_REVISION`` (branch, tag or commit), ``MLTRACES_HF_ENDPOINT``
(an https Hub endpoint that serves the same API, e.g. a regional Hub mirror;
default ``https://huggingface.co``), plus the usual ``MLTRACES_MIRROR`` (an
http(s) mirror base receives ``$MIRROR/<host>/<path>?<query>``, keeping the query
so a proxying mirror can page through the tree API; a directory mirror holds the
API answers as files at ``<host>/<path>``) and ``MLTRACES_OFFLINE`` (only the
cached manifest is used).

Everything the Hub (or a mirror posing as it) sends is checked before it is used:
every entry's ``path`` must be a plain relative path under the listed folder (no
``..``, absolute paths, backslashes, control characters, empty or ``.`` parts) and
its size and hashes well-formed, else the whole list is refused and nothing is
written; next-page links must stay on the Hub's tree API; an answer may be at most
``MAX_JSON_BYTES``; an unreachable Hub fails once and is remembered
(:mod:`mltraces.download.hosts`).
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass
from datetime import date
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote, urlsplit

from mltraces import config
from mltraces.download.paths import check_segment, inside, relative_parts, url_parts
from mltraces.errors import ConfigError, FetchError, MltracesError, OfflineError
from mltraces.logs import get_logger
from mltraces.registry import RemoteFile

log = get_logger(__name__)

REPO = "Qinghao/AcmeTrace"
DEFAULT_ENDPOINT = "https://huggingface.co"
UTIL_FOLDER = "data/utilization"
SOURCE = "acme-util"
ATTEMPTS = 3
MAX_JSON_BYTES = 64 << 20  # one tree page or revision answer
MAX_FILE_BYTES = 1 << 44  # 16 TiB: a larger size in a file list is not believable
_COMMIT = re.compile(r"^[0-9a-f]{40}$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_SPLIT = re.compile(r"^(?P<metric>.+?)-(?P<period>\d{4}-\d{2}(?:-\d{2})?)$")

__all__ = [
    "HubFile",
    "Manifest",
    "endpoint",
    "manifest",
    "resolve_commit",
]


# --------------------------------------------------------------------------- settings


def endpoint() -> str:
    """The Hub base URL: ``MLTRACES_HF_ENDPOINT`` or ``https://huggingface.co``."""
    value = os.environ.get("MLTRACES_HF_ENDPOINT", "").strip().rstrip("/")
    if value and urlsplit(value).scheme != "https":
        raise ConfigError(
            f"MLTRACES_HF_ENDPOINT={value!r} is not an https URL; for a plain-http copy "
            "of the Hub set MLTRACES_MIRROR instead"
        )
    return value or DEFAULT_ENDPOINT


def _hub_cache() -> Path:
    """``<cache>/hub/<host>/datasets/<repo>``: manifests and resolved refs."""
    host = urlsplit(endpoint()).netloc
    check_segment(host, host, "MLTRACES_HF_ENDPOINT host")
    return config.cache_dir() / "hub" / host / "datasets" / REPO


def _in_cache(path: Path) -> Path:
    """``path`` once proven to resolve under the cache root."""
    return inside(config.cache_dir(), path, "Hub cache path")


# --------------------------------------------------------------------------- files


@dataclass(frozen=True)
class HubFile:
    """One file of the dataset as the tree API lists it, with what its path says.

    ``group`` is the folder under ``data/utilization`` (``seren``, ``kalos`` or
    ``ipmi``); ``metric`` the file stem without a split suffix (``GPU_UTIL``,
    ``NODE_CPU_UTILIZATION``, ``GPU_AB_Power``); ``period`` the ``2023-07`` (or
    ``2023-07-15``) of a split file ``<METRIC>-2023-07.csv``, else None.
    """

    path: str
    size: int
    sha256: str | None
    git_blob: str | None

    def __post_init__(self) -> None:
        relative_parts(self.path, "Hub file path")
        if isinstance(self.size, bool) or not isinstance(self.size, int) or not (
            0 <= self.size <= MAX_FILE_BYTES
        ):
            raise FetchError(f"Hub file {self.path!r} has an impossible size {self.size!r}")
        if self.sha256 is not None and not _SHA256.match(str(self.sha256)):
            raise FetchError(f"Hub file {self.path!r} has a malformed LFS sha256 {self.sha256!r}")
        if self.git_blob is not None and not _COMMIT.match(str(self.git_blob)):
            raise FetchError(f"Hub file {self.path!r} has a malformed git oid {self.git_blob!r}")

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]

    @property
    def group(self) -> str:
        inside = self.path.removeprefix(UTIL_FOLDER + "/")
        return inside.split("/", 1)[0] if "/" in inside else ""

    @property
    def stem(self) -> str:
        return PurePosixPath(self.name).stem

    @property
    def metric(self) -> str:
        match = _SPLIT.match(self.stem)
        return match["metric"] if match else self.stem

    @property
    def period(self) -> str | None:
        match = _SPLIT.match(self.stem)
        return match["period"] if match else None

    @property
    def table(self) -> str | None:
        """The long table this file feeds: gpu_metrics, node_metrics, ipmi_power or None."""
        if not self.name.endswith(".csv"):
            return None
        if self.group == "ipmi":
            return "ipmi_power"
        if self.group in {"seren", "kalos"}:
            return "node_metrics" if self.metric.startswith("NODE_") else "gpu_metrics"
        return None

    @property
    def id(self) -> str:
        """Registry-style id: ``acme-util/data/utilization/seren/GPU_UTIL.csv``."""
        return f"{SOURCE}/{self.path}"

    def start(self) -> date | None:
        """First day a split file covers (from its name), or None."""
        if self.period is None:
            return None
        parts = [int(p) for p in self.period.split("-")]
        return date(parts[0], parts[1], parts[2] if len(parts) > 2 else 1)

    def remote(self, commit: str) -> RemoteFile:
        """The pinned download: the resolve URL at ``commit``, verified by LFS sha256."""
        # quoted: a '?' or '#' in a name must stay part of the path (and of the cache path)
        url = f"{endpoint()}/datasets/{REPO}/resolve/{commit}/{quote(self.path)}"
        return RemoteFile(
            id=self.id,
            url=url,
            description=f"AcmeTrace {self.group} {self.metric}"
            + (f" ({self.period})" if self.period else ""),
            size=self.size,
            sha256=self.sha256,
            git_blob=None if self.sha256 else self.git_blob,
        )

    @classmethod
    def from_entry(cls, entry: dict) -> HubFile:
        """Parse one tree API entry (``type: file``); a malformed one raises."""
        lfs = entry.get("lfs") or {}
        if not isinstance(lfs, dict):
            raise FetchError(f"Hub entry {entry.get('path')!r} has a malformed 'lfs' field")
        size = lfs.get("size", entry.get("size", 0))
        return cls(
            path=entry.get("path"),  # type: ignore[arg-type]  # checked by __post_init__
            size=size,
            sha256=lfs.get("oid"),
            git_blob=entry.get("oid"),
        )


@dataclass(frozen=True)
class Manifest:
    """The file list of one folder at one commit."""

    repo: str
    revision: str
    commit: str
    folder: str
    files: tuple[HubFile, ...]
    listed_at: str = ""

    @property
    def total_size(self) -> int:
        return sum(f.size for f in self.files)

    def file(self, path_or_id: str) -> HubFile:
        """The file with this repo path or id; the error suggests close names."""
        for f in self.files:
            if path_or_id in (f.path, f.id):
                return f
        close = [f.path for f in self.files if path_or_id.rsplit("/", 1)[-1] in f.path][:5]
        hint = f"did you mean: {', '.join(close)}" if close else "see `mltraces list acme-util`"
        raise KeyError(f"{path_or_id!r} is not in {self.repo}@{self.commit[:12]}; {hint}")

    def remote_files(self) -> list[RemoteFile]:
        """Every file as a pinned RemoteFile (for fetch_file)."""
        return [f.remote(self.commit) for f in self.files]

    def pooch(self) -> Any:
        """A :class:`pooch.Pooch` over this list (LFS sha256 pins, resolve URLs at the commit).

        >>> manifest().pooch().fetch("seren/GPU_UTIL.csv")        # doctest: +SKIP
        """
        from mltraces.download import pooch_for_files

        return pooch_for_files(self.remote_files())

    def groups(self) -> list[str]:
        return sorted({f.group for f in self.files if f.table})

    def metrics(self, group: str | None = None) -> list[str]:
        return sorted({f.metric for f in self.files if f.table and group in (None, f.group)})

    def to_json(self) -> dict:
        return {
            "repo": self.repo,
            "revision": self.revision,
            "commit": self.commit,
            "folder": self.folder,
            "listed_at": self.listed_at,
            "files": [
                {"path": f.path, "size": f.size, "sha256": f.sha256, "git_blob": f.git_blob}
                for f in self.files
            ],
        }

    @classmethod
    def from_json(cls, data: dict, revision: str | None = None) -> Manifest:
        """Read a cached file list, checking it as strictly as a fresh one."""
        commit = data["commit"]
        if not isinstance(commit, str) or not _COMMIT.match(commit):
            raise FetchError(f"file list names a malformed commit {commit!r}")
        folder = data["folder"]
        files = tuple(HubFile(**f) for f in data["files"])
        _check_under(files, folder)
        return cls(
            repo=data["repo"],
            revision=revision or data["revision"],
            commit=commit,
            folder=folder,
            files=files,
            listed_at=data.get("listed_at", ""),
        )


def _check_under(files: tuple[HubFile, ...], folder: str) -> None:
    """Every file lies under ``folder`` (the list is of that folder, nothing else)."""
    relative_parts(folder, "Hub folder")
    outside = [f.path for f in files if not f.path.startswith(folder + "/")]
    if outside:
        raise FetchError(f"file list of {folder} holds {outside[0]!r}, outside that folder")


# --------------------------------------------------------------------------- HTTP


def _mirrored(url: str) -> str:
    """Where to ask for ``url``: itself, or its copy under ``MLTRACES_MIRROR``."""
    prefix = config.mirror()
    if prefix is None:
        return url
    parts = urlsplit(url)
    segments = url_parts(url, "Hub API URL")
    if urlsplit(prefix).scheme not in {"http", "https"}:
        return str(Path(prefix).expanduser().joinpath(*segments))
    mapped = f"{prefix}/{'/'.join(segments)}"
    return mapped + (f"?{parts.query}" if parts.query else "")


def _checked_next(url: str | None) -> str | None:
    """A next-page link, only if it stays on this repository's tree API."""
    if url is None:
        return None
    parts, hub = urlsplit(url), urlsplit(endpoint())
    if (parts.scheme, parts.netloc) != (hub.scheme, hub.netloc) or not parts.path.startswith(
        f"/api/datasets/{REPO}/tree/"
    ):
        raise FetchError(
            f"the Hub's tree API pointed its next page at {url[:200]!r}, off "
            f"{endpoint()}/api/datasets/{REPO}/tree/; refusing it"
        )
    return url


def _get_json(url: str) -> tuple[object, str | None]:
    """GET a JSON document (retrying transient failures); returns it and the next-page URL."""
    from mltraces.download import hosts, http

    source = _mirrored(url)
    if urlsplit(source).scheme not in {"http", "https"}:
        return _read_json_file(Path(source)), None
    config.check_settings()  # a bad setting is one line now, never a retried "network" failure
    hosts.check(source)
    deadline = http.Deadline(config.download_timeout(), source)
    failures = []
    for attempt in range(1, ATTEMPTS + 1):
        try:
            answer = http.get_document(source, limit=MAX_JSON_BYTES, deadline=deadline)
        except (http.TooLong, http.DeadlineExceeded, ConfigError):
            raise
        except Exception as error:  # network trouble: classify without importing requests
            failures.append(http.describe_failure(source, error))
            if http.is_unreachable(error):
                hosts.mark_down(source, http.connect_reason(error))
                break
            deadline.sleep(0.2 * attempt)
            continue
        hosts.mark_up(source)
        if answer.status in {401, 403, 404}:
            raise FetchError(
                f"the Hub answered HTTP {answer.status} for {source}: "
                f"{answer.body[:200]!r}. Check MLTRACES_HF_REVISION and the repository name"
            )
        if answer.status >= 400:
            failures.append(f"HTTP {answer.status} from {source}")
            deadline.sleep(0.2 * attempt)
            continue
        try:
            return json.loads(answer.body), _checked_next(answer.next_url)
        except (ValueError, RecursionError) as error:
            failures.append(f"not JSON ({error})")
    raise FetchError(f"could not read {source} ({len(failures)} attempts): " + "; ".join(failures))


def _read_json_file(path: Path) -> object:
    try:
        if path.stat().st_size > MAX_JSON_BYTES:
            raise FetchError(f"{path} is larger than {MAX_JSON_BYTES:,} bytes; not reading it")
        return json.loads(path.read_text())
    except (OSError, ValueError, RecursionError) as error:
        raise FetchError(f"mirror directory has no usable {path}: {error}") from error


def _write_json(path: Path, data: object) -> None:
    """Write JSON atomically (temp file in the same folder, then rename)."""
    from mltraces.download.archives import disk_error

    path = _in_cache(path)
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(data, indent=1))
        os.replace(tmp, path)
    except OSError as error:
        raise disk_error(error, f"saving {path.name}", path.parent) from error
    finally:
        tmp.unlink(missing_ok=True)


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


# --------------------------------------------------------------------------- revision


def _ref_path(revision: str) -> Path:
    safe = quote(revision, safe="")
    try:
        check_segment(safe, revision, "revision")
    except MltracesError:
        raise ConfigError(
            f"revision {revision!r} is not a branch, tag or commit name; "
            "set MLTRACES_HF_REVISION (or --revision) to e.g. main or a 40-hex commit"
        ) from None
    return _in_cache(_hub_cache() / "refs" / f"{safe}.json")


def resolve_commit(revision: str | None = None, *, refresh: bool = False) -> str:
    """The commit a revision points to; cached, so every run uses the same files.

    A 40-hex revision is already a commit. A branch or tag is resolved once and
    remembered; pass ``refresh=True`` (``mltraces list acme-util --refresh``) to
    follow a moved branch.
    """
    revision = revision or config.hf_revision()
    if _COMMIT.match(revision):
        return revision
    cached = _ref_path(revision)
    if cached.is_file() and not refresh:
        commit = _read_cached(cached).get("commit")
        if isinstance(commit, str) and _COMMIT.match(commit):
            return commit
        log.warning("ignoring %s: it names no commit", cached)
    if config.offline():
        raise OfflineError(
            f"the commit of {REPO}@{revision} is not cached and MLTRACES_OFFLINE is set. "
            "Unset MLTRACES_OFFLINE once (e.g. `mltraces list acme-util`) or set "
            "MLTRACES_HF_REVISION to a 40-hex commit whose manifest is cached"
        )
    info, _ = _get_json(f"{endpoint()}/api/datasets/{REPO}/revision/{quote(revision, safe='')}")
    commit = info.get("sha") if isinstance(info, dict) else None
    if not isinstance(commit, str) or not _COMMIT.match(commit):
        raise FetchError(f"the Hub's revision API gave no commit sha for {REPO}@{revision}")
    _write_json(cached, {"revision": revision, "commit": commit, "resolved_at": _now()})
    log.info("%s@%s is commit %s", REPO, revision, commit)
    return commit


# --------------------------------------------------------------------------- manifest


def _manifest_path(commit: str, folder: str) -> Path:
    relative_parts(folder, "Hub folder")
    return _in_cache(_hub_cache() / "tree" / commit / f"{folder.replace('/', '__')}.json")


def _read_cached(path: Path) -> dict:
    """A cached JSON answer; an unreadable one is reported with the file to delete."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError, RecursionError) as error:
        raise FetchError(f"cannot read {path} ({error}); delete it and run again") from error
    if not isinstance(data, dict):
        raise FetchError(f"{path} is not a JSON object; delete it and run again")
    return data


def cached_manifests(folder: str = UTIL_FOLDER) -> list[Manifest]:
    """Every file list already in the cache (any commit); never touches the network."""
    found = []
    for path in sorted(_hub_cache().glob(f"tree/*/{folder.replace('/', '__')}.json")):
        try:
            found.append(Manifest.from_json(json.loads(path.read_text())))
        except (OSError, ValueError, RecursionError, KeyError, TypeError, MltracesError) as error:
            log.warning("ignoring unreadable file list %s (%s)", path, error)
    return found


def _list_tree(commit: str, folder: str) -> list[dict]:
    """Every entry under ``folder`` at ``commit``, following pagination."""
    url: str | None = f"{endpoint()}/api/datasets/{REPO}/tree/{commit}/{folder}?recursive=true"
    entries: list[dict] = []
    pages = 0
    while url:
        page, url = _get_json(url)
        if not isinstance(page, list) or not all(isinstance(e, dict) for e in page):
            raise FetchError(f"the Hub's tree API did not return a list of entries for {folder}")
        entries.extend(page)
        pages += 1
        if pages > 10_000:
            raise FetchError("the Hub's tree API kept paginating; giving up")
    return entries


def manifest(
    revision: str | None = None, *, folder: str = UTIL_FOLDER, refresh: bool = False
) -> Manifest:
    """The recursive file list of ``folder`` (sizes, sha256), from cache or the Hub.

    Examples
    --------
    >>> m = manifest()                                   # doctest: +SKIP
    >>> m.commit, len(m.files), m.total_size / 1e9       # doctest: +SKIP
    """
    revision = revision or config.hf_revision()
    commit = resolve_commit(revision, refresh=refresh)
    path = _manifest_path(commit, folder)
    if path.is_file():
        try:
            return Manifest.from_json(_read_cached(path), revision)
        except (KeyError, TypeError, MltracesError) as error:
            raise FetchError(
                f"the cached file list {path} is invalid ({error}); delete it and run "
                "`mltraces list acme-util` again"
            ) from error
    if config.offline():
        raise OfflineError(
            f"the file list of {REPO}@{commit[:12]} is not cached and MLTRACES_OFFLINE is set. "
            "Run `mltraces list acme-util` once online (or with MLTRACES_MIRROR)"
        )
    entries = _list_tree(commit, folder)
    try:
        files = tuple(
            sorted(
                (HubFile.from_entry(e) for e in entries if e.get("type") == "file"),
                key=lambda f: f.path,
            )
        )
        _check_under(files, folder)
    except MltracesError as error:
        raise FetchError(
            f"the Hub's file list of {REPO}@{commit[:12]} is unsafe: {error}. Refusing the "
            "whole list (nothing was written); if MLTRACES_MIRROR or MLTRACES_HF_ENDPOINT "
            "points at a copy of the Hub, check it"
        ) from error
    result = Manifest(REPO, revision, commit, folder, files, _now())
    _write_json(path, result.to_json())
    return result
