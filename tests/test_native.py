"""The compiled scheduling cores: built at install, the same source as Python otherwise."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pandas as pd
import pytest
from test_scheduling import WIDE, crowded_trace, mixed_trace, profiles, schedule

from mltraces.compiled import compiled_from_source
from mltraces.scheduling.cores import native

ROOT = Path(__file__).resolve().parents[1]


def _compiler() -> str | None:
    """The C compiler setuptools would use, if it is installed."""
    command = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    return shutil.which(shlex.split(command)[0])


def test_the_cores_run_compiled_where_a_compiler_built_them() -> None:
    """An installation with a C compiler runs every core as an extension built from the
    source as it is now (after editing a core: `pip install -e .` again). CI sets
    ``MLTRACES_REQUIRE_COMPILED=1``: there a missing compiler fails instead of skipping."""
    if _compiler() is None and not os.environ.get("MLTRACES_REQUIRE_COMPILED"):
        pytest.skip("no C compiler: the cores run as plain Python here")
    state = native.build()
    assert state.compiled, state.reason
    import mltraces.scheduling.cores.chronuscore as chronuscore
    import mltraces.scheduling.cores.efcore as efcore
    import mltraces.scheduling.cores.efrounds as efrounds
    import mltraces.scheduling.cores.gandivacore as gandivacore
    import mltraces.scheduling.cores.leasecore as leasecore
    import mltraces.scheduling.cores.mergesort as mergesort

    for module in (efcore, efrounds, gandivacore, leasecore, chronuscore, mergesort):
        assert not module.__file__.endswith(".py"), module.__file__


def test_an_extension_counts_only_for_the_source_it_was_built_from(tmp_path) -> None:
    import hashlib

    source = tmp_path / "core.py"
    source.write_text("x = 1\n")
    built = tmp_path / "core.cpython-311-x86_64-linux-gnu.so"
    built.write_bytes(b"\0")
    assert not compiled_from_source(built, source)  # no stamp
    Path(f"{built}.sha256").write_text(hashlib.sha256(source.read_bytes()).hexdigest() + "\n")
    assert compiled_from_source(built, source)
    source.write_text("x = 2\n")  # edited after the build
    assert not compiled_from_source(built, source)


_WITHOUT_CYTHON = """
import sys
sys.modules["cython"] = None  # as if Cython were not installed: the stand-in decorators
sys.path.insert(0, {tests!r})
from test_scheduling import WIDE, crowded_trace, mixed_trace, profiles, schedule
from mltraces.scheduling.cores import (chronuscore, efcore, efrounds, gandivacore, leasecore,
                                       mergesort, native)
assert not native.build().compiled
assert all(m.__file__.endswith(".py")
           for m in (efcore, efrounds, gandivacore, leasecore, chronuscore, mergesort))
schedule(mixed_trace(40, 3), "n2g8", profiles(), "elasticflow,gandiva,chronus").jobs.to_csv(
    {out!r} + "mixed.csv", index=False)
schedule(crowded_trace(), "n4g8", profiles(WIDE), "gandiva").jobs.to_csv(
    {out!r} + "crowded.csv", index=False)
"""


@pytest.mark.slow  # every core interpreted, in a child process
def test_the_cores_run_as_python_without_cython_and_give_the_same_jobs(tmp_path) -> None:
    """Where the extensions were not built (no compiler), Cython is not installed either
    (it is a build requirement only): the cores run on :mod:`mltraces.cyshim`, job for job equal."""
    script = _WITHOUT_CYTHON.format(tests=str(Path(__file__).parent), out=f"{tmp_path}/")
    env = {**os.environ, "MLTRACES_INTERPRETED": "1"}
    subprocess.run([sys.executable, "-c", script], env=env, check=True, timeout=600)
    cases = {
        "mixed": schedule(mixed_trace(40, 3), "n2g8", profiles(), "elasticflow,gandiva,chronus"),
        "crowded": schedule(crowded_trace(), "n4g8", profiles(WIDE), "gandiva"),
    }
    for name, result in cases.items():
        interpreted = pd.read_csv(tmp_path / f"{name}.csv", dtype={"job_id": str})
        pd.testing.assert_frame_equal(
            result.jobs.astype(interpreted.dtypes.to_dict(), errors="ignore"), interpreted,
            check_dtype=False,
        )  # fmt: skip


def test_a_build_without_a_compiler_installs_and_says_so(tmp_path) -> None:
    """``setup.py`` with a compiler that fails: the build succeeds, names what was not
    compiled, and leaves no extension (the package then runs the source). Only
    ``gandivacore`` is built here: translating the others too costs seconds, not coverage."""
    for name in ("mltraces/__init__.py", "mltraces/_moved.py", "mltraces/scheduling/__init__.py",
                 "mltraces/scheduling/cores/__init__.py", "mltraces/cyshim.py",
                 "mltraces/scheduling/cores/gandivacore.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, tmp_path / name)
    setup = (ROOT / "setup.py").read_text()
    cores = ('CORES = ("efrounds", "efcore", "gandivacore", "chronuscore", "leasecore", '
             '"mergesort")')
    more = 'MORE_CORES = ("mltraces.prefixcache.cachecore",)'
    assert cores in setup and more in setup
    (tmp_path / "setup.py").write_text(
        setup.replace(cores, 'CORES = ("gandivacore",)').replace(more, "MORE_CORES = ()"))
    env = {**os.environ, "CC": "false", "LDSHARED": "false"}
    done = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    said = done.stderr
    assert ("not compiled" in said) or ("Cython is not installed" in said), said[-2000:]
    assert not list((tmp_path / "mltraces/scheduling/cores").glob("*.so"))
    assert not list((tmp_path / "mltraces").glob("*.so"))  # nor their shared module


def test_setup_compiles_exactly_the_cores_the_package_runs() -> None:
    """``setup.py`` and the two sets of cores (:mod:`mltraces.scheduling.cores.native`,
    :mod:`mltraces.prefixcache.native`) name the same modules, and the shared one."""
    import ast

    from mltraces import compiled
    from mltraces.prefixcache import native as cache_native

    tree = ast.parse((ROOT / "setup.py").read_text())
    found = {t.id: node.value for node in tree.body if isinstance(node, ast.Assign)
             for t in node.targets if isinstance(t, ast.Name)}
    assert set(ast.literal_eval(found["CORES"])) == set(native.CORES)
    assert ast.literal_eval(found["SCHEDULING"]) == native.PACKAGE
    assert ast.literal_eval(found["MORE_CORES"]) == (f"{cache_native.PACKAGE}.{cache_native.CORE}",)
    assert ast.literal_eval(found["SHARED"]) == "mltraces." + compiled.SHARED
