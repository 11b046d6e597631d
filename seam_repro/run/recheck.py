"""``recheck``: regenerate a seeded random sample of a run's instances and compare them with what the
run stored, instance for instance -- how a maintainer checks a submission without rerunning it all.

Under batch-invariant generation (hf ``--deterministic``, echo; ``generate/invariant.py``) an
instance's output is a function of the model, its prompt, its seed, the generation settings and the
machine alone, so a sample regenerated at any batch size, in any order, must match byte for byte on
the same kind of machine: a difference means a different model, prompt, setting, library or machine,
or an edited output. Where the run was not batch-invariant the verdict says differences may come
from batching alone.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seam_repro.config import GenerationSettings
from seam_repro.errors import InputError
from seam_repro.files.reading import read_json
from seam_repro.generate.base import GenerationRequest
from seam_repro.generate.fingerprint import environment_fingerprint
from seam_repro.generate.threads import apply_threads, choose_threads
from seam_repro.run.invariance import batch_invariant, kernels
from seam_repro.run.store import (
    Key,
    prediction_files,
    predictions_digest,
    predictions_root,
    read_prediction_file,
    read_prompt_records,
    require_run_json,
    run_json_path,
)

FINGERPRINT_KEYS = ("seam_repro", "python", "machine", "platform", "torch", "transformers", "accelerate", "gguf",
                    "bitsandbytes", "vllm", "cuda", "gpus")
"""The environment facts shown side by side when a regenerated output differs."""


@dataclass
class InstanceCheck:
    """One sampled instance: its stored and regenerated outputs."""

    key: Key
    stored: str
    regenerated: str

    @property
    def first_difference(self) -> int | None:
        """Index of the first character where the two outputs differ (None when identical)."""
        if self.stored == self.regenerated:
            return None
        return len(os.path.commonprefix([self.stored, self.regenerated]))

    def as_dict(self) -> dict[str, Any]:
        at = self.first_difference
        out: dict[str, Any] = {"dataset": self.key[0], "run": self.key[1], "instance_id": self.key[2],
                               "status": "identical" if at is None else "differs"}
        if at is not None:
            out.update(first_differing_char=at, stored=self.stored[max(0, at - 20):at + 40],
                       regenerated=self.regenerated[max(0, at - 20):at + 40])
        return out


@dataclass
class RecheckReport:
    """The verdict over a sample, with what decides whether a difference is expected."""

    run_dir: Path
    model: str
    kernels: str | None
    batch_invariant: bool
    sample_seed: int
    batch_size: int
    checks: list[InstanceCheck] = field(default_factory=list)
    settings_differ: list[str] = field(default_factory=list)
    fingerprints: dict[str, tuple[Any, Any]] = field(default_factory=dict)

    @property
    def n_differ(self) -> int:
        return sum(c.first_difference is not None for c in self.checks)

    @property
    def verdict(self) -> str:
        return "identical" if not self.n_differ else "differs"

    @property
    def exit_code(self) -> int:
        return 0 if self.verdict == "identical" else 1

    def as_dict(self) -> dict[str, Any]:
        return {"run_dir": str(self.run_dir), "model": self.model, "kernels": self.kernels,
                "batch_invariant": self.batch_invariant, "sample_seed": self.sample_seed,
                "batch_size": self.batch_size, "verdict": self.verdict, "checked": len(self.checks),
                "differ": self.n_differ, "settings_differ": self.settings_differ,
                "fingerprints_differ": {k: {"run": a, "here": b} for k, (a, b) in self.fingerprints.items()},
                "instances": [c.as_dict() for c in self.checks]}

    def lines(self) -> list[str]:
        """The terminal report: one line per differing instance, the fingerprints side by side, the verdict."""
        out = [f"recheck {self.run_dir} ({self.model}, kernels {self.kernels or 'unrecorded'}): "
               f"{len(self.checks)} instance(s) sampled with seed {self.sample_seed}, regenerated at batch "
               f"{self.batch_size} in shuffled order"]
        for c in self.checks:
            at = c.first_difference
            if at is not None:
                out.append(f"  differs: {c.key[0]}/run {c.key[1]}/{c.key[2]} from character {at}: "
                           f"stored {c.stored[at:][:40]!r} vs regenerated {c.regenerated[at:][:40]!r}")
        if self.settings_differ:
            out.append("  generation settings here differ from the run's: " + ", ".join(self.settings_differ))
        if self.n_differ and self.fingerprints:
            width = max(len(k) for k in self.fingerprints)
            out.append(f"  {'environment':<{width}}  {'run':<40}  here")
            out += [f"  {k:<{width}}  {str(a):<40}  {b}" for k, (a, b) in self.fingerprints.items()]
        if self.verdict == "identical":
            out.append(f"verdict: IDENTICAL: {len(self.checks)} of {len(self.checks)} regenerated byte for byte")
        else:
            why = ("" if self.batch_invariant else " (the run was not batch-invariant: its outputs may depend on its "
                   "batches, so a difference need not mean a different model)")
            out.append(f"verdict: DIFFERS: {self.n_differ} of {len(self.checks)} regenerated outputs differ{why}")
        return out


def pick_model(run_json: dict[str, Any], run_dir: Path, model: str | None) -> tuple[str, dict[str, Any]]:
    """The model entry to recheck: the only one, or the one named by id or slug."""
    models = run_json.get("models") or {}
    if model is not None:
        for slug, entry in models.items():
            if model in (slug, entry.get("id")):
                return slug, entry
        raise InputError(run_json_path(run_dir), f"no model {model!r} in this run (it has: {', '.join(models)})",
                         field="models")
    if len(models) != 1:
        raise InputError(run_json_path(run_dir), f"holds {len(models)} models ({', '.join(models)}); name one with "
                         "--model", field="models")
    return next(iter(models.items()))


def backend_arguments(entry: dict[str, Any], model_folder: Path | None) -> dict[str, Any]:
    """``make_backend`` keywords that load the model a run entry recorded, as it ran."""
    info = entry.get("backend") or {}
    gen = entry.get("generation") or {}
    name = entry.get("backend_name", "hf")
    if name == "echo":
        return {"backend": name, "model": f"{entry['id']}@{entry['revision']}"}
    args: dict[str, Any] = {"backend": name, "model": None}
    if model_folder is not None:
        args["model"] = str(model_folder)
    elif info.get("local_folder"):
        args["model"] = info["local_folder"]["path"]
    elif not info.get("embedded"):
        args["model"] = f"{entry['id']}@{entry['revision']}"
    dtype = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}.get(str(info.get("dtype")), "auto")
    model_args = {key: value["file"] if isinstance(value, dict) and "file" in value else value
                  for key, value in (entry.get("model_args") or {}).items()}  # a recorded file: its path
    args.update(dtype=dtype, quantization=info.get("quantization"), prompt_path=gen.get("prompt_path", "chat"),
                truncation=gen.get("truncation"), model_args=model_args,
                deterministic=None if kernels(entry) is None else kernels(entry) != "default")
    return args


def settings_of(entry: dict[str, Any]) -> GenerationSettings:
    """The settings the run generated with, from its recorded generation (a field it lacks keeps its
    protocol default; the batch size is left out: it is no setting of the outputs)."""
    gen = entry.get("generation") or {}
    return GenerationSettings(**{k: gen[k] for k in GenerationSettings._fields if k in gen and k != "batch_size"})


def recheck(run_dir: Path, *, sample: int, seed: int, batch_size: int | None = None, model: str | None = None,
            model_folder: Path | None = None, bundle: Path | None = None) -> RecheckReport:
    """Regenerate ``sample`` instances of ``run_dir`` chosen by ``random.Random(seed)`` (every one
    when ``sample`` is at least the count), in a shuffled order at ``batch_size``, and compare."""
    run_dir = Path(run_dir)
    run_json = require_run_json(run_dir, required=("models",))
    slug, entry = pick_model(run_json, run_dir, model)
    if bundle is not None:
        check_bundle(bundle, run_dir, slug)
    if sample < 1:
        raise InputError("--sample", f"expected an integer >= 1, got {sample}")
    stored = {k: r["output"] for path in prediction_files(predictions_root(run_dir) / slug)
              for k, r in read_prediction_file(path, expect=(entry["id"], entry["revision"])).records.items()}
    if not stored:
        raise InputError(predictions_root(run_dir) / slug, "holds no prediction to recheck")
    prompts = read_prompt_records(run_dir)
    rng = random.Random(seed)
    keys = sorted(k for k in stored if k in prompts)
    chosen = rng.sample(keys, min(sample, len(keys)))
    rng.shuffle(chosen)
    from seam_repro.generate import make_backend

    if entry.get("backend_name") == "hf":
        apply_recorded_threads(run_json)
    backend = make_backend(**backend_arguments(entry, model_folder))
    if backend.revision != entry["revision"]:
        raise InputError("--model", f"loads revision {backend.revision}, but the run's {slug} is {entry['revision']}; "
                         "recheck needs the same weights")
    settings = settings_of(entry)
    size = batch_size or backend.default_batch_size(settings)
    report = RecheckReport(run_dir, slug, kernels(entry), batch_invariant(entry), seed, size)
    ours = backend.resolved_generation(settings)
    report.settings_differ = sorted(k for k in ours if k in entry["generation"] and ours[k] != entry["generation"][k])
    requests = [GenerationRequest.from_record(prompts[k]) for k in chosen]
    for start in range(0, len(requests), size):
        batch = requests[start:start + size]
        for req, res in zip(batch, backend.generate(batch, settings), strict=True):
            report.checks.append(InstanceCheck(req.key, stored[req.key], res.output))
    here = environment_fingerprint(include_torch=entry.get("backend_name") in ("hf", "vllm"))
    recorded = run_json.get("fingerprint") or {}
    report.fingerprints = {k: (recorded.get(k), here.get(k)) for k in FINGERPRINT_KEYS
                           if recorded.get(k) != here.get(k)}
    close = getattr(backend, "close", None)
    if callable(close):
        close()
    return report


def apply_recorded_threads(run_json: dict[str, Any]) -> None:
    """Run on CPU with the thread count the run's last session used: a CPU matrix product may split
    its work by thread, so the count is part of the machine an output is a function of."""
    for session in reversed(run_json.get("sessions") or []):
        threads = (session.get("threads") or {}).get("threads") if isinstance(session, dict) else None
        if isinstance(threads, int) and threads > 0:
            apply_threads(choose_threads(threads))
            return


def check_bundle(bundle_path: Path, run_dir: Path, slug: str) -> None:
    """Refuse a bundle that was not made from this run folder's predictions (its predictions digest)."""
    claimed = read_json(bundle_path, what="bundle", expect=dict).get("predictions_digest")
    if not isinstance(claimed, str):
        raise InputError(bundle_path, "expected a results bundle with a predictions digest (seam-repro submit)",
                         field="predictions_digest")
    actual = predictions_digest(predictions_root(run_dir) / slug, read_prompt_records(run_dir))
    if actual != claimed:
        raise InputError(bundle_path, f"was not made from the predictions in {run_dir} (digest {claimed[:12]}..., "
                         f"the folder's is {actual[:12]}...)", field="predictions_digest")
