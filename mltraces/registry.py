"""The registry: every upstream source and file, read from the source folders.

A source is one public release (Zeus, ITP, AcmeTrace, ...) and lives in its own
folder, ``mltraces/sources/<name>/``, found by scanning: ``source.json`` holds
the facts (files with URL, size and hashes; SPDX license; pins; anomalies;
expected row counts; published figures), ``citation.bib`` the BibTeX, and
optional modules hold the source's own code (``readers.py``, ``figures.py``,
analyses). Nothing else keeps a list of sources or files, so downloads, the
catalog, the CLI and the tests all read the same facts, and adding a trace is
adding a folder (plus its table schemas in ``schemas/<name>/``).

The loader holds every folder to the rules, each broken one named with its fix:
a name that is a SQL identifier (not ``mltraces``, the catalog's own schema); a
BibTeX entry with a key, title and year in ``citation.bib``; a licence from
:data:`SPDX_LICENSES` (or ``NOASSERTION`` with a ``license_note`` saying what the
publisher states); every remote file pinned by a hash and by a URL that carries a
commit of ``pins`` (or, where the host has no commits, by its sha256), or, where the
publisher gives no hash at all, by its first download (``"pin": "first-use"``).

A user's own trace is a source too: a folder with the same files under
``$MLTRACES_SOURCES`` (else ``<the platform's user config dir>/mltraces/sources``),
its table schemas in its own ``schemas/`` folder, and files that
are ``"path"`` entries beside its ``source.json`` (a file or a folder of them)
instead of downloads: checked against their pinned hash when one is given,
``unverified`` otherwise, and served, validated and replayed like any other.

>>> "zeus" in all_sources()
True
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import urlsplit

from mltraces.errors import RegistryError
from mltraces.names import canonical

SOURCES_DIR = Path(__file__).resolve().parent / "sources"
SOURCE_FILE = "source.json"
CITATION_FILE = "citation.bib"

_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_SHA1 = re.compile(r"^[0-9a-f]{40}$")
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
# SPDX identifiers of the licenses public data sets are released under; a source
# with another license must be checked by a human before it is added here.
SPDX_LICENSES = frozenset({
    "Apache-2.0", "MIT", "BSD-2-Clause", "BSD-3-Clause", "CC0-1.0", "CC-BY-4.0",
    "CC-BY-SA-4.0", "CC-BY-NC-4.0", "CC-BY-NC-SA-4.0", "ODC-By-1.0", "ODbL-1.0",
    "PDDL-1.0", "CDLA-Permissive-2.0", "CDLA-Sharing-1.0",
})
#: SPDX's word for "the publisher states no licence"; a source using it says why in license_note
NO_LICENSE = "NOASSERTION"
#: names no source may take: the catalog's own DuckDB schema
RESERVED_NAMES = frozenset({"mltraces"})
_BIBTEX = re.compile(r"^@\w+\s*\{\s*[^,\s{}]+\s*,")
_COMMIT = re.compile(r"@([0-9a-f]{7,40})$")


#: archive formats a registry file may have; "file" is anything read as it is
ARCHIVE_KINDS = ("tar.gz", "zip")


class Member(NamedTuple):
    """One member of a registry archive: its name and, where published, size and sha256."""

    name: str
    size: int | None = None
    sha256: str | None = None


@dataclass(frozen=True)
class RemoteFile:
    """One upstream file, pinned by URL and hash, or a local file of a user's source.

    ``sha256`` and ``git_blob`` (the sha1 of git's ``blob <size>\\0`` header plus
    the bytes, as GitHub's tree API publishes it) are both accepted; at least one
    is required so a downloaded file is never used unverified. A local file
    (``path``: beside its source's ``source.json``, a file or a folder) may have
    neither: it is then served as ``unverified``.

    A download whose publisher gives no hash at all (Azure's 2024 week-long traces, the
    BurstGPT release assets) says ``"pin": "first-use"`` (``first_use``): the first
    download that passes every other check records its size, sha256 and git blob id in
    the cache (:mod:`mltraces.download.firstuse`), and every later download or change of
    the bytes is held to that record.

    An archive (``kind`` ``tar.gz`` or ``zip``) is unpacked into the cache after
    verification, unless ``unpack`` is false: then the tables that need it read
    one member at a time as a stream (Philly's 1 GB tarball unpacks to 6.6 GB).
    ``members`` lists what it holds (name, size, sha256 where published):
    an archive that lists members may hold nothing else.
    """

    id: str
    url: str
    description: str
    size: int | None = None
    sha256: str | None = None
    git_blob: str | None = None
    mirrors: tuple[str, ...] = ()
    kind: str = "file"  # "file", or an archive: "tar.gz" / "zip"
    members: tuple[Member, ...] = ()
    unpack: bool = True  # an archive: unpacked after verification, else read member by member
    path: Path | None = None  # a local file or folder of a user's source (no download)
    first_use: bool = False  # no hash is published: the first verified download pins it

    def __post_init__(self) -> None:
        # (name, size) pairs are members with a size only
        object.__setattr__(self, "members", tuple(Member(*m) for m in self.members))
        problems = []
        if self.path is not None:
            if self.url or self.mirrors or self.kind != "file":
                problems.append("a local path has no url, mirrors or kind")
        elif not self.sha256 and not self.git_blob and not self.first_use:
            problems.append("needs sha256 or git_blob (or \"pin\": \"first-use\" when the "
                            "publisher gives no hash)")
        if self.sha256 and not _SHA256.match(self.sha256):
            problems.append(f"sha256 {self.sha256!r} is not 64 lower-case hex digits")
        if self.git_blob and not _SHA1.match(self.git_blob):
            problems.append(f"git_blob {self.git_blob!r} is not 40 lower-case hex digits")
        for url in (self.url, *self.mirrors) if self.path is None else ():
            if urlsplit(url).scheme != "https":
                problems.append(f"url {url!r} is not https")
        if self.kind not in {"file", *ARCHIVE_KINDS}:
            problems.append(f"kind {self.kind!r} is not one of 'file', "
                            + ", ".join(repr(k) for k in ARCHIVE_KINDS))
        if self.members and not self.archive:
            problems.append(f"members are listed but kind {self.kind!r} is not an archive")
        if not self.unpack and not self.archive:
            problems.append("unpack: false is for archives only")
        for name, size, sha256 in self.members:
            if not isinstance(name, str) or (size is None and sha256 is None):
                problems.append(f"member {name!r}: give its size in bytes, its sha256 or both")
            if size is not None and (not isinstance(size, int) or size < 0):
                problems.append(f"member {name!r}: size {size!r} is not a number of bytes")
            if sha256 is not None and not _SHA256.match(str(sha256)):
                problems.append(f"member {name!r}: sha256 {sha256!r} is not 64 hex digits")
        if problems:
            raise ValueError(f"registry entry {self.id!r}: " + "; ".join(problems))

    @property
    def archive(self) -> bool:
        """True for a tarball or zip file."""
        return self.kind in ARCHIVE_KINDS

    @property
    def unpacked(self) -> bool:
        """True for an archive that is unpacked into the cache once verified."""
        return self.archive and self.unpack

    @property
    def source(self) -> str:
        """Name of the source this file belongs to (the id's first part)."""
        return self.id.split("/", 1)[0]

    @property
    def local(self) -> bool:
        """True for a file of a user's source, read where it is (never downloaded)."""
        return self.path is not None

    @property
    def pinned(self) -> bool:
        """True when a hash says what the bytes must be."""
        return bool(self.sha256 or self.git_blob)

    @property
    def filename(self) -> str:
        """Base name of the file as published (a local file's own name)."""
        if self.path is not None:
            return self.path.name
        return urlsplit(self.url).path.rsplit("/", 1)[-1]

    @property
    def hash_kind(self) -> str:
        """The hash used to verify: ``sha256`` when known, else ``git-blob-sha1``; a first-use
        file before its first download: ``first-use``."""
        if self.sha256:
            return "sha256"
        return "git-blob-sha1" if self.git_blob else "first-use"

    @property
    def urls(self) -> tuple[str, ...]:
        """Primary URL first, then the alternatives that publish the same bytes."""
        return (self.url, *self.mirrors) if self.path is None else ()


#: Most rows a table may be promised (``expected_rows``): DuckDB counts in 64-bit integers.
MAX_ROWS = 2**63 - 1


def _is_count(value: Any) -> bool:
    """A row count: a whole number (not a boolean, not a float) a table can hold."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_ROWS


@dataclass(frozen=True)
class Source:
    """One public trace release: its files, license and citation."""

    name: str
    title: str
    description: str
    homepage: str
    license: str
    citation: str
    files: tuple[RemoteFile, ...]
    anomalies: tuple[str, ...] = ()
    pins: dict[str, str] = field(default_factory=dict)
    expected_rows: dict[str, int] = field(default_factory=dict)
    published: dict[str, Any] = field(default_factory=dict)
    folder: Path | None = None
    license_note: str = ""

    def __post_init__(self) -> None:
        problems = []
        if not _NAME.match(self.name):
            problems.append("name must be lower-case letters, digits and '_' (it is the SQL "
                            "schema of its tables and a Python package: alibaba_pai, not "
                            "alibaba-pai)")
        if self.name in RESERVED_NAMES:
            problems.append(f"name {self.name!r} is reserved (the catalog's own tables)")
        if self.license == NO_LICENSE:
            if not self.license_note:
                problems.append(f"license {NO_LICENSE} needs a license_note saying what the "
                                "publisher states about use")
        elif self.license not in SPDX_LICENSES:
            problems.append(f"license {self.license!r} is not one of {sorted(SPDX_LICENSES)} "
                            f"(or {NO_LICENSE} with a license_note when none is stated)")
        if "@" not in self.citation:
            problems.append("citation is not a BibTeX entry")
        for f in self.files:
            if f.source != self.name:
                problems.append(f"file {f.id!r} does not start with '{self.name}/'")
        ids = [f.id for f in self.files]
        if len(ids) != len(set(ids)):
            problems.append("duplicate file ids")
        for table, rows in self.expected_rows.items():
            if not table.startswith(self.name + ".") or not _is_count(rows):
                shown = repr(rows) if len(repr(rows)) <= 40 else f"{repr(rows)[:37]}..."
                problems.append(f"expected_rows entry {table!r}: {shown} is not "
                                f"'{self.name}.TABLE': a whole number from 0 to {MAX_ROWS:,}")
        if problems:
            raise ValueError(f"source {self.name!r}: " + "; ".join(problems))

    def file(self, file_id: str) -> RemoteFile:
        """The file with this id (``zeus/summary_train.csv``) or base name."""
        for f in self.files:
            if file_id in (f.id, f.filename):
                return f
        raise KeyError(file_id)


# --------------------------------------------------------------------------- source folders

_FILE_KEYS = {"name", "url", "mirrors", "size", "sha256", "git_blob", "kind", "description",
              "members", "unpack", "path", "pin"}
#: the one value of a file's ``pin``: no hash is published, the first verified download pins it
FIRST_USE = "first-use"
_SOURCE_KEYS = {"name", "title", "description", "homepage", "license", "license_note", "pins",
                "files", "anomalies", "expected_rows", "published"}


def _file_from_json(source: str, entry: Any, where: str, folder: Path) -> RemoteFile:
    if not isinstance(entry, dict) or (isinstance(entry.get("url"), str)
                                       == isinstance(entry.get("path"), str)):
        raise RegistryError(f"{where}: each file needs a 'url' (a download) or a 'path' (a file "
                            "or folder beside source.json), not both")
    unknown = set(entry) - _FILE_KEYS
    if unknown:
        raise RegistryError(f"{where}: file {entry.get('url') or entry['path']!r} has unknown "
                            f"keys {sorted(unknown)}")
    members = entry.get("members", {})
    entry = _first_use(entry, where)
    if not isinstance(members, dict):
        raise RegistryError(f"{where}: file {entry.get('url')!r}: members must map name to size")
    if "path" in entry:
        path = _local_file(entry["path"], folder, where)
        name = entry.get("name") or path.name
        fields = {k: v for k, v in entry.items() if k not in {"name", "path", "members"}}
        return RemoteFile(id=f"{source}/{name}", url="", path=path,
                          **{"description": "", **fields})
    # the id is SOURCE/NAME; NAME defaults to the URL's base name and may carry
    # folders when two files share one (throughputs_A100/bert.csv, throughputs_T4/bert.csv)
    name = entry.get("name") or urlsplit(entry["url"]).path.rsplit("/", 1)[-1]
    fields = {k: v for k, v in entry.items() if k not in {"mirrors", "name", "members"}}
    return RemoteFile(id=f"{source}/{name}", mirrors=tuple(entry.get("mirrors", ())),
                      members=tuple(_member(n, v, where) for n, v in sorted(members.items())),
                      **{"description": "", **fields})


def _first_use(entry: dict, where: str) -> dict:
    """``"pin": "first-use"`` as ``first_use=True``: only for a download with no hash."""
    if "pin" not in entry:
        return entry
    entry = dict(entry)
    pin = entry.pop("pin")
    shown = entry.get("url") or entry.get("path")
    if pin != FIRST_USE:
        raise RegistryError(f"{where}: file {shown!r}: pin {pin!r} is not {FIRST_USE!r} (the "
                            "only pin a file names; hashes go in sha256 / git_blob)")
    if "path" in entry or entry.get("sha256") or entry.get("git_blob"):
        raise RegistryError(f"{where}: file {shown!r}: \"pin\": \"{FIRST_USE}\" is for a "
                            "download whose publisher gives no hash; a hash or a local path "
                            "pins the file already")
    entry["first_use"] = True
    return entry


def _member(name: str, value: Any, where: str) -> Member:
    """A ``members`` entry: ``"name": size`` or ``"name": {"size": ..., "sha256": ...}``."""
    if isinstance(value, dict):
        unknown = set(value) - {"size", "sha256"}
        if unknown:
            raise RegistryError(f"{where}: member {name!r} has unknown keys {sorted(unknown)}")
        return Member(name, value.get("size"), value.get("sha256"))
    return Member(name, value)


def _local_file(text: str, folder: Path, where: str) -> Path:
    """A ``path`` entry: relative, inside the source folder (a file or folder there)."""
    relative = Path(text)
    if relative.is_absolute() or ".." in relative.parts or not relative.parts:
        raise RegistryError(f"{where}: path {text!r} must be a file or folder beside "
                            "source.json (relative, no '..')")
    return folder.resolve() / relative


def _citation_problem(citation: str) -> str | None:
    if not _BIBTEX.match(citation) or not re.search(r"\btitle\s*=", citation) or not re.search(
            r"\byear\s*=", citation):
        return (f"{CITATION_FILE} must be one BibTeX entry with a key, a title and a year "
                "(@inproceedings{key, title = {...}, year = {...}, ...})")
    return None


def _pin_problems(pins: Any, files: tuple[RemoteFile, ...]) -> list[str]:
    """Every remote file's URL names a pinned commit, or its sha256 pins the bytes."""
    if not isinstance(pins, dict) or not all(isinstance(v, str) and v for v in pins.values()):
        return ["pins must map a host to 'owner/repo@commit' (or a described location)"]
    remote = [f for f in files if not f.local]
    if remote and not pins:
        return ["pins is empty: name the commit the files' URLs carry (github: owner/repo@sha)"]
    commits = {m.group(1) for v in pins.values() if (m := _COMMIT.search(v))}
    return [f"file {f.id}: its URL carries none of the pinned commits {sorted(commits)} and "
            "it has no sha256 to pin its bytes; pin the URL to a commit or add the sha256"
            for f in remote if not commits & set(urlsplit(f.url).path.split("/")) and not f.sha256
            and not f.first_use]


def load_source(folder: str | Path) -> Source:
    """Read one source folder (``source.json`` + ``citation.bib``); every problem is named."""
    folder = Path(folder)
    where = str(folder / SOURCE_FILE)
    try:
        raw = json.loads((folder / SOURCE_FILE).read_text(encoding="utf-8"))
        citation = (folder / CITATION_FILE).read_text(encoding="utf-8").strip()
    except (OSError, ValueError, RecursionError) as error:
        raise RegistryError(f"cannot read source folder {folder}: {error}") from error
    if not isinstance(raw, dict):
        raise RegistryError(f"{where}: expected a JSON object")
    unknown = set(raw) - _SOURCE_KEYS
    missing = {"name", "title", "description", "homepage", "license", "files"} - set(raw)
    if unknown or missing:
        raise RegistryError(f"{where}: unknown keys {sorted(unknown)}, missing {sorted(missing)}")
    if raw["name"] != folder.name:
        raise RegistryError(f"{where}: name {raw['name']!r} differs from the folder name")
    try:
        files = tuple(_file_from_json(raw["name"], e, where, folder) for e in raw["files"])
        problems = [p for p in [_citation_problem(citation),
                                *_pin_problems(raw.get("pins", {}), files)] if p]
        if problems:
            raise RegistryError(f"{where}: " + "; ".join(problems))
        return Source(
            name=raw["name"], title=raw["title"], description=raw["description"],
            homepage=raw["homepage"], license=raw["license"], citation=citation, files=files,
            anomalies=tuple(raw.get("anomalies", ())), pins=dict(raw.get("pins", {})),
            expected_rows=dict(raw.get("expected_rows", {})),
            published=dict(raw.get("published", {})), folder=folder,
            license_note=str(raw.get("license_note", "")),
        )
    except (TypeError, ValueError) as error:
        if isinstance(error, RegistryError):
            raise
        raise RegistryError(f"{where}: {error}") from error


def source_folders() -> list[Path]:
    """Every source folder, by name: the shipped ones (``mltraces/sources``), then a user's
    (``$MLTRACES_SOURCES`` or the platform's config folder; see :func:`user_folders`)."""
    shipped = sorted(p.parent for p in SOURCES_DIR.glob(f"*/{SOURCE_FILE}"))
    names = {p.name for p in shipped}
    return shipped + [p for p in user_folders() if p.name not in names]


def user_folders() -> list[Path]:
    """Usable source folders of a user's own traces: ``<dir>/<name>/`` in each folder of
    ``MLTRACES_SOURCES`` (``os.pathsep``-separated), else in ``<config dir>/sources``, that
    hold what a source needs; the others are :func:`broken_sources`."""
    return [folder for folder, problem in _user_scan() if problem is None]


def broken_sources() -> dict[str, str]:
    """A user's source folders that cannot be used, by name, each with a one-line reason
    naming what is missing or wrong and the fix. They never stop other sources' commands:
    listings and ``mltraces.status`` show them, and naming one is that one-line error."""
    if _override is not None:
        return {}
    broken = {folder.name: problem for folder, problem in _user_scan() if problem is not None}
    for folder in user_folders():
        try:
            _loaded(folder)
        except RegistryError as error:
            broken[folder.name] = str(error)
    return broken


def user_source_candidates_by_name() -> dict[str, Path]:
    """Every folder meant as a user's source, usable or not, by name."""
    return {folder.name: folder for folder, _ in _user_scan()}


def source_problem(name: str) -> str | None:
    """Why ``name`` (a source, or the source part of ``source.table``) is a broken user
    source, or None: an "unknown table" error for such a name says this instead."""
    source = canonical(name).split(".", 1)[0]
    return broken_sources().get(source) if _NAME.match(source) else None


#: what a user's source folder must hold (a shipped one keeps its schemas in schemas/<name>/)
USER_SOURCE_PARTS = (SOURCE_FILE, CITATION_FILE, "schemas/")


def _user_scan() -> list[tuple[Path, str | None]]:
    """Every candidate user folder with why it cannot be used (None when it can)."""
    from mltraces import config

    shipped = {p.parent.name for p in SOURCES_DIR.glob(f"*/{SOURCE_FILE}")}
    found: dict[str, Path] = {}
    scanned = []
    for folder in config.user_source_candidates():
        name = folder.name
        problem = _missing_parts(folder)
        if name in shipped or name in found:
            problem = (f"user source folder {folder}: a source named {name!r} exists already "
                       f"({found.get(name) or SOURCES_DIR / name}); rename the folder (and "
                       "the name in its source.json)")
        if problem is None:
            found[name] = folder
        scanned.append((folder, problem))
    return scanned


def _missing_parts(folder: Path) -> str | None:
    """Which of :data:`USER_SOURCE_PARTS` a user's folder lacks, with what each holds."""
    missing = [part for part in USER_SOURCE_PARTS
               if not ((folder / part).is_dir() if part.endswith("/")
                       else (folder / part).is_file())]
    if not missing:
        return None
    what = {SOURCE_FILE: "the source's card: files, licence, pins",
            CITATION_FILE: "one BibTeX entry with a key, title and year",
            "schemas/": "one Table Schema per table, schemas/<table>.json"}
    return (f"user source folder {folder} lacks {', '.join(missing)} ("
            + "; ".join(f"{part}: {what[part]}" for part in missing)
            + "); see the README's 'Your own cluster's trace, as a source'")


#: The only Python files of a user's source folder that ever run (README, "Trust").
USER_MODULES = ("readers", "synthetic")


def source_module(name: str, module: str) -> Any | None:
    """A source folder's own module (``readers``, ``synthetic``) or None when it has none.

    Shipped sources import as ``mltraces.sources.<name>.<module>``; a user's folder
    is read from its file (as ``mltraces_user_sources.<name>.<module>``), and only
    for the modules of :data:`USER_MODULES`: any other file there (a ``cli.py``) is
    never run.
    """
    import importlib
    import importlib.util
    import sys

    user = next((f for f in user_folders() if f.name == name), None)
    if user is None:  # a shipped source: a module of the package (or none)
        qualified = f"mltraces.sources.{name}.{module}"
        try:
            return importlib.import_module(qualified)
        except ModuleNotFoundError as error:
            if error.name in (qualified, f"mltraces.sources.{name}"):
                return None
            raise
    folder = user
    if module not in USER_MODULES or not (folder / f"{module}.py").is_file():
        return None
    qualified = f"mltraces_user_sources.{name}.{module}"
    if qualified not in sys.modules:
        spec = importlib.util.spec_from_file_location(qualified, folder / f"{module}.py")
        assert spec is not None and spec.loader is not None
        loaded = importlib.util.module_from_spec(spec)
        sys.modules[qualified] = loaded
        spec.loader.exec_module(loaded)
    return sys.modules[qualified]


_override: dict[str, Source] | None = None


@cache
def _scanned() -> dict[str, Source]:
    """Every usable source: the shipped ones (a broken one is a bug: it raises), then the
    user's folders that load (the others are :func:`broken_sources`)."""
    shipped = sorted(p.parent for p in SOURCES_DIR.glob(f"*/{SOURCE_FILE}"))
    found = {folder.name: _loaded(folder) for folder in shipped}
    for folder in user_folders():
        try:
            found.setdefault(folder.name, _loaded(folder))
        except RegistryError:
            continue  # reported by broken_sources()
    return found


@cache
def _loaded(folder: Path) -> Source:
    return load_source(folder)


def _one(name: str) -> Source | None:
    """One source without reading the others (a warm query names one or two)."""
    name = canonical(name)
    if _override is not None:
        return _override.get(name)
    folder = SOURCES_DIR / name
    if _NAME.match(name) and (folder / SOURCE_FILE).is_file():
        return _loaded(folder)
    for folder, problem in _user_scan():
        if folder.name == name:
            if problem is not None:
                raise RegistryError(problem)
            return _loaded(folder)
    return None


def all_sources() -> dict[str, Source]:
    """Every known source by name (the test override when one is active)."""
    return dict(_override) if _override is not None else dict(_scanned())


def get_source(name: str) -> Source:
    """The source called ``name``; the error lists the valid names."""
    found = _one(name)
    if found is None:
        known = ", ".join(all_sources())
        raise KeyError(f"unknown source {name!r}; known sources: {known}") from None
    return found


def all_files() -> dict[str, RemoteFile]:
    """Every registered file by id."""
    return {f.id: f for s in all_sources().values() for f in s.files}


def get_file(file_id: str) -> RemoteFile:
    """The file with this id (``itp/raw-traces.tar.gz``) or base name; the error suggests ids."""
    wanted = canonical(file_id) if "/" in file_id else file_id  # the error says what was typed
    source = _one(wanted.split("/", 1)[0]) if "/" in wanted else None
    for file in source.files if source is not None else ():
        if file.id == wanted:
            return file
    files = all_files()
    if wanted in files:
        return files[wanted]
    matches = [f for f in files.values() if f.filename == file_id]
    if len(matches) == 1:
        return matches[0]
    close = suggest(file_id, files)
    hint = f"did you mean: {', '.join(close)}? " if close else ""
    raise KeyError(f"unknown file {file_id!r}; {hint}`mltraces list` shows every source and file")


def suggest(name: str, files: dict[str, RemoteFile] | None = None, limit: int = 5) -> list[str]:
    """Source names and file ids close to ``name`` (a typo, a base name, a part of an id)."""
    import difflib

    files = all_files() if files is None else files
    by_name: dict[str, list[str]] = {}
    for f in files.values():
        for key in (f.id, f.filename, f.id.split("/", 1)[-1]):
            by_name.setdefault(key, []).append(f.id)
    for source in all_sources():
        by_name.setdefault(source, []).insert(0, source)
    found = [i for i in sorted(files) if name and name in i]  # a base name or part of an id
    if not found:  # else a typo
        for close in difflib.get_close_matches(name, list(by_name), n=limit, cutoff=0.6):
            found.extend(by_name[close])
    return list(dict.fromkeys(found))[:limit]


def set_override(sources: dict[str, Source] | None) -> None:
    """Replace the registry (tests use this for synthetic files); None restores it."""
    global _override
    _override = dict(sources) if sources is not None else None
