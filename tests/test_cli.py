"""The ``seam-repro`` click group: --help/--version, ``python -m seam_repro``, every registered
command's --help, lazy imports, and main()'s conversion of domain errors to one line + exit 2."""

from __future__ import annotations

import subprocess
import sys
import tomllib
import types
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import seam_repro
from seam_repro import cli as cli_module
from seam_repro.cli import COMMANDS, cli, main
from seam_repro.errors import InputError

ROOT = Path(__file__).resolve().parents[1]


def _pyproject_version() -> str:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]


def test_version_matches_pyproject() -> None:
    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == f"seam-repro, version {_pyproject_version()}"
    assert seam_repro.__version__ == _pyproject_version()


def test_help_lists_every_registered_command_and_examples() -> None:
    result = CliRunner().invoke(cli, ["--help"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("Usage: ")
    listed = result.output.split("Commands:", 1)[1]
    for name in COMMANDS:
        assert f"  {name} " in listed, name
    assert "unavailable" not in listed  # every command module imports
    assert "Examples:" in result.output  # STYLE.md: help shows examples
    assert "seam-repro replay manifests/smoke.json" in result.output


def test_short_help_flag_is_the_same_as_long() -> None:
    runner = CliRunner()
    assert runner.invoke(cli, ["-h"]).output == runner.invoke(cli, ["--help"]).output


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_registered_command_has_working_help(name: str) -> None:
    result = CliRunner().invoke(cli, [name, "--help"])
    assert result.exit_code == 0, f"{name} --help: {result.output}{result.exception!r}"
    assert result.output.startswith(f"Usage: cli {name} ") or result.output.startswith(f"Usage: seam-repro {name} ")
    module_name, attr = COMMANDS[name].split(":")
    cmd = getattr(__import__(module_name, fromlist=[attr]), attr)
    assert isinstance(cmd, click.Command)
    assert cmd.help, f"{name} has no help text"
    assert "Examples:" in result.output, f"{name} --help shows no examples (STYLE.md)"


def test_nested_group_subcommands_have_working_help() -> None:
    runner = CliRunner()
    for name in sorted(COMMANDS):
        cmd = cli.get_command(click.Context(cli), name)
        if not isinstance(cmd, click.Group):
            continue
        for sub in cmd.list_commands(click.Context(cmd)):
            result = runner.invoke(cli, [name, sub, "--help"])
            assert result.exit_code == 0, f"{name} {sub} --help: {result.output}"
            assert "Examples:" in result.output, f"{name} {sub} --help shows no examples"


def test_unknown_command_is_a_usage_error() -> None:
    result = CliRunner().invoke(cli, ["no-such-command"])
    assert result.exit_code == 2
    assert "No such command 'no-such-command'" in result.output


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=ROOT, timeout=120)


def test_python_dash_m_help_and_version_in_a_subprocess() -> None:
    helped = _run("-m", "seam_repro", "--help")
    assert helped.returncode == 0, helped.stderr
    assert helped.stdout.startswith("Usage: python -m seam_repro") or helped.stdout.startswith("Usage: seam-repro")
    version = _run("-m", "seam_repro", "--version")
    assert version.returncode == 0, version.stderr
    assert version.stdout.strip().endswith(f"version {_pyproject_version()}")


def test_console_script_is_declared_as_main() -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
    assert scripts == {"seam-repro": "seam_repro.cli:main"}


def _with_command(monkeypatch: pytest.MonkeyPatch, command: click.Command) -> None:
    """Register ``command`` as ``boom`` through the real lazy loader (a module in sys.modules)."""
    module = types.ModuleType("seam_repro_test_boom")
    module.boom = command  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setitem(cli_module.COMMANDS, "boom", f"{module.__name__}:boom")
    monkeypatch.setattr(sys, "argv", ["seam-repro", "boom"])


def _exit_status() -> int:
    """Run main() as the console script does; a normal return is exit status 0."""
    try:
        main()
    except SystemExit as exc:
        return 0 if exc.code is None else int(exc.code)
    return 0


def test_main_turns_domain_errors_into_one_line_and_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    @click.command()
    def boom() -> None:
        """Fail like a bad input file does."""
        raise InputError("m.json", "must be a JSON object", record=3, field="runs")

    _with_command(monkeypatch, boom)
    assert _exit_status() == 2
    err = capsys.readouterr().err
    assert err == "error: m.json: record 3: field 'runs': must be a JSON object\n"


def test_main_passes_integer_return_values_as_exit_status(monkeypatch: pytest.MonkeyPatch) -> None:
    @click.command()
    def boom() -> int:
        """Report a mismatch through the exit status, as verify does."""
        return 1

    _with_command(monkeypatch, boom)
    assert _exit_status() == 1


def test_main_reads_options_from_the_environment(monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """main() sets auto_envvar_prefix=SEAM_REPRO: SEAM_REPRO_<COMMAND>_<OPTION> fills an option."""

    @click.command()
    @click.option("--out-dir", default="unset")
    def boom(out_dir: str) -> None:
        """Echo the option."""
        click.echo(out_dir)

    _with_command(monkeypatch, boom)
    monkeypatch.setenv("SEAM_REPRO_BOOM_OUT_DIR", "/from/env")
    assert _exit_status() == 0
    assert capsys.readouterr().out == "/from/env\n"


def test_datasets_list_covers_every_shipped_suite() -> None:
    from click.testing import CliRunner

    from seam_repro.cli import cli
    from seam_repro.specs import load_suite, shipped_suites

    res = CliRunner().invoke(cli, ["datasets", "list", "--suite", "all"])
    assert res.exit_code == 0, res.output
    for name in shipped_suites():
        for ds in load_suite(name).datasets:
            assert ds in res.output
    bad = CliRunner().invoke(cli, ["datasets", "list", "--suite", "nope"])
    assert bad.exit_code != 0 and "unknown suite 'nope'" in str(bad.exception or bad.output)


def test_ctrl_c_says_what_was_kept_and_how_to_resume(monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    @click.command()
    def boom() -> None:
        """Be interrupted after saying what a resume keeps."""
        cli_module.on_interrupt(lambda: f"{1 + 2} predictions kept in runs/x")  # counted at interrupt time
        raise KeyboardInterrupt

    _with_command(monkeypatch, boom)
    assert _exit_status() == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == "interrupted: 3 predictions kept in runs/x; resume with: seam-repro boom"


def test_end_of_input_is_not_reported_as_an_interrupt(monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """click turns EOFError into Abort ("aborted", 130); a file cut short is bad input (2)."""
    @click.command()
    def boom() -> None:
        """Read past the end of a truncated stream."""
        raise EOFError("Compressed file ended before the end-of-stream marker was reached")

    _with_command(monkeypatch, boom)
    assert _exit_status() == 2
    assert capsys.readouterr().err.strip().startswith("error: unexpected end of input (Compressed file ended")


@pytest.mark.parametrize(("exc", "code", "text"), [
    (PermissionError(13, "Permission denied", "/ro/x.json"), 2, "error: /ro/x.json: permission denied"),
    (OSError(28, "No space left on device", "/full/x"), 2, "error: /full/x: no space left on the device"),
    (RecursionError("maximum recursion depth exceeded"), 2, "error: input nested too deeply"),
    (ZeroDivisionError("division by zero"), 70, "error: internal error (ZeroDivisionError: division by zero)"),
    # a long message is cut at a word, marked "…", never mid-word (issue 34: "...the attri)")
    (ValueError("word " * 39 + "attribute and more"), 70, "error: internal error (ValueError: " + "word " * 39 + "…)"),
])
def test_every_other_failure_is_one_line(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                         exc: BaseException, code: int, text: str) -> None:
    @click.command()
    def boom() -> None:
        """Fail with an exception that is not a domain error."""
        raise exc

    _with_command(monkeypatch, boom)
    monkeypatch.delenv("SEAM_REPRO_DEBUG", raising=False)
    assert _exit_status() == code
    err = capsys.readouterr().err
    assert err.startswith(text) and err.count("\n") == 1 and "Traceback" not in err
