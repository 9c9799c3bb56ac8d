"""A bounded pipeline: a reader thread, ``workers`` transform threads, results in order.

The conversion reads chunks of a file, parses and unpivots them on worker
threads and writes them on the caller's thread. The heavy steps (pyarrow's CSV
parser, numpy, the Parquet writer) release the GIL, so threads share the cores
without copying data between processes. At most ``workers + depth`` items are
in flight (read but not yet handed to the caller), which bounds memory; results
come back in the source's order, so output does not depend on thread timing.

Errors in the source or a transform reach the caller as the original exception,
at the position of the item that failed. Leaving the ``with`` block early stops
the threads and closes the source.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from typing import Any

_END, _FAILED, _DONE, _SKIPPED = "end", "failed", "done", "skipped"
_POLL = 0.05  # seconds between checks of the stop flag while waiting for room


class Pipeline:
    """``for result in Pipeline(source, transform): ...`` with source and transform in threads.

    >>> with Pipeline(iter(range(5)), lambda x: x * x, workers=2) as squares:
    ...     list(squares)
    [0, 1, 4, 9, 16]
    """

    def __init__(
        self,
        source: Iterator[Any],
        transform: Callable[[Any], Any],
        depth: int = 2,
        workers: int = 1,
    ) -> None:
        self.source = source
        self.transform = transform
        self.room = threading.Semaphore(workers + depth)
        self.todo: queue.Queue = queue.Queue()
        self.results: dict[int, tuple[str, Any]] = {}
        self.posted = threading.Condition()
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._read, daemon=True, name="pipeline-read")]
        self.threads += [
            threading.Thread(target=self._work, daemon=True, name=f"pipeline-work-{i}")
            for i in range(max(workers, 1))
        ]

    def _post(self, index: int, kind: str, value: Any = None) -> None:
        with self.posted:
            self.results[index] = (kind, value)
            self.posted.notify_all()

    def _wait_for_room(self) -> bool:
        while not self.stop.is_set():
            if self.room.acquire(timeout=_POLL):
                return True
        return False

    def _read(self) -> None:
        index = 0
        try:
            items = iter(self.source)
            while self._wait_for_room():
                try:
                    item = next(items)
                except StopIteration:
                    break
                self.todo.put((index, item))
                index += 1
            self._post(index, _END)
        except BaseException as error:  # handed on to the caller, in order
            self._post(index, _FAILED, error)
        finally:
            close = getattr(self.source, "close", None)
            if close is not None:
                close()
            for _ in self.threads[1:]:
                self.todo.put(None)

    def _work(self) -> None:
        while (job := self.todo.get()) is not None:
            index, item = job
            if self.stop.is_set():
                self._post(index, _SKIPPED)
                continue
            try:
                self._post(index, _DONE, self.transform(item))
            except BaseException as error:
                self._post(index, _FAILED, error)

    def __iter__(self) -> Iterator[Any]:
        if self.threads[0].ident is None:
            for thread in self.threads:
                thread.start()
        index = 0
        while True:
            with self.posted:
                while index not in self.results:
                    self.posted.wait()
                kind, value = self.results.pop(index)
            if kind == _END:
                return
            if kind == _SKIPPED:
                raise RuntimeError("the pipeline was closed while it was being read")
            if kind == _FAILED:
                raise value
            self.room.release()
            yield value
            index += 1

    def close(self) -> None:
        """Stop the threads and wait for them (a running transform finishes first)."""
        self.stop.set()
        if self.threads[0].ident is None:  # never iterated
            close = getattr(self.source, "close", None)
            if close is not None:
                close()
            return
        for thread in self.threads:
            thread.join()
        self.results.clear()

    def __enter__(self) -> Pipeline:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
