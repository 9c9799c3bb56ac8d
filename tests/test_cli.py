"""The ``mltraces`` command as a whole: entry points and the verb list."""

from __future__ import annotations

import subprocess
import sys

from mltraces import __version__
from mltraces.commands import SUMMARIES, VERBS


def test_python_dash_m_runs_the_same_command() -> None:
    done = subprocess.run([sys.executable, "-m", "mltraces", "--version"],
                          capture_output=True, text=True, check=True)
    assert done.stdout.strip() == f"mltraces {__version__}"


def test_help_lists_every_verb_without_importing_them() -> None:
    code = ("import sys\nfrom mltraces.cli import main\ntry:\n    main(['--help'])\n"
            "except SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m.startswith(('duckdb', 'pandas'))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip().endswith("[]")
    for verb in VERBS:
        assert verb in done.stdout
    assert set(SUMMARIES) == set(VERBS)


def test_bash_completion_knows_every_verb_and_option(capsys, tmp_path) -> None:
    from mltraces.cli import main

    assert main(["completion", "bash"]) == 0
    script = capsys.readouterr().out
    for verb in VERBS:
        assert verb in script
    assert "--workload" in script and "--local" in script
    path = tmp_path / "mltraces.bash"
    path.write_text(script)
    done = subprocess.run(["bash", "-c", f"source {path} && complete -p mltraces"],
                          capture_output=True, text=True, check=True)
    assert "mltraces" in done.stdout


def test_a_figure_name_given_as_a_source_points_at_only(capsys) -> None:
    from mltraces.cli import main

    assert main(["figures", "zeus_fig1"]) == 2
    assert "'zeus_fig1' is a figure: draw it with --only zeus_fig1" in capsys.readouterr().err


def test_simulate_with_a_missing_local_file_says_so_once(http_mirror, tmp_path, capsys) -> None:
    from mltraces.cli import main

    missing = tmp_path / "alibaba_groups.csv.xz"
    assert main(["simulate", "--alibaba", "--local", f"zeus.alibaba_groups={missing}"]) == 1
    captured = capsys.readouterr()
    assert captured.err.count(str(missing)) == 1 and "--local" not in captured.err
    assert captured.err.startswith("mltraces simulate: error: local file for zeus.alibaba_groups")


def test_a_command_led_by_its_verb_parses_the_same_without_the_other_verbs(capsys) -> None:
    import pytest

    from mltraces.cli import _leads_with, _verb_in, build_parser, main

    for argv in (["sql", "SELECT 1", "--format", "csv"], ["-q", "sql", "SELECT 1", "-o", "x"],
                 ["-v", "tables"], ["info", "zeus", "-q"]):
        verb = _verb_in(argv)
        assert _leads_with(argv, verb)
        full = build_parser(verb).parse_args(argv)
        alone = build_parser(verb, alone=True).parse_args(argv)
        assert vars(alone).keys() == vars(full).keys()
        assert {k: v for k, v in vars(alone).items() if k != "_run"} == {
            k: v for k, v in vars(full).items() if k != "_run"}
    for argv in (["-h", "sql"], ["bogus", "sql"], ["--version", "sql"], ["-qv", "sql"]):
        assert not _leads_with(argv, _verb_in(argv))
    with pytest.raises(SystemExit):
        main(["-h", "sql"])
    shown = capsys.readouterr().out
    assert all(verb in shown for verb in VERBS)  # the top-level help: every verb


def test_every_module_takes_its_logger_from_mltraces_logs() -> None:
    from pathlib import Path

    import mltraces

    package = Path(mltraces.__file__).parent
    direct = [str(p.relative_to(package)) for p in package.rglob("*.py")
              if "logging.getLogger(" in p.read_text() and p.name != "logs.py"]
    assert direct == []  # else its records could print before the command's format is set


def _python(code: str, **env: str) -> subprocess.CompletedProcess:
    import os

    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, env={**os.environ, **env})


def test_the_log_format_is_installed_by_the_first_logger() -> None:
    done = _python("import sys\nfrom mltraces import logs\nlogs.configure(verbose=False)\n"
                   "assert 'logging' not in sys.modules\n"
                   "logs.get_logger('mltraces.x').warning('careful')\n"
                   "logs.get_logger('mltraces.x').info('not shown')")
    assert done.stderr == "mltraces: careful\n"


def test_a_warm_query_never_loads_logging(dir_mirror, isolated_cache) -> None:
    from mltraces.cli import main

    assert main(["sql", "SELECT count(*) FROM zeus.power", "--format", "csv"]) == 0  # builds it
    done = _python("import sys\nfrom mltraces.cli import main\n"
                   "main(['sql', 'SELECT count(*) AS n FROM zeus.power', '--format', 'csv'])\n"
                   "heavy = ('logging', 'mltraces.download', 'mltraces.registry', "
                   "'mltraces.catalog.build', 'mltraces.catalog.readers')\n"
                   "print(sorted(m for m in sys.modules if m.startswith(heavy)))",
                   MLTRACES_CACHE=str(isolated_cache), MLTRACES_MIRROR=str(dir_mirror))
    assert done.stdout == "n\n1609\n[]\n"


def test_the_cli_the_catalog_and_the_downloads_name_no_source() -> None:
    """Sources are found by scanning: only docstrings and comments may use one as an example."""
    import ast
    import io
    import re
    import tokenize
    from pathlib import Path

    from mltraces.registry import all_sources

    package = Path(__file__).resolve().parents[1] / "mltraces"
    names = re.compile(r"\b(" + "|".join(map(re.escape, all_sources())) + r")\b")
    files = [package / "cli.py", *sorted((package / "commands").glob("*.py")),
             *sorted((package / "catalog").glob("*.py")),
             *sorted((package / "download").glob("*.py"))]
    found = []
    for path in files:
        text = path.read_text()
        docstrings = {node.body[0].value.lineno for node in ast.walk(ast.parse(text))
                      if isinstance(node, ast.Module | ast.FunctionDef | ast.ClassDef)
                      and node.body and isinstance(node.body[0], ast.Expr)
                      and isinstance(node.body[0].value, ast.Constant)}
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE):
                continue
            if token.type == tokenize.STRING and token.start[0] in docstrings:
                continue
            if names.search(token.string):
                found.append(f"{path.relative_to(package)}:{token.start[0]}: {token.string}")
    assert not found, "\n".join(found)


def test_help_texts_list_the_sources_from_the_registry(capsys) -> None:
    import pytest

    from mltraces.cli import main
    from mltraces.download.extras import extras
    from mltraces.registry import all_sources

    for verb in ("info", "fetch", "list", "verify"):
        with pytest.raises(SystemExit):
            main([verb, "--help"])
        text = " ".join(capsys.readouterr().out.split())
        assert all(name in text for name in all_sources()), verb
        if verb != "info":
            assert all(name in text for name in extras()), verb
