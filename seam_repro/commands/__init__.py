"""One module per command group; each command parses options, calls one library function and prints."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click


class ManifestPath(click.ParamType):
    """A MANIFEST argument: an existing file, or the name of a manifest shipped in the package
    (``smoke``, ``paper``, ...), so an installed kit runs ``seam-repro replay smoke`` with no clone."""

    name = "manifest"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Path:
        from seam_repro.manifest.shipped import resolve_manifest, shipped_names

        value = str(value)
        found = resolve_manifest(value)
        if found is None:
            if Path(value).is_dir():
                self.fail(f"'{value}' is a folder; expected a manifest file", param, ctx)
            self.fail(f"'{value}' is neither a file nor a shipped manifest (shipped: {', '.join(shipped_names())})",
                      param, ctx)
        return found


MANIFEST = ManifestPath()


F = TypeVar("F", bound=Callable[..., Any])


def _options(*decorators: Callable[[F], F]) -> Callable[[F], F]:
    """Several click decorators as one, listed in the order ``--help`` shows them."""
    def wrap(f: F) -> F:
        for d in reversed(decorators):
            f = d(f)
        return f
    return wrap


def input_dirs(data_help: str, prompts_help: str) -> Callable[[F], F]:
    """``--data-dir`` and ``--prompts-dir``: local dataset copies and prompt files to read instead of
    the cache (sample, freeze, prompts, verify, and with :func:`render_inputs` replay and import)."""
    return _options(
        click.option("--data-dir", type=click.Path(file_okay=False, path_type=Path), default=None, help=data_help),
        click.option("--prompts-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
                     help=prompts_help))


def render_inputs(data_help: str, prompts_help: str) -> Callable[[F], F]:
    """:func:`input_dirs` and ``--allow-unfrozen``: what a manifest's prompts are rendered from."""
    return _options(input_dirs(data_help, prompts_help), click.option(
        "--allow-unfrozen", is_flag=True, help="Accept a manifest with frozen: false (results are not citable)."))


def scored_inputs(out_help: str, reference_help: str) -> Callable[[F], F]:
    """INPUTS (run folders and bundles), ``--out`` and ``--reference``: what report and view read."""
    return _options(
        click.argument("inputs", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path)),
        click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path),
                     help=out_help),
        click.option("--reference", default=None, help=reference_help))
