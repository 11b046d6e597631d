"""Markdown CLI reference generated from the click group itself, so docs/cli.md cannot drift from the
code (the approach of pip-tools' and click's own docs: render from the command objects, never by
hand). ``python -m seam_repro.docs --write docs/cli.md`` (``make docs``; ``--write`` alone means that
page) replaces the text between ``<!-- cli-reference:start -->`` and ``<!-- cli-reference:end -->``;
``--check`` exits 1 when that section is stale; with neither it prints the reference.

Every command is imported to document it, so a command module that fails to import makes the
generator fail with the command's name rather than silently dropping it from the reference.
"""

from __future__ import annotations

import argparse
import inspect
import sys
from collections.abc import Sequence
from pathlib import Path

import click

from seam_repro.errors import InputError, SeamReproError

START, END = "<!-- cli-reference:start -->", "<!-- cli-reference:end -->"
HEADING = "## Command-line reference"
PAGE = "docs/cli.md"  # the page `make docs` rewrites, relative to the repository root
PROG, ENV_PREFIX = "seam-repro", "SEAM_REPRO"  # ENV_PREFIX: the auto_envvar_prefix cli.main passes


def _cell(text: str) -> str:
    """One Markdown table cell: a single line with pipes escaped (GFM splits cells on ``|``)."""
    return " ".join(text.split()).replace("|", "\\|")


def _help_paragraphs(text: str | None) -> str:
    """Click help text as Markdown: ``\\b`` paragraphs (kept verbatim by click) become code blocks,
    other paragraphs are re-flowed; text after ``\\f`` is hidden from help, as click does."""
    text = inspect.cleandoc((text or "").split("\f", 1)[0])
    blocks: list[str] = []
    for para in text.split("\n\n"):
        lines = para.splitlines()
        if lines and lines[0].strip() == "\b":
            blocks.append("```text\n" + "\n".join(lines[1:]) + "\n```")
        elif para.strip():
            blocks.append(" ".join(line.strip() for line in lines))
    return "\n\n".join(blocks)


def _envvar(param: click.Option, ctx: click.Context) -> str:
    """The environment variable click reads for ``param`` under ``auto_envvar_prefix``, as
    ``Option.resolve_envvar_value`` derives it (explicit ``envvar`` first)."""
    if param.envvar:
        names = [param.envvar] if isinstance(param.envvar, str) else list(param.envvar)
        return ", ".join(f"`{n}`" for n in names)
    # --help and --version are eager, expose_value=False options: env vars do not apply to them
    eager_meta = param.is_eager and not param.expose_value
    if param.allow_from_autoenv and ctx.auto_envvar_prefix and param.name and not eager_meta:
        return f"`{ctx.auto_envvar_prefix}_{param.name.upper()}`"
    return ""


def _options_table(cmd: click.Command, ctx: click.Context) -> list[str]:
    rows = []
    for param in cmd.params:
        record = param.get_help_record(ctx) if isinstance(param, click.Option) else None  # None: hidden
        if record is not None:
            rows.append(f"| `{_cell(record[0])}` | {_cell(record[1])} | {_envvar(param, ctx)} |")
    # The help option from this context's names, as a fresh process builds it: click caches a
    # command's help option from the first context it sees (a command invoked on its own gets
    # plain --help), so cmd.get_params(ctx) would depend on what ran earlier in the process.
    names = cmd.get_help_option_names(ctx) if cmd.add_help_option else []
    if names:
        ordered = [n for n in ctx.help_option_names if n in names]
        rows.append(f"| `{', '.join(ordered)}` | Show this message and exit. |  |")
    if not rows:
        return []
    return ["| Option | Description | Environment variable |", "|---|---|---|", *rows]


def _arguments(cmd: click.Command) -> str:
    """The command's arguments as a Markdown list ("" when it takes none)."""
    lines = []
    for arg in cmd.params:
        if isinstance(arg, click.Argument):
            flags = [] if arg.required else ["optional"]
            if arg.nargs == -1:
                flags.append("repeatable")
            lines.append(f"- `{arg.human_readable_name}`" + (f" ({', '.join(flags)})" if flags else ""))
    return "\n".join(["Arguments:", "", *lines]) if lines else ""


def _command_section(name: str, cmd: click.Command, parent: click.Context) -> str:
    """One command's section: its blocks (heading, help, usage, arguments, options, epilog) one
    blank line apart, those it lacks left out."""
    ctx = click.Context(cmd, info_name=name, parent=parent, **cmd.context_settings)
    usage = " ".join([ctx.command_path, *cmd.collect_usage_pieces(ctx)])
    blocks = [f"### `{ctx.command_path}`", "**Deprecated.**" if cmd.deprecated else "", _help_paragraphs(cmd.help),
              f"Usage: `{usage}`", _arguments(cmd), "\n".join(_options_table(cmd, ctx)), _help_paragraphs(cmd.epilog)]
    sections = ["\n\n".join(b for b in blocks if b) + "\n"]
    if isinstance(cmd, click.Group):  # nested groups (e.g. `datasets list`): one section per subcommand
        for sub_name, sub in _subcommands(cmd, ctx):
            sections.append(_command_section(sub_name, sub, ctx))
    return "\n".join(sections)


