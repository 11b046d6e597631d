"""Local model folders (``--model /path/to/folder``) as first-class, content-addressed models.

A Hub model is pinned by its commit; a folder has none, so its revision is a sha256 over the files
that decide what it generates: weights, configs and tokenizer files (``MODEL_FILE_PATTERNS``). The
per-file hashes go into run.json; the combined digest is the revision, so a resume into a run dir
whose folder was retrained or re-tokenized is refused by the store's revision check.
"""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass
from pathlib import Path

from seam_repro.errors import InputError
from seam_repro.files.reading import parse_json_text
from seam_repro.hashing import sha256_file, sha256_text

MODEL_FILE_PATTERNS: tuple[str, ...] = (
    "*.safetensors", "*.safetensors.index.json", "*.bin", "*.bin.index.json", "*.pt", "*.pth", "*.gguf", "*.h5",
    "*.msgpack", "config.json", "generation_config.json", "params.json", "tokenizer.json", "tokenizer_config.json",
    "tokenizer.model", "special_tokens_map.json", "added_tokens.json", "vocab.json", "vocab.txt", "merges.txt",
    "*.tiktoken", "chat_template.jinja", "chat_template.json", "preprocessor_config.json", "*.py",
)
"""Files that determine a model's outputs (``*.py``: remote code run under trust_remote_code).
READMEs, licences, training logs and optimizer states are left out: they change nothing generated."""

EXCLUDED_DIRS = {".git", ".cache", "__pycache__"}
REVISION_PREFIX = "sha256:"


@dataclass(frozen=True)
class LocalModel:
    """A model folder: where it is, its content revision and the hash of every file counted."""

    path: Path
    revision: str
    files: dict[str, str]

    @property
    def model_id(self) -> str:
        """Stable id from the folder name (``local/<name>``); the absolute path is recorded, not shown."""
        return f"local/{self.path.name}"


def is_local_spec(spec: str) -> bool:
    """True when ``--model`` names an existing folder (``DIR`` or the older ``DIR@local``)."""
    if Path(spec).is_dir():
        return True
    base, sep, _ = spec.rpartition("@")
    return bool(sep and base) and Path(base).is_dir()


def model_files(folder: Path) -> list[Path]:
    """The counted files under ``folder`` (recursively, sorted), following MODEL_FILE_PATTERNS. A
    counted name that is a symbolic link to nothing (weights moved or a cache cleaned) is refused:
    skipping it would hash, and then load, a model without those weights."""
    out = []
    for p in sorted(folder.rglob("*")):
        if any(part in EXCLUDED_DIRS for part in p.relative_to(folder).parts[:-1]) \
                or not any(fnmatch.fnmatch(p.name, pat) for pat in MODEL_FILE_PATTERNS):
            continue
        if p.is_symlink() and not p.exists():
            raise InputError(p, f"--model: a symbolic link to {os.readlink(p)!r}, which does not exist (or is a loop); "
                             "expected the model file itself or a link to it")
        if p.is_file():
            out.append(p)
    return out


def folder_revision(folder: Path) -> LocalModel:
    """Hash a model folder: per-file sha256, then sha256 over ``"<relative path>\\t<sha256>\\n"`` lines."""
    folder = Path(folder).resolve()
    if not folder.is_dir():
        raise InputError(folder, "--model: not a folder")
    files = {p.relative_to(folder).as_posix(): sha256_file(p) for p in model_files(folder)}
    if "config.json" not in files and sum(n.endswith(".gguf") for n in files) != 1:
        raise InputError(folder, "--model: expected a model folder with config.json (transformers save_pretrained "
                         "layout) or exactly one .gguf file")
    if not any(fnmatch.fnmatch(n.rsplit("/", 1)[-1], pat) for n in files
               for pat in ("*.safetensors", "*.bin", "*.pt", "*.pth", "*.gguf", "*.h5", "*.msgpack")):
        raise InputError(folder, "--model: no weight files (*.safetensors, *.bin, *.gguf, ...) in the folder")
    digest = sha256_text("".join(f"{name}\t{sha}\n" for name, sha in sorted(files.items())))
    return LocalModel(folder, REVISION_PREFIX + digest, files)


def resolve_local(spec: str) -> LocalModel:
    """``DIR``, ``DIR@local`` or ``DIR@sha256:<hex>`` (then the folder must hash to that revision)."""
    folder, pinned = spec, None
    if not Path(spec).is_dir() and "@" in spec:
        folder, _, pinned = spec.rpartition("@")
    model = folder_revision(Path(folder))
    if pinned not in (None, "", "local") and pinned != model.revision:
        raise InputError("--model", f"{folder} hashes to {model.revision}, not the pinned {pinned}; the folder's "
                         "weights, config or tokenizer changed")
    return model


MAX_SAFETENSORS_HEADER = 100 * 2**20
"""The safetensors format's own limit on its JSON header (100 MB)."""


def check_weights(model: LocalModel) -> None:
    """Refuse, reading only headers, weight files a library would fail on deep inside a load: a
    safetensors file cut short (or with bytes after its tensors), a shard index naming a missing file.
    A GGUF file has no such cheap check; its faults are mapped when the load fails (``hf``)."""
    for name in model.files:
        path = model.path / name
        if name.endswith(".safetensors"):
            check_safetensors(path)
        elif name.endswith(".safetensors.index.json"):
            index = parse_json_text(path.read_text("utf-8", errors="replace"), path)
            weight_map = index.get("weight_map") if isinstance(index, dict) else None
            if not isinstance(weight_map, dict):
                raise InputError(path, "--model: expected a shard index with a 'weight_map' object")
            base = name.rsplit("/", 1)[0] + "/" if "/" in name else ""
            missing = sorted({f for f in weight_map.values() if not isinstance(f, str) or base + f not in model.files},
                             key=str)
            if missing:
                raise InputError(path, f"--model: names {len(missing)} shard(s) the folder lacks, first {missing[0]!r}; "
                                 "expected every file of its weight_map next to it")


def check_safetensors(path: Path) -> None:
    """One line when ``path`` is not a whole safetensors file: the 8-byte header length, the JSON
    header, then exactly the bytes its tensors' ``data_offsets`` cover."""
    size = path.stat().st_size
    expected = "expected a whole safetensors file (copy or download it again)"
    with open(path, "rb") as f:
        head = f.read(8)
        n = int.from_bytes(head, "little") if len(head) == 8 else -1
        if n < 2 or n > MAX_SAFETENSORS_HEADER or 8 + n > size:
            raise InputError(path, f"--model: truncated or not safetensors ({size} bytes; its header length field "
                             f"reads {n}); {expected}")
        raw = f.read(n)
    header = parse_json_text(raw.decode("utf-8", errors="replace"), path)
    if not isinstance(header, dict):
        raise InputError(path, f"--model: its header is not a JSON object; {expected}")
    ends = [0]
    for key, info in header.items():
        offsets = info.get("data_offsets") if isinstance(info, dict) else None
        if key == "__metadata__":
            continue
        if not (isinstance(offsets, list) and len(offsets) == 2 and all(type(o) is int for o in offsets)):
            raise InputError(path, f"--model: tensor {key[:60]!r} has no [begin, end] data_offsets; {expected}")
        ends.append(offsets[1])
    need = 8 + n + max(ends)
    if need > size:
        raise InputError(path, f"--model: truncated: the file holds {size} bytes, its header describes {need}; "
                         f"{expected}")
    if need < size:
        raise InputError(path, f"--model: {size - need} bytes follow the tensors its header describes; {expected}")
