"""Per-run and per-dataset aggregation of instance scores.

Port of upstream SEAM ``scripts/evaluation/statistical_analysis.py`` (``mean_per_run``,
``std_between_runs = np.std(mean_per_run)``, ``total_mean``): a run's score is the mean of its
instance scores, except for coreference where the run score is the micro CoNLL-F1 the scorer
computed over the whole run (``summary.json``). Across runs the kit reports the mean and the
*population* std (ddof=0, as upstream's ``np.std``). Also: output-format rate and its Pearson
correlation with score, which upstream does not compute.

A run the scorer gave no score (``null`` in ``summary.json``, e.g. the CoNLL scorer failed on it) is
a *missing run*: every statistic is over the runs present, and the run is listed with the scorer's
reason (``DatasetScores.missing_runs``) so reports mark it. Upstream has no such case (one failed run
stops its evaluation); refusing the whole dataset would throw away the runs that were scored.

Inputs are ``RUN_DIR/scores/<model_slug>/{summary.json,instance_scores.jsonl}`` (docs/ARCHITECTURE.md).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from seam_repro.errors import InputError
from seam_repro.files.reading import is_a, is_finite_number, iter_jsonl, read_json
from seam_repro.run.store import (
    RunRecords,
    check_scores_against_run,
    display_name_problem,
    read_run_records,
    run_json_path,
    scores_root,
)

_TOL = 1e-6


@dataclass(frozen=True)
class InstanceScore:
    dataset: str
    run: int
    instance_id: str
    metric: str
    score: float | None
    """0-100; ``None`` when only a run-level score exists (coreference) or the scorer gave none."""
    valid_format: bool
    metric_version: str = ""
    origin: str = field(default="", compare=False)
    """Where the line was read (``line 7`` of instance_scores.jsonl, a bundle's
    ``datasets.X.instances[3]``), so a refusal can point at it."""


@dataclass(frozen=True)
class DatasetScores:
    """One model's scores on one dataset: per-run scores plus the per-instance table."""

    dataset: str
    metric: str
    runs: dict[int, float]
    format_rate: dict[int, float]
    instances: tuple[InstanceScore, ...] = ()
    corrected: dict[str, Any] | None = None
    """``{"metric": str, "runs": {run: score}}`` for the seam-repro-1 corrected metric, if scored."""
    intended: dict[str, Any] | None = None
    """Coreference under the upstream profile: ``{"metric", "runs"}`` scored on the whole gold file
    (``runs`` holds the as-published score, see ``metrics.unflushed``)."""
    missing_runs: dict[int, str] = field(default_factory=dict)
    """Runs the scorer gave no score, with its reason; ``runs`` holds only the runs present."""


@dataclass(frozen=True)
class ModelScores:
    model_id: str
    revision: str
    manifest_digest: str
    prompt_digest: str
    datasets: dict[str, DatasetScores]
    source: str = ""
    extra: dict[str, Any] = field(default_factory=dict, compare=False)
    """Provenance carried by bundles (chat template hash, environment)."""
    unscored: dict[str, str] = field(default_factory=dict, compare=False)
    """Datasets the scorer could not score (every run null), with the scorer's reason; they are
    reported as such and left out of every statistic rather than counted as zero."""
    name: str = ""
    """Display name (``replay --name``, run.json ``models.<slug>.name``); empty = show the model id."""

    @property
    def label(self) -> str:
        return self.name or self.model_id

    @property
    def profile(self) -> str:
        """The profile the scores were made under: ``summary.json``'s ``profile`` (``score --profile``),
        else the protocol's (a bundle is re-derived under it), else ``upstream`` (``score``'s default)."""
        stated = self.extra.get("profile") or (self.extra.get("protocol") or {}).get("profile")
        return stated if isinstance(stated, str) else "upstream"


def _number(path: object, value: Any, record: object, fld: str, nullable: bool = False) -> float | None:
    if value is None and nullable:
        return None
    if not is_finite_number(value):
        expected = "a finite number or null" if nullable else "a finite number"
        raise InputError(path, f"expected {expected}, got {value!r}", record, fld)
    if not 0 <= value <= 100:  # every score (and format rate) is on the 0-100 scale
        raise InputError(path, f"expected a number in 0..100, got {value!r}", record, fld)
    return float(value)


