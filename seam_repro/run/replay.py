"""``replay``: manifest -> prompts -> generate (resumable, shardable); the command scores afterwards.

Replaces upstream SEAM ``scripts/run_model_predictions.py::run_all`` (load the pickled datasets, loop
datasets x runs, skip an existing output file on resume). Here prompts are re-rendered from the
frozen manifest, each instance carries its own seed, and resume works per instance.
"""

from __future__ import annotations

import logging
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from seam_repro.config import GenerationSettings
from seam_repro.errors import InputError
from seam_repro.generate.base import Backend, BatchOutOfMemory, GenerationRequest
from seam_repro.generate.fingerprint import environment_fingerprint
from seam_repro.generate.redact import redact_json, redact_record
from seam_repro.generate.threads import apply_threads, choose_threads
from seam_repro.manifest.trust import TrustedManifest, iter_checked
from seam_repro.run.progress import advance_to, close_bar, progress_bar
from seam_repro.run.shard import Shard, shard_of
from seam_repro.run.spool import PromptSpool
from seam_repro.run.store import (
    Key,
    PredictionStore,
    display_name_problem,
    model_slug,
    prepare_run_dir,
    write_run_manifest,
)
from seam_repro.specs import load_suite
from seam_repro.verbosity import PRINTED, log, run_accepted


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
    batch_size: int | str | None = None
    """None = the backend's ``default_batch_size``: its measured best for its device where it has
    one (hf on CPU), at least its concurrency (openai), else the manifest's batch size. ``"auto"``:
    the largest that fits, found by the backend (``auto_batch_size``) over the shard's prompts."""
    deterministic: bool | None = None
    """``--deterministic``/``--no-deterministic``: batch-invariant generation (hf, vllm); None = the
    backend's default (hf: on wherever the architecture allows)."""
    threads: int | None = None
    """``--threads``: torch CPU threads for local weights; None = chosen (``generate/threads.py``)."""
    limit: int | None = None
    datasets: str | None = None
    """``--datasets``: comma-separated dataset names (any case, the paper's spelling); None = all."""
    runs: str | None = None
    """``--runs``: run indices and ranges (``0,3-5``); None = all."""
    generation_overrides: dict[str, Any] = field(default_factory=dict)
    """``--max-new-tokens``/``--temperature``/``--top-p`` given on the command line: they leave the
    manifest's protocol, so they are recorded and every comparison marks the run (see
    :func:`override_settings`)."""
    data_dir: Path | None = None
    prompts_dir: Path | None = None
    allow_unfrozen: bool = False
    progress: bool = True


@dataclass
class ReplaySummary:
    """Counts and throughput of one replay session."""

    model_slug: str
    in_shard: int
    already_done: int
    generated: int = 0
    truncated: list[Key] = field(default_factory=list)
    output_tokens: int = 0
    seconds: float = 0.0

    @property
    def tokens_per_second(self) -> float:
        return self.output_tokens / self.seconds if self.seconds > 0 else 0.0


def iter_limit(records: Iterable[dict[str, Any]], limit: int | None) -> Iterator[dict[str, Any]]:
    """The first ``limit`` instances of every (dataset, run), so a smoke run still covers all datasets
    (a bad ``limit`` is refused at once, not at the first record)."""
    if limit is not None and limit < 1:
        raise InputError("--limit", f"expected an integer >= 1, got {limit}")
    seen: Counter[tuple[str, int]] = Counter()

    def keep(r: dict[str, Any]) -> bool:
        seen[(r["dataset"], r["run"])] += 1
        return seen[(r["dataset"], r["run"])] <= limit  # type: ignore[operator]

    return iter(records) if limit is None else filter(keep, records)


OVERRIDABLE = ("max_new_tokens", "temperature", "top_p")
"""The generation settings a replay may override (``--max-new-tokens``, ``--temperature``, ``--top-p``)."""


