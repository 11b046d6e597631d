"""Inference backends (``hf``, ``vllm``, ``echo``) and the model pins they load.

Port of upstream SEAM ``model_wrappers/`` (``Model``, ``HfPipelineWrap``) plus the quantization table
of ``scripts/run_model_predictions.py`` (``QUANTIZED_MODELS``), now in ``data/models.json``.
"""

from __future__ import annotations

from typing import Any

from seam_repro.errors import InputError
from seam_repro.generate.base import Backend, EchoBackend, model_pins

BACKENDS = ("hf", "vllm", "openai", "echo")


def parse_model_spec(spec: str) -> tuple[str, str]:
    """``ID[@REVISION]`` -> (id, revision); a bare id must be one of the pinned models."""
    from seam_repro.generate.model_folder import missing_folder_problem

    missing = missing_folder_problem(spec)  # ./tiny-lama: the folder is missing, said before any Hub pin
    if missing is not None:
        raise missing
    model_id, _, revision = spec.partition("@")
    if not model_id or "@" in revision:
        raise InputError("--model", f"expected ID, ID@REVISION or a local model folder, got {spec!r}")
    if revision:
        return model_id, revision
    pinned = model_pins()["models"].get(model_id)
    if pinned is None:
        raise InputError("--model", f"{model_id!r} has no pinned revision in seam_repro/data/models.json and is not "
                         "a local folder; pass ID@REVISION (a 40-hex commit of the Hub repo) or a folder path")
    return model_id, pinned["revision"]


def require_model_available(backend: str, model: str | None) -> str | None:
    """For a Hub model on the hf backend (vLLM resolves models itself): refuse in one line, before
    anything slow, when it is neither cached nor reachable; returns it pinned, ``ID@REVISION``."""
    from seam_repro.generate.local import is_local_spec
    from seam_repro.network import quiet_retries, require_hub_or_cache

    if backend != "hf" or model is None or is_local_spec(model):
        return None
    quiet_retries()
    model_id, revision = parse_model_spec(model)
    require_hub_or_cache(model_id, revision)
    return f"{model_id}@{revision}"


def make_backend(backend: str, model: str | None, *, dtype: str = "auto", quantization: str | None = None,
                 prompt_path: str = "chat", truncation: str | None = None, echo_delay: float = 0.0,
                 tensor_parallel_size: int = 1, model_args: str | dict[str, Any] | None = None,
                 deterministic: bool | None = None) -> Backend:
    """Build the requested backend. No ``model`` means the embedded SmolLM2 GGUF (hf) or ``echo``; else a
    pinned Hub id, ``ID@REVISION`` or a local folder. ``model_args`` is validated
    against the backend's keys. A pinned model's recorded quantization applies unless ``quantization``
    overrides it. ``deterministic``: batch-invariant generation; None = where the backend supports it."""
    from seam_repro.generate.model_args import parse_model_args

    if backend not in BACKENDS:
        raise InputError("--backend", f"expected one of {', '.join(BACKENDS)}, got {backend!r}")
    args = model_args if isinstance(model_args, dict) else parse_model_args(backend, model_args)
    if backend == "echo":
        if deterministic is False:
            raise InputError("--no-deterministic", "the echo backend is batch-invariant by construction")
        model_id, _, revision = ("echo" if model is None else model).partition("@")  # None: the defaults
        return EchoBackend(model_id=model_id, revision=revision or "echo-1", delay=echo_delay)
    if backend == "openai":
        if model is None:
            raise InputError("--model", "the openai backend needs --model NAME[@REVISION] (the served model name)")
        if dtype != "auto" or quantization is not None:
            raise InputError("--backend", "openai: --dtype and --load-in-4bit/8bit apply to local weights; the server "
                             "decides how the served model is loaded")
        from seam_repro.generate.openai_compat import make_openai_backend

        if deterministic is not None:
            raise InputError("--deterministic", "the openai backend cannot set how the server batches; say what the "
                             "server claims with --model-args batch_invariant=true|false (recorded as unverified)")
        name, _, revision = model.partition("@")
        return make_openai_backend(name, revision or "unpinned", args)
    if "dtype" in args and dtype != "auto" and args["dtype"] != dtype:  # one setting, given twice
        raise InputError("--model-args", f"dtype={args['dtype']} contradicts --dtype {dtype}; give one of the two")
    dtype = args.get("dtype", dtype)
    if model is None:
        if backend != "hf":
            raise InputError("--model", f"the {backend} backend needs --model ID[@REVISION] or a model folder")
        from seam_repro.generate.embedded import load_embedded_backend

        return load_embedded_backend(dtype="fp32" if dtype == "auto" else dtype, prompt_path=prompt_path,
                                     truncation=truncation, model_args=args, deterministic=deterministic)
    from seam_repro.generate.local import check_weights, is_local_spec, resolve_local

    source: str | None = None
    local_info: dict[str, Any] | None = None
    if is_local_spec(model):
        from seam_repro.generate.model_folder import check_model_folder

        local = resolve_local(model)
        check_weights(local)
        check_model_folder(local.path, local.files, args)  # tokenizer files, chat template: before any load
        model_id, revision, source = local.model_id, local.revision, str(local.path)
        local_info = {"path": str(local.path), "files": local.files}
    else:
        model_id, revision = parse_model_spec(model)
    if quantization is None:
        quantization = model_pins()["models"].get(model_id, {}).get("quantization")
    rest = {k: v for k, v in args.items() if k != "dtype"}
    if backend == "vllm":
        from seam_repro.generate.vllm import VLLMBackend

        return VLLMBackend(model_id, revision, dtype=dtype, quantization=quantization, source=source,
                           local_info=local_info, deterministic=deterministic,
                           **{"tensor_parallel_size": tensor_parallel_size, **rest})
    from seam_repro.generate.hf import load_hf_backend

    return load_hf_backend(model_id, revision, dtype=dtype, quantization=quantization, prompt_path=prompt_path,
                           truncation=truncation, source=source, local_info=local_info,
                           deterministic=deterministic, **rest)
