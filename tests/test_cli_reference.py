"""seam_repro.docs: the CLI reference page (docs/cli.md) is regenerated from the click group and compared, so
a command or option added without `make docs` fails here; the renderer itself is checked on a toy
group against click's own --help output and click's own environment-variable handling."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from seam_repro import docs
from seam_repro.cli import COMMANDS, cli
from seam_repro.errors import InputError, SeamReproError

ROOT = Path(__file__).resolve().parents[1]


@click.group()
def toy() -> None:
    """Toy group."""


@toy.command(epilog="\b\nExamples:\n  toy run a.json --out x")
@click.argument("config", type=click.Path())
@click.argument("extra", nargs=-1)
@click.option("-o", "--out", required=True, help="Where | to write.")
@click.option("--seed", type=int, default=7, show_default=True, help="Root seed.")
@click.option("--fast/--slow", default=True, help="Speed.")
@click.option("--secret", hidden=True)
@click.option("--token", envvar="TOY_TOKEN", help="API token.")
def run(config: str, extra: tuple[str, ...], out: str, seed: int, fast: bool, secret: str | None,
        token: str | None) -> None:
    """Run a CONFIG.

    Long description that
    click re-flows.

    \b
    Kept  as
      is.
    \f
    Hidden from help.
    """
    click.echo(f"{out}|{seed}|{fast}|{token}")


@toy.group()
def sub() -> None:
    """A nested group."""


@sub.command("leaf")
def leaf() -> None:
    """A leaf command."""


def test_cli_reference_page_is_up_to_date() -> None:
    """Fails when docs/cli.md's marked section differs from the regenerated one: run `make docs`."""
    page = ROOT / docs.PAGE
    text = page.read_text(encoding="utf-8")
    assert text.count(docs.START) == 1 and text.count(docs.END) == 1, f"{docs.PAGE} lacks the reference markers"
    expected = docs.replace_section(text, docs.render_reference(), page)
    assert expected == text, f"{docs.PAGE} is stale: run `make docs` (python -m seam_repro.docs --write {docs.PAGE})"


def test_make_docs_writes_the_page_and_the_readme_links_it() -> None:
    """The reference lives in docs/cli.md alone: `make docs` writes it, the README only links it."""
    assert f"-m seam_repro.docs --write {docs.PAGE}" in (ROOT / "Makefile").read_text(encoding="utf-8")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert docs.START not in readme and docs.END not in readme
    assert f"]({docs.PAGE})" in readme


def test_write_and_check_default_to_the_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--write` / `--check` without a file mean docs/cli.md (relative to the working folder)."""
    (tmp_path / "docs").mkdir()
    (tmp_path / docs.PAGE).write_text(f"# CLI\n\n{docs.START}\n{docs.END}\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert docs.main(["--check"]) == 1
    assert docs.main(["--write"]) == 0 and docs.main(["--check"]) == 0
    assert "### `seam-repro replay`" in (tmp_path / docs.PAGE).read_text(encoding="utf-8")


def test_reference_documents_every_registered_command_and_option() -> None:
    ref = docs.render_reference()
    root = click.Context(cli, info_name="seam-repro")
    for name in COMMANDS:
        assert f"### `seam-repro {name}`" in ref, name
        cmd = cli.get_command(root, name)
        assert cmd is not None
        for param in cmd.params:
            if isinstance(param, click.Option) and not param.hidden:
                assert f"`{param.opts[-1]}" in ref or any(o in ref for o in param.opts), (name, param.opts)


def test_toy_group_rendering_matches_click_help() -> None:
    ref = docs.render_reference(toy, prog="toy", env_prefix=None)
    help_text = CliRunner().invoke(toy, ["run", "--help"], prog_name="toy").output
    usage = help_text.splitlines()[0].removeprefix("Usage: ")
    assert f"Usage: `{usage}`" in ref  # the same usage line click prints
    assert usage == "toy run [OPTIONS] CONFIG [EXTRA]..."
    assert "Run a CONFIG.\n\nLong description that click re-flows." in ref
    assert "```text\nKept  as\n  is.\n```" in ref  # \b paragraph kept verbatim
    assert "Hidden from help" not in ref and "--secret" not in ref
    assert "| `-o, --out TEXT` | Where \\| to write. [required] | `TOY_RUN_OUT` |" not in ref  # no prefix given
    assert "| `-o, --out TEXT` | Where \\| to write. [required] |  |" in ref
    assert "| `--seed INTEGER` | Root seed. [default: 7] |" in ref
    assert "| `--fast / --slow` | Speed. |" in ref
    assert "| `--token TEXT` | API token. | `TOY_TOKEN` |" in ref
    assert "- `CONFIG`\n- `EXTRA` (optional, repeatable)" in ref
    assert "```text\nExamples:\n  toy run a.json --out x\n```" in ref
    assert "### `toy sub leaf`" in ref and "A leaf command." in ref
    assert "| [`run`](#toy-run) | Run a CONFIG. |" in ref