def _runs_map(path: object, raw: Any, record: str, fld: str, nullable: bool = False) -> dict[int, float]:
    """``{"0": 21.3, ...}`` -> ``{0: 21.3}`` with run keys checked; ``nullable``: a ``null`` run (no
    score) is allowed and left out."""
    if not isinstance(raw, dict):
        raise InputError(path, 'expected an object {"<run>": number}', record, fld)
    out: dict[int, float] = {}
    for key, value in raw.items():
        if not str(key).isdigit():
            raise InputError(path, f"run key {key!r} is not a non-negative integer", record, fld)
        number = _number(path, value, record, f"{fld}.{key}", nullable=nullable)
        if number is not None:
            out[int(key)] = number
    return dict(sorted(out.items()))


def parse_instance_line(path: object, lineno: int, obj: Any, record: str | None = None) -> InstanceScore:
    """Validate one ``instance_scores.jsonl`` record (``record``: where it sits when it is not a
    file line, e.g. a bundle's ``datasets.X.instances[3]``)."""
    rec = record or f"line {lineno}"
    if not isinstance(obj, dict):
        raise InputError(path, "expected a JSON object", rec)
    for key in ("dataset", "instance_id", "metric"):
        if not isinstance(obj.get(key), str):
            raise InputError(path, "expected a string", rec, key)
    run = obj.get("run")
    if not is_a(run, int) or run < 0:
        raise InputError(path, f"expected a non-negative integer, got {run!r}", rec, "run")
    if not isinstance(obj.get("valid_format"), bool):
        raise InputError(path, f"expected true/false, got {obj.get('valid_format')!r}", rec, "valid_format")
    score = _number(path, obj.get("score"), rec, "score", nullable=True)
    return InstanceScore(obj["dataset"], run, obj["instance_id"], obj["metric"], score,
                         obj["valid_format"], str(obj.get("metric_version", "")), rec)


def read_instance_scores(path: Path) -> list[InstanceScore]:
    """Read and validate ``instance_scores.jsonl`` (blank lines ignored)."""
    out = [parse_instance_line(path, lineno, obj)
           for lineno, obj in iter_jsonl(path, what="instance scores file", expect=None)]
    if not out:  # a truncated or emptied file must not pass as "scored, no instances"
        raise InputError(path, "empty; expected one JSON line per scored instance (rerun `seam-repro score`)")
    return out


def _mean_by_run(items: Iterable[InstanceScore]) -> tuple[dict[int, float], dict[int, float]]:
    scores: dict[int, list[float]] = {}
    fmt: dict[int, list[bool]] = {}
    for it in items:
        fmt.setdefault(it.run, []).append(it.valid_format)
        if it.score is not None:
            scores.setdefault(it.run, []).append(it.score)
    means, rates = ({r: float(np.mean(v)) for r, v in sorted(by_run.items())} for by_run in (scores, fmt))
    return means, rates


