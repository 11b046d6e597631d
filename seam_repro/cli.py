"""The ``seam-repro`` click group. It only registers commands; each lives in ``commands/`` and ends in
one library call. Commands are imported lazily so ``--help`` never imports torch."""

from __future__ import annotations

import importlib
import sys

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
    "import": "seam_repro.commands.import_outputs:import_outputs",
    "score": "seam_repro.commands.score:score",
    "conll-score": "seam_repro.commands.conll:conll_score",
    "metric": "seam_repro.commands.metric:metric",
    "report": "seam_repro.commands.report:report",
    "diff": "seam_repro.commands.report:diff",
    "submit": "seam_repro.commands.report:submit",
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
        module = importlib.import_module(module_name)
        return getattr(module, attr)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """List commands with their short help; a command whose module fails to import is shown
        with the import error instead of breaking ``--help`` for every other command."""
        rows = []
        for name in self.list_commands(ctx):
            try:
                cmd = self.get_command(ctx, name)
                short = cmd.get_short_help_str(limit=70) if cmd is not None else ""
            except ImportError as exc:  # pragma: no cover - only while a module is broken
                short = f"(unavailable: {exc})"
            rows.append((name, short))
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, epilog=EPILOG, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="seam-repro")
def cli() -> None:
    """Reproduce SEAM runs exactly: sample -> manifest -> prompts -> replay -> score -> report."""


def main() -> None:
    """Console entry point: domain errors become one line on stderr and exit status 2."""
    try:
        rv = cli.main(standalone_mode=False, auto_envvar_prefix="SEAM_REPRO")
        if isinstance(rv, int) and not isinstance(rv, bool):
            sys.exit(rv)
    except SeamReproError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
