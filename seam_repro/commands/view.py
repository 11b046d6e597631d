"""``seam-repro view``: a thin click wrapper over view/build.py."""

from __future__ import annotations

from pathlib import Path

import click

from seam_repro.commands import scored_inputs


@click.command(epilog="\b\nExamples:\n  seam-repro view runs/smoke --out runs/smoke-view\n"
               "  seam-repro view runs/l3-8b runs/mistral other.bundle.json --reference paper --out site/")
@scored_inputs("Folder for the site (index.html, data/); a site written here before is replaced.",
               "'paper' (Table 3) or a JSON file of the same shape, shown beside.")
@click.option("--prompts-dir", default=None, type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Prompt files (<dataset>.json) for the paraphrase texts; default: the fetch cache.")
def view(inputs: tuple[Path, ...], out_dir: Path, reference: str | None, prompts_dir: Path | None) -> int:
    """Write a static run explorer (open OUT/index.html from disk): the Table 3 summary, per dataset
    every instance's score per run and model, each prediction with its prompt, factors and gold."""
    from seam_repro.analysis.reference import load_reference
    from seam_repro.cli import command_line
    from seam_repro.files.guard import guard_outputs
    from seam_repro.view.build import build_site

    # writes=".": an earlier site at --out is replaced whole, so no input may lie inside it
    guard_outputs([("--out", out_dir)], inputs=[*inputs, reference if reference not in (None, "paper") else None],
                  read_dirs=[*(p for p in inputs if p.is_dir()), prompts_dir], writes=["."])
    ref = load_reference(reference) if reference else None
    click.echo(str(build_site(list(inputs), out_dir, ref, prompts_dir, command_line())))
    return 0
