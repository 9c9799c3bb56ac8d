"""Build the scheduling cores as C extensions when Cython and a C compiler are available.

Everything else about the package is in pyproject.toml. The cores
(:data:`COMPILED`: the scheduling cores, see ``mltraces/scheduling/cores/native.py``, and
the prefix cache's, ``mltraces/prefixcache/native.py``) are Cython
pure-Python-mode modules: the same files run as plain Python when they could not
be compiled, so a failed build is a notice, never an error. Each built extension
gets a ``.sha256`` beside it naming the source it was compiled from; the package
runs the source instead of an extension whose source has changed since (an
editable install after an edit).

What keeps the build short (a fresh ``pip install -e .`` on two cores):

- the modules are translated, then compiled, in parallel (one job per core);
- Cython's memoryview support, which every core uses, is generated and compiled
  once, in a shared module (:data:`SHARED`) the cores import, not once per core
  (it was two fifths of every core's C);
- no pickling support for the cores' classes (``auto_pickle``: a seventh of their C;
  nothing pickles them, a replay's results are arrays);
- no debug information (``-g0``): a C core is debugged through its Python source,
  which runs unchanged (``MLTRACES_INTERPRETED=1``);
- ``-O2`` rather than Python's ``-O3``: the replays run as fast (the main job's replays
  measured against an ``-O3`` build, taking turns: within 1 %), for a fifth less compiling.

``-ffp-contract=off -fno-fast-math`` keep every double operation rounding as in
Python at any level, so compiled and interpreted replays agree bit for bit
(``benchmarks/main_replays.py --compare`` against the ``-O3`` build: no replay differs).
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

#: the scheduling cores and their package
CORES = ("efrounds", "efcore", "gandivacore", "chronuscore", "leasecore", "mergesort")
SCHEDULING = "mltraces.scheduling.cores"
#: compiled cores outside the scheduling folder, by module name (the prefix-cache replay)
MORE_CORES = ("mltraces.prefixcache.cachecore",)
#: every module compiled at install, by dotted name (its source: that path + ``.py``)
COMPILED = (
    *(f"{SCHEDULING}.{name}" for name in CORES),
    *MORE_CORES,
)
#: Cython's utility code the compiled modules share (memoryviews), one module for all
SHARED = "mltraces._cyutility"
#: seconds each module took to compile (-O2, two cores, 2026-12-02): they are compiled longest
#: first, so that no core compiles alone at the end (in the order above, the last one did, for
#: 1.7 s); a module not named here takes its place among them as a middling one
COMPILE_SECONDS = {f"{SCHEDULING}.efrounds": 6.1, f"{SCHEDULING}.efcore": 4.7, SHARED: 3.0,
                   f"{SCHEDULING}.gandivacore": 2.9, f"{SCHEDULING}.chronuscore": 2.6,
                   f"{SCHEDULING}.leasecore": 2.3, "mltraces.prefixcache.cachecore": 1.8,
                   f"{SCHEDULING}.mergesort": 0.8}
#: bounds are not checked (every index is in range by construction, as it was under
#: numba); negative indices wrap and division keeps Python's semantics (floor, modulo of
#: negatives, ZeroDivisionError), so compiled and interpreted runs agree bit for bit
DIRECTIVES = {
    "language_level": 3,
    "boundscheck": False,
    "wraparound": True,
    "cdivision": False,
    "initializedcheck": False,
    "auto_pickle": False,  # no __reduce__ for the cores' classes: nothing pickles them
}
#: no fused multiply-add or other contraction: every double operation rounds as in Python;
#: no debug information (a third of the compile time of Cython's C, never used at run time);
#: -O2 after Python's -O3 (the later one counts)
C_FLAGS = ["-ffp-contract=off", "-fno-fast-math", "-g0", "-O2"]


def notice(message: str) -> None:
    print(f"mltraces: {message}", file=sys.stderr)


def module_path(name: str, suffix: str) -> Path:
    """``mltraces.scheduling.efcore`` -> ``mltraces/scheduling/efcore<suffix>``."""
    return Path(*name.split(".")).with_suffix(suffix)


def stamp(path: str) -> str:
    """Where the sha256 of an extension's source is written: beside the extension."""
    return f"{path}.sha256"


def source_of(ext: Extension) -> Path:
    """The file an extension was compiled from: its Python source, or the shared C."""
    source = module_path(ext.name, ".py")
    return source if source.is_file() else Path(ext.sources[0])


class OptionalBuildExt(build_ext):
    """Compile what can be compiled, in parallel; say so and go on when a core cannot be.

    setuptools builds into ``build_lib`` and, for an editable install, copies the
    extensions into the source tree: each one's stamp goes along.
    """

    def finalize_options(self) -> None:
        super().finalize_options()
        if self.parallel is None:  # one compile per core (pip passes no -j)
            self.parallel = os.cpu_count() or 1

    def build_extension(self, ext: Extension) -> None:
        if self.compiler.compiler_type == "unix":
            ext.extra_compile_args = [*C_FLAGS, *ext.extra_compile_args]
        try:
            super().build_extension(ext)
        except Exception as error:  # no compiler, missing headers, a failed compile
            notice(f"{ext.name} not compiled ({type(error).__name__}, is a C compiler "
                   "installed?); the cores run as plain Python, about 100 times slower")
            return
        digest = hashlib.sha256(source_of(ext).read_bytes()).hexdigest()
        Path(stamp(self.get_ext_fullpath(ext.name))).write_text(digest + "\n")

    def stamps(self) -> dict[str, str]:
        """Each extension's stamp in ``build_lib`` -> its place in the source tree."""
        mapping = {}
        for ext in self.extensions:
            filename = self.get_ext_filename(self.get_ext_fullname(ext.name))
            mapping[stamp(os.path.join(self.build_lib, filename))] = stamp(
                str(Path(*ext.name.split(".")[:-1]) / os.path.basename(filename)))
        return mapping

    def copy_extensions_to_source(self) -> None:
        super().copy_extensions_to_source()
        for built, in_place in self.stamps().items():
            if os.path.exists(built):
                self.copy_file(built, in_place, level=self.verbose)

    def get_output_mapping(self) -> dict[str, str]:
        mapping = super().get_output_mapping()
        if self.inplace:
            mapping.update(self.stamps())
        return mapping

    def get_outputs(self) -> list[str]:
        outputs = super().get_outputs()
        if self.inplace:
            return outputs
        return [*outputs, *(stamp(path) for path in outputs if not path.endswith(".py"))]


def extensions() -> list[Extension]:
    """The cores as Cython extensions, and their shared module; none when Cython is missing."""
    try:
        from Cython.Build import cythonize
    except ImportError:
        notice("Cython is not installed; the scheduling cores run as plain Python")
        return []
    modules = [Extension(name, [str(module_path(name, ".py"))]) for name in COMPILED]
    modules.append(Extension(SHARED, [str(module_path(SHARED, ".c"))]))
    try:
        built = cythonize(modules, compiler_directives=DIRECTIVES, quiet=True,
                          nthreads=os.cpu_count() or 1, shared_utility_qualified_name=SHARED)
    except Exception as error:  # a Cython that cannot translate them: run them as Python
        notice(f"Cython could not translate the scheduling cores ({error}); they run as "
               "plain Python")
        return []
    for ext in built:  # cythonize makes new Extensions
        ext.optional = True
    return sorted(built, key=lambda ext: -COMPILE_SECONDS.get(ext.name, 2.0))


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})
