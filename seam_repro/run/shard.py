"""Deterministic work split (``--shard K/N``) and ``merge`` of shard run dirs.

Upstream SEAM (``scripts/run_model_predictions.py``) has no sharding: one process loops over all
datasets. Here an instance's shard is a pure function of (dataset, run, instance_id), so SLURM array
tasks or Kubernetes indexed jobs can each take ``K/N`` with no coordination, and ``merge`` checks
the union is exactly the prompt set: nothing missing, nothing twice.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seam_repro.errors import InputError, PredictionsError
from seam_repro.files.atomic import atomic_dir
from seam_repro.files.guard import guard_output
from seam_repro.run.invariance import batch_invariant, kernels, session_batch_sizes
from seam_repro.run.store import (
    MODEL_FIELDS,
    RUN_FIELDS,
    RUN_SCHEMA_VERSION,
    Key,
    PredictionStore,
    copy_run_records,
    prediction_files,
    predictions_root,
    read_prediction_file,
    read_prompt_records,
    require_run_json,
    run_json_path,
    write_run_json,
)


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` (0-based, like SLURM_ARRAY_TASK_ID from 0 and JOB_COMPLETION_INDEX) of ``count``."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str) -> Shard:
    """Parse ``K/N`` with 0 <= K < N."""
    parts = text.split("/")
    if len(parts) != 2 or not all(p.strip().isdigit() for p in parts):
        raise InputError("--shard", f"expected K/N with integers 0 <= K < N, got {text!r}")
    k, n = int(parts[0]), int(parts[1])
    if n < 1 or not 0 <= k < n:
        raise InputError("--shard", f"expected 0 <= K < N and N >= 1, got {text!r}")
    return Shard(k, n)


def shard_of(dataset: str, run: int, instance_id: str, count: int) -> int:
    """Shard index of one instance: first 8 bytes of sha256("dataset\\x1frun\\x1finstance_id") mod N."""
    digest = hashlib.sha256(f"{dataset}\x1f{run}\x1f{instance_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % count


def merge_run_dirs(shard_dirs: Sequence[Path], out: Path) -> dict[str, int]:
    """Merge shard run dirs into ``out``; refuse different manifests/prompts/models, an instance
    present in two shards, or any prompt without a prediction. Returns predictions per model slug."""
    if not shard_dirs:
        raise InputError("merge", "give at least one shard run directory")
    out = Path(out)
    guard_output(out, inputs=shard_dirs, read_dirs=shard_dirs)
    if out.exists() or out.is_symlink():
        raise PredictionsError(f"{out}: already exists; merge into a new folder (merge never writes into an "
                               "existing one)")
    runs = [require_run_json(Path(d), required=("models", "sessions")) for d in shard_dirs]
    first = runs[0]
    for d, rj in zip(shard_dirs, runs, strict=True):
        for name in ("manifest_digest", "prompts_sha256", "limit", "selection"):
            if rj.get(name) != first.get(name):
                raise PredictionsError(f"{run_json_path(d)}: {name} {rj.get(name)!r} differs from "
                                       f"{run_json_path(shard_dirs[0])} ({first.get(name)!r})")
    models: dict[str, dict[str, Any]] = {}
    for d, rj in zip(shard_dirs, runs, strict=True):
        for slug, entry in rj["models"].items():
            seen = models.setdefault(slug, entry)
            for name in MODEL_FIELDS:
                if seen.get(name) != entry.get(name):
                    raise PredictionsError(f"{run_json_path(d)}: model {slug}: {name} differs between shards")
    check_batch_sizes(shard_dirs, runs, models)
    prompts = read_prompt_records(shard_dirs[0])
    hashes: dict[Key, str] = {k: p["prompt_sha256"] for k, p in prompts.items()}
    merged_by_model: dict[str, dict[Key, dict[str, Any]]] = {}
    for slug, entry in models.items():
        merged: dict[Key, dict[str, Any]] = {}
        origin: dict[Key, Path] = {}
        for d in shard_dirs:
            for path in prediction_files(predictions_root(d) / slug):
                found = read_prediction_file(path, hashes, expect=(entry["id"], entry["revision"])).records
                for key, rec in found.items():
                    if key in merged:
                        kind = "conflicting" if merged[key]["output"] != rec["output"] else "duplicate"
                        raise PredictionsError(f"{kind} prediction for {key} of {slug} in {origin[key]} and {path}")
                    merged[key], origin[key] = rec, path
        missing = [k for k in hashes if k not in merged]
        if missing:
            shown = ", ".join(map(str, missing[:5]))
            raise PredictionsError(f"model {slug}: {len(missing)} of {len(hashes)} instances have no prediction "
                                   f"in the given shards (first: {shown}); run the missing shards or resume them")
        merged_by_model[slug] = merged
    # Built in a hidden sibling folder and renamed into place at the end: a kill or a full disk leaves
    # no OUT at all (never a partial run that blocks a retry or could be scored).
    with atomic_dir(out) as work:
        copy_run_records(shard_dirs[0], work)
        for slug, merged in merged_by_model.items():  # in prompt order, through the store replay appends with
            store = PredictionStore(work, models[slug]["id"], models[slug]["revision"], {})
            try:
                for key in prompts:
                    store.write(merged[key])
            finally:
                store.close()
        write_run_json(work, {  # the first shard's record, but for what the merge changes
            **{name: first.get(name) for name in RUN_FIELDS}, "schema_version": RUN_SCHEMA_VERSION,
            "shard": None, "models": models, "sessions": [s for rj in runs for s in rj.get("sessions", [])],
            "merged_from": [{"dir": str(d), "shard": rj.get("shard")} for d, rj in zip(shard_dirs, runs, strict=True)],
        })
    return {slug: len(merged) for slug, merged in merged_by_model.items()}


def check_batch_sizes(shard_dirs: Sequence[Path], runs: Sequence[dict[str, Any]],
                      models: dict[str, dict[str, Any]]) -> None:
    """Refuse to merge shards replayed at different batch sizes unless every model in them generated
    batch-invariantly: otherwise an instance's output depends on which shard it fell in."""
    sizes = {str(d): session_batch_sizes(rj) for d, rj in zip(shard_dirs, runs, strict=True)}
    every = set().union(*sizes.values())
    if len(every) < 2:
        return
    varying = [slug for slug, entry in models.items() if not batch_invariant(entry)]
    if varying:
        shown = "; ".join(f"{d}: {sorted(s)}" for d, s in sizes.items())
        raise PredictionsError(f"shards were replayed at different batch sizes ({shown}) and model {varying[0]} ran "
                               f"with kernels {kernels(models[varying[0]]) or 'unrecorded'}, whose outputs depend on "
                               "the batch; resume the odd shards at one --batch-size, or replay with --deterministic")

