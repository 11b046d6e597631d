"""``seam-repro datasets``: the datasets of each suite and, for SEAM, whether they are in the cache."""

from __future__ import annotations

from pathlib import Path

import click


@click.group(epilog="\b\nExamples:\n  seam-repro datasets list\n  seam-repro datasets check --data-dir data/")
def datasets() -> None:
    """Inspect the datasets known to the kit (SEAM and the other shipped suites)."""


@datasets.command("list", epilog="""\b
Examples:
  seam-repro datasets list
  seam-repro datasets list --cache /data/seam-cache
  seam-repro datasets list --suite igcs-mini""")
@click.option("--cache", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Cache folder (default $SEAM_REPRO_CACHE or ~/.cache/seam-repro).")
@click.option("--suite", default="seam", show_default=True,
              help="Suite whose datasets to list (data/suites/<name>.json); 'all' lists every shipped suite.")
def list_datasets(cache: Path | None, suite: str) -> None:
    """Print each dataset's task, evaluated split, source and cache status."""
    from seam_repro.config import PROFILES
    from seam_repro.specs import load_suite, shipped_suites

    for name in shipped_suites() if suite == "all" else [suite]:
        if name != "seam":
            spec = load_suite(name)
            click.echo(f"suite {spec.name}: {spec.description}")
            click.echo(f"{'dataset':<18} {'task':<20} {'split':<12} {'metric (' + ' / '.join(PROFILES) + ')'}")
            for ds in spec.datasets.values():
                metrics = " / ".join(ds.metrics.get(p, "-") for p in PROFILES)
                click.echo(f"{ds.name:<18} {ds.task:<20} {ds.default_split:<12} {metrics}")
            click.echo("source: local files (pass each dataset's folder in the config's 'path')\n")
            continue
        _list_seam(cache)


def _list_seam(cache: Path | None) -> None:
    from seam_repro.datasets.info import DATASET_INFO
    from seam_repro.sources.fetch import cache_root, cached_source_path, source_status
    from seam_repro.sources.lock import load_lock

    lock = load_lock()
    root = cache_root(cache)
    click.echo("suite seam: the six SEAM datasets (pinned sources, see data/sources.lock.json)")
    click.echo(f"{'dataset':<12} {'task':<14} {'split':<12} {'source':<16} status")
    for info in DATASET_INFO.values():
        src = lock.get(info.source)
        where = cached_source_path("data", info.name, root, lock)
        status = source_status(src, root) if where is not None else "missing"
        if where is not None and status == "missing":
            status = "cached (alternative source)"
        click.echo(f"{info.name:<12} {info.task:<14} {info.default_split:<12} {info.source:<16} {status}")
    click.echo(f"cache: {root}")


@datasets.command("check", epilog="""\b
Examples:
  seam-repro datasets check --data-dir ~/seam-data
  seam-repro datasets check --data-dir ~/seam-data --prompts-dir ~/SEAM/files/prompts
  seam-repro datasets check --data-dir manifests/fixtures/zeroscrolls --suite zeroscrolls-mini""")
@click.option("--data-dir", required=True, type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Folder with one folder per dataset (docs/data.md: 'Data folder layout').")
@click.option("--prompts-dir", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="Also check that DIR/<dataset>.json prompt files exist.")
@click.option("--suite", default="seam", show_default=True, help="Suite whose datasets to check.")
def check_datasets(data_dir: Path, prompts_dir: Path | None, suite: str) -> int:
    """Per dataset: the folder found under --data-dir, split sizes, and what is missing.
    Exits 1 when a dataset is missing or unreadable."""
    from seam_repro.sources.check import check_data_dir, render_checks

    checks = check_data_dir(data_dir, suite, prompts_dir)
    click.echo(render_checks(checks, data_dir))
    return 0 if all(c.ok for c in checks) else 1
