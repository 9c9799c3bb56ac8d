"""What a table would be built from, decided cheaply: registry files or a user's local path.

A :class:`Plan` names its inputs' versions (``keys``: a change means a new
conversion) and identity (which inputs, whatever their version: a newer
conversion supersedes older ones), and defers the heavy work (downloading,
unpacking) to ``load()``.

Network use follows what was asked for: ``fetch=True`` (the table was named)
downloads missing files; ``fetch=False`` (the table is only part of "every
table") uses verified cached files or raises :class:`NotFetchedError` at once,
so ``connect()`` never touches the network for tables nobody asked for.

Local paths are taken literally: ``trace[12].csv`` is that one file.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from mltraces import config
from mltraces.catalog.problems import DriftProblem, NotFetchedError, SchemaDriftError
from mltraces.catalog.protocol import InputFile
from mltraces.catalog.store import LOCAL_EXTRACTED
from mltraces.errors import SchemaError
from mltraces.schema import MEMBER_STEM, SourceSpec, TableSchema

__all__ = ["Plan", "plan_for"]


class Plan(NamedTuple):
    """What a table would be built from: cheap to compute, heavy work deferred."""

    keys: list[str]  # identity and version of each input: change -> new conversion
    identity: list[str]  # which inputs, regardless of version: same -> older ones are stale
    verified: bool
    origin: str
    load: Callable[[], list[InputFile]]

    @property
    def kind(self) -> str:
        """``upstream`` or ``local``: part of the Parquet file name."""
        return "upstream" if self.verified else "local"


def plan_for(schema: TableSchema, local: Path | None, *, fetch: bool = True) -> Plan:
    """The plan for ``schema``: a user's local path when given, else the registry's files."""
    return _local_plan(schema, Path(local)) if local is not None else _registry_plan(schema, fetch)


def _expand_columns(spec: SourceSpec, member: str) -> dict[str, str]:
    stem = Path(member).name.split(".", 1)[0]
    return {k: v.replace(MEMBER_STEM, stem) for k, v in spec.columns.items()}


def _registry_file(schema: TableSchema, file_id: str) -> Any:
    from mltraces.registry import get_file

    try:
        return get_file(file_id)
    except KeyError:
        raise SchemaError(unknown_file(schema, file_id)) from None


def unknown_file(schema: TableSchema, file_id: str) -> str:
    """Why a schema's ``file`` names no registry file, and the id it should be: a schema
    names a file by its id ``SOURCE/NAME`` (a ``files`` entry of the source's card)."""
    import difflib

    from mltraces.registry import all_sources

    source = all_sources().get(schema.schema_name)
    ids = [f.id for f in source.files] if source is not None else []
    base = file_id.rsplit("/", 1)[-1]
    same = [i for i in ids if i.rsplit("/", 1)[-1] == base]
    close = same or difflib.get_close_matches(f"{schema.schema_name}/{base}", ids, n=3,
                                              cutoff=0.5)
    where = schema.path or schema.name
    if close:
        hint = f"it should be {close[0]!r}" + (f" (or {', '.join(map(repr, close[1:]))})"
                                                if len(close) > 1 else "")
    else:
        hint = f"the source's file ids are {', '.join(ids)}" if ids else "the source has no files"
    return (f"{where}: file {file_id!r} is no file id of {schema.schema_name}'s source.json "
            f"(a schema names a file by its id, SOURCE/NAME); {hint}")


def _pick_members(schema: TableSchema, spec: SourceSpec, members: Mapping[str, Path],
                  where: str) -> list[InputFile]:
    chosen = sorted(n for n in members if fnmatch.fnmatch(Path(n).name, spec.members or ""))
    if not chosen:
        has = ", ".join(sorted(members))
        problem = DriftProblem("missing file", where,
                               f"no member matches {spec.members!r} (has: {has})")
        raise SchemaDriftError(schema.name, [problem])
    return [InputFile(Path(n).name, members[n], _expand_columns(spec, n)) for n in chosen]


# --------------------------------------------------------------------------- registry files


def _not_fetched(schema: TableSchema, missing: list[Any]) -> NotFetchedError:
    ids = " ".join(f.id for f in missing)
    from mltraces.download import unavailable

    known = unavailable.reasons()  # (read once: a file of the cache)
    failed = [why for f in missing if (why := known.get(f.id))]
    if failed:  # fetching again would fail the same way: say what works instead
        return NotFetchedError(
            f"{schema.name}: not fetched, and unavailable here ({failed[0]}); "
            + unavailable.ADVICE.replace("TABLE", schema.name))
    first = [f.id for f in missing if f.first_use]
    unpinned = (f"; {', '.join(first)}: unverified (first use): no hash is published, the "
                "first download is recorded and pins every later one") if first else ""
    return NotFetchedError(
        f"{schema.name}: not fetched — run `mltraces fetch {ids}` (tables named in "
        f"connect(tables=...) or in a query are fetched on first use){unpinned}")


def _pin(file: Any) -> str:
    """The hash the registry pins ``file`` to: what every verified copy of it hashes to (a
    first-use file: the hash its first download recorded)."""
    if file.first_use:
        from mltraces.download.firstuse import effective

        file = effective(file)
    return f"sha256:{file.sha256}" if file.sha256 else f"git-blob:{file.git_blob}"


def _registry_plan(schema: TableSchema, fetch: bool) -> Plan:
    """Inputs from the verified cache (fetched now when missing, if asked for by name).

    A warm plan only checks the download stamps (no hashing, no lock): the key is
    the registry's pin, which a verified copy matches by definition.
    """
    from mltraces.download import cached_path, fetch_file

    files = {fid: _registry_file(schema, fid) for fid in schema.file_ids}
    if any(f.local for f in files.values()):
        return _source_local_plan(schema, files)
    missing = [f for f in files.values() if cached_path(f) is None]
    if missing and not fetch:
        raise _not_fetched(schema, missing)
    for file in missing:
        fetch_file(file)
    keys = [f"{fid}={_pin(f)}" for fid, f in files.items()]
    first = any(f.first_use for f in files.values())
    return Plan(keys, sorted(files), verified=True,
                origin="upstream, first-use pinned" if first else "upstream",
                load=_loader(schema, files))


def _loader(schema: TableSchema, files: dict[str, Any]) -> Callable[[], list[InputFile]]:
    """Reads each registry file (unpacking archives, listing a local folder) when called."""

    def load() -> list[InputFile]:
        inputs: list[InputFile] = []
        for spec in schema.sources:
            inputs.extend(_registry_inputs(schema, spec, files))
        return inputs

    return load


def _registry_inputs(schema: TableSchema, spec: SourceSpec, files: Mapping[str, Any]
                     ) -> list[InputFile]:
    """The inputs one source spec names: a file, its unpacked members, or one streamed member."""
    from mltraces.download import fetch_file, fetch_members, member_limits

    remote = files[spec.file]
    header = fetch_file(files[spec.header]) if spec.header else None
    if spec.members:
        picked = _pick_members(schema, spec, fetch_members(remote), remote.filename)
        return [i._replace(header=header) for i in picked]
    if spec.member:
        limits = member_limits(remote) if remote.pinned else _text_limits(schema)
        return [InputFile(spec.member, fetch_file(remote), dict(spec.columns), spec.member,
                          limits, header)]
    return [InputFile(remote.filename, fetch_file(remote), dict(spec.columns), header=header)]


def _source_local_plan(schema: TableSchema, files: dict[str, Any]) -> Plan:
    """Inputs from a user's source whose files lie beside its source.json (never fetched).

    Keyed by the files as they are (size, mtime); verified only when every file pins its
    hash, which is checked whenever the table is converted again.
    """
    if not all(f.local for f in files.values()):
        raise SchemaError(f"{schema.name} reads both local files and downloads; a table's "
                          "files are all local or all remote")
    keys = [f"{fid}={_local_key(f.path)}" for fid, f in files.items()]
    folder = next(iter(files.values())).path.parent
    return Plan(keys, [_identity(f.path) for f in files.values()],
                verified=all(f.pinned for f in files.values()), origin=f"local: {folder}",
                load=_loader(schema, files))


def _local_key(path: Path) -> str:
    """A local file's or folder's identity and version (a folder: every file in it)."""
    if not path.exists():
        return f"{_identity(path)}:missing"
    if path.is_dir():
        return ";".join(_stat_key(p) for p in sorted(path.iterdir()) if p.is_file())
    return _stat_key(path)


# --------------------------------------------------------------------------- local paths


def _stat_key(path: Path) -> str:
    stat = path.stat()
    return f"{_identity(path)}:{stat.st_size}:{stat.st_mtime_ns}"


def _identity(path: Path) -> str:
    return f"local:{path.resolve()}"


def _local_header(schema: TableSchema, spec: SourceSpec, folder: Path) -> Path | None:
    """A headerless input's column names: the header file beside it (``folder``), else the
    registry's own (verified, tiny; fetched when missing)."""
    if not spec.header:
        return None
    remote = _registry_file(schema, spec.header)
    beside = folder / remote.filename
    if beside.is_file():
        return beside
    from mltraces.download import fetch_file

    return fetch_file(remote)


def _local_dir_inputs(schema: TableSchema, folder: Path) -> list[InputFile]:
    names = {p.name: p for p in folder.iterdir() if p.is_file()}
    inputs: list[InputFile] = []
    missing: list[DriftProblem] = []
    for spec in schema.sources:
        if spec.members:
            try:
                inputs.extend(_pick_members(schema, spec, names, str(folder)))
            except SchemaDriftError as error:
                missing.extend(error.problems)
            continue
        nested = folder / spec.member if spec.member else None
        if nested is not None and nested.is_file():  # unpacked as in the archive
            inputs.append(InputFile(spec.member or "", nested, dict(spec.columns),
                                    header=_local_header(schema, spec, folder)))
            continue
        filename = _registry_file(schema, spec.file).filename
        # a streamed member may be there unpacked (cluster_job_log), or its whole archive
        candidates = [Path(spec.member).name] if spec.member else []
        candidates += [filename, filename.removesuffix(".xz"), filename.removesuffix(".gz")]
        found = next((names[c] for c in candidates if c in names), None)
        if found is None:
            missing.append(DriftProblem("missing file", str(folder),
                                        f"no file named {' or '.join(dict.fromkeys(candidates))}"))
        elif spec.member and found.name == filename:
            inputs.append(_local_member(schema, spec, found, _local_header(schema, spec, folder)))
        else:
            inputs.append(InputFile(found.name, found, dict(spec.columns),
                                    header=_local_header(schema, spec, folder)))
    if missing:
        raise SchemaDriftError(schema.name, missing)
    return inputs


def _local_member(schema: TableSchema, spec: SourceSpec, archive: Path, header: Path | None
                  ) -> InputFile:
    """One member of a user's own copy of an archive, held to the local-archive limits."""
    return InputFile(spec.member or "", archive, dict(spec.columns), spec.member,
                     _text_limits(schema), header)


def _text_limits(schema: TableSchema) -> Any:
    """The local-archive limits; for a table read as lines of text (its reader counts rows by
    line: CSV), no line may be longer than a row can be, checked as members are read or
    unpacked, so an archive of zeros writes nothing past the first such line."""
    from mltraces.catalog.readers import FileReader, reader_for
    from mltraces.catalog.text import MAX_LINE_BYTES
    from mltraces.download.archives import Limits

    reader = reader_for(schema)
    text = isinstance(reader, FileReader) and reader.row_label == "line"
    return Limits.local(max_line=MAX_LINE_BYTES if text else None)


def _local_file_inputs(schema: TableSchema, path: Path) -> Callable[[], list[InputFile]]:
    files = [s.file for s in schema.sources]
    if len(set(files)) != 1:
        names = ", ".join(dict.fromkeys(_registry_file(schema, f).filename for f in files))
        raise SchemaError(
            f"{schema.name} reads {len(set(files))} files ({names}); give a directory "
            f"holding them instead of the single file {path}"
        )
    spec = schema.sources[0]
    if spec.member and _is_archive(path):  # the archive itself: one stream per spec
        return lambda: [_local_member(schema, s, path, _local_header(schema, s, path.parent))
                        for s in schema.sources]
    if len(schema.sources) != 1:
        raise SchemaError(f"{schema.name} reads {len(schema.sources)} members of "
                          f"{_registry_file(schema, spec.file).filename}; give that archive "
                          f"or a directory holding them instead of the single file {path}")
    if spec.members and _is_tarfile(path):
        def load() -> list[InputFile]:
            import hashlib

            from mltraces.download.archives import extract_verified

            digest = hashlib.sha256(_stat_key(path).encode()).hexdigest()[:16]
            target = config.cache_dir() / LOCAL_EXTRACTED / f"{path.name}-{digest}"
            members = extract_verified(path, target, _text_limits(schema))
            return _pick_members(schema, spec, members, path.name)
        return load
    columns = _expand_columns(spec, path.name) if spec.members else dict(spec.columns)
    return lambda: [InputFile(path.name, path, columns,
                              header=_local_header(schema, spec, path.parent))]


def _is_archive(path: Path) -> bool:
    from mltraces.download.archives import is_zip

    return is_zip(path) or _is_tarfile(path)


def _is_tarfile(path: Path) -> bool:
    import tarfile  # only archive tables need it: not imported on every connect

    return tarfile.is_tarfile(path)


def _local_plan(schema: TableSchema, path: Path) -> Plan:
    """Inputs from a user-supplied file or folder: checked against the schema, not hashed."""
    from mltraces.local_paths import check_local_path

    check_local_path(schema.name, path)  # before anything reads it: no pipe, no device
    if not path.exists():
        raise SchemaError(f"local file for {schema.name} not found: {path} (the path is used "
                          "literally: no wildcards)")
    path = path.resolve()
    if path.is_dir():
        inputs = _local_dir_inputs(schema, path)
        keys = [_stat_key(i.path) for i in inputs]
        load: Callable[[], list[InputFile]] = lambda: inputs  # noqa: E731
    else:
        keys = [_stat_key(path)]
        load = _local_file_inputs(schema, path)
    return Plan(keys, [_identity(path)], verified=False, origin=f"local: {path}", load=load)
