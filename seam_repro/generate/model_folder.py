"""What a model folder must hold before anything loads, and what a model without a chat template gets.

Checked in seconds, before torch or transformers read a byte (``make_backend``), so a mistake is one
line naming the cause: a path-like ``--model`` that names no folder (with the nearest folder names), a
transformers folder without a tokenizer file, a tokenizer without a chat template (a base model).

A base model is refused rather than given the raw prompt by default: the protocol is the model's chat
template, and a silent fallback would change what the model sees. ``--model-args
chat_template=raw.jinja`` (shipped) makes the choice explicit and recorded like any template.
"""

from __future__ import annotations

import difflib
import json
import os
from importlib import resources
from pathlib import Path
from typing import Any

from seam_repro.errors import InputError

RAW_TEMPLATE = "data/chat_templates/raw.jinja"

TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "vocab.json", "vocab.txt")
"""Any one of these (or a ``*.tiktoken`` file) holds a tokenizer's vocabulary; ``vocab.json`` (GPT-2
style BPE) needs ``merges.txt`` beside it unless ``tokenizer.json`` is there too."""


def raw_template_path() -> Path:
    """The shipped template that passes the prompt through unchanged (package data)."""
    return Path(str(resources.files("seam_repro").joinpath(RAW_TEMPLATE)))


def looks_like_path(spec: str) -> bool:
    """``./x``, ``../x``, ``/x``, ``~/x``, ``x/`` or a Windows-style path: meant as a folder, not a Hub id
    (``org/name`` is a Hub id)."""
    base = spec.rpartition("@")[0] if "@" in spec else spec
    return (base.startswith((".", "/", "~")) or base.endswith(("/", os.sep)) or "\\" in base
            or base.count("/") > 1)


def missing_folder_problem(spec: str) -> InputError | None:
    """One line for a path-looking ``--model`` that is not a folder, naming the closest folder names in
    its parent (``None`` for a folder or a Hub id)."""
    base = spec.rpartition("@")[0] if "@" in spec and not Path(spec).exists() else spec
    path = Path(base).expanduser()
    if not looks_like_path(spec) or path.is_dir():
        return None
    if path.exists():
        return InputError(path, "--model: not a folder; expected a model folder (config.json and weights, as "
                          "save_pretrained writes them) or a Hub id ORG/NAME[@REVISION]")
    parent = path.parent
    try:
        names = [p.name for p in parent.iterdir() if p.is_dir()]
    except OSError:  # the parent is missing too, or unreadable
        names = []
    near = difflib.get_close_matches(path.name, names, n=3, cutoff=0.6)
    hint = f"; did you mean {', '.join(str(parent / n) for n in near)}?" if near else \
        "; expected an existing model folder (or a Hub id ORG/NAME[@REVISION])"
    return InputError(path, f"--model: no such folder{hint}")


def check_tokenizer_files(folder: Path, files: dict[str, str]) -> None:
    """A transformers folder (config.json) must hold a tokenizer: name the file it lacks before
    anything loads. A GGUF-only folder carries its tokenizer inside the GGUF file."""
    names = {n.rsplit("/", 1)[-1] for n in files if "/" not in n}
    if "config.json" not in names:
        return
    if "vocab.json" in names and "merges.txt" not in names and "tokenizer.json" not in names:
        raise InputError(folder / "merges.txt", "--model: missing; the folder's tokenizer has vocab.json but not "
                         "merges.txt beside it (copy it from where the model came from, or save the tokenizer "
                         "again with save_pretrained)")
    if any(n in names for n in TOKENIZER_FILES) or any(n.endswith(".tiktoken") for n in names):
        return
    raise InputError(folder / "tokenizer.json", "--model: missing; the folder has no tokenizer file (expected "
                     f"one of {', '.join(TOKENIZER_FILES)} or *.tiktoken, as tokenizer.save_pretrained writes them "
                     "next to the weights)")


def folder_has_chat_template(folder: Path, files: dict[str, str]) -> bool | None:
    """Whether a transformers folder's tokenizer carries a chat template (``chat_template.jinja``,
    ``chat_template.json`` or a ``chat_template`` in ``tokenizer_config.json``); ``None`` when that
    cannot be told from the files (GGUF, unreadable config): the loaded tokenizer is asked then."""
    if "config.json" not in files:
        return None
    if "chat_template.jinja" in files or "chat_template.json" in files:
        return True
    cfg = folder / "tokenizer_config.json"
    if not cfg.is_file():
        return False
    try:
        data = json.loads(cfg.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return bool(isinstance(data, dict) and data.get("chat_template"))


def no_chat_template_error(where: str | Path) -> InputError:
    """The one line for a model without a chat template (see the module docstring for why)."""
    return InputError(where, "--model: the tokenizer has no chat template (a base model?); seam-repro prompts "
                      "through the chat template, so give one: --model-args chat_template=FILE, or "
                      f"chat_template={raw_template_path()} to feed the prompt as it is, as lm-evaluation-harness "
                      "runs a base model (recorded in run.json)")


def check_model_folder(folder: Path, files: dict[str, str], model_args: dict[str, Any]) -> None:
    """Everything about a local folder that can be told from its file list, before loading."""
    check_tokenizer_files(folder, files)
    if model_args.get("chat_template") is None and folder_has_chat_template(folder, files) is False:
        raise no_chat_template_error(folder)


def check_tokenizer_template(tokenizer: Any, where: str | Path, chat_template: str | None) -> None:
    """After the tokenizer loads (a Hub model, a GGUF folder), before the weights do: the same
    refusal when it has no chat template and none was given."""
    if chat_template is None and not getattr(tokenizer, "chat_template", None):
        raise no_chat_template_error(where)
