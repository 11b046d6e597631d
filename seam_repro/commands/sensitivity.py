"""``seam-repro sensitivity``: a thin click wrapper over ``analysis/sensitivity/``."""

from __future__ import annotations

from pathlib import Path

import click


@click.command(epilog="\b\nExamples:\n"
               "  seam-repro sample manifests/smoke-paraphrase.config.json -o para.json "
               "--prompts-dir manifests/fixtures/prompts\n"
               "  seam-repro replay para.json --out runs/para --backend echo && seam-repro score runs/para\n"
               "  seam-repro sensitivity runs/para --out reports/para\n"
               "  seam-repro sensitivity runs/iid --out reports/iid --data-dir data/   # + gold-document position\n"
               "  seam-repro sensitivity runs/iid runs/noise --out report/   # noise floor vs SEAM's std")
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Directory for sensitivity.md, sensitivity.json, variance_shares.png, ranking_agreement.png "
                   "(may be a `report` folder: no file names are shared).")
@click.option("--bootstrap", "n_boot", default=200, show_default=True, type=click.IntRange(0, 100_000),
              help="Draws for the share intervals and resamples for ranking agreement (0: point estimates only).")
@click.option("--seed", default=42, show_default=True, type=int, help="Root seed of the bootstrap.")
@click.option("--data-dir", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="Dataset folder (as for replay) to read which documents are gold where a dataset marks "
                   "them (MuSiQue's supporting paragraphs), for the gold-position effect; checked against "
                   "the manifest's file hashes.")
@click.option("--jobs", type=click.IntRange(1, 256), default=None,
              help="Worker processes for the fits (default: one per CPU core).")
def sensitivity(run_dirs: tuple[Path, ...], out_dir: Path, n_boot: int, seed: int, data_dir: Path | None,
                jobs: int | None) -> int:
    """Which factor moves the score: variance shares per factor, ranking stability, noise floor.

    Reads scored run folders (`score` first). Per (model, dataset): the share of score variance
    due to each factor the manifest's design varied, to the instance, and the residual (REML
    mixed model checked for convergence and for components at 0, 95% intervals on the population
    shares; a fit that did not converge is marked, never printed as numbers) and the effect on the run score of each
    recorded run-level choice with a few levels seen in several runs (instruction paraphrase; the
    number of demonstrations and document slots where they vary): each level's deviation with a
    95% interval and runs per level, and an F test of no effect; with --data-dir, the effect of
    the first gold document's position (instance and run effects, clustered on instance); tests
    Holm-adjusted over the report;
    per dataset and over all: P(model A ranks
    above B) in a fresh study of as many runs, with an interval, and ranking agreement vs number of runs; from a
    decoding-noise design, the noise floor beside SEAM's std of i.i.d. runs of the same model.
    """
    from seam_repro.analysis.sensitivity.analyse import analyse
    from seam_repro.analysis.sensitivity.report import REPORT_FILES, write_sensitivity_report
    from seam_repro.files.guard import guard_outputs

    guard_outputs([("--out", out_dir)] + [("--out", out_dir / n) for n in REPORT_FILES],
                  inputs=list(run_dirs), read_dirs=list(run_dirs))
    result = analyse(list(run_dirs), n_boot=n_boot, seed=seed, data_dir=data_dir, jobs=jobs)
    for line in result["skipped"]:
        click.echo(f"no shares: {line}", err=True)
    for p in write_sensitivity_report(result, out_dir):
        click.echo(str(p))
    return 0
