"""Dataset specs, read from the suite files ``data/suites/<suite>.json``: per dataset its task,
loader, template, metrics and the random factors its sampler draws. The pipeline core reads these
specs instead of branching on dataset names, so another benchmark plugs in with a data file plus a
loader and a template module. A suite file is read once, on first use (``load_suite`` is cached).
Specs are named tuples, as the instance records are (``instances.py`` says why and what it means).
"""

# Annotations are evaluated (no __future__ import): see instances.py, cheaper for NamedTuple fields.
import importlib
import inspect
import os
import re
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

from seam_repro.errors import InputError, MissingDataError
from seam_repro.files.reading import read_json
from seam_repro.instances import EMPTY_MAPPING, LoadedDataset

SUITES_DIR = Path(__file__).parent / "data" / "suites"
DOC_SLOT_RULES = ("max_documents", "max_doc_index", "fixed")
PROMPT_DRAWS = ("before_rows", "first_row", "after_first_row_mentions", "after_mentions")
UNITS = ("instance", "document")


class SamplingPlan(NamedTuple):
    """Which random factors a dataset draws and when upstream draws them (see ``sample.py``)."""

    doc_slots: str
    """``max_documents`` (most documents of any instance, all splits), ``max_doc_index`` (largest
    0-based document index: SciCo's off-by-one) or ``fixed``."""
    fixed_slots: int | None
    recount_after_mentions: bool
    """ECB: slots are re-counted (and the permutation re-drawn) after the mention-id draws."""
    mention_population: str | tuple[int, int] | None
    """``permutation`` of 0..n-1, ``(low, high)`` ids without replacement, or None (no mentions)."""
    prompt_draw: str
    """When the paraphrase and demos are drawn relative to the per-row draws."""
    demo_key: str


def _name_key(name: str) -> str:
    """A dataset name compared without case or punctuation (``ECB+`` = ``ecb``, ``Multi-News`` =
    ``MultiNews``); an empty name matches nothing."""
    return re.sub(r"[^0-9a-z]", "", name.lower()) or "\0"


@cache
def _object_at(ref: str) -> Any:
    """The object a ``module:attr`` reference names, looked up once per process (rendering asks
    for a dataset's template once per prompt)."""
    module, attr = ref.split(":")
    return getattr(importlib.import_module(module), attr)


class DatasetSpec(NamedTuple):
    name: str
    task: str
    default_split: str
    loader: str
    template: str
    prompt_file: str
    metrics: dict[str, str]
    sampling: SamplingPlan
    template_options: Mapping[str, Any] = EMPTY_MAPPING
    """Settings the template reads through ``RunContext.options`` (e.g. a ZeroSCROLLS token budget).
    Optional; SEAM's templates take none. Part of ``==``: specs that render differently differ."""
    units: str = "instance"
    """``instance`` (one prompt per instance) or ``document``: the loader's ``document_units``
    splits every instance into one unit per document, ids ``<id>#doc<k>`` (IGCS document-level
    inference); scoring puts an instance's units back together."""
    suite: str = "seam"
    """The suite file that declares the dataset (named in error messages)."""
    paper_name: str = ""
    """The dataset's name as its paper spells it (``MuSiQue`` for upstream's ``MusiQue``); shown
    in lists of valid names and accepted as input. Empty: the same as ``name``."""

    @property
    def display_name(self) -> str:
        return self.paper_name or self.name

    def load(self, path: str | Path) -> LoadedDataset:
        p = Path(path)
        if not p.exists():
            raise MissingDataError(f"{self.name}: data path {p} does not exist; run `seam-repro fetch --only {self.name}`")
        module = importlib.import_module(self.loader)
        # Family loaders (one module, several datasets) take the dataset name; SEAM's do not.
        takes_name = "name" in inspect.signature(module.load).parameters
        loaded = module.load(p, name=self.name) if takes_name else module.load(p)
        if self.units == "document":
            split_units = getattr(module, "document_units", None)
            if split_units is None:
                raise InputError(f"suite dataset {self.name}", f"loader {self.loader} has no document_units(); "
                                 "it cannot be used with units 'document'", field="units")
            loaded = split_units(loaded)
        return loaded

    def template_obj(self) -> Any:
        return _object_at(self.template)


class Suite(NamedTuple):
    name: str
    version: int
    description: str
    datasets: dict[str, DatasetSpec]

    def canonical_name(self, name: str, where: str, field: str | None = "datasets[].name",
                       record: object | None = None) -> str:
        """The suite's own name for ``name``, given in any case and with or without punctuation, as
        upstream, the paper or its Listing 1 spell it (``MusiQue``, ``MuSiQue``, ``Musique``,
        ``ECB+``): the one resolver every command that takes a dataset name uses. A wrong name
        lists the valid names as the paper writes them."""
        key = _name_key(str(name))
        for spec in self.datasets.values():
            if key in (_name_key(spec.name), _name_key(spec.paper_name)):
                return spec.name
        import difflib

        # "did you mean": the nearest spelling (MuSiQeu -> MuSiQue), compared as the names are matched
        keys = {_name_key(s): spec.display_name for spec in self.datasets.values()
                for s in (spec.name, spec.paper_name, spec.display_name)}
        near = list(dict.fromkeys(keys[k] for k in difflib.get_close_matches(key, list(keys), n=2, cutoff=0.6)))
        guess = f"did you mean {' or '.join(near)}? " if near else ""
        raise InputError(where, f"unknown dataset '{name}' in suite '{self.name}'; {guess}expected one of "
                         f"{', '.join(s.display_name for s in self.datasets.values())} (any case)", record=record, field=field)

    def canonical_names(self, text: str, where: str, field: str) -> list[str]:
        """A comma-separated list of dataset names (``--datasets MuSiQue,ecb``), each resolved by
        :meth:`canonical_name`, in the order given, without repeats."""
        parts = [p.strip() for p in str(text).split(",")]
        if not any(parts) or not all(parts):
            raise InputError(where, f"expected comma-separated dataset names such as "
                             f"{','.join(s.display_name for s in list(self.datasets.values())[:2])}, got {text!r}",
                             field=field)
        return list(dict.fromkeys(self.canonical_name(p, where, field) for p in parts))

    def spec(self, name: str) -> DatasetSpec:
        if name not in self.datasets:
            raise InputError(f"suite {self.name}", f"no dataset '{name}'", field="datasets")
        return self.datasets[name]