def _subcommands(group: click.Group, ctx: click.Context) -> list[tuple[str, click.Command]]:
    """The visible commands of ``group``, in its listing order; an import failure names the command."""
    found = []
    for name in group.list_commands(ctx):
        try:
            cmd = group.get_command(ctx, name)
        except Exception as exc:
            where = f"{ctx.command_path} {name}"
            raise SeamReproError(f"cannot document command '{where}': {type(exc).__name__}: {exc}") from exc
        if cmd is not None and not cmd.hidden:
            found.append((name, cmd))
    return found


def render_reference(group: click.Group | None = None, prog: str = PROG, env_prefix: str | None = ENV_PREFIX) -> str:
    """The full Markdown reference: the group's usage, options and command list, then one section
    per command (usage, arguments, every visible option with its environment variable).
    ``env_prefix`` must be the ``auto_envvar_prefix`` the program runs with (cli.main uses SEAM_REPRO)."""
    if group is None:
        from seam_repro.cli import cli as group
    # Contexts are made as click makes them (context_settings, e.g. -h/--help, inherited by every
    # command), so the output does not depend on which commands ran before in the same process.
    root = click.Context(group, info_name=prog, **{**group.context_settings, "auto_envvar_prefix": env_prefix})
    sections = [
        f"Generated from the code by `python -m seam_repro.docs --write {PAGE}` (`make docs`); "
        "do not edit by hand. Every option can also be set through the environment variable shown.",
        "",
        f"Usage: `{' '.join([prog, *group.collect_usage_pieces(root)])}`",
        "",
        *_options_table(group, root),
        "",
        "| Command | Summary |",
        "|---|---|",
    ]
    commands = _subcommands(group, root)
    sections += [f"| [`{name}`](#{_anchor(prog, name)}) | {_cell(cmd.get_short_help_str(limit=200))} |"
                 for name, cmd in commands]
    sections += ["", *(_command_section(name, cmd, root) for name, cmd in commands)]
    text = "\n".join(sections).rstrip() + "\n"
    home = str(Path.home())
    if len(home) > 1:  # defaults computed from $HOME would make the page machine-specific
        text = text.replace(home, "~")
    return text


def _anchor(prog: str, name: str) -> str:
    """GitHub's heading anchor for ``### `prog name```: lower-case, punctuation dropped, spaces to -."""
    title = f"{prog} {name}".lower()
    return "".join(ch for ch in title if ch.isalnum() or ch in "-_ ").replace(" ", "-")


def replace_section(text: str, reference: str, path: str | Path = PAGE) -> str:
    """``text`` with the marked section replaced by ``reference``; markers (and a heading) are
    appended at the end when the file has none. Anything outside the markers is left untouched."""
    n_start, n_end = text.count(START), text.count(END)
    if n_start == 0 and n_end == 0:
        sep = "" if text.endswith("\n") or not text else "\n"
        return f"{text}{sep}\n{HEADING}\n\n{START}\n{reference}{END}\n"
    if n_start != 1 or n_end != 1 or text.index(START) > text.index(END):
        raise InputError(path, f"expected exactly one '{START}' followed by one '{END}' "
                         f"(found {n_start} start and {n_end} end markers)")
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{START}\n{reference}{END}{tail}"


def update_file(path: str | Path, check: bool = False) -> bool:
    """Rewrite (or with ``check`` only compare) the marked section of ``path``; True if it was stale."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(path, f"cannot read: {exc.strerror or exc}") from exc
    new = replace_section(text, render_reference(), path)
    stale = new != text
    if stale and not check:
        path.write_text(new, encoding="utf-8")
    return stale


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m seam_repro.docs``: print, ``--write FILE`` or ``--check FILE`` the reference."""
    parser = argparse.ArgumentParser(prog="python -m seam_repro.docs", description=(__doc__ or "").split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", metavar="FILE", nargs="?", const=PAGE,
                      help=f"replace the marked section of FILE (default {PAGE})")
    mode.add_argument("--check", metavar="FILE", nargs="?", const=PAGE,
                      help=f"exit 1 if the marked section of FILE (default {PAGE}) is stale")
    args = parser.parse_args(argv)
    try:
        if args.write:
            changed = update_file(args.write)
            print(f"{args.write}: CLI reference {'updated' if changed else 'already up to date'}")
        elif args.check:
            if update_file(args.check, check=True):
                print(f"{args.check}: CLI reference section is stale; run `make docs`", file=sys.stderr)
                return 1
        else:
            sys.stdout.write(render_reference())
    except SeamReproError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
