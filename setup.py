"""Build the scheduling cores as C extensions when Cython and a C compiler are available.

Everything else about the package is in pyproject.toml. The cores
(``mltraces/scheduling/cores/{efcore,efrounds,gandivacore,leasecore,chronuscore}.py``, see
``mltraces/scheduling/cores/native.py``) are Cython pure-Python-mode modules: the same
files run as plain Python when they could not be compiled, so a failed build is
a notice, never an error. Each built extension gets a ``.sha256`` beside it
naming the source it was compiled from; the package runs the source instead of
an extension whose source has changed since (an editable install after an edit).
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

CORES = ("gandivacore", "efcore", "efrounds", "leasecore", "chronuscore", "mergesort")
FOLDER = Path("mltraces") / "scheduling" / "cores"
#: compiled cores outside the scheduling folder, by module name (the prefix-cache replay)
MORE_CORES = ("mltraces.prefixcache.cachecore",)
#: bounds are not checked (every index is in range by construction, as it was under
#: numba); negative indices wrap and division keeps Python's semantics (floor, modulo of
#: negatives, ZeroDivisionError), so compiled and interpreted runs agree bit for bit
DIRECTIVES = {
    "language_level": 3,
    "boundscheck": False,
    "wraparound": True,
    "cdivision": False,
    "initializedcheck": False,
}
#: no fused multiply-add or other contraction: every double operation rounds as in Python
C_FLAGS = ["-ffp-contract=off", "-fno-fast-math"]


def notice(message: str) -> None:
    print(f"mltraces: {message}", file=sys.stderr)


def stamp(path: str) -> str:
    """Where the sha256 of an extension's source is written: beside the extension."""
    return f"{path}.sha256"


class OptionalBuildExt(build_ext):
    """Compile what can be compiled; say so and go on when a core cannot be.

    setuptools builds into ``build_lib`` and, for an editable install, copies the
    extensions into the source tree: each one's stamp goes along.
    """

    def build_extension(self, ext: Extension) -> None:
        if self.compiler.compiler_type == "unix":
            ext.extra_compile_args = [*C_FLAGS, *ext.extra_compile_args]
        try:
            super().build_extension(ext)
        except Exception as error:  # no compiler, missing headers, a failed compile
            notice(f"{ext.name} not compiled ({type(error).__name__}, is a C compiler "
                   "installed?); it runs as plain Python, about 100 times slower")
            return
        source = Path(*ext.name.split(".")).with_suffix(".py")
        digest = hashlib.sha256(source.read_bytes()).hexdigest()
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
    """The cores as Cython extensions; none when Cython is missing."""
    try:
        from Cython.Build import cythonize
    except ImportError:
        notice("Cython is not installed; the scheduling cores run as plain Python")
        return []
    modules = [Extension(f"mltraces.scheduling.cores.{name}", [str(FOLDER / f"{name}.py")])
               for name in CORES]
    modules += [Extension(name, [str(Path(*name.split(".")).with_suffix(".py"))])
                for name in MORE_CORES]
    try:
        built = cythonize(modules, compiler_directives=DIRECTIVES, quiet=True)
    except Exception as error:  # a Cython that cannot translate them: run them as Python
        notice(f"Cython could not translate the scheduling cores ({error}); they run as "
               "plain Python")
        return []
    for ext in built:  # cythonize makes new Extensions
        ext.optional = True
    return built


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})
