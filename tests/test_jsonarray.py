"""The bounded, streaming reader of one top-level JSON array."""

from __future__ import annotations

import io
import json

import pytest

from mltraces.catalog.jsonarray import JsonArrayError, items


def _all(data: bytes, **options: int) -> list:
    return [item for _, item in items(io.BytesIO(data), "log", **options)]


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 64, 1 << 20])
def test_items_come_out_whole_whatever_the_chunk_boundaries(chunk: int) -> None:
    records = [{"jobid": "application_1_2", "attempts": [{"detail": [{"ip": "m1"}]}]},
               12345678901234, -1.5e-3, True, None, "été ✓", [], {}]
    data = json.dumps(records, indent=1, ensure_ascii=False).encode()
    assert _all(data, chunk=chunk) == records
    assert _all(b"  [ ]\n", chunk=chunk) == []
    lines = [line for line, _ in items(io.BytesIO(data), "log", chunk=chunk)]
    assert lines[:2] == [2, 14]


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"", r"log: the array \(line 1\): expected a JSON array \('\['\), found nothing"),
        (b'{"a": 1}', r"expected a JSON array \('\['\), found '\{'"),
        (b"[1, 2", r"item 1 \(line 1\): expected ',' or '\]' after it, found the end of the input"),
        (b'[1, {"a": 2', r"item 1 \(line 1\): not valid JSON"),
        (b"[1,\n 2 3]", r"item 1 \(line 2\): expected ',' or '\]' after it, found '3'"),
        (b"[1, 2] [3]", r"log: the array \(line 1\): text follows the closing '\]'"),
        (b'[1, "\xff"]', r"not UTF-8 text"),
        (b"[1, nope]", r"item 1 \(line 1\): not valid JSON \(Expecting value\)"),
    ],
)
def test_anything_but_one_array_is_one_error_naming_the_item_and_line(
        data: bytes, expected: str) -> None:
    with pytest.raises(JsonArrayError, match=expected):
        _all(data, chunk=4)


def test_an_item_longer_than_the_limit_is_refused_without_reading_on() -> None:
    class Endless(io.RawIOBase):
        """'[' then an unterminated string that never ends."""

        def __init__(self) -> None:
            self.served = 0

        def readable(self) -> bool:
            return True

        def readinto(self, buffer) -> int:
            data = b'["' if self.served == 0 else b"x" * len(buffer)
            buffer[: len(data)] = data
            self.served += len(data)
            return len(data)

    stream = Endless()
    with pytest.raises(JsonArrayError, match=r"item 0 \(line 1\): longer than 1,000 characters"):
        list(items(io.BufferedReader(stream, 256), "log", max_item_bytes=1000, chunk=256))
    assert stream.served < 4096