def build_model_scores(summary: Any, instances: list[InstanceScore], path: object, source: str = "",
                       instances_path: object | None = None) -> ModelScores:
    """Check ``summary.json`` against the instance lines and build per-run scores.
    ``instances_path``: the file the instance lines came from (default ``path``: a bundle holds both).

    Non-coreference run scores are recomputed as the mean of the run's non-null instance scores; a
    run value in ``summary.json`` that disagrees (beyond 1e-6) is an input error, because the two
    files then describe different results."""
    if not isinstance(summary, dict):
        raise InputError(path, "expected a JSON object")
    model = summary.get("model")
    if not isinstance(model, dict) or not isinstance(model.get("id"), str):
        raise InputError(path, 'expected {"id": str, "revision": str}', field="model")
    for key in ("manifest_digest", "prompt_digest"):
        if not isinstance(summary.get(key), str):
            raise InputError(path, "expected a string digest", field=key)
    ds_raw = summary.get("datasets")
    if not isinstance(ds_raw, dict) or not ds_raw:
        raise InputError(path, "expected a non-empty object {dataset: {...}}", field="datasets")
    by_ds: dict[str, list[InstanceScore]] = {}
    seen: dict[tuple[str, int, str], str] = {}
    for it in instances:
        key = (it.dataset, it.run, it.instance_id)
        if key in seen:
            raise InputError(instances_path or path, f"duplicate score for {it.dataset} run {it.run} instance "
                             f"{it.instance_id!r}: key (dataset, run, instance_id) = {key!r} was already scored at "
                             f"{seen[key]} (expected one line per instance)", it.origin or None)
        seen[key] = it.origin or "an earlier line"
        by_ds.setdefault(it.dataset, []).append(it)
    unknown = sorted(set(by_ds) - set(ds_raw))
    if unknown:
        raise InputError(path, f"instance scores name datasets missing from summary.json: {unknown}", field="datasets")
    datasets: dict[str, DatasetScores] = {}
    unscored: dict[str, str] = {}
    for name, ds in ds_raw.items():
        rec = f"datasets.{name}"
        if not isinstance(ds, dict) or not isinstance(ds.get("metric"), str):
            raise InputError(path, "expected an object with a string 'metric'", rec, "metric")
        raw_runs = ds.get("runs")
        reason = str(ds.get("reason") or "the scorer gave no score")
        if isinstance(raw_runs, dict) and raw_runs and all(v is None for v in raw_runs.values()):
            unscored[name] = reason
            continue
        runs = _runs_map(path, raw_runs, rec, "runs", nullable=True)
        missing = {r: reason for r in sorted(int(k) for k, v in raw_runs.items() if v is None)}
        items = by_ds.get(name, [])
        means, rates = _mean_by_run(items)
        # coreference run scores are the micro CoNLL-F1 the scorer computed over the whole run, never means
        if not (ds.get("task") == "coreference" or ds["metric"].lower().startswith("conll")) and items:
            if set(means) != set(runs):
                raise InputError(path, f"runs {sorted(runs)} differ from runs with instance scores {sorted(means)}",
                                 rec, "runs")
            for r, value in runs.items():
                if abs(value - means[r]) > _TOL * max(1.0, abs(value)):
                    raise InputError(path, f"run {r} is {value} but its instance scores average {means[r]}",
                                     rec, f"runs.{r}")
        if not runs:
            raise InputError(path, "no run scores", rec, "runs")
        fmt = rates if items else _runs_map(path, ds.get("format_rate", {}), rec, "format_rate")
        corrected, intended = (_other_metric(path, ds.get(key), rec, key) for key in ("corrected", "intended"))
        datasets[name] = DatasetScores(name, ds["metric"], runs, fmt, tuple(items), corrected, intended, missing)
    display = _display_name(model.get("name"), path, "model.name")
    extra = {k: summary[k] for k in ("protocol", "profile", "coverage", "unscored", "predictions_digest")
             if k in summary}
    return ModelScores(model["id"], str(model.get("revision", "")), summary["manifest_digest"],
                       summary["prompt_digest"], datasets, source, extra=extra, unscored=unscored, name=display)


def _other_metric(path: object, value: Any, rec: str, key: str) -> dict[str, Any] | None:
    """A dataset's ``corrected`` or ``intended`` score: another metric's runs beside the main one."""
    if value is None:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("metric"), str):
        raise InputError(path, "expected {'metric': str, 'runs': {...}}", rec, key)
    return {"metric": value["metric"], "runs": _runs_map(path, value.get("runs"), rec, f"{key}.runs", nullable=True)}


def load_scores_dir(score_dir: Path, run: RunRecords | None = None) -> ModelScores:
    """Load ``scores/<model_slug>/`` (summary.json + instance_scores.jsonl), checked against the run
    folder's manifest and run.json (``run``, read once by the caller; default: the folder two up)."""
    summary_path, inst_path = score_dir / "summary.json", score_dir / "instance_scores.jsonl"
    for p in (summary_path, inst_path):
        if not p.is_file():
            raise InputError(p, "missing; run `seam-repro score RUN_DIR` first")
    summary = read_json(summary_path, what="summary.json", expect=None)
    instances = read_instance_scores(inst_path)
    check_scores_against_run(score_dir, summary, instances, run or read_run_records(Path(score_dir).parent.parent))
    return build_model_scores(summary, instances, summary_path, str(score_dir), instances_path=inst_path)


