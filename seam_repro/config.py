"""Read a SEAM generation config (the paper's Listing 1 / upstream ``generate.json`` form).

Upstream quirks handled here, each reported rather than hidden:
* ``max_num_instances`` (the key in upstream's shipped generate.json) is never read by upstream
  code, which reads ``max_num_samples``. The ``upstream`` profile therefore ignores it (bit-exact
  with SEAM@6ad83f4) and says so; ``seam-repro-1`` honours either key.
* The paper's Listing 1 spells MuSiQue as ``Musique``, which upstream's dispatcher rejects; names
  are matched case-insensitively and the canonical spelling is recorded.

The config records are named tuples, as the records of ``instances.py`` are (that module says why).
"""

# Annotations are evaluated (no __future__ import): see instances.py, cheaper for NamedTuple fields.
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from seam_repro.design import design_json, parse_design
from seam_repro.errors import InputError
from seam_repro.files.reading import is_a, read_json
from seam_repro.specs import load_suite

PROFILES = ("upstream", "seam-repro-1")
"""The protocol profiles, the one list every command, check and the manifest schema follow."""
PAPER_GENERATION = {"temperature": 0.8, "do_sample": True, "max_new_tokens": 500, "top_p": None,
                    "truncation": "max", "batch_size": 3}
"""Upstream ``hf_pipline_wrap.py`` and ``predict.json``: temperature 0.8, ``do_sample=True``, 500 new
tokens, top_p not passed (the model's generation_config applies), truncation strategy "max" (the
model's ``max_position_embeddings`` is the window), batch size 3."""


def _known_generation_keys(raw: Any, source: str, field: str) -> dict[str, Any]:
    """A generation block's shape (an object holding only ``PAPER_GENERATION``'s keys), for the
    config (``field`` "generation") and the manifest ("config.generation") alike."""
    if not isinstance(raw, dict):
        raise InputError(source, "expected an object", field=field)
    unknown = set(raw) - set(PAPER_GENERATION)
    if unknown:
        raise InputError(source, f"unknown keys {sorted(unknown)}; expected {sorted(PAPER_GENERATION)}", field=field)
    return raw


_GENERATION_RULES: tuple[tuple[str, str, Callable[[Any, dict[str, Any]], bool]], ...] = (
    ("temperature", "a number >= 0", lambda v, g: is_a(v, (int, float)) and not v < 0),
    ("max_new_tokens", "an integer >= 1", lambda v, g: is_a(v, int) and v >= 1),
    ("do_sample", "true/false", lambda v, g: isinstance(v, bool)),
    ("top_p", "null or a number in (0, 1]", lambda v, g: v is None or is_a(v, (int, float)) and 0 < v <= 1),
    ("truncation", '"max", null or a token count above max_new_tokens as a string',
     lambda v, g: v in (None, "max") or isinstance(v, str) and v.isdigit() and int(v) > g["max_new_tokens"]),
    ("batch_size", "an integer >= 1", lambda v, g: is_a(v, int) and v >= 1),
)  # each config.generation key's expected form and check (g: the whole block)


