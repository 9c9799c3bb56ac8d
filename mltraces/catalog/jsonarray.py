"""The items of one top-level JSON array, read from a stream in bounded memory.

Some traces publish a single JSON array of records (Philly's ``cluster_job_log``,
hundreds of MB, read by its own notebook with one ``json.load``). Readers here
take it item by item: the stream is decoded in 1 MiB chunks and each item is
parsed by the standard library's C scanner (``JSONDecoder.raw_decode``) as soon
as it is complete, so memory holds one chunk plus one item. An item longer than
``max_item_bytes`` is refused instead of buffered without end, and anything
that is not exactly one array (a wrong first character, a cut stream, text after
the closing bracket, invalid UTF-8) is a :class:`JsonArrayError` naming the
input, the item and the line.

>>> import io
>>> [item for _, item in items(io.BytesIO(b'[{"a": 1}, 2,\\n 3.5]'), "demo")]
[{'a': 1}, 2, 3.5]
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterator
from typing import IO, Any

from mltraces.errors import MltracesError

__all__ = ["MAX_ITEM_BYTES", "JsonArrayError", "items"]

#: Longest single item accepted (a Philly job with hundreds of attempts is a few kB).
MAX_ITEM_BYTES = 16 << 20
CHUNK = 1 << 20
_WHITESPACE = " \t\n\r"
_NUMBER_CHARS = "0123456789.eE+-"


class JsonArrayError(MltracesError, ValueError):
    """The input is not one JSON array of items of bounded size."""

    def __init__(self, label: str, message: str, item: int | None = None,
                 line: int | None = None) -> None:
        where = f"item {item:,}" if item is not None else "the array"
        at = f" (line {line:,})" if line is not None else ""
        super().__init__(f"{label}: {where}{at}: {message}")
        self.label, self.item, self.line = label, item, line


class _Buffer:
    """Decoded text not yet consumed, refilled from the stream a chunk at a time."""

    def __init__(self, stream: IO[bytes], label: str, chunk: int) -> None:
        self.stream, self.label, self.chunk = stream, label, chunk
        self.decoder = codecs.getincrementaldecoder("utf-8")()
        self.text = ""
        self.pos = 0
        self.line = 1  # of text[pos]: lines in what was consumed so far
        self.eof = False

    def more(self) -> bool:
        """Append the next chunk; False at the end of the stream."""
        if self.eof:
            return False
        data = self.stream.read(self.chunk)
        try:
            decoded = self.decoder.decode(data, final=not data)
        except UnicodeDecodeError as error:
            raise JsonArrayError(self.label, f"not UTF-8 text ({error.reason})",
                                 line=self.line) from None
        if self.pos > self.chunk:  # drop what was consumed: memory stays one chunk + one item
            self.text = self.text[self.pos:]
            self.pos = 0
        self.text += decoded
        self.eof = not data
        return bool(data) or bool(decoded)

    def advance(self, end: int) -> None:
        self.line += self.text.count("\n", self.pos, end)
        self.pos = end

    def skip_space(self) -> str:
        """The next character that is not white space ('' at the end of the stream)."""
        while True:
            while self.pos < len(self.text) and self.text[self.pos] in _WHITESPACE:
                self.advance(self.pos + 1)
            if self.pos < len(self.text):
                return self.text[self.pos]
            if not self.more():
                return ""


def items(stream: IO[bytes], label: str, *, max_item_bytes: int = MAX_ITEM_BYTES,
          chunk: int = CHUNK) -> Iterator[tuple[int, Any]]:
    """Yield ``(line, item)`` for each item of the JSON array in ``stream``, in order.

    ``line`` is where the item starts in the text (1-based), for error reports.
    """
    buffer = _Buffer(stream, label, chunk)
    decoder = json.JSONDecoder()
    first = buffer.skip_space()
    if first != "[":
        shown = repr(first) if first else "nothing"
        raise JsonArrayError(label, f"expected a JSON array ('['), found {shown}", line=buffer.line)
    buffer.advance(buffer.pos + 1)
    index = 0
    if buffer.skip_space() == "]":
        buffer.advance(buffer.pos + 1)
    else:
        while True:
            line = buffer.line
            yield line, _next_item(buffer, decoder, index, max_item_bytes)
            separator = buffer.skip_space()
            buffer.advance(buffer.pos + 1)
            if separator == "]":
                break
            if separator != ",":
                found = repr(separator) if separator else "the end of the input (cut short?)"
                raise JsonArrayError(label, f"expected ',' or ']' after it, found {found}",
                                     index, buffer.line)
            index += 1
            buffer.skip_space()
    if buffer.skip_space():
        raise JsonArrayError(label, "text follows the closing ']'", line=buffer.line)


def _may_continue(item: Any, text: str, end: int) -> bool:
    """True when ``item`` is a number the text after ``end`` could still extend."""
    if isinstance(item, bool) or not isinstance(item, int | float):
        return False
    return end >= len(text) or text[end] in _NUMBER_CHARS


def _next_item(buffer: _Buffer, decoder: json.JSONDecoder, index: int, limit: int) -> Any:
    """Parse the item at the buffer's position, reading more until it is complete."""
    while True:
        start = buffer.pos
        try:
            item, end = decoder.raw_decode(buffer.text, start)
        except json.JSONDecodeError as error:
            problem: json.JSONDecodeError | None = error
        except RecursionError:  # the C scanner recurses once per level: no record is this deep
            raise JsonArrayError(buffer.label, "nested deeper than Python's parser can follow; "
                                 "not one record (is this the right file?)", index,
                                 buffer.line) from None
        except ValueError as error:  # Python's integer-digit limit (sys.set_int_max_str_digits)
            raise JsonArrayError(buffer.label, f"holds a number too long to read ("
                                 f"{str(error).splitlines()[0][:120]})", index,
                                 buffer.line) from None
        else:
            problem = None
            # a number may go on in the next chunk ("-1" of "-1.5e-3"); anything else ended
            if buffer.eof or not _may_continue(item, buffer.text, end):
                buffer.advance(end)
                return item
        if len(buffer.text) - start > limit:
            raise JsonArrayError(buffer.label, f"longer than {limit:,} characters; not one "
                                 "record (is this the right file?)", index, buffer.line)
        if not buffer.more() and problem is not None:  # at the end, and still not an item
            start = buffer.pos
            line = buffer.line + buffer.text.count("\n", start, max(start, problem.pos))
            raise JsonArrayError(buffer.label, f"not valid JSON ({problem.msg})", index, line)
