"""``replay``: manifest -> prompts -> generate (resumable, shardable); the command scores afterwards.

Replaces upstream SEAM ``scripts/run_model_predictions.py::run_all`` (load the pickled datasets, loop
datasets x runs, skip an existing output file on resume). Here prompts are re-rendered from the
frozen manifest, each instance carries its own seed, and resume works per instance.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from seam_repro.config import GenerationSettings
from seam_repro.errors import InputError
from seam_repro.generate.base import Backend, GenerationRequest
from seam_repro.generate.fingerprint import environment_fingerprint
from seam_repro.manifest.prompts import check_prompt_records
from seam_repro.manifest.trust import TrustedManifest
from seam_repro.run.shard import Shard, select_shard
from seam_repro.run.store import Key, PredictionStore, model_slug, prepare_run_dir, write_run_manifest


@dataclass(frozen=True)
class ReplayOptions:
    """How one ``replay`` runs (the command's options, parsed): which model on which backend, which
    part of the manifest, where its inputs lie. The protocol itself comes from the manifest."""

    model: str | None = None
    """Hub id[@revision], a local folder, or the served model name; None = embedded SmolLM2."""
    backend: str = "hf"
    name: str | None = None
    """Display name in reports (default: the model id)."""
    model_args: str | None = None
    """``KEY=VALUE,...`` backend options, validated per backend before anything slow."""
    dtype: str = "auto"
    quantization: str | None = None
    prompt_path: str = "chat"
    truncation: str | None = None
    echo_delay: float = 0.0
    shard: Shard | None = None
    batch_size: int | None = None
    """None = the backend's ``default_batch_size``: its measured best for its device where it has
    one (hf on CPU), at least its concurrency (openai), else the manifest's batch size."""
    limit: int | None = None
    data_dir: Path | None = None
    prompts_dir: Path | None = None
    allow_unfrozen: bool = False
    progress: bool = True


@dataclass
class ReplaySummary:
    """Counts and throughput of one replay session."""

    run_dir: Path
    model_slug: str
    in_shard: int
    already_done: int
    generated: int = 0
    truncated: list[Key] = field(default_factory=list)
    output_tokens: int = 0
    seconds: float = 0.0
    repaired: list[tuple[Path, int]] = field(default_factory=list)

    @property
    def tokens_per_second(self) -> float:
        return self.output_tokens / self.seconds if self.seconds > 0 else 0.0


def apply_limit(records: Sequence[dict[str, Any]], limit: int | None) -> list[dict[str, Any]]:
    """First ``limit`` instances of every (dataset, run), so a smoke run still covers all datasets."""
    if limit is None:
        return list(records)
    if limit < 1:
        raise InputError("--limit", f"expected an integer >= 1, got {limit}")
    seen: dict[tuple[str, int], int] = {}
    out = []
    for r in records:
        k = (r["dataset"], r["run"])
        if seen.get(k, 0) < limit:
            seen[k] = seen.get(k, 0) + 1
            out.append(r)
    return out


def batch_order(records: Sequence[dict[str, Any]]) -> list[int]:
    """Indices of ``records`` in the order replay batches them: longest prompt first, ties in record
    order (a function of the records only, so a resume rebuilds the same batches)."""
    return sorted(range(len(records)), key=lambda j: (-len(records[j]["prompt"]), j))


def run_generation(records: Sequence[dict[str, Any]], backend: Backend, settings: GenerationSettings,
                   run_dir: Path, manifest: dict[str, Any], *, shard: Shard | None = None, batch_size: int = 8,
                   limit: int | None = None, progress: bool = True, model_args: dict[str, Any] | None = None,
                   display_name: str | None = None) -> ReplaySummary:
    """Generate every not-yet-stored instance of ``shard`` and append it to the store.

    Batches are fixed slices of the shard's instances ordered by prompt length (longest first, ties
    in record order): rows of similar length share a batch, so little compute goes to padding
    (benchmarks/bench.py measures the gain), and an out-of-memory batch shows up first. The order
    depends only on the shard's records, so a resume rebuilds the same batches; it regenerates any
    batch that is incomplete in full, writing only its missing instances. So for a given shard and
    batch size every instance sees the same batch companions whether the run was interrupted or not:
    a killed-and-resumed run equals an uninterrupted one even where padding perturbs the logits (see
    ``generate/hf.py``). The cost is at most one repeated batch per resume. A different
    ``--batch-size`` or ``--shard`` is allowed on resume but is warned about.
    """
    if batch_size < 1:
        raise InputError("--batch-size", f"expected an integer >= 1, got {batch_size}")
    from seam_repro.generate.model_args import protocol_args, recorded_args

    hashes = check_prompt_records(records)
    generation = backend.resolved_generation(settings)
    recorded = recorded_args(backend.name, model_args or {})
    if protocol_args(backend.name, recorded):
        # result-relevant backend options travel with every prediction: resume and merge compare them
        generation = {**generation, "model_args": protocol_args(backend.name, recorded)}
    entry = {"id": backend.model_id, "revision": backend.revision, "backend_name": backend.name,
             "backend": backend.describe(), "generation": generation, "batch_size": batch_size,
             "name": display_name or backend.model_id, "model_args": recorded}
    # CUDA facts only matter where local weights run (importing torch for them costs seconds)
    fingerprint = environment_fingerprint(include_torch=backend.name in ("hf", "vllm"))
    fingerprint["model_args"] = recorded
    session = {"started_utc": datetime.now(UTC).isoformat(timespec="seconds"), "argv": sys.argv[1:],
               "shard": None if shard is None else str(shard), "batch_size": batch_size,
               "fingerprint": fingerprint}
    opened: list[PredictionStore] = []  # stored predictions are checked before run.json is touched
    run_json = prepare_run_dir(run_dir, manifest=manifest, prompts=list(records), model_entry=entry,
                               session=session, extra={"shard": None if shard is None else str(shard),
                                                       "limit": limit},
                               check_existing=lambda: opened.append(
                                   PredictionStore(run_dir, backend.model_id, backend.revision, hashes)))
    if manifest.get("schema_version") is not None:  # a real manifest (tests may pass a bare dict)
        write_run_manifest(Path(run_dir), manifest)
    first_batch_size = run_json["models"][model_slug(backend.model_id)].get("batch_size")
    store = opened[0]
    mine = select_shard(records, shard)
    keys = [(r["dataset"], r["run"], r["instance_id"]) for r in mine]
    order = batch_order(mine)
    batches = [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
    todo = [b for b in batches if any(keys[j] not in store.done for j in b)]
    summary = ReplaySummary(Path(run_dir), model_slug(backend.model_id), len(mine),
                            sum(k in store.done for k in keys), repaired=store.repaired)
    from seam_repro.run.progress import close_bar, progress_bar

    # instances already stored before a resume do not count towards the rate (and so the ETA)
    bar = progress_bar(len(mine), f"{backend.name}:{summary.model_slug}", "inst", progress,
                       initial=summary.already_done)
    for path, dropped in store.repaired:
        bar.write(f"resume: dropped a torn last line ({dropped} bytes) of {path}")
    if first_batch_size not in (None, batch_size) and summary.already_done:
        bar.write(f"warning: this run started with batch size {first_batch_size}, now {batch_size}; batch "
                  "composition can perturb logits, so resumed instances may differ from an uninterrupted run")
    start = time.perf_counter()
    try:
        for batch_idx in todo:
            batch = [GenerationRequest(*keys[j][:2], keys[j][2], mine[j]["prompt"], mine[j]["prompt_sha256"],
                                       mine[j]["gen_seed"]) for j in batch_idx]
            written = 0
            for req, res in zip(batch, backend.generate(batch, settings), strict=True):
                if req.key in store.done:
                    continue  # regenerated only to keep the batch composition of an uninterrupted run
                store.append(req, res, generation)
                written += 1
                summary.generated += 1
                summary.output_tokens += res.n_output_tokens
                if res.truncated:
                    summary.truncated.append(req.key)
                    bar.write(f"warning: {req.key}: prompt of {res.n_prompt_tokens_full} tokens exceeds the "
                              f"context budget; truncated to {res.n_prompt_tokens} ({generation.get('truncation')})")
            store.sync()  # once per batch: a machine crash loses at most this batch, never an earlier one
            summary.seconds = time.perf_counter() - start
            bar.set_postfix_str(f"{summary.tokens_per_second:.1f} tok/s", refresh=False)
            bar.update(written)  # one refresh per batch: each state is printed once
    finally:
        try:
            store.close()  # syncs what the last batch wrote; a failure to sync is still reported after the bar
        finally:
            close_bar(bar, progress)
            close = getattr(backend, "close", None)
            if callable(close):
                close()
    summary.seconds = time.perf_counter() - start
    return summary


def replay(tm: TrustedManifest, out: Path, options: ReplayOptions) -> ReplaySummary:
    """Render the prompts of a manifest loaded and checked once by the caller (``load_trusted``,
    ``run.prepare.freeze_for_replay``), refuse any that does not hash to the manifest, then (and only
    then) load the model and generate into ``out``."""
    from seam_repro.generate import make_backend
    from seam_repro.generate.model_args import parse_model_args
    from seam_repro.manifest.prompts import render_records
    from seam_repro.manifest.trust import check_rendered

    args = parse_model_args(options.backend, options.model_args)  # before any slow step: a typo fails in a second
    if options.name is not None and not options.name.strip():
        raise InputError("--name", "expected a non-empty display name")
    manifest_path = Path(tm.path)
    manifest = tm.manifest
    config = manifest.get("config") or {}
    settings = GenerationSettings.from_manifest(config.get("generation"), source=str(manifest_path))
    rendered = render_records(manifest, data_dir=options.data_dir, prompts_dir=options.prompts_dir,
                              base=manifest_path, allow_unfrozen=options.allow_unfrozen)
    check_rendered(tm, rendered)
    records = apply_limit(rendered, options.limit)
    engine = make_backend(options.backend, options.model, dtype=options.dtype, quantization=options.quantization,
                          prompt_path=options.prompt_path, truncation=options.truncation,
                          echo_delay=options.echo_delay, model_args=args)
    return run_generation(records, engine, settings, Path(out), manifest, shard=options.shard,
                          batch_size=options.batch_size or engine.default_batch_size(settings), limit=options.limit,
                          progress=options.progress, model_args=args, display_name=options.name)
