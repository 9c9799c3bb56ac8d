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
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from dataclasses import dataclass
from datetime import date
from pathlib import Path, PurePosixPath
from urllib.parse import urlsplit

from mltraces import config
from mltraces.errors import ConfigError, FetchError, OfflineError
from mltraces.registry import RemoteFile

log = logging.getLogger(__name__)

REPO = "Qinghao/AcmeTrace"
DEFAULT_ENDPOINT = "https://huggingface.co"
UTIL_FOLDER = "data/utilization"
SOURCE = "acme-util"
ATTEMPTS = 3
TIMEOUT_S = 60.0
_COMMIT = re.compile(r"^[0-9a-f]{40}$")
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
    return config.cache_dir() / "hub" / host / "datasets" / REPO


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
        url = f"{endpoint()}/datasets/{REPO}/resolve/{commit}/{self.path}"
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
        """Parse one tree API entry (``type: file``)."""
        lfs = entry.get("lfs") or {}
        return cls(
            path=entry["path"],
            size=int(lfs.get("size", entry.get("size", 0))),
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
        return cls(
            repo=data["repo"],
            revision=revision or data["revision"],
            commit=data["commit"],
            folder=data["folder"],
            files=tuple(HubFile(**f) for f in data["files"]),
            listed_at=data.get("listed_at", ""),
        )


# --------------------------------------------------------------------------- HTTP


def _mirrored(url: str) -> str:
    """Where to ask for ``url``: itself, or its copy under ``MLTRACES_MIRROR``."""
    prefix = config.mirror()
    if prefix is None:
        return url
    parts = urlsplit(url)
    mapped = f"{prefix}/{parts.netloc}{parts.path}"
    if urlsplit(prefix).scheme in {"http", "https"} and parts.query:
        mapped += f"?{parts.query}"
    return mapped


def _get_json(url: str) -> tuple[object, str | None]:
    """GET a JSON document (retrying transient failures); returns it and the next-page URL."""
    source = _mirrored(url)
    if urlsplit(source).scheme not in {"http", "https"}:
        return _read_json_file(Path(source)), None
    import requests

    failures = []
    for attempt in range(1, ATTEMPTS + 1):
        try:
            response = requests.get(source, timeout=TIMEOUT_S)
            if response.status_code in {401, 403, 404}:
                raise FetchError(
                    f"the Hub answered HTTP {response.status_code} for {source}: "
                    f"{response.text[:200]!r}. Check MLTRACES_HF_REVISION and the repository name"
                )
            response.raise_for_status()
            return response.json(), response.links.get("next", {}).get("url")
        except (requests.RequestException, ValueError) as error:
            failures.append(f"{type(error).__name__}: {error}")
            time.sleep(0.2 * attempt)
    raise FetchError(f"could not read {source} after {ATTEMPTS} attempts: " + "; ".join(failures))


def _read_json_file(path: Path) -> object:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise FetchError(f"mirror directory has no usable {path}: {error}") from error


def _write_json(path: Path, data: object) -> None:
    """Write JSON atomically (temp file in the same folder, then rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1))
    os.replace(tmp, path)


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


# --------------------------------------------------------------------------- revision


def _ref_path(revision: str) -> Path:
    safe = revision.replace("/", "%2F")
    return _hub_cache() / "refs" / f"{safe}.json"


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
        return json.loads(cached.read_text())["commit"]
    if config.offline():
        raise OfflineError(
            f"the commit of {REPO}@{revision} is not cached and MLTRACES_OFFLINE is set. "
            "Unset MLTRACES_OFFLINE once (e.g. `mltraces list acme-util`) or set "
            "MLTRACES_HF_REVISION to a 40-hex commit whose manifest is cached"
        )
    info, _ = _get_json(f"{endpoint()}/api/datasets/{REPO}/revision/{revision}")
    commit = info.get("sha") if isinstance(info, dict) else None
    if not isinstance(commit, str) or not _COMMIT.match(commit):
        raise FetchError(f"the Hub's revision API gave no commit sha for {REPO}@{revision}")
    _write_json(cached, {"revision": revision, "commit": commit, "resolved_at": _now()})
    log.info("%s@%s is commit %s", REPO, revision, commit)
    return commit


# --------------------------------------------------------------------------- manifest


def _manifest_path(commit: str, folder: str) -> Path:
    return _hub_cache() / "tree" / commit / f"{folder.replace('/', '__')}.json"


def cached_manifests(folder: str = UTIL_FOLDER) -> list[Manifest]:
    """Every file list already in the cache (any commit); never touches the network."""
    found = []
    for path in sorted(_hub_cache().glob(f"tree/*/{folder.replace('/', '__')}.json")):
        try:
            found.append(Manifest.from_json(json.loads(path.read_text())))
        except (OSError, ValueError, KeyError, TypeError):
            log.warning("ignoring unreadable file list %s", path)
    return found


def _list_tree(commit: str, folder: str) -> list[dict]:
    """Every entry under ``folder`` at ``commit``, following pagination."""
    url: str | None = f"{endpoint()}/api/datasets/{REPO}/tree/{commit}/{folder}?recursive=true"
    entries: list[dict] = []
    pages = 0
    while url:
        page, url = _get_json(url)
        if not isinstance(page, list):
            raise FetchError(f"the Hub's tree API did not return a list for {folder}")
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
        return Manifest.from_json(json.loads(path.read_text()), revision)
    if config.offline():
        raise OfflineError(
            f"the file list of {REPO}@{commit[:12]} is not cached and MLTRACES_OFFLINE is set. "
            "Run `mltraces list acme-util` once online (or with MLTRACES_MIRROR)"
        )
    entries = _list_tree(commit, folder)
    files = tuple(
        sorted(
            (HubFile.from_entry(e) for e in entries if e.get("type") == "file"),
            key=lambda f: f.path,
        )
    )
    result = Manifest(REPO, revision, commit, folder, files, _now())
    _write_json(path, result.to_json())
    return result
