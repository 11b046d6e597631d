"""Hugging Face transformers backend: pinned model, chat template, batched, per-instance seeds.

Replicates upstream SEAM ``model_wrappers/hf_pipline_wrap.py`` (``HfPipelineWrap``) and
``scripts/run_model_predictions.py``: left padding, pad = eos, ``device_map="auto"``, bf16 or
4-/8-bit, temperature 0.8 sampling with 500 new tokens. Two prompt paths:

* ``chat`` (default): ``apply_chat_template(add_generation_prompt=True)`` as text, tokenized without
  extra special tokens; the template's sha256 and the templated prompt's sha256 are recorded.
* ``upstream``: the published handling -- ``apply_chat_template`` to ids with ``truncation=True,
  max_length=ctx-max_new_tokens`` and no generation prompt, ``batch_decode(skip_special_tokens=True)``,
  and the decoded text re-tokenized (right truncation, special tokens stripped).

Sampling differs from upstream on purpose (upstream used one unseeded global RNG): every row draws
from its own ``torch.Generator`` seeded with the instance's ``gen_seed`` (:class:`RowSampler`). The
logits themselves depend on the batch under batched ``model.generate`` (``--no-deterministic``); the
deterministic mode (``generate/invariant.py``, the default where the architecture allows) removes that.
"""

from __future__ import annotations

import copy
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seam_repro.config import GenerationSettings
from seam_repro.errors import InputError, PrerequisiteError, SeamReproError
from seam_repro.generate import invariant
from seam_repro.generate.base import HF_LEGACY_TOP_K, BatchOutOfMemory, GenerationRequest, GenerationResult
from seam_repro.generate.model_folder import check_tokenizer_template
from seam_repro.generate.sampling import draw_rows
from seam_repro.hashing import sha256_json, sha256_text

INSTALL_INFERENCE = "pip install 'seam-repro[inference]' torch==2.13.0"
DTYPES = ("auto", "bf16", "fp16", "fp32")
TRUNCATION_POLICIES = ("right", "left")
"""``right`` keeps the start (upstream's tokenizer truncation: the test question is cut);
``left`` keeps the end (demonstrations are cut, the question and generation prompt survive)."""
CPU_BATCH_SIZE = 8
"""Replay's default batch on CPU: the fastest in ``benchmarks/bench_batch.py`` (above it, padding costs
more than wider products gain). On an accelerator the manifest's ``batch_size`` applies."""
AUTO_BATCH_CAP = 64
"""The largest batch ``--batch-size auto`` tries on a GPU (beyond it the gain is small and one
out-of-memory batch late in a run costs more)."""


def require_transformers() -> None:
    """Fail with the install command instead of an ImportError deep in a run."""
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as exc:
        raise PrerequisiteError(f"the hf backend needs torch and transformers ({exc}); run: {INSTALL_INFERENCE}") from exc


@dataclass
class RowSampler:
    """Logits processor for ``model.generate``: samples each row with its own seeded generator and
    returns one-hot scores, so ``generate``'s greedy argmax emits exactly the sampled token."""

    seeds: list[int]
    temperature: float
    top_k: int | None
    top_p: float | None
    generators: list[Any] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        import torch

        self.generators = [torch.Generator(device="cpu").manual_seed(int(s)) for s in self.seeds]

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        # all rows in one call on the logits' device (bit-equal per row to tests/row_oracle.py); the
        # uniforms come from each row's CPU generator, so the random stream is the same on every device
        idx = draw_rows(scores, [torch.rand((), generator=g, dtype=torch.float64).item() for g in self.generators],
                        self.temperature, self.top_k, self.top_p)
        out = torch.full_like(scores, float("-inf"))
        out[torch.arange(len(self.generators), device=out.device), idx] = 0.0
        return out


@dataclass
class StepHook:
    """A logits processor that only calls ``hook`` once per decoding step; the scores pass untouched."""

    hook: Callable[[], None]

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        self.hook()
        return scores


@dataclass
class PreparedPrompt:
    """Token ids fed to the model plus what must be recorded about how they were made."""

    ids: list[int]
    templated_sha256: str
    n_full: int
    truncated: bool
    text: str | None = None
    """Upstream path: the decoded (possibly truncated) prompt text the model is given."""


