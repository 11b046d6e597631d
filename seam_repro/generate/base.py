"""Backend protocol, request/result records, generation settings and the ``echo`` dry-run backend.

Replaces upstream SEAM ``model_wrappers/model_wrap.py`` (``Model.batch(prompts, num_truncation_tokens)``)
with a contract that carries the per-instance seed, so a generation never depends on which other
instances share its batch, the order of work, a resume or a shard.
"""

from __future__ import annotations

import random
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable

from seam_repro.errors import InputError
from seam_repro.hashing import sha256_text

PAPER_GENERATION: dict[str, Any] = {"temperature": 0.8, "max_new_tokens": 500, "do_sample": True, "top_p": None,
                                    "truncation": "max", "batch_size": 3}
"""Upstream ``hf_pipline_wrap.py`` and ``predict.json``: temperature 0.8, ``do_sample=True``, 500 new
tokens, top_p not passed (the model's generation_config applies), truncation strategy "max" (the
model's ``max_position_embeddings`` is the window), batch size 3."""

HF_LEGACY_TOP_K = 50
"""transformers 4.x ``GenerationConfig`` default ``top_k``; upstream never set top_k, so a model whose
generation_config leaves it unset sampled with top-k 50 in the paper's runs."""


@dataclass(frozen=True)
class GenerationSettings:
    """Sampling settings from the manifest's ``config.generation`` (paper values by default)."""

    temperature: float = 0.8
    max_new_tokens: int = 500
    do_sample: bool = True
    top_p: float | None = None
    """None: take the model's generation_config value (as upstream's pipeline did)."""
    context_window: int | None = None
    """Upstream ``truncation_strategy``: None = "max" (the model's context length); an int = "set"
    (``max_num_tokens``). Prompts are cut to ``context_window - max_new_tokens`` tokens."""
    batch_size: int = 3
    """A throughput hint only (never recorded with predictions: results do not depend on it)."""

    @classmethod
    def from_manifest(cls, generation: dict[str, Any] | None, source: str = "manifest") -> GenerationSettings:
        """Validate ``config.generation``; a missing block means the paper's settings."""
        merged = dict(PAPER_GENERATION)
        if generation is not None:
            if not isinstance(generation, dict):
                raise InputError(source, "expected an object", field="config.generation")
            # truncation ("max": context minus max_new_tokens) and batch_size are protocol facts of
            # upstream predict.json recorded in the manifest; replay reads them from its own flags.
            unknown = set(generation) - set(PAPER_GENERATION) - {"truncation", "batch_size"}
            if unknown:
                raise InputError(source, f"unknown keys {sorted(unknown)}; expected {sorted(PAPER_GENERATION)}",
                                 field="config.generation")
            merged.update({k: v for k, v in generation.items() if k in PAPER_GENERATION})
        t, n, s, p = merged["temperature"], merged["max_new_tokens"], merged["do_sample"], merged["top_p"]
        if not isinstance(t, (int, float)) or isinstance(t, bool) or t < 0:
            raise InputError(source, f"expected a number >= 0, got {t!r}", field="config.generation.temperature")
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise InputError(source, f"expected an integer >= 1, got {n!r}", field="config.generation.max_new_tokens")
        if not isinstance(s, bool):
            raise InputError(source, f"expected true/false, got {s!r}", field="config.generation.do_sample")
        if p is not None and (not isinstance(p, (int, float)) or isinstance(p, bool) or not 0 < p <= 1):
            raise InputError(source, f"expected null or a number in (0, 1], got {p!r}", field="config.generation.top_p")
        trunc, bs = merged["truncation"], merged["batch_size"]
        window = None
        if trunc not in (None, "max"):
            if not isinstance(trunc, str) or not trunc.isdigit() or int(trunc) <= n:
                raise InputError(source, f"expected \"max\", null or a token count above max_new_tokens as a "
                                 f"string, got {trunc!r}", field="config.generation.truncation")
            window = int(trunc)
        if not isinstance(bs, int) or isinstance(bs, bool) or bs < 1:
            raise InputError(source, f"expected an integer >= 1, got {bs!r}", field="config.generation.batch_size")
        if s and t == 0:
            raise InputError(source, "do_sample true needs temperature > 0", field="config.generation.temperature")
        return cls(temperature=float(t), max_new_tokens=n, do_sample=s, top_p=None if p is None else float(p),
                   context_window=window, batch_size=bs)

    def as_dict(self) -> dict[str, Any]:
        """The result-relevant settings (recorded with every prediction; batch size is not)."""
        d = asdict(self)
        del d["batch_size"]
        return d


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


@dataclass
class EchoBackend:
    """Dry-run backend: no model; the "output" is ``max_new_tokens`` words of the prompt drawn by
    ``random.Random(seed)``. Deterministic given the seed, fast, and exercises the whole pipeline
    (store, resume, shards, scoring) without torch. ``delay`` (seconds per instance) simulates a
    slow model, e.g. to rehearse kill-and-resume on a cluster."""

    model_id: str = "echo"
    revision: str = "echo-1"
    delay: float = 0.0
    name: str = field(default="echo", init=False)

    def describe(self) -> dict[str, Any]:
        return {"backend": "echo", "echo_version": 1, "delay": self.delay}

    def resolved_generation(self, settings: GenerationSettings) -> dict[str, Any]:
        return {**settings.as_dict(), "prompt_path": "raw", "sampler": "python-random-words"}

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
