"""``seam-repro score RUN_DIR``: per-instance scores and per-run summaries (see seam_repro.scoring.loop)."""

from __future__ import annotations

from pathlib import Path

import click

from seam_repro.config import PROFILES


@click.command(epilog="""\b
Examples:
  seam-repro score runs/smoke                          # writes runs/smoke/scores/<model>/...
  seam-repro score runs/smoke --profile seam-repro-1   # corrected protocol as the main metric
  seam-repro score runs/smoke -o /tmp/scores --no-fic  # skip FuseReviews model-based metrics""")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("-o", "--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Scores directory (default RUN_DIR/scores).")
@click.option("--profile", type=click.Choice(PROFILES), default=None,
              help="Main metric variant; default: the run's profile, else upstream. The corrected "
                   "variant is always written alongside.")
@click.option("--fic/--no-fic", default=True, show_default=True,
              help="Score FuseReviews with its NLI/coverage models (null scores with a reason when unavailable).")
@click.option("--fic-download", is_flag=True,
              help="Allow fetching the pinned FIC models from the Hub (flan-t5-xxl is ~45 GB); default: local cache only.")
@click.option("--gold-block-size", type=click.IntRange(min=1), default=4096, show_default=True,
              help="File system block size for the as-published coreference score: upstream ran the scorer on an "
                   "unflushed gold file, of which perl read only what this buffer size let through.")
def score(run_dir: Path, out_dir: Path | None, profile: str | None, fic: bool, fic_download: bool,
          gold_block_size: int) -> None:
    """Score a run directory: instance_scores.jsonl, samples.jsonl and summary.json per model (0-100 scale)."""
    from seam_repro.files.reading import read_json
    from seam_repro.scoring.loop import score_run_dir

    for path in score_run_dir(run_dir, out_dir, profile, fic=fic, fic_download=fic_download,
                              gold_block_size=gold_block_size, progress=True):
        click.echo(str(path))
        note = partial_note(read_json(path, what="summary"))
        if note:
            click.echo(note, err=True)


def partial_note(summary: dict) -> str | None:
    """What a partial summary leaves out, for the terminal: coverage, each unscored (dataset, run)
    with its reason, and the resume command once (the reasons repeat it)."""
    cov = summary.get("coverage") or {}
    if not cov.get("partial"):
        return None
    lines = [f"partial: {cov.get('scored')} of {cov.get('instances')} instances scored; these scores are marked "
             "partial (submit, report and diff keep them apart from full runs). Unscored:"]
    resume = None
    for u in summary.get("unscored") or []:
        reason, _, cmd = str(u.get("reason")).partition("; resume with: ")
        resume = resume or cmd or None
        lines.append(f"  {u.get('dataset')} run {u.get('run')}: {u.get('missing')} of {u.get('of')} ({reason})")
    if resume:
        lines.append(f"resume with: {resume}")
    return "\n".join(lines)
