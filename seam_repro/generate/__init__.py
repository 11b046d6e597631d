"""Inference backends (``hf``, ``vllm``, ``echo``) and the model pins they load.

Port of upstream SEAM ``model_wrappers/`` (``Model``, ``HfPipelineWrap``) plus the quantization table
of ``scripts/run_model_predictions.py`` (``QUANTIZED_MODELS``), now in ``data/models.json``.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from seam_repro.errors import InputError
from seam_repro.generate.base import (
    Backend,
    EchoBackend,
    GenerationRequest,
    GenerationResult,
    GenerationSettings,
)

BACKENDS = ("hf", "vllm", "echo")

__all__ = ["BACKENDS", "Backend", "EchoBackend", "GenerationRequest", "GenerationResult", "GenerationSettings",
           "make_backend", "model_pins", "parse_model_spec"]


def model_pins() -> dict[str, Any]:
    """``data/models.json``: revisions of the 7 paper models and the embedded default."""
    return json.loads(resources.files("seam_repro").joinpath("data/models.json").read_text("utf-8"))


def parse_model_spec(spec: str) -> tuple[str, str]:
    """``ID[@REVISION]`` -> (id, revision); a bare id must be one of the pinned models."""
    model_id, _, revision = spec.partition("@")
    if not model_id or "@" in revision:
        raise InputError("--model", f"expected ID or ID@REVISION, got {spec!r}")
    if revision:
        return model_id, revision
    pinned = model_pins()["models"].get(model_id)
    if pinned is None:
        raise InputError("--model", f"{model_id!r} has no pinned revision in seam_repro/data/models.json; "
                         "pass ID@REVISION (a 40-hex commit of the Hub repo)")
    return model_id, pinned["revision"]


def make_backend(backend: str, model: str | None, *, dtype: str = "auto", quantization: str | None = None,
                 prompt_path: str = "chat", truncation: str | None = None, echo_delay: float = 0.0,
                 tensor_parallel_size: int = 1) -> Backend:
    """Build the requested backend. No ``model`` means the embedded SmolLM2 GGUF (hf) or ``echo``.
    A pinned model's recorded quantization (Mixtral-8x22B: 4-bit, as upstream) applies unless
    ``quantization`` overrides it."""
    if backend not in BACKENDS:
        raise InputError("--backend", f"expected one of {', '.join(BACKENDS)}, got {backend!r}")
    if backend == "echo":
        if model is None:
            return EchoBackend(delay=echo_delay)
        model_id, _, revision = model.partition("@")
        return EchoBackend(model_id=model_id, revision=revision or "echo-1", delay=echo_delay)
    if model is None:
        if backend != "hf":
            raise InputError("--model", f"the {backend} backend needs --model ID[@REVISION]")
        from seam_repro.generate.embedded import load_embedded_backend

        return load_embedded_backend(dtype="fp32" if dtype == "auto" else dtype, prompt_path=prompt_path,
                                     truncation=truncation)
    model_id, revision = parse_model_spec(model)
    if quantization is None:
        quantization = model_pins()["models"].get(model_id, {}).get("quantization")
    if backend == "vllm":
        from seam_repro.generate.vllm import VLLMBackend

        return VLLMBackend(model_id, revision, dtype=dtype, quantization=quantization,
                           tensor_parallel_size=tensor_parallel_size)
    from seam_repro.generate.hf import load_hf_backend

    return load_hf_backend(model_id, revision, dtype=dtype, quantization=quantization, prompt_path=prompt_path,
                           truncation=truncation)
