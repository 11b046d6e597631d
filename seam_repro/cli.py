"""The ``seam-repro`` click group. It only registers commands; each lives in ``commands/`` and ends in
one library call. Commands are imported lazily so ``--help`` never imports torch."""

from __future__ import annotations

import importlib
import os
import shlex
import sys
from collections.abc import Callable

import click

from seam_repro import __version__
from seam_repro.errors import SeamReproError

COMMANDS: dict[str, str] = {
    "datasets": "seam_repro.commands.datasets:datasets",
    "fetch": "seam_repro.commands.fetch:fetch",
    "sample": "seam_repro.commands.manifest:sample",
    "freeze": "seam_repro.commands.manifest:freeze",
    "prompts": "seam_repro.commands.manifest:prompts",
    "verify": "seam_repro.commands.manifest:verify",
    "replay": "seam_repro.commands.replay:replay",
    "merge": "seam_repro.commands.replay:merge",
    "recheck": "seam_repro.commands.replay:recheck",
    "import": "seam_repro.commands.import_outputs:import_outputs",
    "score": "seam_repro.commands.score:score",
    "conll-score": "seam_repro.commands.conll:conll_score",
    "metric": "seam_repro.commands.metric:metric",
    "report": "seam_repro.commands.report:report",
    "diff": "seam_repro.commands.report:diff",
    "submit": "seam_repro.commands.report:submit",
    "view": "seam_repro.commands.view:view",
    "sensitivity": "seam_repro.commands.sensitivity:sensitivity",
}

EPILOG = """\b
Examples:
  seam-repro replay manifests/smoke.json --out runs/smoke      # embedded model, CPU, minutes
  seam-repro verify manifests/smoke.json                       # regenerate prompts, compare hashes
  seam-repro sample config.json -o my.json --profile upstream  # freeze choices of a new config
  seam-repro diff runs/smoke --reference paper                 # compare with the paper's Table 3
"""


class LazyGroup(click.Group):
    """A group whose commands are imported on first use (keeps start-up fast)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        return getattr(importlib.import_module(module_name), attr)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """List commands with their short help (at most 70 characters, whatever the terminal)."""
        rows = []
        for name in self.list_commands(ctx):
            cmd = self.get_command(ctx, name)
            rows.append((name, cmd.get_short_help_str(limit=70) if cmd is not None else ""))
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, epilog=EPILOG, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="seam-repro")
@click.option("-q", "--quiet", is_flag=True, help="Only warnings, errors and results: no progress bars or notes.")
@click.option("-v", "--verbose", is_flag=True, help="Also the kit's debug detail (thread and batch-size choices, "
              "network probes, library retries).")
def cli(quiet: bool, verbose: bool) -> None:
    """Reproduce SEAM runs exactly: sample -> manifest -> prompts -> replay -> score -> report."""
    from seam_repro.verbosity import NORMAL, QUIET, VERBOSE, set_verbosity

    if quiet and verbose:
        raise click.UsageError("give at most one of -q/--quiet and -v/--verbose")
    set_verbosity(QUIET if quiet else VERBOSE if verbose else NORMAL)


_interrupt_note: list[str | Callable[[], str]] = []


def on_interrupt(kept: str | Callable[[], str]) -> None:
    """Let the running command say what a Ctrl-C keeps (printed with the resume command); a
    callable is asked only when the interrupt comes, so it can count what is on disk then."""
    _interrupt_note[:] = [kept]


def _kept_note() -> str:
    if not _interrupt_note:
        return "no partial output was left (files are written whole, then renamed into place)"
    note = _interrupt_note[0]
    try:
        return note() if callable(note) else note
    except Exception:  # the note is a courtesy; never let it hide the interrupt
        return "outputs written so far are kept"


def command_line(argv: list[str] | None = None) -> str:
    """``seam-repro ARGS`` as typed (this process's arguments unless given), quoted for a shell."""
    return "seam-repro " + shlex.join(sys.argv[1:] if argv is None else argv)


def _redacted(text: str) -> str:
    """``text`` without the secrets this process registered (``generate/redact.py``): every line
    the handler prints passes here, whatever raised it. Imported only on a failure."""
    from seam_repro.generate.redact import redact_text

    return redact_text(text)


def _clip(text: str, limit: int) -> str:
    """``text`` on one line, cut at a word boundary with "…" past ``limit`` (not mid-word)."""
    one = " ".join(text.split())
    if len(one) <= limit:
        return one
    cut = one[:limit].rsplit(" ", 1)[0]
    return (cut if len(cut) > limit // 2 else one[:limit]) + " …"


def _fail(message: str, code: int) -> None:
    from seam_repro.bidi import show_bidi

    click.echo(f"error: {show_bidi(_redacted(message))}", err=True)
    sys.exit(code)


def main(argv: list[str] | None = None) -> None:
    """Console entry point: every failure is one line on stderr, never a traceback.

    Domain errors exit 2 (their own code); Ctrl-C says what was kept and how to resume (130);
    file-system faults (read-only folder, full disk) and input that defeats a parser are still one
    line (2); anything else is a bug, reported in one line with how to get the traceback (70).
    """
    args = list(sys.argv[1:] if argv is None else argv)
    _interrupt_note.clear()
    from seam_repro.network import apply_policy

    apply_policy(args)  # offline unless this command line asks for the network
    try:
        rv = cli.main(args=args, prog_name="seam-repro", standalone_mode=False, auto_envvar_prefix="SEAM_REPRO")
        if isinstance(rv, int) and not isinstance(rv, bool):
            sys.exit(rv)
    except SeamReproError as exc:
        _fail(str(exc), exc.exit_code)
    except click.exceptions.Abort as exc:
        cause = exc.__cause__ or exc.__context__
        if isinstance(cause, EOFError):  # click turns EOFError into Abort: it is an input cut short
            _fail(f"unexpected end of input ({cause or 'file ends early'})", 2)
        click.echo(_redacted(f"interrupted: {_kept_note()}; resume with: {command_line(args)}"), err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.message = _redacted(exc.message)
        exc.show()
        sys.exit(exc.exit_code)
    except OSError as exc:
        from seam_repro.files.atomic import describe_os_error

        _fail(describe_os_error(exc), 2)
    except RecursionError:
        _fail("input nested too deeply to process", 2)
    except MemoryError:
        _fail("out of memory while processing the input", 2)
    except Exception as exc:  # a bug in the kit: one line, the traceback on request
        if os.environ.get("SEAM_REPRO_DEBUG"):  # printed here, not re-raised, so it is redacted too
            import traceback

            sys.stderr.write(_redacted(traceback.format_exc()))
            sys.exit(70)
        _fail(f"internal error ({type(exc).__name__}: {_clip(_redacted(str(exc)), 200)}); this is a bug in seam-repro: "
              "rerun with SEAM_REPRO_DEBUG=1 and report the traceback", 70)