class GenerationSettings(NamedTuple):
    """Sampling settings from the manifest's ``config.generation`` (paper values by default)."""

    temperature: float = 0.8
    max_new_tokens: int = 500
    do_sample: bool = True
    top_p: float | None = None
    """None: take the model's generation_config value (as upstream's pipeline did)."""
    context_window: int | None = None
    """Upstream ``truncation_strategy``: None = "max" (the model's context length); an int = "set"
    (``max_num_tokens``). Prompts are cut to ``context_window - max_new_tokens`` tokens."""
    batch_size: int = 3
    """A throughput hint only (never recorded with predictions: results do not depend on it)."""

    @classmethod
    def from_manifest(cls, generation: dict[str, Any] | None, source: str = "manifest") -> "GenerationSettings":
        """Validate ``config.generation``; a missing block means the paper's settings."""
        merged = dict(PAPER_GENERATION)
        if generation is not None:
            # truncation ("max": context minus max_new_tokens) and batch_size are protocol facts of
            # upstream predict.json recorded in the manifest, checked here like the sampling settings.
            merged.update(_known_generation_keys(generation, source, "config.generation"))
        for key, form, ok in _GENERATION_RULES:  # in this order: the first bad key is the one named
            if not ok(merged[key], merged):
                raise InputError(source, f"expected {form}, got {merged[key]!r}", field=f"config.generation.{key}")
        t, s, p, trunc = merged["temperature"], merged["do_sample"], merged["top_p"], merged["truncation"]
        if s and t == 0:
            raise InputError(source, "do_sample true needs temperature > 0", field="config.generation.temperature")
        return cls(temperature=float(t), max_new_tokens=merged["max_new_tokens"], do_sample=s,
                   top_p=None if p is None else float(p), context_window=None if trunc in (None, "max") else int(trunc),
                   batch_size=merged["batch_size"])

    def as_dict(self) -> dict[str, Any]:
        """The result-relevant settings (recorded with every prediction; batch size is not)."""
        d = self._asdict()
        del d["batch_size"]
        return d


class DatasetEntry(NamedTuple):
    name: str
    """Canonical upstream name (prompt-file stem)."""
    split: str
    path: str | None = None
    task: str | None = None
    name_as_written: str = ""


class SeamConfig(NamedTuple):
    random_seed: int
    num_runs: int
    num_demos: int
    max_instances: int
    """-1 means no subsampling (upstream's default)."""
    max_instances_key: str | None
    notes: tuple[str, ...]
    datasets: tuple[DatasetEntry, ...]
    generation: dict[str, Any]
    """The generation block, every key of ``PAPER_GENERATION`` filled (``validate_generation``)."""
    models: tuple[str, ...] = ()
    suite: str = "seam"
    """The suite declaring the datasets (``data/suites/<suite>.json``)."""
    design: tuple[str, ...] | None = None
    """Factors a controlled design redraws (``seam_repro.design``); None = SEAM's i.i.d. runs."""

    def as_json(self) -> dict[str, Any]:
        # An i.i.d. config writes no "design" key, so every manifest frozen before designs keeps its digest.
        extra = {} if self.design is None else {"design": design_json(self.design)}
        return {
            "random_seed": self.random_seed,
            "num_different_runs": self.num_runs,
            "num_demonstrations": self.num_demos,
            "max_instances": self.max_instances,
            "max_instances_key": self.max_instances_key,
            "notes": list(self.notes),
            "datasets": [{"name": d.name, "split_name": d.split, "path": d.path, "task": d.task,
                          "name_as_written": d.name_as_written} for d in self.datasets],
            "generation": self.generation,
            "models": list(self.models),
            "suite": self.suite,
            **extra,
        }


MAX_SEED = 2**63
MAX_RUNS = 1000
"""The paper uses 10 runs; a thousand is far beyond any use and keeps a typo from looping for days."""
MAX_DEMOS = 100


def _int(raw: dict[str, Any], key: str, where: str, default: int | None = None, *, low: int | None = None,
         high: int | None = None, form: str = "an integer") -> int:
    """An integer field in ``[low, high]``; anything else (bool, float, string, out of range) is refused."""
    if key not in raw:
        if default is None:
            raise InputError(where, f"missing; expected {form}", field=key)
        return default
    value = raw[key]
    if not is_a(value, int) or (low is not None and value < low) or (high is not None and value > high):
        raise InputError(where, f"expected {form}, got {_show(value)}", field=key)
    return value


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _cap(raw: dict[str, Any], key: str, where: str) -> int:
    """An instance cap: -1 (no subsampling, upstream's default) or a positive count."""
    value = _int(raw, key, where, -1, form="-1 (no limit) or an integer >= 1")
    if value == 0 or value < -1:
        raise InputError(where, f"expected -1 (no limit) or an integer >= 1, got {value}", field=key)
    return value


