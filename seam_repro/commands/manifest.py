"""``sample``, ``freeze``, ``prompts`` and ``verify``: thin wrappers over manifest/verify."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from seam_repro.config import PROFILES

data_dir_option = click.option("--data-dir", type=click.Path(file_okay=False, path_type=Path),
                               help="Read each dataset from DIR/<name> instead of config paths or the cache.")
prompts_dir_option = click.option("--prompts-dir", type=click.Path(file_okay=False, path_type=Path),
                                  help="Read prompt files from DIR/<name>.json instead of the pinned upstream ones.")


def _store_path(manifest_path: Path) -> Path:
    return manifest_path.with_name(manifest_path.stem + ".prompts.jsonl.gz")


def _guard(out: Path, store: bool, inputs: list, read_dirs: list) -> None:
    """Refuse -o (and the prompt store beside it) over any file this command reads."""
    from seam_repro.files import guard_outputs

    guard_outputs([("-o", out), ("-o (its prompt store)", _store_path(out) if store else None)],
                  inputs=inputs, read_dirs=read_dirs)


def _source_inputs(sources) -> list[Path]:
    """Every prompt file and data file a sampling run read."""
    files = list(sources.prompt_paths.values())
    for name, loaded in sources.data.items():
        root = Path(sources.data_paths[name])
        files.append(root)
        files.extend(root / rel for rel in loaded.files)
    return files


def _recorded_inputs(m: dict, base: Path) -> list[Path]:
    """Prompt and data files a manifest records (paths, in provenance, relative to the manifest's folder)."""
    from seam_repro.manifest import recorded_sources

    out: list[Path] = []
    src = recorded_sources(m)
    for entry in src["prompts"].values():
        if isinstance(entry.get("path"), str):
            out.append(base / entry["path"])
    for entry in src["data"].values():
        if isinstance(entry.get("path"), str):
            root = base / entry["path"]
            out.append(root)
            out.extend(root / f for f in (entry.get("files") or {}) if isinstance(f, str))
    return out


def _pinned_sources(cfg) -> dict:
    """Prompt-file sha256 pins from the sources lock; data hashes are checked by `fetch`."""
    from seam_repro.files import read_json

    lock = read_json(Path(__file__).parents[1] / "data" / "sources.lock.json", what="sources lock")
    pins = {}
    for src in lock["sources"]:
        name = (src.get("provides") or {}).get("prompts")
        if name:
            pins[name] = {"path": None, "sha256": src["files"][0]["sha256"], "url": src["files"][0]["url"]}
    return {"prompts": {d.name: pins.get(d.name, {"path": None}) for d in cfg.datasets},
            "data": {d.name: {"path": d.path, "files": {}} for d in cfg.datasets}}


def _sample(cfg, profile: str, base_dir: Path, out: Path, data_dir, prompts_dir, store: bool,
            recorded=None, frozen_from: str | None = None, config_json=None, inputs: tuple = ()) -> None:
    from seam_repro.manifest import build_manifest, write_manifest, write_prompt_store
    from seam_repro.sample import draw_all
    from seam_repro.sourcing import load_sources

    for note in cfg.notes:
        click.echo(f"note: {note}", err=True)
    sources = load_sources(cfg, profile, data_dir=data_dir, prompts_dir=prompts_dir, base_dir=base_dir,
                           recorded=recorded)
    _guard(out, store, [*inputs, *_source_inputs(sources)], [])
    choices = draw_all(cfg, profile, sources.data, sources.prompt_files)
    # Paths are recorded relative to the manifest (so the repository can move), in provenance.
    manifest, records = build_manifest(cfg, profile, choices, sources, progress=sys.stderr.isatty(),
                                       relative_to=out.resolve().parent, frozen_from=frozen_from,
                                       config_json=config_json)
    if store:  # provenance only: the digest covers content, and the store's records are hashed in it
        store_path = _store_path(out)
        manifest["provenance"]["prompt_store"] = {"path": store_path.name,
                                                  "sha256": write_prompt_store(records, store_path)}
    write_manifest(manifest, out)
    click.echo(f"wrote {out}: {len(records)} prompts in {len(choices)} (dataset, run) pairs, "
               f"prompt digest {manifest['prompt_digest']}, digest {manifest['digest']}")


@click.command()
@click.argument("config", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("-o", "--out", required=True, type=click.Path(dir_okay=False, path_type=Path), help="Manifest to write.")
@click.option("--profile", type=click.Choice(PROFILES), default="upstream", show_default=True,
              help="upstream = bit-exact SEAM@6ad83f4; seam-repro-1 = corrected protocol.")
@data_dir_option
@prompts_dir_option
@click.option("--store-prompts", is_flag=True, help="Also write <manifest>.prompts.jsonl.gz so verify can show diffs.")
@click.option("--unfrozen", is_flag=True,
              help="Write only the protocol and the pinned prompt-file hashes (no data needed); fill it later "
                   "with `seam-repro freeze`.")
def sample(config: Path, out: Path, profile: str, data_dir, prompts_dir, store_prompts: bool, unfrozen: bool) -> None:
    """Draw every choice of a Listing-1 CONFIG and freeze them with prompt hashes into a manifest.

    \b
    Examples:
      seam-repro sample generate.json -o paper.json --data-dir ~/seam-data
      seam-repro sample my.json -o my.json --profile seam-repro-1 --prompts-dir prompts/
    """
    from seam_repro.config import read_config

    _guard(out, store_prompts, [config], [data_dir, prompts_dir])
    cfg = read_config(config, profile)
    if unfrozen:
        from seam_repro.manifest import unfrozen_manifest, write_manifest

        for note in cfg.notes:
            click.echo(f"note: {note}", err=True)
        manifest = unfrozen_manifest(cfg, profile, _pinned_sources(cfg))
        write_manifest(manifest, out)
        click.echo(f"wrote unfrozen {out} (digest {manifest['digest']}); freeze it with verified data: "
                   f"seam-repro freeze {out} --data-dir DIR")
        return
    _sample(cfg, profile, config.resolve().parent, out, data_dir, prompts_dir, store_prompts, inputs=(config,))


@click.command()
@click.argument("manifest", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("-o", "--out", type=click.Path(dir_okay=False, path_type=Path),
              help="Where to write the frozen manifest (default: a new file MANIFEST stem + '.frozen.json').")
@data_dir_option
@prompts_dir_option
@click.option("--store-prompts", is_flag=True, help="Also write the prompt texts beside the manifest.")
def freeze(manifest: Path, out: Path | None, data_dir, prompts_dir, store_prompts: bool) -> None:
    """Fill an unfrozen MANIFEST (protocol + pins, no choices) from verified local data.

    The input is never modified. Pinned prompt-file hashes recorded in MANIFEST are enforced.
    """
    from seam_repro.errors import ManifestError
    from seam_repro.manifest import load_manifest, manifest_config, recorded_sources

    m = load_manifest(manifest)
    if m["frozen"]:
        raise ManifestError(f"{manifest}: already frozen (digest {m['digest']}); nothing to do")
    out = out or manifest.with_name(manifest.stem + ".frozen.json")
    if out.resolve() == manifest.resolve():
        raise ManifestError(f"{manifest}: refusing to overwrite the input; pass -o OUT")
    _guard(out, store_prompts, [manifest], [data_dir, prompts_dir])
    cfg = manifest_config(m)
    _sample(cfg, m["profile"], manifest.resolve().parent, out, data_dir, prompts_dir, store_prompts,
            recorded=recorded_sources(m), frozen_from=m["digest"], config_json=m["config"], inputs=(manifest,))


@click.command()
@click.argument("manifest", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("-o", "--out", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="JSONL file: one prompt record per line ('-' for stdout).")
@data_dir_option
@prompts_dir_option
def prompts(manifest: Path, out: Path, data_dir, prompts_dir) -> None:
    """Write the exact prompt of every instance of MANIFEST, rendered from its recorded choices."""
    from seam_repro.files import atomic_write_text, guard_outputs
    from seam_repro.manifest import load_manifest, render_records

    guard_outputs([("-o", out)], inputs=[manifest], read_dirs=[data_dir, prompts_dir])
    m = load_manifest(manifest)
    store = (m.get("provenance") or {}).get("prompt_store") or {}
    guard_outputs([("-o", out)], inputs=[manifest.parent / str(store.get("path", manifest.name)),
                                         *_recorded_inputs(m, manifest.parent)])
    records = render_records(m, data_dir=data_dir, prompts_dir=prompts_dir, base=manifest)
    lines = "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in records)
    if str(out) == "-":
        sys.stdout.write(lines)
    else:
        atomic_write_text(out, lines)
        click.echo(f"wrote {len(records)} prompts to {out}", err=True)


@click.command()
@click.argument("manifests", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@data_dir_option
@prompts_dir_option
@click.option("--max-listed", default=20, show_default=True, help="How many mismatches to list per manifest.")
@click.option("--json", "json_out", is_flag=True,
              help="Print one JSON object per manifest (ok, changed sources, every mismatch, affected instances, "
                   "first diff) instead of text, for CI.")
def verify(manifests: tuple[Path, ...], data_dir, prompts_dir, max_listed: int, json_out: bool) -> None:
    """Re-derive choices from the seed, re-render every prompt and compare all hashes.

    A changed data or prompt file is listed, and everything that can still be rendered is compared,
    naming every affected (dataset, run, instance). Exit 0 when everything matches, 1 on any
    mismatch (listing each and a unified diff of the first), 2 on bad input. Never modifies the
    manifest.
    """
    from seam_repro.verify import verify_manifest

    failed = False
    for path in manifests:
        report = verify_manifest(path, data_dir=data_dir, prompts_dir=prompts_dir)
        failed = failed or not report.ok
        if json_out:
            click.echo(json.dumps(report.to_json(), ensure_ascii=False, sort_keys=True))
            continue
        click.echo(report.summary())
        for mm in report.sources:
            click.echo(f"  changed source: {mm}")
        if not report.ok:
            for mm in report.mismatches[:max_listed]:
                click.echo(f"  {mm}")
            if len(report.mismatches) > max_listed:
                click.echo(f"  … and {len(report.mismatches) - max_listed} more")
            if report.first_diff:
                click.echo(report.first_diff)
    if failed:
        click.get_current_context().exit(1)