def override_settings(generation: dict[str, Any] | None, overrides: dict[str, Any],
                      source: str) -> tuple[GenerationSettings, dict[str, Any]]:
    """The manifest's generation settings with the command line's overrides applied, checked by the
    same rules as the manifest's (``GenerationSettings.from_manifest``), and the overrides as
    recorded. ``--temperature 0`` means greedy decoding (``do_sample`` false), as in lm-eval."""
    given = {k: v for k, v in overrides.items() if v is not None}
    unknown = sorted(set(given) - set(OVERRIDABLE))
    if unknown:
        raise InputError("replay", f"cannot override {unknown}; expected some of {list(OVERRIDABLE)}")
    merged = {**(generation or {}), **given}
    if given.get("temperature") == 0:
        merged["do_sample"] = given["do_sample"] = False
    where = source + (" with " + ", ".join(f"--{k.replace('_', '-')} {v}" for k, v in given.items()
                                          if k in OVERRIDABLE) if given else "")
    return GenerationSettings.from_manifest(merged, source=where), given


def parse_runs(text: str, n_runs: int) -> list[int]:
    """``--runs 0,3-5`` -> [0, 3, 4, 5]: indices and inclusive ranges, each in 0..n_runs-1."""
    out: list[int] = []
    form = f"comma-separated run indices or ranges in 0..{n_runs - 1}, such as 0,3-5"
    for part in str(text).split(","):
        low, dash, high = part.strip().partition("-")
        if not low.isdigit() or (dash and not high.isdigit()):
            raise InputError("--runs", f"expected {form}, got {text!r}")
        a, b = int(low), int(high) if dash else int(low)
        if a > b or b >= n_runs:
            raise InputError("--runs", f"expected {form}, got {part.strip()!r}")
        out.extend(range(a, b + 1))
    return sorted(set(out))


def record_selection(manifest: dict[str, Any], datasets: str | None, runs: str | None
                     ) -> tuple[Callable[[dict[str, Any]], bool], dict[str, Any] | None]:
    """A test of one record for the chosen datasets and runs (checked here, before any record is
    rendered), and the selection as run.json records it (None when everything is chosen). Like
    ``--limit``, a selection makes a partial run: ``score`` lists what was not replayed, and
    ``submit``/``diff``/``report`` mark it partial."""
    if datasets is None and runs is None:
        return lambda r: True, None
    config = manifest.get("config") or {}
    in_manifest = list(dict.fromkeys(r["dataset"] for r in manifest.get("runs", [])))
    chosen_ds: list[str] | None = None
    if datasets is not None:
        chosen_ds = load_suite(config.get("suite", "seam")).canonical_names(datasets, "--datasets", "datasets")
        absent = [d for d in chosen_ds if d not in in_manifest]
        if absent:
            raise InputError("--datasets", f"{', '.join(absent)} not in this manifest; it holds "
                             f"{', '.join(in_manifest)}")
    chosen_runs = None if runs is None else parse_runs(runs, int(config.get("num_different_runs", 1)))
    selection = {"datasets": chosen_ds, "runs": chosen_runs}
    keep_ds = set(in_manifest if chosen_ds is None else chosen_ds)
    keep_runs = None if chosen_runs is None else set(chosen_runs)
    return lambda r: r["dataset"] in keep_ds and (keep_runs is None or r["run"] in keep_runs), selection


def length_order(lengths: Sequence[int], indices: Iterable[int]) -> list[int]:
    """``indices`` (ascending) in the order replay batches them: longest prompt first, ties in index
    order. A function of the prompt lengths only (all replay keeps of a prompt between batches), so
    a resume rebuilds the same batches."""
    return sorted(indices, key=lambda j: (-lengths[j], j))


def shard_indices(spool: PromptSpool, shard: Shard | None) -> list[int]:
    """Positions of ``shard``'s records in ``spool`` (all of them without a shard), in record order."""
    return [j for j, k in enumerate(spool.keys) if shard is None or shard_of(*k, shard.count) == shard.index]