def _plan(raw: Any, where: str) -> SamplingPlan:
    if not isinstance(raw, dict):
        raise InputError(where, "expected an object", field="sampling")
    slots = raw.get("doc_slots")
    fixed, recount = None, False
    if isinstance(slots, dict):
        fixed, recount = slots.get("fixed"), bool(slots.get("recount_after_mentions", False))
        if not isinstance(fixed, int) or fixed < 1:
            raise InputError(where, f"expected {{'fixed': positive int}}, got {slots!r}", field="sampling.doc_slots")
        slots = "fixed"
    if slots not in DOC_SLOT_RULES:
        raise InputError(where, f"expected one of {DOC_SLOT_RULES} or {{'fixed': n}}", field="sampling.doc_slots")
    mentions = raw.get("mention_ids")
    population: str | tuple[int, int] | None = None
    if mentions is not None:
        pop = mentions.get("population") if isinstance(mentions, dict) else None
        if pop == "permutation":
            population = "permutation"
        elif isinstance(pop, list) and len(pop) == 2 and all(isinstance(v, int) for v in pop) and pop[0] < pop[1]:
            population = (pop[0], pop[1])
        else:
            raise InputError(where, "expected null, {'population': 'permutation'} or {'population': [low, high]}",
                             field="sampling.mention_ids")
    draw = raw.get("prompt_draw")
    if draw not in PROMPT_DRAWS:
        raise InputError(where, f"expected one of {PROMPT_DRAWS}", field="sampling.prompt_draw")
    return SamplingPlan(slots, fixed, recount, population, draw, str(raw.get("demo_key", "demonstrations")))


def parse_suite(raw: Any, where: str) -> Suite:
    if not isinstance(raw, dict) or not isinstance(raw.get("datasets"), dict) or not raw["datasets"]:
        raise InputError(where, "expected an object with a non-empty 'datasets' object")
    suite = str(raw.get("suite", Path(where).stem))
    specs = {}
    for name, d in raw["datasets"].items():
        w = f"{where}: datasets.{name}"
        if not isinstance(d, dict):
            raise InputError(w, "expected an object")
        for key in ("task", "default_split", "loader", "template", "prompt_file"):
            if not isinstance(d.get(key), str):
                raise InputError(w, "expected a string", field=key)
        if ":" not in d["template"]:
            raise InputError(w, "expected 'module:attribute'", field="template")
        for key, form in (("metrics", "{profile: metric name}"), ("template_options", "an object of template settings")):
            if not isinstance(d.get(key, {}), dict):
                raise InputError(w, f"expected {form}", field=key)
        units = d.get("units", "instance")
        if units not in UNITS:
            raise InputError(w, f"expected one of {UNITS}, got {units!r}", field="units")
        paper_name = d.get("paper_name", "")
        if not isinstance(paper_name, str):
            raise InputError(w, "expected the paper's spelling of the name as a string", field="paper_name")
        specs[name] = DatasetSpec(name, d["task"], d["default_split"], d["loader"], d["template"], d["prompt_file"],
                                  dict(d.get("metrics", {})), _plan(d.get("sampling"), w),
                                  dict(d.get("template_options", {})), units, suite, paper_name)
    return Suite(suite, int(raw.get("version", 1)), str(raw.get("description", "")), specs)


SUITES_PATH_ENV = "SEAM_REPRO_SUITES"
"""Folders (``os.pathsep``-separated) searched after the shipped suites for ``<suite>.json``: a
suite of one's own is found by name, so manifests record its name, never a path."""


def _suite_dirs() -> list[Path]:
    extra = [Path(p) for p in os.environ.get(SUITES_PATH_ENV, "").split(os.pathsep) if p]
    return [SUITES_DIR, *extra]


@cache
def load_suite(name: str = "seam") -> Suite:
    """A suite by name (shipped, else from ``$SEAM_REPRO_SUITES``), or a suite file by path."""
    candidates = [Path(name)] if name.endswith(".json") else [d / f"{name}.json" for d in _suite_dirs()]
    path = next((p for p in candidates if p.is_file()), None)
    if path is None:
        known = ", ".join(suite_names())
        raise InputError("suite", f"unknown suite '{name}'; known suites: {known} (a suite of your own: put its "
                         f"folder in ${SUITES_PATH_ENV})")
    return parse_suite(read_json(path, what="suite file", expect=None), str(path))


def suite_names() -> list[str]:
    """Every suite found by name: the shipped ones and those in ``$SEAM_REPRO_SUITES``."""
    return sorted({p.stem for d in _suite_dirs() for p in d.glob("*.json")})


def shipped_suites() -> list[str]:
    return sorted(p.stem for p in SUITES_DIR.glob("*.json"))
