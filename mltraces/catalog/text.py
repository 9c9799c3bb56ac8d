"""Text inputs as the readers see them: the header line (bounded), xz and gzip streams,
byte facts.

Everything here reads a bounded amount or streams, so a hostile file (a 1 GB
first line, a non-UTF-8 header) becomes one drift problem naming the file, not
a traceback or gigabytes of RAM.
"""

from __future__ import annotations

import csv
import errno
import lzma
import mmap
import os
from pathlib import Path
from typing import NamedTuple

from mltraces.catalog.problems import DriftProblem, SchemaDriftError
from mltraces.schema import Dialect

__all__ = ["MAX_HEADER_BYTES", "MAX_LINE_BYTES", "FileFacts", "check_last_line", "file_facts",
           "physical_lines", "plain_csv", "read_header"]

#: Longest first line accepted as a header: the widest upstream CSV (2,304 GPU
#: columns) needs ~50 kB.
MAX_HEADER_BYTES = 1 << 20
#: Longest line a row may have: DuckDB's ``max_line_size``. DuckDB refuses longer rows,
#: except a last line longer than its read buffer, which it drops without a word.
MAX_LINE_BYTES = 2_000_000
_XZ_MAGIC = b"\xfd7zXZ\x00"
_GZIP_MAGIC = b"\x1f\x8b"


def _problem(kind: str, label: str, message: str, line: int | None = None) -> SchemaDriftError:
    return SchemaDriftError("", [DriftProblem(kind, label, message, None, line)])


def read_header(path: Path, label: str, dialect: Dialect | None = None,
                limit: int = MAX_HEADER_BYTES) -> list[str]:
    """Column names on the first line, reading at most ``limit`` bytes.

    An empty file, a first line longer than ``limit`` and a header that is not
    UTF-8 each raise a :class:`SchemaDriftError` naming the file.
    """
    dialect = dialect or Dialect()
    with path.open("rb") as handle:
        first = handle.readline(limit + 1)
    if not first.strip():
        raise _problem("empty file", label,
                       "the file is empty: expected a header line with the column names")
    if len(first) > limit:
        raise _problem("malformed row", label, f"the first line is longer than {limit:,} bytes: "
                       "not a CSV header (is this the right file?)", 1)
    try:
        text = first.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        bad = first[error.start]
        raise _problem("not UTF-8", label, f"the header is not UTF-8 text (byte 0x{bad:02x} at "
                       f"offset {error.start}); save the file as UTF-8", 1) from None
    row = next(csv.reader([text.rstrip("\r\n")], delimiter=dialect.delimiter,
                          quotechar=dialect.quote))
    return [name.strip() for name in row]


def check_last_line(path: Path, label: str, limit: int = MAX_LINE_BYTES) -> None:
    """Refuse a file whose last line is longer than ``limit`` bytes, reading its tail only.

    The line number costs one streamed pass (16 MB reads), only for such a file.
    """
    size = os.path.getsize(path)
    start = max(0, size - limit - 2)  # room for the line and its own "\r\n"
    with path.open("rb") as handle:
        handle.seek(start)
        tail = handle.read()
        body = tail[:-1] if tail.endswith(b"\n") else tail
        body = body[:-1] if body.endswith(b"\r") else body
        if start == 0 or b"\n" in body:
            return
        handle.seek(0)
        line, position = 1, 0
        while position < start:
            chunk = handle.read(min(1 << 24, start - position))
            if not chunk:
                break
            line += chunk.count(b"\n")
            position += len(chunk)
    raise _problem("malformed row", label, f"the last line is longer than {limit:,} bytes, more "
                   "than any row (is the file cut or corrupt?)", line)


def plain_csv(label: str, path: Path, work: Path, limit: int | None = None) -> Path:
    """The input as an uncompressed file (an xz or gzip stream is decompressed into ``work``).

    Decompression streams 1 MiB at a time and stops past ``limit`` bytes
    (``MLTRACES_MAX_UNPACKED``, as for local archives): a few hundred kilobytes of
    xz or gzip can expand to gigabytes. Going past it, and a disk that fills first, are
    one line naming the file, the limit and the variable; the partial file goes.
    """
    with path.open("rb") as handle:
        magic = handle.read(len(_XZ_MAGIC))
    kind = "xz" if magic == _XZ_MAGIC else "gzip" if magic.startswith(_GZIP_MAGIC) else None
    if kind is None:
        return path
    import gzip
    import zlib

    from mltraces import config

    limit = config.max_unpacked() if limit is None else limit
    stem = label.removesuffix(".xz").removesuffix(".gz")
    out = work / f"{len(list(work.iterdir()))}-{stem}"
    opener = lzma.open if kind == "xz" else gzip.open
    written = 0
    try:
        with opener(path) as source, out.open("wb") as sink:
            while chunk := source.read(1 << 20):
                if written + len(chunk) > limit:
                    raise _too_large(label, path, limit, kind)
                sink.write(chunk)
                written += len(chunk)
    except (lzma.LZMAError, EOFError, zlib.error, gzip.BadGzipFile) as error:
        out.unlink(missing_ok=True)
        raise _problem("unparsable value", label,
                       f"not a readable {kind} stream ({error})") from error
    except OSError as error:
        out.unlink(missing_ok=True)
        if error.errno in (errno.ENOSPC, errno.EDQUOT):
            raise _disk_filled(label, written, limit, work) from None
        raise
    except BaseException:
        out.unlink(missing_ok=True)
        raise
    return out


def _too_large(label: str, path: Path, limit: int, kind: str = "xz") -> Exception:
    from mltraces.errors import UnsafeArchiveError

    return UnsafeArchiveError(
        f"{label}: the {kind} file {path} decompresses to more than {limit:,} bytes "
        f"(MLTRACES_MAX_UNPACKED={_setting_text()}); refusing it as a possible decompression "
        "bomb (raise MLTRACES_MAX_UNPACKED if the file is genuine)")


def _disk_filled(label: str, written: int, limit: int, work: Path) -> Exception:
    from mltraces.catalog.problems import ConversionError

    return ConversionError(
        f"{label}: the disk under {work} filled while decompressing it, after {written:,} "
        f"bytes (MLTRACES_MAX_UNPACKED={_setting_text()} would allow {limit:,}); nothing was "
        "kept. Lower MLTRACES_MAX_UNPACKED if the file should not be this large, else free space")


def _setting_text() -> str:
    return os.environ.get("MLTRACES_MAX_UNPACKED", "").strip() or "4G (default)"


class FileFacts(NamedTuple):
    """Byte-level facts that decide which slower checks a file needs."""

    quoted: bool  # holds a quote character: a field may span lines
    nul: bool  # holds a NUL byte: text values must be checked for it


def file_facts(path: Path, quote: str = '"') -> FileFacts:
    """Scan a file once (memory-mapped, no copy) for quote characters and NUL bytes."""
    if os.path.getsize(path) == 0:
        return FileFacts(False, False)
    with path.open("rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as view:
        return FileFacts(view.find(quote.encode()) >= 0, view.find(b"\x00") >= 0)


def physical_lines(path: Path, offsets: list[int]) -> dict[int, int]:
    """1-based line number of each byte offset (counting every newline before it)."""
    result: dict[int, int] = {}
    if not offsets:
        return result
    chunk = 1 << 24  # count in 16 MB slices: memory stays bounded whatever the file size
    with path.open("rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as view:
        line, position = 1, 0
        for offset in sorted(set(offsets)):
            while position < offset:
                end = min(offset, position + chunk)
                line += view[position:end].count(b"\n")
                position = end
            result[offset] = line
    return result
