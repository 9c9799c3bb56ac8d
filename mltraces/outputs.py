"""Where a command writes its result (``-o``): checked before the work, written whole or not at all.

A replay or a query may take minutes; finding out afterwards that its output
cannot be written loses that work. So :func:`prepare` checks the target before
the command starts, and the result is written the way every cache file is:

- **a regular file, new or existing**: into a temporary file in the target's
  folder, then renamed over it. An existing file is replaced atomically (readers
  see the old bytes or the new, never half), keeps its permission bits, and is
  left unchanged when the write fails. A symlink is followed: the file it names
  is replaced and the link stays.
- **a character device or a pipe** (``/dev/null``, ``/dev/stdout``, ``>(gzip >
  x.gz)``, a FIFO with a reader): written directly, as a shell redirection
  would; nothing can be renamed over a device. A failed write (``/dev/full``:
  no space left) is one line.
- **refused before the work**, one line each: a folder, a missing or unwritable
  folder, an existing file that is read-only, a FIFO nobody reads, a block
  device or a socket.

:func:`prepare_folder` does the same for ``mltraces figures``, whose output is a
folder (created when missing); :func:`replace_file` is the atomic write both use.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from mltraces.errors import OutputError

__all__ = ["Output", "prepare", "prepare_folder", "replace_file"]


def _fail(path: object, why: str) -> OutputError:
    return OutputError(f"cannot write {path}: {why}")


def _temp_name(final: Path) -> Path:
    return final.with_name(f".{final.name}.{os.getpid()}.tmp")


def _create(path: Path) -> None:
    """Create ``path`` new, with the permissions a plain ``open()`` would give it (umask)."""
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))


@contextlib.contextmanager
def replace_file(final: Path, *, mode: int | None = None) -> Iterator[Path]:
    """Yield a temporary path beside ``final`` to fill; on success it is renamed over ``final``.

    The temporary file exists (empty) when yielded. On any failure it is removed
    and ``final`` is untouched. ``mode`` keeps the permission bits of the file replaced.
    """
    tmp = _temp_name(final)
    _create(tmp)
    try:
        yield tmp
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, final)
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()


class Output:
    """A checked ``-o`` target; write it once with :meth:`write_text` or :meth:`write_with`."""

    def __init__(self, given: Path, final: Path, *, stream: bool, mode: int | None,
                 handle: int | None = None) -> None:
        self.given = given
        self.final = final  # links followed: where the bytes go
        self.stream = stream  # a device or a pipe: written directly
        self.mode = mode  # permission bits of the regular file replaced, if any
        self.handle = handle  # a FIFO stays open from the check on: closing it ends its reader

    def write_text(self, text: str) -> None:
        """Write ``text`` (UTF-8) whole; a failure is one line naming the target."""
        data = text.encode("utf-8", "surrogateescape")
        self.write_with(lambda path: path.write_bytes(data))

    def write_with(self, fill: Callable[[Path], None]) -> None:
        """Have ``fill(path)`` write the result to a file, which then becomes the target.

        For a device or a pipe, ``fill`` writes a temporary file elsewhere that is
        then copied to the target (DuckDB's ``COPY`` needs a file it can name).
        """
        try:
            if self.stream:
                self._stream(fill)
            else:
                with replace_file(self.final, mode=self.mode) as tmp:
                    fill(tmp)
        except OSError as error:
            raise self._failed(error) from None

    def _stream(self, fill: Callable[[Path], None]) -> None:
        handle, name = tempfile.mkstemp(prefix="mltraces-output-")
        os.close(handle)
        try:
            fill(Path(name))
            target: int | Path = self.final if self.handle is None else self.handle
            self.handle = None  # the sink below closes it
            with open(name, "rb") as source, open(target, "wb") as sink:
                shutil.copyfileobj(source, sink, 1 << 20)
        finally:
            os.unlink(name)

    def _failed(self, error: OSError) -> OutputError:
        why = error.strerror or str(error)
        if self.stream:
            return _fail(self.given, f"{why}; the output is incomplete")
        kept = "left unchanged" if self.mode is not None else "not created"
        return _fail(self.given, f"{why}; it was {kept}")

    def done(self, quiet: bool = False) -> None:
        """Say what was written, in one line on stderr."""
        if not quiet and not self.stream:
            print(f"wrote {self.given}", file=sys.stderr)


def prepare(path: str | os.PathLike[str]) -> Output:
    """Check that the result can be written to ``path``, before any work is done.

    Raises :class:`~mltraces.errors.OutputError` with one line that names the path,
    why it cannot be written and what to do instead.
    """
    given = Path(path)
    final = Path(os.path.realpath(given))  # a link: the file it names is replaced
    try:
        info = os.stat(given)  # links followed, /dev/fd/N of a process substitution too
    except FileNotFoundError:
        _probe_folder(given, final.parent)
        return Output(given, final, stream=False, mode=None)
    except OSError as error:
        raise _fail(given, error.strerror or str(error)) from None
    if stat.S_ISDIR(info.st_mode):
        raise _fail(given, f"it is a folder; name a file in it, e.g. {given / 'result.csv'}")
    if stat.S_ISREG(info.st_mode):
        if not os.access(final, os.W_OK):
            raise _fail(given, "the file exists and is read-only; remove it or choose another name")
        _probe_folder(given, final.parent)
        return Output(given, final, stream=False, mode=stat.S_IMODE(info.st_mode))
    if stat.S_ISCHR(info.st_mode):
        return Output(given, given, stream=True, mode=None)
    if stat.S_ISFIFO(info.st_mode):
        return Output(given, given, stream=True, mode=None, handle=_open_pipe(given, given))
    kind = "a block device" if stat.S_ISBLK(info.st_mode) else "a socket or other special file"
    raise _fail(given, f"it is {kind}, not a file")


def _probe_folder(given: Path, folder: Path) -> None:
    """Create and remove a temporary file in ``folder``: the one test every file system answers."""
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        raise _fail(given, f"the folder {folder} {what}; create it first (mkdir -p {folder})")
    try:
        handle, name = tempfile.mkstemp(prefix=".mltraces-probe-", dir=folder)
    except OSError as error:
        raise _fail(given, f"the folder {folder} is not writable ({error.strerror})") from None
    os.close(handle)
    with contextlib.suppress(OSError):
        os.unlink(name)


def _open_pipe(given: Path, fifo: Path) -> int:
    """Open a FIFO for writing now: one nobody reads would block the write forever."""
    import fcntl

    try:
        handle = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as error:
        if error.errno == errno.ENXIO:
            raise _fail(given, "it is a pipe that nobody reads; start its reader first") from None
        raise _fail(given, error.strerror or str(error)) from None
    fcntl.fcntl(handle, fcntl.F_SETFL, fcntl.fcntl(handle, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    return handle


def prepare_folder(path: str | os.PathLike[str]) -> Path:
    """Check (creating it when missing) that files can be written into the folder ``path``."""
    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        raise _fail(folder, "it is not a folder (figures are written into a folder as "
                    "NAME.png and NAME.pdf)")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise _fail(folder, f"the folder cannot be created ({error.strerror})") from None
    _probe_folder(folder, folder)
    return folder