def load_run_dir(run_dir: Path, run: RunRecords | None = None) -> list[ModelScores]:
    """Every scored model of a run directory, in slug order; ``run``: its records if the caller has
    read them already (``read_run_records``)."""
    scores = scores_root(run_dir)
    dirs = sorted(p for p in scores.iterdir() if p.is_dir()) if scores.is_dir() else []
    if not dirs:
        raise InputError(scores, "no scored models found (expected scores/<model_slug>/summary.json)")
    run = run or read_run_records(run_dir)  # once for every model (scores may be copied without run.json)
    entries = (run.run_json or {}).get("models", {})  # load_run_json checked: an object of objects
    out = []
    for d in dirs:  # the display name recorded by ``replay --name``, unless the scores carry one
        ms = load_scores_dir(d, run)
        name = _display_name((entries.get(d.name) or {}).get("name"), run_json_path(d.parent.parent),
                             f"models.{d.name}.name")
        out.append(replace(ms, name=name) if name and name != ms.model_id and not ms.name else ms)
    return out


def _display_name(value: Any, path: object, fld: str) -> str:
    """A display name (``replay --name``) as recorded, "" when none; refused if it would garble a report."""
    name = value if isinstance(value, str) else ""
    problem = display_name_problem(name) if name else None
    if problem:
        raise InputError(path, problem, field=fld)
    return name


@dataclass(frozen=True)
class DatasetSummary:
    """Across-run statistics of one model on one dataset (0-100 scale)."""

    dataset: str
    metric: str
    runs: dict[int, float]
    mean: float
    std: float
    """Population std over runs (ddof=0), as upstream ``np.std(mean_per_run)``."""
    format_rate: float | None
    format_correlation: dict[str, Any]
    corrected: dict[str, Any] | None = None
    intended: dict[str, Any] | None = None
    missing_runs: dict[int, str] = field(default_factory=dict)
    """Runs without a score (``DatasetScores.missing_runs``); the statistics are over ``runs``."""


def pearson(x: list[float], y: list[float], level: str) -> dict[str, Any]:
    """Pearson r (scipy) with an explicit reason instead of NaN when it is undefined."""
    out: dict[str, Any] = {"level": level, "n": len(x), "r": None, "p": None, "reason": None}
    if len(x) < 2:
        out["reason"] = "fewer than 2 points"
    elif np.ptp(x) == 0 or np.ptp(y) == 0:
        out["reason"] = "constant " + ("format validity" if np.ptp(x) == 0 else "score")
    else:
        from scipy.stats import pearsonr

        res = pearsonr(x, y)
        out["r"], out["p"] = float(res.statistic), float(res.pvalue)
    return out


def summarize(ds: DatasetScores) -> DatasetSummary:
    """Mean and population std over runs, format rate, and format-vs-score correlation.

    The correlation is per instance (valid_format as 0/1 against score) where instances carry
    scores; for coreference, whose instances have no score of their own, it is per run (format
    rate against run score)."""
    values = np.array(list(ds.runs.values()), dtype=float)
    scored = [it for it in ds.instances if it.score is not None]
    if scored:
        corr = pearson([float(it.valid_format) for it in scored], [float(it.score) for it in scored], "instance")
    else:
        common = [r for r in ds.runs if r in ds.format_rate]
        corr = pearson([ds.format_rate[r] for r in common], [ds.runs[r] for r in common], "run")
    valid = [it.valid_format for it in ds.instances] or list(ds.format_rate.values())
    rate = float(np.mean(valid)) if valid else None
    corrected, intended = (None if not v else {"metric": v["metric"], **_mean_std(v["runs"])}
                           for v in (ds.corrected, ds.intended))
    return DatasetSummary(ds.dataset, ds.metric, dict(ds.runs), float(values.mean()), float(values.std()),
                          rate, corr, corrected, intended, dict(ds.missing_runs))


def _mean_std(runs: dict[int, float]) -> dict[str, float | None]:
    arr = np.array(list(runs.values()), dtype=float)
    return {"mean": float(arr.mean()) if arr.size else None, "std": float(arr.std()) if arr.size else None}

