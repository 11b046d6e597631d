"""``seam-repro datasets``: what the six SEAM datasets are and whether they are in the cache."""

from __future__ import annotations

from pathlib import Path

import click


@click.group()
def datasets() -> None:
    """Inspect the SEAM datasets known to the kit."""


@datasets.command("list", epilog="""\b
Examples:
  seam-repro datasets list
  seam-repro datasets list --cache /data/seam-cache""")
@click.option("--cache", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Cache folder (default $SEAM_REPRO_CACHE or ~/.cache/seam-repro).")
def list_datasets(cache: Path | None) -> None:
    """Print each dataset's task, evaluated split, source and cache status."""
    from seam_repro.datasets import DATASET_INFO
    from seam_repro.fetch import cache_root, cached_source_path, source_status
    from seam_repro.sources import load_lock

    lock = load_lock()
    root = cache_root(cache)
    click.echo(f"{'dataset':<12} {'task':<14} {'split':<12} {'source':<16} status")
    for info in DATASET_INFO.values():
        src = lock.get(info.source)
        where = cached_source_path("data", info.name, root, lock)
        status = source_status(src, root) if where is not None else "missing"
        if where is not None and status == "missing":
            status = "cached (alternative source)"
        click.echo(f"{info.name:<12} {info.task:<14} {info.default_split:<12} {info.source:<16} {status}")
    click.echo(f"cache: {root}")
