"""Backend protocol, request/result records, the model pins and the ``echo`` dry-run backend (the
generation settings they take are protocol data: ``config.GenerationSettings``).

Replaces upstream SEAM ``model_wrappers/model_wrap.py`` (``Model.batch(prompts, num_truncation_tokens)``)
with a contract that carries the per-instance seed, so a generation never depends on which other
instances share its batch, the order of work, a resume or a shard.
"""

from __future__ import annotations

import json
import math
import random
import time
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any, Protocol, runtime_checkable

from seam_repro.config import GenerationSettings
from seam_repro.errors import InputError, PrerequisiteError
from seam_repro.hashing import sha256_text

MAX_ECHO_DELAY = 3600.0
"""Longest simulated generation per instance (an hour) the echo backend accepts."""
HF_LEGACY_TOP_K = 50
"""transformers 4.x ``GenerationConfig`` default ``top_k``; upstream never set top_k, so a model whose
generation_config leaves it unset sampled with top-k 50 in the paper's runs."""


@cache
def model_pins() -> dict[str, Any]:
    """``data/models.json``: revisions of the 7 paper models and the embedded default (read once)."""
    return json.loads(resources.files("seam_repro").joinpath("data/models.json").read_text("utf-8"))


class BatchOutOfMemory(PrerequisiteError):
    """A batch the accelerator could not hold (``rows`` requests). Replay backs off to smaller batches
    by itself only where a smaller batch cannot change an output (a batch-invariant backend)."""

    def __init__(self, message: str, rows: int):
        super().__init__(message)
        self.rows = rows


@dataclass(frozen=True)
class GenerationRequest:
    """One instance to generate for: the rendered user message and its recorded seed."""

    dataset: str
    run: int
    instance_id: str
    prompt: str
    prompt_sha256: str
    seed: int

    @property
    def key(self) -> tuple[str, int, str]:
        return (self.dataset, self.run, self.instance_id)

    @classmethod
    def from_record(cls, rec: dict[str, Any]) -> GenerationRequest:
        """The request of a prompt record (``prompts.jsonl``'s form): replay, recheck and import's --replace."""
        return cls(rec["dataset"], rec["run"], rec["instance_id"], rec["prompt"], rec["prompt_sha256"], rec["gen_seed"])


@dataclass
class GenerationResult:
    """What a backend returns for one request (the store adds identity and model fields)."""

    output: str
    templated_prompt_sha256: str
    n_prompt_tokens: int
    n_output_tokens: int
    truncated: bool = False
    n_prompt_tokens_full: int | None = None
    """Prompt length before truncation (equals ``n_prompt_tokens`` when nothing was cut)."""
    upstream_prompt_text: str | None = None
    """Upstream prompt path, truncated prompt only: the decoded text of the truncated token ids, which
    upstream's pipeline received and which starts its ``generated_text`` (scoring extracts the
    response from it, as upstream did, instead of from the full prompt)."""
    served: dict[str, Any] | None = None
    """Served backends: what the server reported for this request (model id, system_fingerprint,
    finish_reason); recorded with the prediction because a hosted model can change mid-run."""

    def __post_init__(self) -> None:
        if self.n_prompt_tokens_full is None:
            self.n_prompt_tokens_full = self.n_prompt_tokens


@runtime_checkable
class Backend(Protocol):
    """An inference engine bound to one pinned model."""

    name: str
    model_id: str
    revision: str

    def describe(self) -> dict[str, Any]:
        """Backend facts for run.json (library versions, chat-template sha256, dtype, ...)."""
        ...

    def resolved_generation(self, settings: GenerationSettings) -> dict[str, Any]:
        """Settings as actually applied (model defaults filled in), stored with every prediction."""
        ...

    def generate(self, requests: list[GenerationRequest], settings: GenerationSettings) -> list[GenerationResult]:
        """Generate one result per request, in order; each depends only on its own request."""
        ...

    def default_batch_size(self, settings: GenerationSettings) -> int:
        """Requests per ``generate`` call when the user gives no ``--batch-size``: the manifest's
        ``settings.batch_size`` unless this engine knows better for where it runs."""
        ...


@dataclass
class EchoBackend:
    """Dry-run backend: no model; the "output" is ``max_new_tokens`` (at most 16) words of the prompt
    drawn by ``random.Random(seed)``. Deterministic given the seed, fast, and exercises the whole pipeline
    (store, resume, shards, scoring) without torch. ``delay`` (seconds per instance) simulates a
    slow model, e.g. to rehearse kill-and-resume on a cluster."""

    model_id: str = "echo"
    revision: str = "echo-1"
    delay: float = 0.0
    name: str = field(default="echo", init=False)

    def __post_init__(self) -> None:
        # click's FloatRange lets nan and inf through; time.sleep would then fail mid-run
        if not (isinstance(self.delay, (int, float)) and math.isfinite(self.delay) and 0 <= self.delay <= MAX_ECHO_DELAY):
            raise InputError("--echo-delay", f"expected seconds per instance in 0..{MAX_ECHO_DELAY:g}, got {self.delay!r}")

    deterministic = True
    """Each output is drawn from the instance's seed alone, whatever the batch."""

    def describe(self) -> dict[str, Any]:
        return {"backend": "echo", "echo_version": 1, "delay": self.delay}

    def resolved_generation(self, settings: GenerationSettings) -> dict[str, Any]:
        return {**settings.as_dict(), "prompt_path": "raw", "sampler": "python-random-words"}

    def default_batch_size(self, settings: GenerationSettings) -> int:
        return settings.batch_size

    def generate(self, requests: list[GenerationRequest], settings: GenerationSettings) -> list[GenerationResult]:
        results = []
        for req in requests:
            if self.delay:
                time.sleep(self.delay)
            words = req.prompt.split() or [""]
            rng = random.Random(req.seed)
            n = min(settings.max_new_tokens, 16)
            out = " ".join(rng.choice(words) for _ in range(n))
            results.append(GenerationResult(output=out, templated_prompt_sha256=sha256_text(req.prompt),
                                            n_prompt_tokens=len(words), n_output_tokens=n))
        return results
