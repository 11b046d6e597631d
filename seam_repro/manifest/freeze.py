"""Stage *manifest*, freeze: draw every choice of a config (or fill an unfrozen manifest), render
and hash every prompt, and seal the result into a manifest file (``sample`` and ``freeze``)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from seam_repro.config import SeamConfig, read_config
from seam_repro.errors import ManifestError
from seam_repro.files.guard import guard_outputs
from seam_repro.hashing import digest_of_hashes
from seam_repro.manifest.format import (
    SCHEMA_VERSION,
    choices_to_run,
    content_config,
    provenance,
    recorded_sources,
    seal,
    split_sources,
    unfrozen_manifest,
    write_manifest,
    write_prompt_store,
)
from seam_repro.manifest.prompts import iter_rendered_parts, recorded_inputs, records_jsonl
from seam_repro.sample import RunChoices, draw_all
from seam_repro.sources.resolve import Sources, load_sources
from seam_repro.verbosity import progress_wanted

if TYPE_CHECKING:  # sample never reads a trusted manifest: trust.py and its dataclass stay unloaded
    from seam_repro.manifest.trust import TrustedManifest


def build_manifest(cfg: SeamConfig, profile: str, choices: list[RunChoices], sources: Sources,
                   command: str | None = None, progress: bool = False, relative_to: Path | None = None,
                   unfrozen: dict[str, Any] | None = None
                   ) -> tuple[dict[str, Any], list[tuple[dict[str, Any], bytes, bytes]]]:
    """Render every choice and return (sealed manifest, prompt parts as ``records_jsonl`` writes them).

    ``relative_to``: the folder recorded data/prompt paths are made relative to (the manifest's, so
    the repository can move). ``unfrozen``: the manifest ``freeze`` fills; its sealed config is kept
    (so both have one protocol digest) and its digest recorded."""
    runs = [choices_to_run(c) for c in choices]
    rendered: Iterable[tuple[dict[str, Any], bytes, bytes]] = iter_rendered_parts(runs, profile, sources, cfg.suite)
    if progress_wanted(progress):
        from tqdm import tqdm

        rendered = tqdm(rendered, total=sum(len(r["instances"]) for r in runs), desc="render", unit="prompt",
                        file=sys.stderr)
    parts = list(rendered)
    records = [record for record, _, _ in parts]
    by_key = {(r["dataset"], r["run"], r["instance_id"]): r for r in records}
    for run in runs:
        for rec in run["instances"]:
            rendered = by_key[(run["dataset"], run["run"], rec["id"])]
            rec["prompt_sha256"] = rendered["prompt_sha256"]
            rec["target_sha256"] = rendered["target_sha256"]
        run["prompt_digest"] = digest_of_hashes(r["prompt_sha256"] for r in run["instances"])
    sealed_sources, paths = split_sources(sources.as_json(relative_to=relative_to))
    return seal({
        "schema_version": SCHEMA_VERSION, "profile": profile, "frozen": True,
        "config": unfrozen["config"] if unfrozen else content_config(cfg.as_json()),
        "sources": sealed_sources, "runs": runs, "prompt_digest": digest_of_hashes(r["prompt_sha256"] for r in records),
        "provenance": provenance(command, paths, frozen_from=unfrozen["digest"] if unfrozen else None),
    }), parts


class Written(NamedTuple):
    """What ``sample``/``freeze`` wrote: the sealed manifest and how many prompts and (dataset, run)
    pairs it records (``frozen`` False for ``sample --unfrozen``)."""

    path: Path
    manifest: dict[str, Any]
    n_prompts: int = 0
    n_runs: int = 0

    @property
    def frozen(self) -> bool:
        return bool(self.manifest["frozen"])


def store_path(manifest_path: Path) -> Path:
    """Where ``--store-prompts`` writes the prompt texts: beside the manifest."""
    return manifest_path.with_name(manifest_path.stem + ".prompts.jsonl.gz")


def _guard(out: Path, store: bool, inputs: list, read_dirs: list) -> None:
    """Refuse -o (and the prompt store beside it) over any file this command reads."""
    guard_outputs([("-o", out), ("-o (its prompt store)", store_path(out) if store else None)],
                  inputs=inputs, read_dirs=read_dirs)


def pinned_sources(cfg: SeamConfig) -> dict[str, Any]:
    """Prompt-file sha256 pins from the sources lock; data hashes are checked by `fetch`."""
    from seam_repro.sources.lock import load_lock  # only `sample --unfrozen` reads the lock

    pins = {name: {"path": None, "sha256": src.files[0].sha256, "url": src.files[0].url}
            for src in load_lock().sources for name in src.prompts}
    return {"prompts": {d.name: pins.get(d.name, {"path": None}) for d in cfg.datasets},
            "data": {d.name: {"path": d.path, "files": {}} for d in cfg.datasets}}


def _sample(cfg: SeamConfig, profile: str, origin: Path, out: Path, data_dir: Any, prompts_dir: Any,
            store: bool, on_note: Callable[[str], None], unfrozen: dict[str, Any] | None = None) -> Written:
    """Draw, render and seal ``cfg`` into ``out``. ``origin``: the config or the ``unfrozen`` manifest
    read (relative data paths start at its folder)."""
    for note in cfg.notes:
        on_note(note)
    sources = load_sources(cfg, data_dir=data_dir, prompts_dir=prompts_dir, base_dir=origin.resolve().parent,
                           recorded=recorded_sources(unfrozen) if unfrozen else None)
    _guard(out, store, [origin, *recorded_inputs(sources.as_json(), Path())], [])
    choices = draw_all(cfg, profile, sources.data, sources.prompt_files)
    # Paths are recorded relative to the manifest (so the repository can move), in provenance.
    manifest, parts = build_manifest(cfg, profile, choices, sources, progress=sys.stderr.isatty(),
                                     relative_to=out.resolve().parent, unfrozen=unfrozen)
    if store:  # provenance only: the digest covers content, and the store's records are hashed in it
        path = store_path(out)
        chunks, _ = records_jsonl(parts)
        manifest["provenance"]["prompt_store"] = {"path": path.name,
                                                  "sha256": write_prompt_store(b"".join(chunks), path)}
    write_manifest(manifest, out)
    return Written(out, manifest, len(parts), len(choices))


def sample_manifest(config: Path, out: Path, profile: str, data_dir: Any, prompts_dir: Any, store: bool,
                    unfrozen: bool, on_note: Callable[[str], None]) -> Written:
    """``seam-repro sample``: draw every choice of a Listing-1 config and write the sealed manifest
    (with ``unfrozen``: only the protocol and the pinned prompt-file hashes)."""
    _guard(out, store, [config], [data_dir, prompts_dir])
    cfg = read_config(config, profile)
    if unfrozen:
        for note in cfg.notes:
            on_note(note)
        manifest = unfrozen_manifest(cfg, profile, pinned_sources(cfg))
        write_manifest(manifest, out)
        return Written(out, manifest)
    return _sample(cfg, profile, config, out, data_dir, prompts_dir, store, on_note)


def freeze_manifest(loaded: TrustedManifest, out: Path | None, data_dir: Any, prompts_dir: Any, store: bool,
                    on_note: Callable[[str], None]) -> Written:
    """``seam-repro freeze``: fill an unfrozen manifest (loaded once by the caller:
    ``load_trusted(path, allow_unfrozen=True)``) from verified local data into a new file; the input
    is never modified and its pinned prompt-file hashes are enforced."""
    manifest, m = Path(loaded.path), loaded.manifest
    if m["frozen"]:
        raise ManifestError(f"{manifest}: already frozen (digest {m['digest']}); nothing to do")
    out = out or manifest.with_name(manifest.stem + ".frozen.json")
    _guard(out, store, [manifest], [data_dir, prompts_dir])
    return _sample(loaded.config, m["profile"], manifest, out, data_dir, prompts_dir, store, on_note, unfrozen=m)