def run_generation(records: Iterable[dict[str, Any]] | PromptSpool, backend: Backend, settings: GenerationSettings,
                   run_dir: Path, manifest: dict[str, Any], *, shard: Shard | None = None, batch_size: int = 8,
                   limit: int | None = None, progress: bool = True, model_args: dict[str, Any] | None = None,
                   display_name: str | None = None, selection: dict[str, Any] | None = None,
                   overrides: dict[str, Any] | None = None,
                   session_notes: dict[str, Any] | None = None) -> ReplaySummary:
    """Generate every not-yet-stored instance of ``shard`` and append it to the store.

    Batches are fixed slices of the shard's instances ordered by prompt length (longest first, ties
    in record order): little compute goes to padding, and an out-of-memory batch shows up first. The
    order depends only on the shard's records, so a resume rebuilds the same batches and regenerates
    an incomplete one in full, writing only its missing instances: every instance sees the same batch
    companions whether the run was interrupted or not, so a killed-and-resumed run equals an
    uninterrupted one even where padding perturbs the logits (``generate/hf.py``), at the cost of at
    most one repeated batch per resume. A different ``--batch-size`` on resume is warned about.

    ``records`` are spooled beside ``run_dir`` (``PromptSpool``) unless they come spooled; the spool
    becomes the run's prompts.jsonl. ``session_notes`` go into this session's entry of run.json.
    """
    if batch_size < 1:
        raise InputError("--batch-size", f"expected an integer >= 1, got {batch_size}")
    spool = records if isinstance(records, PromptSpool) else PromptSpool.write(Path(run_dir), records)
    try:
        generation, entry, session = _run_records(backend, settings, batch_size, shard, model_args or {}, display_name,
                                                  overrides, session_notes)
        opened: list[PredictionStore] = []  # stored predictions are checked before run.json is touched
        run_json = prepare_run_dir(run_dir, manifest=manifest, prompts=spool, model_entry=entry,
                                   session=session, extra={"shard": None if shard is None else str(shard),
                                                           "limit": limit, "selection": selection},
                                   check_existing=lambda: opened.append(
                                       PredictionStore(run_dir, backend.model_id, backend.revision, spool.hashes)))
        if manifest.get("schema_version") is not None:  # a real manifest (tests may pass a bare dict)
            write_run_manifest(Path(run_dir), manifest)
        run_accepted(Path(run_dir))
        store = opened[0]
        keys = spool.keys
        mine = shard_indices(spool, shard)
        order = length_order(spool.lengths, mine)
        batches = [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
        todo = [b for b in batches if any(keys[j] not in store.done for j in b)]
        summary = ReplaySummary(model_slug(backend.model_id), len(mine),
                                sum(keys[j] in store.done for j in mine))
        # instances already stored before a resume do not count towards the rate (and so the ETA)
        label = summary.model_slug if summary.model_slug == backend.name else f"{summary.model_slug} ({backend.name})"
        bar = progress_bar(len(mine), label, "inst", progress, initial=summary.already_done)

        def note(line: str) -> None:
            bar.write(line)
            logging.getLogger(PRINTED).warning(line)

        _resume_notes(note, run_json, summary, store, backend, batch_size, run_dir)
        start = time.perf_counter()
        try:
            _run_batches(todo, spool, backend, settings, store, generation, summary, bar, note, start)
        finally:
            try:
                store.close()  # syncs what the last batch wrote; a failure to sync is still reported after the bar
            finally:
                close_bar(bar)
                close = getattr(backend, "close", None)
                if callable(close):
                    close()
        summary.seconds = time.perf_counter() - start
        return summary
    finally:
        spool.discard()


def _run_records(backend: Backend, settings: GenerationSettings, batch_size: int, shard: Shard | None,
                 model_args: dict[str, Any], display_name: str | None, overrides: dict[str, Any] | None,
                 session_notes: dict[str, Any] | None) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """What this session records: the generation settings every prediction carries, the model's
    entry in run.json and the session's entry (redacted of every registered secret)."""
    from seam_repro.generate.model_args import protocol_args, recorded_args

    generation = backend.resolved_generation(settings)
    recorded = recorded_args(backend.name, model_args)
    if protocol_args(backend.name, recorded):
        # result-relevant backend options travel with every prediction: resume and merge compare them
        generation = {**generation, "model_args": protocol_args(backend.name, recorded)}
    if overrides:  # a departure from the manifest's protocol travels with every prediction, as model_args do
        generation = {**generation, "overrides": dict(sorted(overrides.items()))}
    entry = {"id": backend.model_id, "revision": backend.revision, "backend_name": backend.name,
             "backend": backend.describe(), "generation": generation, "batch_size": batch_size,
             "name": display_name or backend.model_id, "model_args": recorded}
    # CUDA facts only matter where local weights run (importing torch for them costs seconds)
    fingerprint = environment_fingerprint(include_torch=backend.name in ("hf", "vllm"))
    fingerprint["model_args"] = recorded
    session = {"started_utc": datetime.now(UTC).isoformat(timespec="seconds"), "argv": sys.argv[1:],
               "shard": None if shard is None else str(shard), "batch_size": batch_size,
               "fingerprint": fingerprint, **(session_notes or {})}
    # whatever a backend reports or the command line holds, no registered secret is written
    return redact_json(generation), redact_json(entry), redact_json(session)


def _resume_notes(note: Callable[[str], None], run_json: dict[str, Any], summary: ReplaySummary,
                  store: PredictionStore, backend: Backend, batch_size: int, run_dir: Path) -> None:
    """What a run folder's state tells before generating: other models beside this one, torn lines
    dropped on resume, a batch size that changed since the run began."""
    others = [s for s in run_json["models"] if s != summary.model_slug]
    if others:  # said now, not first when submit refuses without --model
        note(f"note: {run_dir} now holds {len(others) + 1} models ({', '.join([*others, summary.model_slug])}); "
             f"score, report and view take them all; submit needs --model {backend.model_id} to bundle this one "
             "(a run folder per model keeps them apart: a new --out)")
    for path, dropped in store.repaired:
        note(f"resume: dropped a torn last line ({dropped} bytes) of {path}")
    first_batch_size = run_json["models"][summary.model_slug].get("batch_size")
    if first_batch_size not in (None, batch_size) and summary.already_done \
            and not getattr(backend, "deterministic", False):
        note(f"warning: this run started with batch size {first_batch_size}, now {batch_size}; batch "
             "composition can perturb logits, so resumed instances may differ from an uninterrupted run")


def _run_batches(todo: list[list[int]], spool: PromptSpool, backend: Backend, settings: GenerationSettings,
                 store: PredictionStore, generation: dict[str, Any], summary: ReplaySummary, bar: Any,
                 note: Callable[[str], None], start: float) -> None:
    """Generate the batches in ``todo`` and store their missing instances, one sync per batch. A
    backend that can queue a batch while another is answered (``start``: openai) is given the next
    batch before replay waits for the current one; others generate when the results are asked for."""
    keys = spool.keys
    step_share = [0.0, 0.0]  # per decoding step: instances of the batch it stands for; progress so far
    hooked = hasattr(backend, "step_hook") and not bar.disable
    start_batch = getattr(backend, "start", None)
    invariant = bool(getattr(backend, "deterministic", False))

    def step() -> None:
        # a batch is at most max_new_tokens steps long; it finishes early when every row ends, and the
        # remainder is added when it is stored, so the estimate errs on the slow side
        add = min(step_share[0], step_share[0] * settings.max_new_tokens - step_share[1] - 1e-9)
        if add > 0:
            step_share[1] += add
            bar.update(add)

    def backing_off(batch: list[GenerationRequest]) -> list[Any]:
        """A batch-invariant backend's out-of-memory batch is generated again in halves (down to one
        instance): its outputs cannot change with the batch, so nothing differs from a run that fit."""
        try:
            return backend.generate(batch, settings)
        except BatchOutOfMemory:
            if not invariant or len(batch) < 2:
                raise
        half = len(batch) // 2
        note(f"out of accelerator memory at a batch of {len(batch)}: generating it as {half} + {len(batch) - half} "
             "(batch-invariant generation: the outputs are the same)")
        return backing_off(batch[:half]) + backing_off(batch[half:])

    def begin(batch_idx: list[int]) -> tuple[list[GenerationRequest], Callable[[], list[Any]]]:
        batch = [spool.request(j) for j in batch_idx]
        if start_batch is not None:
            return batch, start_batch(batch, settings)
        return batch, lambda: backing_off(batch)

    if hooked:
        backend.step_hook = step  # type: ignore[attr-defined]
    try:
        pending = begin(todo[0]) if todo else None
        for k, batch_idx in enumerate(todo):
            assert pending is not None
            batch, results = pending
            pending = begin(todo[k + 1]) if k + 1 < len(todo) else None
            fresh = sum(keys[j] not in store.done for j in batch_idx)
            step_share[:] = [fresh / settings.max_new_tokens, 0.0]
            for req, res in zip(batch, results(), strict=True):
                if req.key in store.done:
                    continue  # regenerated only to keep the batch composition of an uninterrupted run
                res = redact_record(res)
                store.append(req, res, generation)
                summary.generated += 1
                summary.output_tokens += res.n_output_tokens
                if res.truncated:
                    summary.truncated.append(req.key)
                    note(f"warning: {req.key}: prompt of {res.n_prompt_tokens_full} tokens exceeds the "
                         f"context budget; truncated to {res.n_prompt_tokens} ({generation.get('truncation')})")
            store.sync()  # once per batch: a machine crash loses at most this batch, never an earlier one
            summary.seconds = time.perf_counter() - start
            bar.set_postfix_str(f"{summary.tokens_per_second:.1f} tok/s", refresh=False)
            # the batch's steps so far, completed to whole instances (exactly: fractions drift past the total)
            advance_to(bar, summary.already_done + summary.generated)
    finally:
        if hooked:
            backend.step_hook = None  # type: ignore[attr-defined]


def replay(tm: TrustedManifest, out: Path, options: ReplayOptions) -> ReplaySummary:
    """Render the prompts of a manifest loaded and checked once by the caller (``load_trusted``,
    ``run.prepare.freeze_for_replay``), refuse any that does not hash to the manifest, then (and only
    then) load the model and generate into ``out``."""
    from seam_repro.generate import make_backend, require_model_available
    from seam_repro.generate.model_args import parse_model_args
    from seam_repro.manifest.prompts import render_records

    args = parse_model_args(options.backend, options.model_args)  # before any slow step: a typo fails in a second
    problem = display_name_problem(options.name) if options.name is not None else None
    if problem:
        raise InputError("--name", problem)
    # offline is told in seconds, before rendering; a Hub model is parsed here once
    model = require_model_available(options.backend, options.model) or options.model
    notes: dict[str, Any] = {}
    threads = None
    if options.backend == "hf":  # local weights: torch's CPU threads (chosen before this process adds load)
        threads = choose_threads(options.threads)
        notes["threads"] = threads.as_dict()
        log().debug(f"torch CPU threads: {threads.threads} ({threads.source}; {threads.usable_cores} usable "
                    f"core(s), {threads.load if threads.load is not None else 'unknown'} busy)")
    elif options.threads is not None:
        raise InputError("--threads", f"applies to local weights on CPU (--backend hf), not --backend {options.backend}")
    manifest = tm.manifest
    settings, overrides = override_settings((manifest.get("config") or {}).get("generation"),
                                            options.generation_overrides, str(Path(tm.path)))
    keep, selection = record_selection(manifest, options.datasets, options.runs)
    rendered = render_records(tm, data_dir=options.data_dir, prompts_dir=options.prompts_dir,
                              allow_unfrozen=options.allow_unfrozen)
    # checked, chosen and written to disk as they are rendered: the refusal of any prompt that does
    # not hash to the manifest comes after the last one, before any model is loaded
    limited = iter_limit((r for r in iter_checked(tm, rendered) if keep(r)), options.limit)
    spool = PromptSpool.write(Path(out), limited)
    try:
        if threads is not None:
            apply_threads(threads)
        engine = make_backend(options.backend, model, dtype=options.dtype,
                              quantization=options.quantization, prompt_path=options.prompt_path,
                              truncation=options.truncation, echo_delay=options.echo_delay, model_args=args,
                              deterministic=options.deterministic)
        if options.batch_size == "auto":  # the backend probes (hf: tries the GPU, a measured choice on CPU)
            finder = getattr(engine, "auto_batch_size", None)
            if finder is None:
                batch_size = engine.default_batch_size(settings)
                why = f"{engine.name}: {batch_size}, the backend's default (it has no memory limit to probe)"
            else:
                batch_size, why = finder(spool.requests(shard_indices(spool, options.shard)), settings)
            notes["batch_size_auto"] = why
            log().info(f"--batch-size auto: {batch_size} ({why})")
        elif isinstance(options.batch_size, int):
            batch_size = options.batch_size
        elif options.batch_size is None:
            batch_size = engine.default_batch_size(settings)
        else:
            raise InputError("--batch-size", f"expected an integer >= 1 or 'auto', got {options.batch_size!r}")
        return run_generation(spool, engine, settings, Path(out), manifest, shard=options.shard,
                              batch_size=batch_size, limit=options.limit,
                              progress=options.progress, model_args=args, display_name=options.name,
                              selection=selection, overrides=overrides, session_notes=notes)
    finally:
        spool.discard()
