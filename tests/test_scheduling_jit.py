"""The compiled cores' helpers: views without owners, and that no replay leaks or frees early."""

from __future__ import annotations

import gc

import numpy as np
import pytest

numba = pytest.importorskip("numba", reason="numba is not installed")

from test_scheduling import mixed_trace, profiles  # noqa: E402

from mltraces.scheduling import ElasticFlow, schedule  # noqa: E402
from mltraces.scheduling.jit import borrowed, keep_alive, njit  # noqa: E402


@njit
def _write_through(a, b):
    """Write through borrowed views of arguments (nested tuple) and of a local array."""
    x, (y,) = borrowed((a, (b,)))
    x[0] = 7.0
    y[1] = 9
    owned = np.arange(5.0)
    view = borrowed(owned)
    total = 0.0
    for k in range(view.shape[0]):
        view[k] *= 2.0
        total += view[k]
    keep_alive(owned)
    return total, owned


def test_borrowed_views_read_and_write_their_owners() -> None:
    a = np.zeros(3)
    b = np.zeros(2, np.int64)
    total, owned = _write_through(a, b)
    assert a[0] == 7.0 and b[1] == 9
    assert total == 20.0
    assert owned.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0]  # returned is the owner, not a view


def test_borrowed_takes_only_arrays() -> None:
    @njit
    def lend_a_number(x):
        return borrowed(x)

    @njit
    def lend_a_mixed_tuple(a):
        return borrowed((a, 1))

    with pytest.raises(numba.core.errors.TypingError):
        lend_a_number(1.0)
    with pytest.raises(numba.core.errors.TypingError):
        lend_a_mixed_tuple(np.zeros(2))


def test_an_elasticflow_replay_frees_exactly_what_it_allocates() -> None:
    """Borrowed views skip reference counting: a slip would leak arrays or free them early.

    numba's allocator counts every array it creates and frees; once the result
    (whose arrays the replay returned) is gone, the two counts must agree.
    """
    from numba.core.runtime import _nrt_python, rtsys

    trace = mixed_trace(40, 3)
    schedule(trace, "n2g8", profiles(), ElasticFlow())  # compile outside the count
    gc.collect()
    enabled = _nrt_python.memsys_stats_enabled()
    _nrt_python.memsys_enable_stats()
    try:
        before = rtsys.get_allocation_stats()
        result = schedule(trace, "n2g8", profiles(), ElasticFlow())
        assert 0 < result.summary["ddl_satis_ratio"].iloc[0] <= 1
        during = rtsys.get_allocation_stats()
        del result
        gc.collect()
        after = rtsys.get_allocation_stats()
    finally:
        if not enabled:
            _nrt_python.memsys_disable_stats()
    assert during.mi_alloc - before.mi_alloc > 100  # the replay really ran compiled
    assert after.mi_alloc - before.mi_alloc == after.mi_free - before.mi_free
    assert after.alloc - before.alloc == after.free - before.free
