"""The code base stays ruff-clean and within the style rules that a machine can check."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _ruff() -> str | None:
    """ruff beside this interpreter (a venv not activated), else on PATH."""
    beside = Path(sys.executable).with_name("ruff")
    return str(beside) if beside.is_file() else shutil.which("ruff")


def test_ruff_check_is_clean() -> None:
    ruff = _ruff()
    if ruff is None:
        message = "ruff is not installed (it comes with the [test] extra)"
        if os.environ.get("MLTRACES_REQUIRE_UPSTREAM"):
            pytest.fail(message + " and CI must run it")
        pytest.skip(message)
    targets = [name for name in ("mltraces", "tests", "benchmarks") if (ROOT / name).is_dir()]
    result = subprocess.run(
        [ruff, "check", *targets],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


#: Cython's own files, whose functions are declared in C syntax (``cdef``/``cpdef``/``def``)
CYTHON_SUFFIXES = (".pyx", ".pxd", ".pxi")
#: a function declared in a Cython file: its name, then its parenthesised parameters
_CYTHON_DECLARATION = re.compile(r"^[ \t]*c?p?def\b(?![ \t]+class\b)[^\n(=]*?\b(\w+)[ \t]*\(",
                                 re.MULTILINE)


def parameter_count(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Parameters of a function, ``self``/``cls`` not counted, ``*args``/``**kwargs`` one each."""
    arguments = function.args
    named = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    count = len(named) + (arguments.vararg is not None) + (arguments.kwarg is not None)
    if named and named[0].arg in ("self", "cls"):
        count -= 1
    return count


def test_parameter_count_is_counted_as_the_rule_says() -> None:
    source = ("def f(self, a, b, /, c, *args, d, **kwargs): pass\n"
              "def g(cls): pass\ndef h(x, y=1, *, z=2): pass\n")
    counts = [parameter_count(node) for node in ast.parse(source).body]
    assert counts == [6, 0, 3]


def cython_parameter_counts(source: str) -> list[tuple[int, str, int]]:
    """(line, name, parameters) of each function a Cython file declares, counted as
    :func:`parameter_count` counts (``self``/``cls`` not counted; a C type's ``[:, :]``
    commas are not separators)."""
    found = []
    for match in _CYTHON_DECLARATION.finditer(source):
        depth, start, end = 1, match.end(), match.end()
        while depth and end < len(source):
            depth += {"(": 1, "[": 1, ")": -1, "]": -1}.get(source[end], 0)
            end += 1
        parameters, part, nesting = [], "", 0
        for char in source[start:end - 1]:
            nesting += {"(": 1, "[": 1, ")": -1, "]": -1}.get(char, 0)
            if char == "," and not nesting:
                parameters.append(part.strip())
                part = ""
            else:
                part += char
        parameters += [part.strip()] if part.strip() else []
        if parameters and re.split(r"[\s*]+", parameters[0].split("=")[0].strip())[-1] in (
                "self", "cls"):
            parameters = parameters[1:]
        found.append((source.count("\n", 0, match.start()) + 1, match.group(1), len(parameters)))
    return found


def test_cython_declarations_are_counted_as_the_rule_says() -> None:
    source = ("cdef class Ranking(Base):\n    cdef double[:, :] speed2\n"
              "    cdef bint before(self, long long a, long long b) noexcept\n"
              "cpdef long long[:] f(double[:, :] a, long long n,\n"
              "                     Ranking r=None, *args) except? -1\n"
              "ctypedef void (*hook)(int a, int b)\ndef g(): pass\n")
    assert cython_parameter_counts(source) == [(3, "before", 2), (4, "f", 4), (7, "g", 0)]


def test_no_function_takes_more_than_twelve_parameters() -> None:
    """Bundle what travels together (STYLE.md): every function and method in the package,
    the compiled cores' pure-Python-mode source and any Cython file (``.pyx``, ``.pxd``)
    included, takes 12 parameters at most."""
    over = []
    for path in sorted((ROOT / "mltraces").rglob("*")):
        name = path.relative_to(ROOT).as_posix()
        if path.suffix == ".py":
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=name)
            counts = [(node.lineno, node.name, parameter_count(node)) for node in ast.walk(tree)
                      if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)]
        elif path.suffix in CYTHON_SUFFIXES:
            counts = cython_parameter_counts(path.read_text(encoding="utf-8"))
        else:
            continue
        over += [f"{name}:{line} {function} ({count})" for line, function, count in counts
                 if count > 12]
    assert not over, "more than 12 parameters: " + ", ".join(over)


def test_the_cython_declarations_of_the_cores_are_read() -> None:
    """The ``.pxd`` files are really parsed (a regex that found nothing would pass anything)."""
    declared = {function for path in (ROOT / "mltraces").rglob("*.pxd")
                for _, function, _ in cython_parameter_counts(path.read_text(encoding="utf-8"))}
    assert {"before", "sort", "positions", "estimate", "scale_up"} <= declared
