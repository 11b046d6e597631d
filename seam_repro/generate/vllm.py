"""Optional vLLM backend (extra ``seam-repro[vllm]``) for large models: tensor parallel, Ray multi-node.

Keeps upstream's transformers-pipeline settings (chat template, temperature, 500 new tokens, model
top_p/top_k defaults) and gives every request its own ``SamplingParams(seed=gen_seed)``. vLLM's numerics
differ from transformers', so its predictions are recorded as a different backend. Batch invariance is
vLLM's own (``VLLM_BATCH_INVARIANT``): ``--deterministic`` sets it, ``--no-deterministic`` clears it, by
default the environment's setting stands; run.json records which (``kernels``).
"""

from __future__ import annotations

import os
from typing import Any

from seam_repro.config import GenerationSettings
from seam_repro.errors import PrerequisiteError
from seam_repro.generate.base import HF_LEGACY_TOP_K, GenerationRequest, GenerationResult
from seam_repro.generate.hf import read_chat_template, template_sha256
from seam_repro.hashing import sha256_text

INSTALL = "pip install 'seam-repro[vllm]'"
BATCH_INVARIANT_ENV = "VLLM_BATCH_INVARIANT"


def batch_invariance(requested: bool | None) -> bool:
    """Set (True/False) or read (None) vLLM's batch-invariance switch; it must be set before the
    engine starts, which is why the backend calls this first."""
    if requested is not None:
        os.environ[BATCH_INVARIANT_ENV] = "1" if requested else "0"
    return os.environ.get(BATCH_INVARIANT_ENV, "0").strip() not in ("", "0", "false", "False")


class VLLMBackend:
    """A ``vllm.LLM`` bound to a pinned model and tokenizer revision."""

    name = "vllm"

    def __init__(self, model_id: str, revision: str, *, dtype: str = "auto", tensor_parallel_size: int = 1,
                 quantization: str | None = None, llm: Any = None,
                 source: str | None = None, local_info: dict[str, Any] | None = None,
                 pipeline_parallel_size: int = 1, gpu_memory_utilization: float | None = None,
                 max_model_len: int | None = None, distributed_executor_backend: str | None = None,
                 trust_remote_code: bool = False, chat_template: str | None = None,
                 deterministic: bool | None = None):
        self.deterministic = batch_invariance(deterministic)
        try:
            import vllm
        except ImportError as exc:
            raise PrerequisiteError(f"the vllm backend needs the vllm package; run: {INSTALL}") from exc
        self.vllm = vllm
        self.model_id, self.revision = model_id, revision
        # vllm.LLM's keywords: the pinned revision for weights and tokenizer, or a local folder (its
        # content hash is the recorded revision); unset options keep vLLM's defaults
        vdtype = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}.get(dtype, dtype)
        self.llm_kwargs: dict[str, Any] = {
            "model": source or model_id, "dtype": vdtype, "tensor_parallel_size": tensor_parallel_size,
            "pipeline_parallel_size": pipeline_parallel_size, "trust_remote_code": trust_remote_code,
            "quantization": "bitsandbytes" if quantization else None}
        if source is None:
            self.llm_kwargs["revision"] = self.llm_kwargs["tokenizer_revision"] = revision
        optional = {"gpu_memory_utilization": gpu_memory_utilization, "max_model_len": max_model_len,
                    "distributed_executor_backend": distributed_executor_backend}
        self.llm_kwargs.update({k: v for k, v in optional.items() if v is not None})
        self.llm = llm if llm is not None else self.vllm.LLM(**self.llm_kwargs)
        self.tokenizer = self.llm.get_tokenizer()
        if chat_template is not None:
            self.tokenizer.chat_template = read_chat_template(chat_template)
        self.settings_info = {k: v for k, v in self.llm_kwargs.items()
                              if k not in ("model", "revision", "tokenizer_revision", "tokenizer")}
        self.settings_info["quantization"] = quantization
        if local_info is not None:
            self.settings_info["local_folder"] = local_info

    def describe(self) -> dict[str, Any]:
        return {"backend": self.name, "vllm": getattr(self.vllm, "__version__", None),
                "chat_template_sha256": template_sha256(self.tokenizer), "deterministic": self.deterministic,
                **self.settings_info}

    def resolved_generation(self, settings: GenerationSettings) -> dict[str, Any]:
        try:  # the model's generation_config defaults, as vLLM read them
            defaults = dict(self.llm.get_default_sampling_params().__dict__)
        except AttributeError:
            defaults = {}
        top_p = settings.top_p if settings.top_p is not None else defaults.get("top_p", 1.0)
        top_k = defaults.get("top_k")
        top_k = HF_LEGACY_TOP_K if top_k in (None, -1, 0) else top_k
        return {**settings.as_dict(), "top_p": top_p if settings.do_sample else None,
                "top_k": top_k if settings.do_sample else None, "prompt_path": "chat", "truncation": "none",
                "sampler": "vllm-per-request-seed" if settings.do_sample else "greedy",
                "kernels": f"vllm-batch-invariant/{getattr(self.vllm, '__version__', '?')}" if self.deterministic
                else "default"}

    def default_batch_size(self, settings: GenerationSettings) -> int:
        """The manifest's: vLLM schedules the requests of one call itself (continuous batching)."""
        return settings.batch_size

    def generate(self, requests: list[GenerationRequest], settings: GenerationSettings) -> list[GenerationResult]:
        resolved = self.resolved_generation(settings)
        sampling = {"temperature": settings.temperature, "top_p": resolved["top_p"], "top_k": resolved["top_k"]} \
            if settings.do_sample else {"temperature": 0.0}
        texts = [self.tokenizer.apply_chat_template([{"role": "user", "content": req.prompt}], tokenize=False,
                                                    add_generation_prompt=True) for req in requests]
        # token ids, not text: vLLM would add a second BOS to a template that already has one
        inputs = [{"prompt_token_ids": list(self.tokenizer(text, add_special_tokens=False)["input_ids"])}
                  for text in texts]
        params = [self.vllm.SamplingParams(**sampling, max_tokens=settings.max_new_tokens, seed=req.seed)
                  for req in requests]
        outs = self.llm.generate(inputs, sampling_params=params, use_tqdm=False)
        return [GenerationResult(output=out.outputs[0].text, templated_prompt_sha256=sha256_text(text),
                                 n_prompt_tokens=len(out.prompt_token_ids), n_output_tokens=len(out.outputs[0].token_ids))
                for text, out in zip(texts, outs, strict=True)]