def validate_generation(gen_raw: Any, where: str) -> dict[str, Any]:
    """The generation block, checked by the same rules replay applies (``GenerationSettings``),
    plus finiteness, so ``sample`` never writes settings that ``replay`` later refuses."""
    _known_generation_keys(gen_raw, where, "generation")
    for key in ("temperature", "top_p"):
        value = gen_raw.get(key)
        if isinstance(value, float) and not math.isfinite(value):
            raise InputError(where, f"expected a finite number, got {value!r}", field=f"generation.{key}")
    GenerationSettings.from_manifest(gen_raw, source=where)
    return {**PAPER_GENERATION, **gen_raw}


def parse_config(raw: dict[str, Any], profile: str, where: str = "config") -> SeamConfig:
    """Validate a Listing-1 style dict and resolve the profile-dependent instance cap."""
    if profile not in PROFILES:
        raise InputError(where, f"unknown profile '{profile}'; expected one of {', '.join(PROFILES)}",
                         field="profile")
    if not isinstance(raw, dict):
        raise InputError(where, "expected a JSON object")
    notes: list[str] = []
    seed = _int(raw, "random_seed", where, 42, low=-MAX_SEED, high=MAX_SEED - 1,
                form="an integer with |value| < 2**63")
    runs = _int(raw, "num_different_runs", where, 10, low=1, high=MAX_RUNS, form=f"an integer in 1..{MAX_RUNS}")
    demos = _int(raw, "num_demonstrations", where, 3, low=0, high=MAX_DEMOS, form=f"an integer in 0..{MAX_DEMOS}")
    has_samples, has_instances = "max_num_samples" in raw, "max_num_instances" in raw
    samples = _cap(raw, "max_num_samples", where)
    instances = _cap(raw, "max_num_instances", where)
    if profile == "upstream":
        cap, key = samples, ("max_num_samples" if has_samples else None)
        if has_instances:
            given = f"={samples}" if has_samples else "absent, so no subsampling"
            notes.append(f"max_num_instances={instances} is ignored: upstream SEAM@6ad83f4 reads only "
                         f"max_num_samples ({given})")
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
        for attr in ("name", "split_name", "task"):
            if attr in entry and not (isinstance(entry[attr], str) and entry[attr].strip()) \
                    and not (attr == "task" and entry[attr] is None):
                raise InputError(where, f"expected a non-empty string, got {_show(entry[attr])}",
                                 field=f"datasets[{i}].{attr}")
        name = suite.canonical_name(entry["name"], where)
        if name != entry["name"]:
            notes.append(f"dataset name '{entry['name']}' read as '{name}'")
        if name in seen:
            raise InputError(where, f"dataset '{name}' listed twice", field=f"datasets[{i}].name")
        seen.add(name)
        split = entry.get("split_name") or suite.spec(name).default_split  # checked non-empty above
        path = entry.get("path")
        if path is not None and (not isinstance(path, str) or path.startswith("<")):
            path = None  # upstream's placeholder such as "<PATH_TO_ECB>"
        datasets.append(DatasetEntry(name, str(split), path, entry.get("task"), str(entry["name"])))
    generation = validate_generation(raw.get("generation", {}), where)
    models = raw.get("models", [])
    if not isinstance(models, list) or not all(isinstance(m, str) for m in models):
        raise InputError(where, "expected a list of model ids", field="models")
    design = parse_design(raw.get("design"), where, runs)
    return SeamConfig(seed, runs, demos, cap, key, tuple(notes), tuple(datasets), generation, tuple(models),
                      suite.name, design)


def read_config(path: str | Path, profile: str) -> SeamConfig:
    path = Path(path)
    return parse_config(read_json(path, what="config", expect=None), profile, where=str(path))
