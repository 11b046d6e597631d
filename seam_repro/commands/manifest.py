"""``sample``, ``freeze``, ``prompts`` and ``verify``: thin wrappers over the ``manifest`` package."""

from __future__ import annotations

import json
from pathlib import Path

import click

from seam_repro.commands import MANIFEST, input_dirs
from seam_repro.config import PROFILES

local_inputs = input_dirs("Read each dataset from DIR/<name> instead of config paths or the cache.",
                          "Read prompt files from DIR/<name>.json instead of the pinned upstream ones.")


def _note(note: str) -> None:
    click.echo(f"note: {note}", err=True)


def _wrote(w) -> None:
    m = w.manifest
    if not w.frozen:
        click.echo(f"wrote unfrozen {w.path} (digest {m['digest']}); freeze it with verified data: "
                   f"seam-repro freeze {w.path} --data-dir DIR")
        return
    click.echo(f"wrote {w.path}: {w.n_prompts} prompts in {w.n_runs} (dataset, run) pairs, "
               f"prompt digest {m['prompt_digest']}, digest {m['digest']}")


@click.command()
@click.argument("config", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("-o", "--out", required=True, type=click.Path(dir_okay=False, path_type=Path), help="Manifest to write.")
@click.option("--profile", type=click.Choice(PROFILES), default="upstream", show_default=True,
              help="upstream = bit-exact SEAM@6ad83f4; seam-repro-1 = corrected protocol.")
@local_inputs
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
      seam-repro sample manifests/smoke-paraphrase.config.json -o para.json \\
          --prompts-dir manifests/fixtures/prompts   # one-factor design (config key "design")

    A config's "design" fixes every choice at run 0's draw and redraws only the named factors:
    {"kind": "one-factor", "factors": ["paraphrase"]} or "decoding-noise" (only generation seeds).
    Factors: paraphrase, document_order, instance_selection, few_shot_examples, few_shot_order,
    generation_seed.
    """
    from seam_repro.manifest.freeze import sample_manifest

    _wrote(sample_manifest(config, out, profile, data_dir, prompts_dir, store_prompts, unfrozen, _note))


@click.command(epilog="\b\nExamples:\n  seam-repro freeze manifests/paper.json -o paper.frozen.json --store-prompts\n  seam-repro freeze my.manifest.json --data-dir data/   # datasets from data/<Dataset>/")
@click.argument("manifest", type=MANIFEST)
@click.option("-o", "--out", type=click.Path(dir_okay=False, path_type=Path),
              help="Where to write the frozen manifest (default: a new file MANIFEST stem + '.frozen.json').")
@local_inputs
@click.option("--store-prompts", is_flag=True, help="Also write the prompt texts beside the manifest.")
def freeze(manifest: Path, out: Path | None, data_dir, prompts_dir, store_prompts: bool) -> None:
    """Fill an unfrozen MANIFEST (protocol + pins, no choices) from verified local data.

    The input is never modified. Pinned prompt-file hashes recorded in MANIFEST are enforced.
    """
    from seam_repro.manifest.freeze import freeze_manifest
    from seam_repro.manifest.trust import load_trusted

    _wrote(freeze_manifest(load_trusted(manifest, allow_unfrozen=True), out, data_dir, prompts_dir, store_prompts,
                           _note))


@click.command(epilog="\b\nExamples:\n  seam-repro prompts manifests/smoke.json -o prompts.jsonl\n  seam-repro prompts paper.frozen.json -o paper.prompts.jsonl --data-dir data/")
@click.argument("manifest", type=MANIFEST)
@click.option("-o", "--out", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="JSONL file: one prompt record per line ('-' for stdout).")
@local_inputs
def prompts(manifest: Path, out: Path, data_dir, prompts_dir) -> None:
    """Write the exact prompt of every instance of MANIFEST, rendered from its recorded choices."""
    from seam_repro.files.atomic import atomic_write_bytes
    from seam_repro.manifest.prompts import prompts_jsonl

    chunks, n = prompts_jsonl(manifest, out, data_dir=data_dir, prompts_dir=prompts_dir)
    if str(out) == "-":
        click.echo(b"".join(chunks), nl=False)  # UTF-8 bytes to the binary stream, after flushing the text one
    else:
        atomic_write_bytes(out, chunks)
        click.echo(f"wrote {n} prompts to {out}", err=True)


@click.command(epilog="\b\nExamples:\n  seam-repro verify manifests/*.json                 # every shipped manifest\n  seam-repro verify smoke                            # a shipped manifest by name (installed kit, no clone)\n  seam-repro verify paper.frozen.json --data-dir data/ --json > drift.json")
@click.argument("manifests", nargs=-1, required=True, type=MANIFEST)
@local_inputs
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
    from seam_repro.manifest.trust import load_trusted
    from seam_repro.manifest.verify import verify_manifest

    failed = False
    for path in manifests:
        report = verify_manifest(load_trusted(path, check_digests=False), data_dir=data_dir, prompts_dir=prompts_dir)
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
