"""Process pools whose workers start clean: the one way mltraces runs work on several cores.

Why not ``fork`` (Linux's default): the parent usually holds a DuckDB
connection and pyarrow threads, and a child forked from it inherits their
half-held locks; the first garbage collection in such a child (numba's import
on ElasticFlow's first replay) crashed with a segfault. A forkserver is a
single-threaded process that forks the workers, and can import heavy modules
once first (``preload``) so each worker starts warm. Platforms without it
spawn fresh interpreters.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import pickle
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Ahead", "Deferred", "ahead", "current_ahead", "process_pool"]


def process_pool(
    workers: int,
    *,
    preload: Sequence[str] = (),
    initializer: Callable[..., Any] | None = None,
    initargs: tuple = (),
) -> ProcessPoolExecutor:
    """A pool of ``workers`` processes started from a forkserver (spawned where there is none).

    ``preload`` names modules the forkserver imports before forking (it applies
    when this call starts the forkserver; an already running one keeps its own).
    Work and its arguments are pickled, so functions and classes must be
    importable by name (a class defined in a notebook cell is not).

    The workers run exactly the package this process imported. Python starts the
    forkserver with the current directory first on its path and does not give it the
    parent's (``multiprocessing.forkserver.main`` ignores ``sys_path``), so a
    ``mltraces`` module it preloaded could come from a ``mltraces/`` folder there (a
    checkout other than the installed one: its cores uncompiled, 13 times slower in
    all). mltraces modules are therefore never preloaded: each worker imports them
    after it took the parent's path, and checks, before any work, that it imported
    the parent's package (:func:`check_package`).
    """
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
    outside = [name for name in preload if name.partition(".")[0] != _PACKAGE]
    if outside and "forkserver" in methods:
        context.set_forkserver_preload(outside)
    return ProcessPoolExecutor(max_workers=workers, mp_context=context,
                               initializer=check_package,
                               initargs=(_package_folder(), initializer, initargs))


_PACKAGE = __name__.partition(".")[0]


def _package_folder() -> str:
    """Where this process imported the package from (resolved)."""
    import os

    import mltraces

    return os.path.realpath(os.path.dirname(mltraces.__file__))


def check_package(expected: str, initializer: Callable[..., Any] | None = None,
                  initargs: tuple = ()) -> None:
    """A worker's first step: refuse to work on another copy of the package than the
    parent's (``expected``), then run the pool's own initializer."""
    found = _package_folder()
    if found != expected:
        from mltraces.errors import MltracesError

        raise MltracesError(f"a worker process imported mltraces from {found}, its parent from "
                            f"{expected}: run mltraces from another folder (the current one "
                            "holds a mltraces/ package that shadows the installed one)")
    if initializer is not None:
        initializer(*initargs)


# --------------------------------------------------------------------------- work ahead
#
# A figure run computes its figures' data one after the other, and several of them
# replay schedulers in a pool of their own: each pool idles at its end while its last
# replays finish, and the next figure's replays have not been asked for yet. Asked
# ahead, the replays of every figure share one pool that stays busy to the end: a
# first pass asks each figure for its data with :func:`ahead` collecting (work is
# submitted, and the figure stops with :class:`Deferred`), the second pass asks
# again and each identical request gets the future submitted the first time.


class Deferred(BaseException):
    """The work a computation needs was submitted ahead (:func:`ahead`); ask it again later.

    A BaseException, so that no ``except Exception`` on the way takes it for a
    failure and goes on with half a result.
    """


@dataclass
class Ahead:
    """A pool whose work is found again by its content: the same call gets the same future
    until its result is taken (:meth:`release`; asked once more, it is submitted again).

    While ``collecting``, callers submit and raise :class:`Deferred`; afterwards
    they wait for their futures (work never submitted before is submitted then). A
    computation that asks twice has only its first request asked ahead: Deferred
    stops it there.
    """

    executor: ProcessPoolExecutor
    collecting: bool = True
    futures: dict[str, Future] = field(default_factory=dict)
    keys: dict[int, str] = field(default_factory=dict)  # id(future) -> its key

    def submit(self, function: Callable[..., Any], *args: Any) -> Future:
        """The future of ``function(*args)``: the one submitted before, or a new one."""
        key = _content_key(function, args)
        future = self.futures.get(key)
        if future is None:
            if not self.collecting:  # fine, but the work was not overlapped: say so for -v
                from mltraces.logs import get_logger

                get_logger(__name__).debug("%s was not asked for ahead", function.__qualname__)
            future = self.futures[key] = self.executor.submit(function, *args)
            self.keys[id(future)] = key
        return future

    def release(self, future: Future) -> None:
        """Forget a future whose result was taken (results can be large)."""
        key = self.keys.pop(id(future), None)
        if key is not None:
            self.futures.pop(key, None)


def _content_key(function: Callable[..., Any], args: tuple) -> str:
    """What identifies a call: the function's name and its pickled arguments."""
    payload = pickle.dumps((function.__module__, function.__qualname__, args), protocol=5)
    return hashlib.sha256(payload).hexdigest()


_current: ContextVar[Ahead | None] = ContextVar("mltraces_ahead", default=None)


def current_ahead() -> Ahead | None:
    """The :class:`Ahead` pool of the enclosing :func:`ahead` block, if any."""
    return _current.get()


@contextmanager
def ahead(workers: int, *, preload: Sequence[str] = ()) -> Iterator[Ahead]:
    """A block in which work is asked for ahead, in one pool of ``workers`` processes.

    Leaving the block cancels what was submitted and never asked for again.
    """
    session = Ahead(process_pool(workers, preload=preload))
    token = _current.set(session)
    try:
        yield session
    finally:
        try:
            _current.reset(token)
        finally:  # the workers go even when the block was left in another context
            session.executor.shutdown(wait=True, cancel_futures=True)
