"""``seam-repro fetch``: download every pinned source into the cache and verify it (see seam_repro.sources.fetch).

Every selected source is tried even when an earlier one fails (a blocked Google Drive link must not
hide that the Hugging Face files came through); the failures are summarised at the end together
with the offline route: put copies of the files in a folder and pass it as ``--data-dir``.
"""

from __future__ import annotations

from pathlib import Path

import click

OFFLINE_ROUTE = ("offline route: on a machine with access, download the files listed in "
                 "seam_repro/data/sources.lock.json (or copy a filled cache), put them in a folder, one "
                 "folder per dataset (docs/data.md: 'Data folder layout'), then run `seam-repro fetch --data-dir DIR`: "
                 "the same hashes are checked")


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
              help="Offline: take each pinned file from this folder (at its top, by cache path or file name, or "
                   "inside the dataset's folder DIR/<Dataset>/, the layout every command reads) instead of "
                   "downloading.")
@click.option("--cache", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Cache folder (default $SEAM_REPRO_CACHE or ~/.cache/seam-repro).")
@click.option("--progress/--no-progress", default=True, show_default=True, help="Show download progress bars.")
def fetch(only: str | None, data_dir: Path | None, cache: Path | None, progress: bool) -> int:
    """Fetch and verify pinned sources; files without a published hash are reported UNVERIFIED.
    Every source is tried; failures are summarised at the end (exit status 1)."""
    from seam_repro.errors import HashMismatchError, MissingDataError
    from seam_repro.files.guard import guard_outputs
    from seam_repro.sources.fetch import DownloadError, cache_root, fetch_source
    from seam_repro.sources.lock import load_lock
    from seam_repro.verbosity import progress_wanted

    root = cache_root(cache)
    guard_outputs([("--cache", root)], read_dirs=[data_dir], writes=["."])  # the cache is written throughout
    failed: list[tuple[str, str]] = []
    for src in load_lock().select(only):
        try:
            res = fetch_source(src, root, data_dir=data_dir, progress=progress_wanted(progress))
        except (DownloadError, MissingDataError, HashMismatchError) as exc:
            # this source's files could not be had; a problem of the cache or the command stops at once
            failed.append((src.name, str(exc).splitlines()[0] if str(exc) else type(exc).__name__))
            click.echo(f"{src.name:<22} FAILED")
            continue
        click.echo(f"{res.source:<22} {res.status}")
        for key, rel in sorted(res.paths.items()):
            click.echo(f"  {key} -> {root / rel}")
        for note in res.notes:
            click.echo(f"  note: {note}")
    if not failed:
        return 0
    click.echo(f"{len(failed)} source(s) failed:", err=True)
    for name, why in failed:
        click.echo(f"  {name}: {why}", err=True)
    click.echo(OFFLINE_ROUTE, err=True)
    return 1
