"""``seam-repro report``, ``diff`` and ``submit``: thin click wrappers over report.py, diff.py, submit.py."""

from __future__ import annotations

import json
from pathlib import Path

import click

from seam_repro.cli import command_line
from seam_repro.commands import scored_inputs


@click.command(epilog="\b\nExamples:\n  seam-repro report runs/llama --out reports/llama --reference paper\n"
               "  seam-repro report my_model.bundle.json --reference paper --out reports/new")
@scored_inputs("Directory for report.md, report.json, box_plots.png, ar_arsd.png.",
               "'paper' (Table 3) or a JSON file of the same shape.")
@click.option("--manifest", default=None, help="Manifest digest (or manifest file) every input must match.")
@click.option("--seed", default=42, show_default=True, type=int, help="Root seed of the ASO bootstrap.")
@click.option("--deepsig", is_flag=True, help="Cross-check adjacent pairs with the deepsig package, if installed.")
@click.option("--view", "with_view", is_flag=True,
              help="Also write the run explorer (`seam-repro view`) to OUT/view/ and link it from report.md.")
def report(inputs: tuple[Path, ...], out_dir: Path, reference: str | None, manifest: str | None, seed: int,
           deepsig: bool, with_view: bool) -> int:
    """Rank run directories and bundles (and reference models) like the paper's Table 3."""
    from seam_repro.analysis.aso import AsoParams
    from seam_repro.analysis.reference import load_reference
    from seam_repro.analysis.report import build_report, write_report
    from seam_repro.analysis.submit import load_inputs, resolve_manifest_digest
    from seam_repro.files.guard import guard_outputs
    from seam_repro.manifest.trust import seeds_read_dirs

    names = ("report.json", "report.md", "box_plots.png", "ar_arsd.png", "view")
    manifest_file = Path(manifest) if manifest and Path(manifest).exists() else None  # else a bare digest
    guard_outputs([("--out", out_dir)],
                  inputs=[*inputs, reference if reference not in (None, "paper") else None, manifest_file],
                  read_dirs=[*(p for p in inputs if p.is_dir()), *seeds_read_dirs()], writes=names)
    models = load_inputs(list(inputs), resolve_manifest_digest(manifest))
    ref = load_reference(reference) if reference else None
    rep = build_report(models, ref, AsoParams(seed=seed), deepsig=deepsig, command=command_line())
    if with_view:  # first, so report.md never links a site that failed to build
        from seam_repro.view.build import build_site

        site = build_site(list(inputs), out_dir / "view", ref, command=command_line(), report=rep)
        rep["view"] = site.relative_to(out_dir).as_posix()
    for p in write_report(rep, out_dir):
        click.echo(str(p))
    if with_view:
        click.echo(str(site))
    return 0


@click.command(epilog="\b\nExamples:\n  seam-repro diff runs/l3-8b --reference paper\n"
               "  seam-repro diff runs/mine --reference paper --as Llama-3-8B --tolerance 2x\n"
               "  seam-repro diff runs/smoke --reference paper --allow-protocol-mismatch   # smoke is not the paper")
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option("--reference", default="paper", show_default=True, help="'paper' or a JSON reference file.")
@click.option("--tolerance", default=None, help="'spread' (default), 'Kx', 'P%' or points, e.g. 1.5.")
@click.option("--as", "as_name", default=None, help="Reference model name to compare with (else by HF id).")
@click.option("--json", "json_out", default=None, type=click.Path(dir_okay=False, path_type=Path),
              help="Also write the diff as JSON.")
@click.option("--allow-protocol-mismatch", is_flag=True,
              help="Compare even when the run's protocol (runs, limit, temperature, max_new_tokens, prompt path, "
                   "profile, protocol digest, partial coverage) differs from the reference's.")
def diff(run_dirs: tuple[Path, ...], reference: str, tolerance: str | None, as_name: str | None,
         json_out: Path | None, allow_protocol_mismatch: bool) -> int:
    """Compare reproduced mean ± std with the reference.

    Exit 0 every compared cell within, 1 any outside, 2 bad input, 3 protocol differs from the
    reference's (without --allow-protocol-mismatch), 4 nothing compared.
    """
    from seam_repro.analysis.diff import diff_models, format_diff, parse_tolerance
    from seam_repro.analysis.reference import load_reference
    from seam_repro.analysis.submit import load_inputs
    from seam_repro.files.atomic import atomic_write_text
    from seam_repro.files.guard import guard_outputs
    from seam_repro.manifest.trust import seeds_read_dirs

    guard_outputs([("--json", json_out)], inputs=[*run_dirs, reference if reference != "paper" else None],
                  read_dirs=[*(p for p in run_dirs if p.is_dir()), *seeds_read_dirs()])  # seeds/ checks bundles
    tol = parse_tolerance(tolerance)
    models = load_inputs(list(run_dirs))
    rep = diff_models(models, load_reference(reference), tol, as_name, allow_protocol_mismatch)
    click.echo(format_diff(rep))
    if json_out is not None:
        atomic_write_text(json_out, json.dumps(rep.to_json(), indent=1, ensure_ascii=False) + "\n")
    return rep.exit_code


@click.command(epilog="\b\nExamples:\n  seam-repro submit runs/mine --out mine.bundle.json\n  seam-repro submit runs/both --model meta-llama/Meta-Llama-3-8B-Instruct --out l3.bundle.json")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--out", required=True, type=click.Path(dir_okay=False, path_type=Path), help="Bundle JSON path.")
@click.option("--model", "model_id", default=None, help="Model id, when the run holds several scored models.")
def submit(run_dir: Path, out: Path, model_id: str | None) -> int:
    """Write a results bundle tied to the run's manifest, after re-validating the predictions and
    re-deriving the scores from them (scores, generation settings, predictions digest, seeds)."""
    from seam_repro.analysis.submit import explain_partial, make_bundle, write_bundle
    from seam_repro.files.guard import guard_outputs

    guard_outputs([("--out", out)], inputs=[run_dir], read_dirs=[run_dir])
    bundle = make_bundle(run_dir, model_id)
    write_bundle(bundle, out)
    for note in (explain_partial(bundle), bundle["checks"].get("note")):
        if note:
            click.echo(f"note: {note}", err=True)
    click.echo(f"{out}  bundle_digest={bundle['bundle_digest']}")
    return 0
