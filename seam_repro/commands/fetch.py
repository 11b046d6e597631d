"""``seam-repro fetch``: download every pinned source into the cache and verify it (see seam_repro.fetch)."""

from __future__ import annotations

from pathlib import Path

import click


@click.command(epilog="""\b
Examples:
  seam-repro fetch                               # all default sources into $SEAM_REPRO_CACHE
  seam-repro fetch --only prompts                # the six upstream prompt files
  seam-repro fetch --only SciCo --cache /data/c  # one dataset's sources into another cache
  seam-repro fetch --data-dir ~/offline          # copy local files instead, same verification
  seam-repro fetch --only ecbplus                # ECB+ from the public corpus, converted""")
@click.option("--only", default=None, metavar="NAME",
              help="A source name, a dataset name (ECB, SciCo, ...) or 'prompts'.")
@click.option("--data-dir", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="Offline: take each file from this folder (by cache path or file name) instead of downloading.")
@click.option("--cache", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Cache folder (default $SEAM_REPRO_CACHE or ~/.cache/seam-repro).")
@click.option("--progress/--no-progress", default=True, show_default=True, help="Show download progress bars.")
def fetch(only: str | None, data_dir: Path | None, cache: Path | None, progress: bool) -> None:
    """Fetch and verify pinned sources; files without a published hash are reported UNVERIFIED."""
    from seam_repro.fetch import cache_root
    from seam_repro.fetch import fetch as run_fetch
    from seam_repro.files import guard_outputs

    root = cache_root(cache)
    guard_outputs([("--cache", root)], read_dirs=[data_dir])
    for res in run_fetch(only, cache=root, data_dir=data_dir, progress=progress):
        click.echo(f"{res.source:<22} {res.status}")
        for key, rel in sorted(res.paths.items()):
            click.echo(f"  {key} -> {root / rel}")
        for note in res.notes:
            click.echo(f"  note: {note}")