def test_documented_environment_variables_are_the_ones_click_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Independent check of the Environment column: set the documented variable, let click parse."""
    assert docs.ENV_PREFIX == "SEAM_REPRO"  # what seam_repro.cli.main passes as auto_envvar_prefix
    ref = docs.render_reference(toy, prog="toy", env_prefix="TOYX")
    row = next(line for line in ref.splitlines() if line.startswith("| `--seed INTEGER`"))
    env_name = row.rsplit("|", 2)[1].strip().strip("`")
    assert env_name == "TOYX_RUN_SEED"
    monkeypatch.setenv(env_name, "99")
    monkeypatch.setenv("TOY_TOKEN", "tok")
    result = CliRunner().invoke(toy, ["run", "c.json", "-o", "x"], auto_envvar_prefix="TOYX")
    assert result.exit_code == 0, result.output
    assert result.output == "x|99|True|tok\n"


def test_home_directory_is_not_baked_into_the_reference(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    home = tmp_path / "someone"

    @click.command()
    @click.option("--cache", default=str(home / ".cache" / "kit"), show_default=True)
    def fetch(cache: str) -> None:
        """Fetch."""

    group = click.Group("g", commands={"fetch": fetch})
    monkeypatch.setenv("HOME", str(home))
    ref = docs.render_reference(group, prog="g")
    assert str(home) not in ref
    assert "[default: ~/.cache/kit]" in ref


def test_replace_section_replaces_only_between_markers() -> None:
    text = f"# Title\n\nintro\n\n## CLI\n\n{docs.START}\nold stuff\n{docs.END}\n\n## After\ntail\n"
    new = docs.replace_section(text, "NEW\n")
    assert new == f"# Title\n\nintro\n\n## CLI\n\n{docs.START}\nNEW\n{docs.END}\n\n## After\ntail\n"
    assert docs.replace_section(new, "NEW\n") == new  # idempotent


def test_replace_section_appends_markers_when_absent() -> None:
    new = docs.replace_section("# Title\nbody", "REF\n")
    assert new == f"# Title\nbody\n\n{docs.HEADING}\n\n{docs.START}\nREF\n{docs.END}\n"
    assert docs.replace_section(new, "REF\n") == new


@pytest.mark.parametrize(
    "text",
    [
        f"{docs.END}\n{docs.START}\n",  # wrong order
        f"{docs.START}\n{docs.START}\n{docs.END}\n",  # duplicate start
        f"{docs.START}\nno end\n",  # missing end
    ],
)
def test_malformed_markers_are_a_one_line_input_error(text: str) -> None:
    with pytest.raises(InputError) as exc:
        docs.replace_section(text, "x\n", "README.md")
    msg = str(exc.value)
    assert msg.startswith("README.md: expected exactly one '<!-- cli-reference:start -->'")
    assert "\n" not in msg


def test_write_and_check_round_trip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(f"# Kit\n\n{docs.START}\nstale\n{docs.END}\n", encoding="utf-8")
    assert docs.main(["--check", str(readme)]) == 1
    assert "stale; run `make docs`" in capsys.readouterr().err
    assert docs.main(["--write", str(readme)]) == 0
    assert docs.main(["--check", str(readme)]) == 0
    body = readme.read_text(encoding="utf-8")
    assert body.startswith(f"# Kit\n\n{docs.START}\n") and body.endswith(f"{docs.END}\n")
    assert "### `seam-repro replay`" in body


def test_missing_file_is_a_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert docs.main(["--check", str(tmp_path / "nope.md")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {tmp_path / 'nope.md'}: cannot read") and err.count("\n") == 1


def test_a_command_that_fails_to_import_is_named() -> None:
    class Broken(click.Group):
        def list_commands(self, ctx: click.Context) -> list[str]:
            return ["bad"]

        def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
            raise ImportError("No module named 'seam_repro.commands.bad'")

    with pytest.raises(SeamReproError, match=r"cannot document command 'x bad': ImportError: No module named"):
        docs.render_reference(Broken("x"), prog="x")


def test_reference_uses_the_groups_context_settings_whatever_ran_before() -> None:
    """click caches a command's help option on first use; the reference must not depend on that."""
    fresh = docs.render_reference()
    for name in COMMANDS:
        CliRunner().invoke(cli, [name, "--help"])
    assert docs.render_reference() == fresh
    assert "| `-h, --help` | Show this message and exit. |  |" in fresh  # cli sets help_option_names
