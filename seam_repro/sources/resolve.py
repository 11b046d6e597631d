"""Resolve and load the inputs of a sampling run: dataset folders and prompt files.

Datasets: ``--data-dir DIR`` (the folder names of ``datasets/layout.py``), the config entry's ``path``
(relative to the config or manifest), then the fetch cache. Prompt files: ``--prompts-dir DIR``, the
manifest's recorded path, then the cache. Every file a manifest records a hash for is checked.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from seam_repro.config import SeamConfig
from seam_repro.errors import HashMismatchError, InputError, MissingDataError, SeamReproError
from seam_repro.files.reading import read_json
from seam_repro.hashing import sha256_file
from seam_repro.instances import LoadedDataset


class Sources:
    """Loaded inputs plus where they came from (absolute paths) and their hashes, each keyed by
    dataset name and filled as the datasets load. A plain class rather than a dataclass: every
    command that loads data makes one, and a dataclass compiles its methods when defined."""

    __slots__ = ("data", "data_paths", "prompt_files", "prompt_paths", "prompt_hashes")

    def __init__(self) -> None:
        self.data: dict[str, LoadedDataset] = {}
        self.data_paths: dict[str, Path] = {}
        self.prompt_files: dict[str, dict[str, Any]] = {}
        self.prompt_paths: dict[str, Path] = {}
        self.prompt_hashes: dict[str, str] = {}

    def as_json(self, relative_to: Path | None = None) -> dict[str, Any]:
        def rel(p: Path) -> str:
            return str(p) if relative_to is None else Path(os.path.relpath(p, relative_to)).as_posix()

        return {
            "prompts": {n: {"path": rel(self.prompt_paths[n]), "sha256": self.prompt_hashes[n]}
                        for n in self.prompt_files},
            "data": {n: {"path": rel(self.data_paths[n]), "files": dict(sorted(self.data[n].files.items()))}
                     for n in self.data},
        }


def resolve_data_path(name: str, entry_path: str | None, data_dir: Any, base_dir: Path) -> Path:
    if data_dir is not None:
        from seam_repro.datasets.layout import describe_expected, find_dataset_dir

        found = find_dataset_dir(Path(data_dir), name)
        if found is not None:
            return found.resolve()
        raise MissingDataError(f"{name}: --data-dir {data_dir} has no {name} data; expected {describe_expected(name)} "
                               f"(`seam-repro datasets check --data-dir {data_dir}` lists what was found)")
    if entry_path:
        candidate = base_dir / entry_path  # an absolute entry_path replaces base_dir
        if candidate.exists():
            return candidate.resolve()
        raise MissingDataError(f"{name}: path '{entry_path}' (resolved to {candidate}) does not exist")
    from seam_repro.sources.fetch import cached_source_path

    cached = cached_source_path("data", name)
    if cached is not None:
        return cached.resolve()
    raise MissingDataError(f"{name}: no data: pass --data-dir DIR (with DIR/{name} or its upstream/Hugging Face "
                           f"folder; check with `seam-repro datasets check --data-dir DIR`), set the dataset's "
                           f"'path' in the config, or run `seam-repro fetch --only {name}`")


def resolve_prompt_path(name: str, prompts_dir: Any, recorded: str | None, base_dir: Path,
                        file_name: str | None = None) -> Path:
    file_name = file_name or f"{name}.json"
    if prompts_dir is not None:
        candidate = Path(prompts_dir) / file_name
        if candidate.exists():
            return candidate.resolve()
        raise MissingDataError(f"{name}: --prompts-dir {prompts_dir} has no {file_name}")
    if recorded:
        candidate = base_dir / recorded
        if candidate.exists():
            return candidate.resolve()
    from seam_repro.sources.fetch import cached_source_path

    cached = cached_source_path("prompts", name)
    if cached is not None:
        return cached.resolve()
    raise MissingDataError(f"{name}: no prompt file: pass --prompts-dir DIR (with DIR/{name}.json) or run "
                           "`seam-repro fetch --only prompts` for the pinned upstream files")


def read_prompt_file(path: Path, spec: Any = None) -> dict[str, Any]:
    content = read_json(path, what="prompt file", expect=None)
    demo_key = spec.sampling.demo_key if spec is not None else "demonstrations"
    if not isinstance(content, dict) or not isinstance(content.get("prompts"), list):
        raise InputError(path, "expected an object with a 'prompts' list", field="prompts")
    for i, p in enumerate(content["prompts"]):
        if not isinstance(p, dict) or not isinstance(p.get("instructions"), str):
            raise InputError(path, "expected an object with string 'instructions'", record=i, field="prompts")
    if not isinstance(content.get(demo_key), list):
        raise InputError(path, f"expected a '{demo_key}' list", field=demo_key)
    if "prompt_structure" in content or demo_key == "demos":  # FuseReviews-style structured template
        for key in ("prompt_structure", "demo_sep"):
            if not isinstance(content.get(key), str):
                raise InputError(path, "expected a string", field=key)
    return content


def load_checked_data(spec: Any, data_path: Path, expected_files: dict[str, str]) -> Any:
    """Load one dataset (its suite's ``spec``) and check every file the manifest recorded against its sha256."""
    name, loaded = spec.name, spec.load(data_path)
    for fname, expected in expected_files.items():
        actual = loaded.files.get(fname)
        if actual is None:
            raise MissingDataError(f"{name}: file '{fname}' recorded in the manifest was not read from "
                                   f"{data_path}")
        if actual != expected:
            raise HashMismatchError(f"{name} data", Path(data_path) / fname, expected, actual)
    return loaded


def load_sources(cfg: SeamConfig, *, data_dir: Any = None, prompts_dir: Any = None, base_dir: Path | None = None,
                 recorded: dict[str, Any] | None = None,
                 failed: list[tuple[str, SeamReproError]] | None = None) -> Sources:
    """Load every dataset and prompt file the config names, checking recorded hashes. Given ``failed``,
    a dataset that cannot be loaded is listed there and left out, so the others still load (``verify``)."""
    from seam_repro.specs import load_suite

    suite = load_suite(cfg.suite)
    base_dir = base_dir or Path.cwd()
    rec_prompts, rec_data = (recorded or {}).get("prompts") or {}, (recorded or {}).get("data") or {}
    sources = Sources()
    for entry in cfg.datasets:
        name, spec = entry.name, suite.spec(entry.name)  # looked up once per dataset
        rd, rp = rec_data.get(name) or {}, rec_prompts.get(name) or {}
        try:
            data_path = resolve_data_path(name, entry.path or rd.get("path"), data_dir, base_dir)
            loaded = load_checked_data(spec, data_path, rd.get("files") or {})
            ppath = resolve_prompt_path(name, prompts_dir, rp.get("path"), base_dir, spec.prompt_file)
            content = read_prompt_file(ppath, spec)  # read once; hashed from the same bytes
            digest = sha256_file(ppath)
            if rp.get("sha256") and rp["sha256"] != digest:
                raise HashMismatchError(f"{name} prompt file", ppath, rp["sha256"], digest)
        except SeamReproError as exc:
            if failed is None:
                raise
            failed.append((name, exc))
            continue
        sources.data[name], sources.data_paths[name] = loaded, data_path
        sources.prompt_files[name], sources.prompt_paths[name], sources.prompt_hashes[name] = content, ppath, digest
    return sources
