"""A three-stage pipeline: read in one thread, transform in another, consume in the caller.

DuckDB's CSV reader, numpy and the Parquet writer all release the GIL, so the
three stages overlap on separate cores; bounded queues keep at most ``depth``
items in flight between stages, which bounds memory. Errors in a worker reach
the caller as the original exception; leaving the ``with`` block early stops the
workers and closes the source.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

_END = object()


class Pipeline:
    """``for item in Pipeline(source, transform): ...`` with source and transform in threads.

    >>> with Pipeline(iter(range(5)), lambda x: x * x) as squares:
    ...     list(squares)
    [0, 1, 4, 9, 16]
    """

    def __init__(self, source: Iterator[Any], transform: Callable[[Any], Any], depth: int = 2):
        self.source = source
        self.transform = transform
        self.raw: queue.Queue = queue.Queue(maxsize=depth)
        self.done: queue.Queue = queue.Queue(maxsize=depth)
        self.stop = threading.Event()
        self.threads = [
            threading.Thread(target=self._read, daemon=True, name="pipeline-read"),
            threading.Thread(target=self._work, daemon=True, name="pipeline-transform"),
        ]

    def _read(self) -> None:
        try:
            for item in self.source:
                if self.stop.is_set():
                    break
                self.raw.put(item)
        except BaseException as error:  # handed on to the caller
            self.raw.put(error)
        finally:
            close = getattr(self.source, "close", None)
            if close is not None:
                close()
            self.raw.put(_END)

    def _work(self) -> None:
        while True:
            item = self.raw.get()
            if item is _END or isinstance(item, BaseException):
                self.done.put(item)
                if item is _END:
                    return
                continue
            if self.stop.is_set():
                continue  # keep draining so the reader can finish
            try:
                self.done.put(self.transform(item))
            except BaseException as error:
                self.stop.set()
                self.done.put(error)

    def __iter__(self) -> Iterator[Any]:
        if self.threads[0].ident is None:
            for thread in self.threads:
                thread.start()
        while (item := self.done.get()) is not _END:
            if isinstance(item, BaseException):
                raise item
            yield item

    def close(self) -> None:
        """Stop the workers and wait for them (the transform thread drains the reader)."""
        self.stop.set()
        if self.threads[0].ident is None:  # never iterated
            close = getattr(self.source, "close", None)
            if close is not None:
                close()
            return
        while self.threads[1].is_alive():
            try:
                while True:
                    self.done.get_nowait()
            except queue.Empty:
                time.sleep(0.005)
        for thread in self.threads:
            thread.join()

    def __enter__(self) -> Pipeline:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
