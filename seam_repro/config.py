"""Read a SEAM generation config (the paper's Listing 1 / upstream ``generate.json`` form).

Upstream quirks handled here, each reported rather than hidden:
* ``max_num_instances`` (the key in upstream's shipped generate.json) is never read by upstream
  code, which reads ``max_num_samples``. The ``upstream`` profile therefore ignores it (bit-exact
  with SEAM@6ad83f4) and says so; ``seam-repro-1`` honours either key.
* The paper's Listing 1 spells MuSiQue as ``Musique``, which upstream's dispatcher rejects; names
  are matched case-insensitively and the canonical spelling is recorded.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seam_repro.errors import InputError
from seam_repro.suite import load_suite

PROFILES = ("upstream", "seam-repro-1")
PAPER_GENERATION = {"temperature": 0.8, "do_sample": True, "max_new_tokens": 500, "top_p": None,
                    "truncation": "max", "batch_size": 3}
"""Generation settings of upstream ``predict.json`` and ``hf_pipline_wrap.py`` (top_p not set)."""


@dataclass(frozen=True)
class DatasetEntry:
    name: str
    """Canonical upstream name (prompt-file stem)."""
    split: str
    path: str | None = None
    task: str | None = None
    name_as_written: str = ""


@dataclass(frozen=True)
class SeamConfig:
    random_seed: int
    num_runs: int
    num_demos: int
    max_instances: int
    """-1 means no subsampling (upstream's default)."""
    max_instances_key: str | None
    notes: tuple[str, ...]
    datasets: tuple[DatasetEntry, ...]
    generation: dict[str, Any] = field(default_factory=lambda: dict(PAPER_GENERATION))
    models: tuple[str, ...] = ()
    suite: str = "seam"
    """The suite declaring the datasets (``data/suites/<suite>.json``)."""

    def as_json(self) -> dict[str, Any]:
        return {
            "random_seed": self.random_seed,
            "num_different_runs": self.num_runs,
            "num_demonstrations": self.num_demos,
            "max_instances": self.max_instances,
            "max_instances_key": self.max_instances_key,
            "notes": list(self.notes),
            "datasets": [
                {"name": d.name, "split_name": d.split, "path": d.path, "task": d.task,
                 "name_as_written": d.name_as_written}
                for d in self.datasets
            ],
            "generation": self.generation,
            "models": list(self.models),
            "suite": self.suite,
        }


def _int(raw: dict[str, Any], key: str, where: str, default: int | None = None) -> int:
    if key not in raw:
        if default is None:
            raise InputError(where, "missing; expected an integer", field=key)
        return default
    value = raw[key]
    if not isinstance(value, int) or isinstance(value, bool):
        raise InputError(where, f"expected an integer, got {value!r}", field=key)
    return value


def parse_config(raw: dict[str, Any], profile: str, where: str = "config") -> SeamConfig:
    """Validate a Listing-1 style dict and resolve the profile-dependent instance cap."""
    if profile not in PROFILES:
        raise InputError(where, f"unknown profile '{profile}'; expected one of {', '.join(PROFILES)}",
                         field="profile")
    if not isinstance(raw, dict):
        raise InputError(where, "expected a JSON object")
    notes: list[str] = []
    seed = _int(raw, "random_seed", where, 42)
    runs = _int(raw, "num_different_runs", where, 10)
    demos = _int(raw, "num_demonstrations", where, 3)
    if runs < 1 or demos < 0:
        raise InputError(where, "num_different_runs must be >= 1 and num_demonstrations >= 0")
    has_samples, has_instances = "max_num_samples" in raw, "max_num_instances" in raw
    samples = _int(raw, "max_num_samples", where, -1)
    instances = _int(raw, "max_num_instances", where, -1)
    if profile == "upstream":
        cap, key = samples, ("max_num_samples" if has_samples else None)
        if has_instances:
            notes.append(
                f"max_num_instances={instances} is ignored: upstream SEAM@6ad83f4 reads only "
                f"max_num_samples ({'=' + str(samples) if has_samples else 'absent, so no subsampling'})"
            )
    else:
        if has_samples and has_instances and samples != instances:
            raise InputError(where, f"max_num_samples={samples} and max_num_instances={instances} disagree",
                             field="max_num_samples")
        cap = samples if has_samples else instances
        key = "max_num_samples" if has_samples else ("max_num_instances" if has_instances else None)
    if key:
        notes.append(f"{key}={cap} took effect")
    suite_name = raw.get("suite", "seam")
    if not isinstance(suite_name, str):
        raise InputError(where, "expected a suite name such as 'seam'", field="suite")
    suite = load_suite(suite_name)
    entries = raw.get("datasets")
    if not isinstance(entries, list) or not entries:
        raise InputError(where, "expected a non-empty list of {name, split_name[, path]}", field="datasets")
    datasets = []
    seen = set()
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or "name" not in entry:
            raise InputError(where, "expected an object with 'name'", field=f"datasets[{i}]")
        name = suite.canonical_name(entry["name"], where)
        if name != entry["name"]:
            notes.append(f"dataset name '{entry['name']}' read as '{name}'")
        if name in seen:
            raise InputError(where, f"dataset '{name}' listed twice", field=f"datasets[{i}].name")
        seen.add(name)
        split = entry.get("split_name", suite.spec(name).default_split)
        path = entry.get("path")
        if path is not None and (not isinstance(path, str) or path.startswith("<")):
            path = None  # upstream's placeholder such as "<PATH_TO_ECB>"
        datasets.append(DatasetEntry(name, str(split), path, entry.get("task"), str(entry["name"])))
    generation = dict(PAPER_GENERATION)
    gen_raw = raw.get("generation", {})
    if not isinstance(gen_raw, dict):
        raise InputError(where, "expected an object", field="generation")
    unknown = set(gen_raw) - set(PAPER_GENERATION)
    if unknown:
        raise InputError(where, f"unknown keys {sorted(unknown)}; expected {sorted(PAPER_GENERATION)}",
                         field="generation")
    generation.update(gen_raw)
    models = raw.get("models", [])
    if not isinstance(models, list) or not all(isinstance(m, str) for m in models):
        raise InputError(where, "expected a list of model ids", field="models")
    return SeamConfig(seed, runs, demos, cap, key, tuple(notes), tuple(datasets), generation, tuple(models),
                      suite.name)


def read_config(path: str | Path, profile: str) -> SeamConfig:
    path = Path(path)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise InputError(path, "file not found") from exc
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(path, f"not valid UTF-8 JSON ({exc})") from exc
    return parse_config(raw, profile, where=str(path))
