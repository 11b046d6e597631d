"""Scored run folders to one sensitivity result.

Every (model, dataset) gets what its own runs support: a component that took one level over the
runs a model was scored on is left out of that model's fit (with a note), a model too short for any
fit is skipped with one line, and the other models are still reported. Each skipped (model,
dataset) is also listed once in ``result["skipped"]`` so the command can print it. The fits are
independent, so they run in a process pool over the machine's cores (``jobs``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from seam_repro.analysis.sensitivity.design import Observations, components, design_label, iid_components
from seam_repro.analysis.sensitivity.effects import (
    adjust_p_values,
    factor_effects,
    gold_note,
    gold_position_effect,
    gold_positions,
    load_gold_documents,
)
from seam_repro.analysis.sensitivity.intervals import attribute
from seam_repro.analysis.sensitivity.ranking import ranking_agreement, ranking_probabilities
from seam_repro.analysis.sensitivity.reml import UnfittableError
from seam_repro.errors import InputError


@dataclass
class Group:
    """The scored models of one manifest (its runs share every recorded choice)."""

    digest: str
    manifest: dict[str, Any]
    where: str
    models: dict[str, Any]
    """label -> ``ModelScores``."""


def _groups(run_dirs: Sequence[Any]) -> list[Group]:
    from pathlib import Path

    from seam_repro.analysis.aggregate import load_run_dir
    from seam_repro.run.store import read_run_records, run_manifest_path

    groups: dict[str, Group] = {}
    for run_dir in run_dirs:
        records = read_run_records(Path(run_dir))
        if records.manifest is None or not records.manifest.frozen:
            raise InputError(run_manifest_path(Path(run_dir)), "missing or unfrozen; sensitivity reads the "
                             "choices recorded in the run folder's frozen manifest (replay writes it)")
        tm = records.manifest
        group = groups.setdefault(tm.manifest["digest"], Group(tm.manifest["digest"], tm.manifest, str(tm.path), {}))
        for ms in load_run_dir(Path(run_dir), records):
            label = ms.label
            if label in group.models:
                raise InputError(run_dir, f"model '{label}' is scored twice for manifest {tm.manifest['digest'][:12]} "
                                 f"(also in {group.models[label].source}); expected each model once per manifest")
            group.models[label] = ms
    return list(groups.values())


def _observations(ds: Any, levels: dict[str, dict[int, Any]]) -> Observations | str:
    """The instance scores of one ``DatasetScores`` or why there are none to attribute."""
    rows = [it for it in ds.instances if it.score is not None]
    if not rows:
        return "run-level scores only (coreference micro CoNLL-F1): no per-instance scores to attribute"
    y = np.array([it.score for it in rows], dtype=float)
    if np.all(y == y[0]):  # a zero total would make every share 0/0
        return f"every score is {y[0]:g}: no variance to attribute"
    return Observations(y, np.array([it.instance_id for it in rows]), np.array([it.run for it in rows]), levels)


def _problem(err: InputError) -> str:
    """The message of ``err`` without its location (the report names the cell already)."""
    text = str(err)
    return text[len(err.path) + 2:] if text.startswith(err.path + ": ") else text


def attribute_cell(task: tuple[Observations, int, int, str]) -> dict[str, Any]:
    """One (model, dataset)'s attribution, or ``{"skipped": reason}`` (a pool worker's unit)."""
    obs, n_boot, seed, where = task
    obs, notes = obs.supported()
    try:
        cell = attribute(obs, n_boot, seed, where)
    except InputError as err:
        return {"skipped": _problem(err)}
    except UnfittableError as err:
        return {"skipped": str(err)}
    if notes:
        cell["notes"] = notes
    return cell


BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
"""Set to 1 in the workers: the fits are many small matrix operations, which a multi-threaded BLAS
slows by an order of magnitude on a busy machine (threads spin for work that takes microseconds);
the pool is the parallelism."""


def _map(tasks: list[tuple[Observations, int, int, str]], jobs: int) -> list[dict[str, Any]]:
    """``attribute_cell`` over ``tasks`` in a pool of ``jobs`` fresh (spawned) processes whose BLAS
    is single-threaded (set before they load it; a forked worker would inherit the parent's); in
    this process when ``jobs`` is 1. A script calling this with ``jobs`` > 1 needs the usual
    ``if __name__ == "__main__"`` guard, as for any spawned pool."""
    if jobs <= 1 or len(tasks) < 2:
        return [attribute_cell(t) for t in tasks]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    saved = {k: os.environ.get(k) for k in BLAS_THREADS}
    os.environ.update(dict.fromkeys(BLAS_THREADS, "1"))
    try:
        with ProcessPoolExecutor(max_workers=min(jobs, len(tasks)),
                                 mp_context=multiprocessing.get_context("spawn")) as pool:
            return list(pool.map(attribute_cell, tasks, chunksize=max(1, len(tasks) // (4 * jobs))))
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _dataset_levels(group: Group, dataset: str, design: Mapping[str, Any]) -> dict[str, dict[int, Any]] | str:
    """The dataset's components, or why none can be estimated (one line)."""
    runs = [r for r in group.manifest["runs"] if r["dataset"] == dataset]
    try:
        if design["kind"] != "iid":
            return components(runs, design["factors"], f"{group.where}: {dataset}")
        return iid_components(runs)
    except InputError as err:
        return _problem(err)


def _effects(group: Group, dataset: str, levels: Any, gold: Mapping[str, Any]) -> dict[str, Any]:
    runs = [r for r in group.manifest["runs"] if r["dataset"] == dataset]
    out: dict[str, Any] = {}
    for label, ms in sorted(group.models.items()):
        if dataset not in ms.datasets or dataset in ms.unscored:
            out[label] = {"skipped": ms.unscored.get(dataset, "not scored")}
            continue
        out[label] = {"factors": factor_effects(runs, ms.datasets[dataset].runs)}
        if gold.get(dataset) and isinstance(levels, dict):
            obs = _observations(ms.datasets[dataset], levels)
            out[label]["gold_position"] = (gold_position_effect(obs, gold_positions(runs, gold[dataset]))
                                           if not isinstance(obs, str) else {"skipped": obs})
    return out


def _design_entry(group: Group, data_dir: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    design = design_label(group.manifest)
    entry: dict[str, Any] = {"manifest_digest": group.digest, "manifest": group.where, "design": design,
                             "profile": group.manifest["profile"], "attribution": {}, "ranking": {}, "effects": {}}
    datasets = [d["name"] for d in group.manifest["config"]["datasets"]]
    gold = load_gold_documents(group.manifest, data_dir) if data_dir is not None else {}
    entry["gold_notes"] = {d: note for d in datasets if (note := gold_note(d, data_dir, gold))}
    return entry, gold


def analyse(run_dirs: Sequence[Any], n_boot: int = 200, seed: int = 42, data_dir: Any = None,
            jobs: int | None = None) -> dict[str, Any]:
    """Attribution, ranking stability and noise floor of scored run folders (see the package docstring)."""
    return analyse_groups(_groups(run_dirs), n_boot, seed, data_dir, jobs)


def analyse_groups(groups: Sequence[Group], n_boot: int = 200, seed: int = 42, data_dir: Any = None,
                   jobs: int | None = None) -> dict[str, Any]:
    """``analyse`` on groups already read (the paper-scale benchmark builds them in memory)."""
    from seam_repro import __version__

    result: dict[str, Any] = {"kit_version": __version__, "seed": seed, "bootstrap": n_boot, "designs": [],
                              "noise_floor": {}, "skipped": []}
    tasks: list[tuple[Observations, int, int, str]] = []
    slots: list[tuple[dict[str, Any], str]] = []
    for g_index, group in enumerate(groups):
        entry, gold = _design_entry(group, data_dir)
        design = entry["design"]
        for d_index, dataset in enumerate(d["name"] for d in group.manifest["config"]["datasets"]):
            levels = _dataset_levels(group, dataset, design)
            cell: dict[str, Any] = {}
            for m_index, (label, ms) in enumerate(sorted(group.models.items())):
                ds = ms.datasets.get(dataset)
                obs = (levels if isinstance(levels, str) else ms.unscored.get(dataset, "not scored")
                       if ds is None or dataset in ms.unscored else _observations(ds, levels))
                if isinstance(obs, str):
                    cell[label] = {"skipped": obs}
                    continue
                tasks.append((obs, n_boot, seed + 1000 * g_index + 100 * d_index + m_index,
                              f"{group.where}: {dataset}: {label}"))
                slots.append((cell, label))
            entry["attribution"][dataset] = cell
            entry["effects"][dataset] = _effects(group, dataset, levels, gold)
            entry["ranking"][dataset] = _ranking(group.models, dataset, n_boot, seed + d_index)
        entry["ranking"]["all"] = _ranking(group.models, None, n_boot, seed)
        result["designs"].append(entry)
    for (cell, label), out in zip(slots, _map(tasks, jobs or os.cpu_count() or 1), strict=True):
        cell[label] = out
    result["skipped"] = skipped_lines(result)
    result["noise_floor"] = _noise_floor(groups)
    adjust_p_values(result)
    return result


def skipped_lines(result: Mapping[str, Any]) -> list[str]:
    """One line per (model, dataset) without shares: skipped or not converged, with the reason."""
    lines = []
    for entry in result["designs"]:
        for dataset, cells in entry["attribution"].items():
            for label, cell in cells.items():
                reason = cell.get("skipped") or cell.get("not_converged")
                if reason:
                    kind = "skipped" if "skipped" in cell else "not converged"
                    lines.append(f"{label}, {dataset} ({entry['design']['kind']}): {kind}: {reason}")
    return lines


def _common_runs(per: dict[str, dict[int, float]]) -> tuple[list[str], list[str]]:
    """The models ranked together (the largest set sharing at least 2 runs, dropping the model with
    the fewest runs first) and one line per model left out."""
    kept = sorted(per, key=lambda m: (-len(per[m]), m))
    dropped = []
    while len(kept) >= 2 and len(set.intersection(*(set(per[m]) for m in kept))) < 2:
        dropped.append(kept.pop())
    notes = [f"{m}: {len(per[m])} run(s) in common with the others; expected at least 2, left out of the ranking"
             for m in dropped]
    return kept, notes


def _ranking(models: Mapping[str, Any], dataset: str | None, n_boot: int, seed: int) -> dict[str, Any]:
    per = _run_table(models, dataset)
    kept, notes = _common_runs(per)
    runs = sorted(set.intersection(*(set(per[m]) for m in kept))) if kept else []
    if len(kept) < 2 or len(runs) < 2:
        return {"skipped": f"{len(kept)} model(s) over {len(runs)} common run(s); expected at least 2 of each",
                **({"notes": notes} if notes else {})}
    scores = {m: np.array([per[m][r] for r in runs]) for m in kept}
    p, ci = ranking_probabilities(scores)
    return {"models": kept, "runs": runs, "mean": {m: float(v.mean()) for m, v in scores.items()},
            "p_above": p, "p_above_ci95": ci, "agreement": ranking_agreement(scores, max(n_boot, 1), seed),
            **({"notes": notes} if notes else {})}


def _run_table(models: Mapping[str, Any], dataset: str | None) -> dict[str, dict[int, float]]:
    """Run scores of every model that has ``dataset`` (None: the mean over the datasets every model
    scored)."""
    if dataset is not None:
        return {label: dict(ms.datasets[dataset].runs) for label, ms in models.items()
                if dataset in ms.datasets and dataset not in ms.unscored}
    scored = [set(ms.datasets) - set(ms.unscored) for ms in models.values()]
    common = set.intersection(*scored) if scored else set()
    per: dict[str, dict[int, float]] = {}
    for label, ms in models.items():
        runs = set.intersection(*(set(ms.datasets[d].runs) for d in common)) if common else set()
        per[label] = {r: float(np.mean([ms.datasets[d].runs[r] for d in sorted(common)])) for r in runs}
    return per


def _noise_floor(groups: Sequence[Group]) -> dict[str, Any]:
    """From decoding-noise designs: the std over runs that decoding alone gives (SEAM's estimator,
    ``np.std``, ddof=0), and, where i.i.d. runs of the same model and dataset are given, SEAM's std
    and the part of it beyond the noise (variances add: sqrt(std^2 - floor^2))."""
    iid = {(label, ds): np.std(list(ms.datasets[ds].runs.values()))
           for g in groups if design_label(g.manifest)["kind"] == "iid"
           for label, ms in g.models.items() for ds in ms.datasets if ds not in ms.unscored}
    out: dict[str, Any] = {}
    for g in groups:
        if design_label(g.manifest)["kind"] != "decoding-noise":
            continue
        for label, ms in sorted(g.models.items()):
            for ds, scores in ms.datasets.items():
                if ds in ms.unscored or len(scores.runs) < 2:
                    continue
                floor = float(np.std(list(scores.runs.values())))
                rec: dict[str, Any] = {"noise_std": floor, "n_runs": len(scores.runs)}
                if (label, ds) in iid:
                    seam = float(iid[(label, ds)])
                    rec.update(seam_std=seam, std_beyond_noise=float(np.sqrt(max(seam**2 - floor**2, 0.0))))
                out.setdefault(ds, {})[label] = rec
    return out