class HFBackend:
    """A loaded transformers causal LM bound to its pinned revision."""

    name = "hf"

    def __init__(self, model: Any, tokenizer: Any, model_id: str, revision: str, *, prompt_path: str = "chat",
                 truncation: str | None = None, extra_info: dict[str, Any] | None = None,
                 context_length: int | None = None, deterministic: bool | None = None):
        if prompt_path not in ("chat", "upstream"):
            raise InputError("--prompt-path", f"expected chat or upstream, got {prompt_path!r}")
        truncation = truncation or ("right" if prompt_path == "upstream" else "left")
        if truncation not in TRUNCATION_POLICIES:
            raise InputError("--truncation", f"expected one of {TRUNCATION_POLICIES}, got {truncation!r}")
        if prompt_path == "upstream" and truncation != "right":
            raise InputError("--truncation", "the upstream prompt path truncates on the right only")
        self.model, self.tokenizer = model, tokenizer
        self.model_id, self.revision = model_id, revision
        self.prompt_path, self.truncation = prompt_path, truncation
        self.extra_info = dict(extra_info or {})
        self.context_length = context_length or int(getattr(model.config, "max_position_embeddings", 0) or 0)
        eos = model.generation_config.eos_token_id
        eos = tokenizer.eos_token_id if eos is None else eos
        self.eos_ids: list[int] = [eos] if isinstance(eos, int) else list(eos or [])
        pad = tokenizer.pad_token_id
        # upstream: pad_token_id = model.config.eos_token_id
        self.pad_id = pad if pad is not None else (self.eos_ids[0] if self.eos_ids else 0)
        tokenizer.padding_side = "left"
        self.deterministic, self.deterministic_note = choose_deterministic(model, deterministic)
        self.step_hook: Callable[[], None] | None = None
        """Called once per decoding step (replay's progress bar); it never sees or changes the logits."""

    # -- recorded facts -------------------------------------------------------------------
    def describe(self) -> dict[str, Any]:
        import torch
        import transformers

        return {
            "backend": self.name, "transformers": transformers.__version__, "torch": torch.__version__,
            "dtype": str(self.model.dtype).replace("torch.", ""), "device": str(self.model.device),
            "chat_template_sha256": template_sha256(self.tokenizer), "context_length": self.context_length,
            "resolved_commit": getattr(self.model.config, "_commit_hash", None),
            "deterministic": self.deterministic, "deterministic_note": self.deterministic_note, **self.extra_info,
        }

    def resolved_generation(self, settings: GenerationSettings) -> dict[str, Any]:
        gc = self.model.generation_config
        top_p = settings.top_p if settings.top_p is not None else getattr(gc, "top_p", None)
        top_k = HF_LEGACY_TOP_K if getattr(gc, "top_k", None) is None else gc.top_k
        return {**settings.as_dict(), "top_p": top_p if settings.do_sample else None,
                "top_k": top_k if settings.do_sample else None, "eos_token_ids": self.eos_ids,
                "pad_token_id": self.pad_id, "prompt_path": self.prompt_path, "truncation": self.truncation,
                "add_special_tokens": self.prompt_path == "upstream",
                "sampler": "seam-repro-row-inverse-cdf-v1" if settings.do_sample else "greedy",
                # what decides whether two runs agree token for token (``default``: batched generate,
                # whose outputs may move with batch size, neighbours and padding)
                "kernels": invariant.kernel_set(str(self.model.device)) if self.deterministic else "default"}

    def default_batch_size(self, settings: GenerationSettings) -> int:
        """Deterministic: one lane (a larger batch runs lane after lane). Else ``CPU_BATCH_SIZE`` on CPU,
        the manifest's on an accelerator."""
        if self.deterministic:
            return invariant.lane_rows(str(self.model.device))
        return CPU_BATCH_SIZE if str(getattr(self.model, "device", "")) == "cpu" else settings.batch_size

    def auto_batch_size(self, requests: list[GenerationRequest], settings: GenerationSettings) -> tuple[int, str]:
        """``--batch-size auto``: the largest batch that fits, and how it was found. On a GPU one forward
        pass as wide as the longest prompt plus ``max_new_tokens`` is tried, halving on out-of-memory."""
        if not requests:
            return 1, "no prompts to generate"
        if self.deterministic:
            rows = self.default_batch_size(settings)
            return rows, (f"deterministic: lanes of {rows} rows run one after another, so a larger batch changes "
                          "neither outputs nor memory")
        if str(getattr(self.model, "device", "")) == "cpu":
            return CPU_BATCH_SIZE, f"CPU: {CPU_BATCH_SIZE}, the measured best (benchmarks/bench_batch.py)"
        import torch

        longest = max(len(self.prepare(r.prompt, settings).ids) for r in requests)
        width = longest + settings.max_new_tokens
        if self.context_length:
            width = min(width, self.context_length)
        size = max(1, min(AUTO_BATCH_CAP, len(requests)))
        while True:
            try:
                with torch.inference_mode():
                    ids = torch.full((size, width), self.pad_id, dtype=torch.long, device=self.model.device)
                    self.model(input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=True)
                del ids
                return size, (f"GPU: {size} rows of {width} tokens (longest prompt + max_new_tokens) fit in one "
                              f"forward pass, tried from {min(AUTO_BATCH_CAP, len(requests))} down")
            except torch.cuda.OutOfMemoryError:
                if size == 1:
                    raise PrerequisiteError(out_of_memory_message(1, longest, settings, RuntimeError(
                        "one row of the longest prompt does not fit"))) from None
                size //= 2
            finally:
                if torch.cuda.is_available():
                    torch.cuda.empty_cache()

    # -- prompts --------------------------------------------------------------------------
    def prepare(self, prompt: str, settings: GenerationSettings) -> PreparedPrompt:
        tok = self.tokenizer
        msgs = [{"role": "user", "content": prompt}]
        window = settings.context_window or self.context_length
        budget = window - settings.max_new_tokens if window else None  # upstream's max_length=ctx-500
        if self.prompt_path == "upstream":
            full = tok.apply_chat_template(msgs, tokenize=True, add_generation_prompt=False, return_dict=False)
            cut = full if budget is None else tok.apply_chat_template(
                msgs, tokenize=True, add_generation_prompt=False, truncation=True, max_length=budget,
                return_dict=False)
            text = tok.batch_decode([cut], skip_special_tokens=True)[0]
            ids = tok(text, add_special_tokens=True)["input_ids"]  # as upstream's pipeline tokenized it
            return PreparedPrompt(list(ids), sha256_text(text), len(full), len(cut) < len(full), text)
        text = tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
        ids = list(tok(text, add_special_tokens=False)["input_ids"])
        n_full = len(ids)
        if budget is not None and n_full > budget:
            ids = ids[:budget] if self.truncation == "right" else ids[n_full - budget:]
        return PreparedPrompt(ids, sha256_text(text), n_full, len(ids) < n_full)

    # -- generation -----------------------------------------------------------------------
    def left_pad(self, rows: list[list[int]]) -> tuple[Any, Any]:
        """``(input_ids, attention_mask)``: ``rows`` padded on the left with the pad id (also the
        benchmarks' input to raw ``model.generate``)."""
        import torch

        width = max(len(r) for r in rows)
        input_ids = torch.full((len(rows), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for row, ids in enumerate(rows):
            input_ids[row, width - len(ids):] = torch.tensor(ids, dtype=torch.long)
            mask[row, width - len(ids):] = 1
        return input_ids, mask

    def _generation_config(self, settings: GenerationSettings) -> Any:
        gc = copy.deepcopy(self.model.generation_config)
        gc.do_sample = False  # the RowSampler samples; greedy selection then copies its choice
        gc.temperature = gc.top_p = gc.top_k = gc.max_length = None
        gc.num_beams = 1
        gc.max_new_tokens = settings.max_new_tokens
        gc.pad_token_id = self.pad_id
        gc.eos_token_id = self.eos_ids or None
        return gc

    def generate(self, requests: list[GenerationRequest], settings: GenerationSettings) -> list[GenerationResult]:
        import torch
        from transformers import LogitsProcessorList

        if not requests:
            return []
        prepared = [self.prepare(r.prompt, settings) for r in requests]
        if self.deterministic:
            return self._generate_invariant(requests, prepared, settings)
        input_ids, mask = self.left_pad([p.ids for p in prepared])
        width = input_ids.shape[1]
        resolved = self.resolved_generation(settings)
        processors = LogitsProcessorList()
        if self.step_hook is not None:
            processors.append(StepHook(self.step_hook))
        if settings.do_sample:
            processors.append(RowSampler([r.seed for r in requests], settings.temperature,
                                         resolved["top_k"], resolved["top_p"]))
        device = self.model.device
        try:
            with torch.inference_mode():
                out = self.model.generate(input_ids=input_ids.to(device), attention_mask=mask.to(device),
                                          generation_config=self._generation_config(settings),
                                          logits_processor=processors)
        except torch.cuda.OutOfMemoryError as exc:  # = torch.OutOfMemoryError where torch has that name
            raise BatchOutOfMemory(out_of_memory_message(len(requests), width, settings, exc), len(requests)) from None
        return self._results(prepared, out[:, width:].tolist())

    def _generate_invariant(self, requests: list[GenerationRequest], prepared: list[PreparedPrompt],
                            settings: GenerationSettings) -> list[GenerationResult]:
        """Batch-invariant generation (``generate/invariant.py``); an out-of-memory lane is one line."""
        import torch

        resolved = self.resolved_generation(settings)
        lane = invariant.LaneSettings(max_new_tokens=settings.max_new_tokens, do_sample=settings.do_sample,
                                      temperature=settings.temperature, top_k=resolved["top_k"],
                                      top_p=resolved["top_p"], eos_ids=self.eos_ids, pad_id=self.pad_id)
        rows = invariant.lane_rows(str(self.model.device))
        failed: str | None = None
        try:
            new = invariant.generate_lanes(self.model, [p.ids for p in prepared], [r.seed for r in requests],
                                           lane, rows=rows, step_hook=self.step_hook)
        except torch.cuda.OutOfMemoryError as exc:
            failed = first_line(exc)  # leaving the handler frees the lane's pools the traceback held
        if failed is not None:
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
            width = max(len(p.ids) for p in prepared)
            raise BatchOutOfMemory(out_of_memory_message(min(rows, len(requests)), width, settings,
                                                         RuntimeError(failed), deterministic=True), len(requests))
        return self._results(prepared, new)

    def _results(self, prepared: list[PreparedPrompt], new: list[list[int]]) -> list[GenerationResult]:
        """Decoded outputs, each cut after its first end-of-sequence token."""
        results = []
        for p, toks in zip(prepared, new, strict=True):
            n = next((i + 1 for i, t in enumerate(toks) if t in self.eos_ids), len(toks))
            text = self.tokenizer.decode(toks[:n], skip_special_tokens=True)
            results.append(GenerationResult(output=text, templated_prompt_sha256=p.templated_sha256,
                                            n_prompt_tokens=len(p.ids), n_output_tokens=n,
                                            truncated=p.truncated, n_prompt_tokens_full=p.n_full,
                                            upstream_prompt_text=p.text if p.truncated else None))
        return results


def template_sha256(tokenizer: Any) -> str | None:
    """sha256 of the tokenizer's chat template (text, or JSON for a list of named templates), or None."""
    tpl = getattr(tokenizer, "chat_template", None)
    return None if tpl is None else sha256_text(tpl) if isinstance(tpl, str) else sha256_json(tpl)


def choose_deterministic(model: Any, requested: bool | None) -> tuple[bool, str]:
    """Whether this backend generates batch-invariantly, and why. ``None`` (the default) turns it on
    wherever the architecture allows; ``True`` refuses in one line where it does not."""
    if requested is False:
        return False, "off (--no-deterministic): outputs may change with batch size, neighbours and padding"
    reason = invariant.unsupported_reason(model.config)
    if reason is not None:
        if requested:
            raise InputError("--deterministic", f"this model cannot be generated batch-invariantly: {reason}; "
                             "run with --no-deterministic")
        return False, f"off: {reason}"
    invariant.install(model)
    return True, "on: each prediction depends on its own prompt, seed and settings, not on the batch"


def out_of_memory_message(rows: int, width: int, settings: GenerationSettings, exc: BaseException,
                          deterministic: bool = False) -> str:
    """One line for a batch the accelerator could not hold. The default mode does not back off by
    itself: the batch shape changes the logits, so a silent retry at another size would change outputs;
    the user resumes with a smaller ``--batch-size``. In the deterministic mode replay halves on its own
    (``BatchOutOfMemory``), and this line is for a lane that cannot fit at all."""
    first = first_line(exc)
    if deterministic:
        return (f"out of accelerator memory in a deterministic lane of {rows} prompt(s) up to {width} tokens "
                f"+ {settings.max_new_tokens} new ({first[:160]}); a lane keeps its row count whatever the batch, "
                "so that outputs never depend on it: every finished batch is stored; rerun with --load-in-8bit or "
                "--load-in-4bit, a larger GPU or more GPUs, or --no-deterministic")
    smaller = f"--batch-size {max(1, rows // 2)}" if rows > 1 else "--load-in-8bit or --load-in-4bit"
    return (f"out of accelerator memory generating a batch of {rows} prompt(s) padded to {width} tokens "
            f"+ {settings.max_new_tokens} new ({first[:160]}); every finished batch is stored: rerun the same "
            f"command with {smaller} to resume, or use a larger GPU or more GPUs")


INT8_CAST_LOGGER = "bitsandbytes.autograd._functions"
INT8_CAST_MESSAGE = "MatMul8bitLt: inputs will be cast from"


class FirstOnly(logging.Filter):
    """Lets the first record whose format string starts with ``prefix`` through, drops the rest:
    bitsandbytes logs the int8 cast on every 8-bit matrix product, burying the progress bar."""

    def __init__(self, prefix: str):
        super().__init__()
        self.prefix, self.seen = prefix, False

    def filter(self, record: logging.LogRecord) -> bool:
        if not str(record.msg).startswith(self.prefix):
            return True
        shown, self.seen = self.seen, True
        return not shown


def resolve_dtype(dtype: str) -> Any:
    """``auto`` means bf16 on CUDA (the paper's dtype) and fp32 on CPU (bf16 matmuls are slow there)."""
    import torch

    if dtype not in DTYPES:
        raise InputError("--dtype", f"expected one of {DTYPES}, got {dtype!r}")
    if dtype == "auto":
        return torch.bfloat16 if torch.cuda.is_available() else torch.float32
    return {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[dtype]


BYTES_PER_PARAM = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "8bit": 1.0, "4bit": 0.5}


def available_memory_bytes() -> tuple[int, str]:
    """Memory that ``device_map="auto"`` can place weights in: every CUDA device plus host RAM."""
    import torch

    gpus = sum(torch.cuda.get_device_properties(i).total_memory for i in range(torch.cuda.device_count())) \
        if torch.cuda.is_available() else 0
    host = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    where = f"{gpus / 2**30:.1f} GiB on {torch.cuda.device_count()} GPU(s) + " if gpus else ""
    return gpus + host, f"{where}{host / 2**30:.1f} GiB host RAM"


DEVICE_MAP_STRATEGIES = ("auto", "balanced", "balanced_low_0", "sequential")
"""accelerate's placement strategies; any other ``device_map`` string names one device."""


def check_device_map(value: str | None) -> None:
    """One line, before anything loads, for a ``device_map`` this machine cannot serve (an unknown name,
    ``cuda`` without a visible CUDA device, ``cuda:3`` with two)."""
    if value is None or value in DEVICE_MAP_STRATEGIES:
        return
    import torch

    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    have = ", ".join(["cpu"] + [f"cuda:{i}" for i in range(gpus)])
    refused = (f"hf backend, key device_map: expected {', '.join(DEVICE_MAP_STRATEGIES)} or a device this "
               f"machine has ({have}), got {value!r}")
    try:
        device = torch.device(value)
    except (RuntimeError, ValueError, TypeError):
        raise InputError("--model-args", refused) from None
    if device.type == "cuda":
        ok = gpus > 0 and (device.index is None or device.index < gpus)
        why = "no CUDA device is visible" if not gpus else f"{gpus} CUDA device(s) visible"
    else:
        backend = torch.backends.mps if device.type == "mps" else getattr(torch, device.type, None)
        ok = device.type == "cpu" or (device.type in ("mps", "xpu") and getattr(backend, "is_available", lambda: False)())
        why = f"no {device.type} device is available"
    if not ok:
        raise InputError("--model-args", f"{refused} ({why})")


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:200] if text else type(exc).__name__


def attn_error(kernel: str, why: str) -> InputError:
    """The one line for an ``attn_implementation`` that cannot run here (``why``: the library's reason)."""
    return InputError("--model-args", f"hf backend, key attn_implementation: {kernel} cannot run here ({why}); "
                      "expected a kernel this machine and model support, e.g. sdpa or eager")


def check_fits(config: Any, model_id: str, dtype_name: str, quantization: str | None,
               available: tuple[int, str] | None = None, attn_implementation: str | None = None) -> int:
    """Refuse, before any weight is downloaded, a model whose weights alone exceed the machine's memory
    (GPUs + RAM), counting parameters on the meta device. The skeleton is built with the requested
    ``attn_implementation``, so a kernel that cannot run here is one line rather than a failed load."""
    import torch
    from accelerate import init_empty_weights
    from transformers import AutoModelForCausalLM

    attn = {} if attn_implementation is None else {"attn_implementation": attn_implementation}
    # FlashAttention needs a CUDA device; transformers only finds out in the load
    if attn_implementation is not None and attn_implementation.startswith("flash_attention") \
            and not torch.cuda.is_available():
        raise attn_error(attn_implementation, f"{attn_implementation} runs on CUDA devices only, and none is visible")
    with init_empty_weights():
        try:
            skeleton = AutoModelForCausalLM.from_config(config, **attn)
        except (ImportError, ValueError) as exc:
            if attn_implementation is None:
                raise
            raise attn_error(attn_implementation, first_line(exc)) from None
    n_params = sum(p.numel() for p in skeleton.parameters())
    need = int(n_params * BYTES_PER_PARAM[quantization or dtype_name] * 1.1)  # +10%: buffers, activations
    have, described = available if available is not None else available_memory_bytes()
    if need > have:
        raise PrerequisiteError(
            f"{model_id}: {n_params / 1e9:.1f}B parameters need about {need / 2**30:.1f} GiB in "
            f"{quantization or dtype_name}, but this machine has {described}; use --load-in-4bit/--load-in-8bit, "
            "more GPUs, or a smaller model")
    return need


def gguf_only(local_info: dict[str, Any] | None) -> str | None:
    """The GGUF file of a GGUF-only local folder (no config.json, one .gguf), else None."""
    names = list((local_info or {}).get("files", {}))
    ggufs = [n for n in names if n.endswith(".gguf")]
    return ggufs[0] if "config.json" not in names and len(ggufs) == 1 else None


def folder_load_error(source: str, local_info: dict[str, Any] | None, exc: BaseException) -> InputError:
    """One line for a local model folder the library could not load: what fails there is the folder's
    content (the kit's own arguments were checked before). A GGUF-only folder names its file."""
    gguf = gguf_only(local_info)
    where = Path(source) / gguf if gguf else Path(source)
    return InputError(where, f"--model: cannot load the model ({type(exc).__name__}: {first_line(exc)}); expected "
                      "complete files as save_pretrained or the model's publisher wrote them (truncated or "
                      "corrupt? copy or download them again)")


def read_chat_template(path: str | Path) -> str:
    """A ``chat_template=FILE`` override: the Jinja text of the file (must be non-empty UTF-8)."""
    p = Path(path)
    try:
        text = p.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(p, f"--model-args chat_template: cannot read the template file ({exc})") from None
    if not text.strip():
        raise InputError(p, "--model-args chat_template: expected a Jinja chat template, the file is empty")
    return text


def load_hf_backend(model_id: str, revision: str, *, dtype: str = "auto", quantization: str | None = None,
                    device_map: str | None = "auto", prompt_path: str = "chat", truncation: str | None = None,
                    source: str | None = None, local_info: dict[str, Any] | None = None,
                    attn_implementation: str | None = None, trust_remote_code: bool = False,
                    max_model_len: int | None = None, chat_template: str | None = None,
                    deterministic: bool | None = None) -> HFBackend:
    """Load tokenizer and weights at the same pinned revision (tokenizers changed between revisions).
    ``source`` is a local folder to load from instead of the Hub (``revision`` is then its content
    hash, checked by the caller); the remaining keywords are the hf ``--model-args``."""
    require_transformers()
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    from seam_repro.network import require_hub_or_cache

    where = source or model_id
    # what config and tokenizer are read with too (a local folder, a GGUF file); a missing optional
    # package is told before anything loads
    load_from: dict[str, Any] = {"revision": None if source else revision, "trust_remote_code": trust_remote_code}
    if source:
        load_from["local_files_only"] = True
        gguf = gguf_only(local_info)
        if gguf:  # a GGUF-only folder: transformers de-quantizes it
            load_from["gguf_file"] = gguf
    kwargs: dict[str, Any] = {**load_from, "dtype": resolve_dtype(dtype)}
    if attn_implementation is not None:
        kwargs["attn_implementation"] = attn_implementation
    if quantization is not None:
        kwargs["quantization_config"] = _quantization_config(quantization)
    if device_map is not None:
        check_device_map(device_map)
        try:
            import accelerate  # noqa: F401
        except ImportError as exc:
            raise PrerequisiteError(f"device_map={device_map!r} needs accelerate; run: {INSTALL_INFERENCE}") from exc
        kwargs["device_map"] = device_map
    require_hub_or_cache(where, revision)  # offline and not cached: one line in seconds, no retries
    try:
        config = AutoConfig.from_pretrained(where, **load_from)
    except Exception as exc:  # hub errors come in many classes: unknown repo, revision, gated, offline
        if source:
            raise folder_load_error(source, local_info, exc) from exc
        raise InputError("--model", f"cannot resolve {where}@{revision}: {first_line(exc)}") from exc
    import torch

    dtype_name = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32"}[kwargs["dtype"]]
    check_fits(config, model_id, dtype_name, quantization, attn_implementation=attn_implementation)
    try:
        tokenizer = AutoTokenizer.from_pretrained(where, **load_from)
        if chat_template is not None:
            tokenizer.chat_template = read_chat_template(chat_template)
        check_tokenizer_template(tokenizer, where, chat_template)  # a base model: one line, before the weights
        model = AutoModelForCausalLM.from_pretrained(where, config=config, **kwargs)  # a GGUF's is read once
    except (SeamReproError, MemoryError, torch.cuda.OutOfMemoryError):
        raise
    except Exception as exc:
        if not source:
            raise
        raise folder_load_error(source, local_info, exc) from exc
    model.eval()
    placed = getattr(model, "hf_device_map", None) or {}
    extra: dict[str, Any] = {"quantization": quantization, "device_map": device_map,
                             "devices": sorted({str(d) for d in placed.values()}) or [str(model.device)],
                             "attn_implementation": getattr(model.config, "_attn_implementation", attn_implementation),
                             "trust_remote_code": trust_remote_code}
    if chat_template is not None:
        extra["chat_template_file"] = str(chat_template)
    if local_info is not None:
        extra["local_folder"] = local_info
    return HFBackend(model, tokenizer, model_id, revision, prompt_path=prompt_path, truncation=truncation,
                     extra_info=extra, context_length=max_model_len, deterministic=deterministic)


def _quantization_config(quantization: str) -> Any:
    """bitsandbytes' config for ``4bit`` or ``8bit`` loading (8-bit: its per-product log shown once)."""
    if quantization not in ("4bit", "8bit"):
        raise InputError("--quantization", f"expected 4bit or 8bit, got {quantization!r}")
    try:
        import bitsandbytes  # noqa: F401
        from transformers import BitsAndBytesConfig
    except ImportError as exc:
        raise PrerequisiteError(f"{quantization} loading needs bitsandbytes; run: pip install "
                                "'seam-repro[quant]'") from exc
    if quantization == "8bit":  # one FirstOnly per process
        logger = logging.getLogger(INT8_CAST_LOGGER)
        if not any(isinstance(f, FirstOnly) for f in logger.filters):
            logger.addFilter(FirstOnly(INT8_CAST_MESSAGE))
    return BitsAndBytesConfig(load_in_4bit=quantization == "4bit", load_in_8bit=quantization == "8bit")
