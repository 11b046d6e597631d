"""``seam-repro import MANIFEST``: outputs made elsewhere -> a run folder (see seam_repro.run.importer)."""

from __future__ import annotations

from pathlib import Path

import click

from seam_repro.commands import MANIFEST, render_inputs


@click.command("import", epilog="""\b
Examples:
  seam-repro import paper.frozen.json --upstream-dir predictions/ --model meta-llama/Meta-Llama-3-8B-Instruct --out runs/l3
  seam-repro import paper.frozen.json --jsonl api_outputs.jsonl --model openai/gpt-4o@2024-08-06 --out runs/gpt4o
  seam-repro score runs/gpt4o""")
@click.argument("manifest", type=MANIFEST)
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Run folder to create (or add this model to); not inside --upstream-dir.")
@click.option("--model", required=True, metavar="ID[@REVISION]", help="The model that made the outputs; upstream "
              "folders are searched for <dataset>/ORG/NAME_<run>.json.")
@click.option("--upstream-dir", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="An upstream SEAM predictions folder (<dataset>/<org>/<model>_<run>.json).")
@click.option("--jsonl", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help='A JSONL of {"dataset", "run", "instance_id", "output"} (optionally "prompt" or "prompt_sha256").')
@render_inputs("Local dataset copies to render the manifest's prompts from.", "Local upstream prompt files.")
@click.option("--replace", is_flag=True, help="Where --out already holds outputs of this model that differ from "
              "the imported ones, replace them (without it the import is refused).")
def import_outputs(manifest: Path, out: Path, model: str, upstream_dir: Path | None, jsonl: Path | None,
                   data_dir: Path | None, prompts_dir: Path | None, allow_unfrozen: bool, replace: bool) -> None:
    """Import outputs made elsewhere into a run folder, matched to MANIFEST's prompts (by hash where
    the input carries the prompt); then score, submit and report it like any replay."""
    from seam_repro.run.importer import import_outputs as run_import

    summary = run_import(manifest, out, model=model, upstream_dir=upstream_dir, jsonl=jsonl, data_dir=data_dir,
                         prompts_dir=prompts_dir, allow_unfrozen=allow_unfrozen, replace=replace)
    click.echo(summary.line())
