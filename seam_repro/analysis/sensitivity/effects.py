"""Effects of recorded run-level choices on the score, and of the gold document's position.

Any design, SEAM's i.i.d. runs included: each run-level choice with a few levels (paraphrase
index; number of demonstrations and document slots where they vary) gets per-level deviations of
the mean run score and an F test (OLS on run scores, runs being the factor's replicates); where the
dataset marks gold documents and ``--data-dir`` gives the data, the first gold document's position
gets a slope (OLS with instance and run effects, clustered on instance). All tests of a report are
Holm-adjusted together.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from seam_repro.analysis.sensitivity.design import Observations
from seam_repro.errors import PrerequisiteError

RUN_FACTORS = {"paraphrase": "instruction paraphrase", "n_demonstrations": "number of few-shot examples",
               "max_num_docs": "document slots"}
"""Run-level factors with a small set of named levels whose effect on the score can be estimated
from any design's recorded choices (a document order or demonstration set is new in every i.i.d.
run, so it has no level seen twice: its share is the variance attribution above)."""


def run_factor_level(factor: str, run: Mapping[str, Any]) -> int:
    """The level of ``factor`` a manifest run records."""
    if factor == "paraphrase":
        return int(run["paraphrase_index"])
    if factor == "n_demonstrations":
        return len(run["demo_indices"])
    if factor == "max_num_docs":
        return int(run["max_num_docs"])
    raise ValueError(factor)


def level_effect(run_scores: Mapping[int, float], level_of: Mapping[int, int], level: float = 0.95) -> dict[str, Any]:
    """Per-level deviation of the mean run score from the mean of the level means, with t
    intervals, and the F test of no effect (statsmodels OLS ``score ~ 0 + C(level)``).

    Why run scores, not instance scores: the factor is drawn once per run, so runs are its units of
    replication. In i.i.d. runs every instance of a run also shares that run's document order and
    demonstrations; an instance-level fit would count 100 scores of one run as 100 views of its
    paraphrase and claim far narrower intervals than R runs allow. Instance recurrence is absorbed
    too: each run is one observation. The residual is the spread of runs that share a level, so a
    level seen in one run has an estimate but tells nothing about the noise, and with every level
    seen once there is no test (said so, never a p-value)."""
    try:
        import statsmodels.formula.api as smf
    except ImportError as exc:
        raise PrerequisiteError("sensitivity needs statsmodels: pip install 'seam-repro[sensitivity]'") from exc
    import pandas as pd

    runs = sorted(r for r in run_scores if r in level_of)
    df = pd.DataFrame({"score": [float(run_scores[r]) for r in runs], "level": [int(level_of[r]) for r in runs]})
    levels = sorted(df["level"].unique().tolist())
    n_per = {str(lv): int((df["level"] == lv).sum()) for lv in levels}
    out: dict[str, Any] = {"n_runs": len(runs), "levels": [str(lv) for lv in levels], "n_runs_per_level": n_per}
    if len(levels) < 2:
        out["skipped"] = f"one level ({levels[0] if levels else 'none'}) over {len(runs)} scored run(s): no effect to estimate"
        return out
    df_resid = len(runs) - len(levels)
    if df_resid < 1:
        out["skipped"] = (f"every one of {len(levels)} levels seen in one run only: its effect cannot be told "
                          "from that run's other draws (no test; add runs)")
        return out
    fit = smf.ols("score ~ 0 + C(level)", data=df).fit()
    if fit.ssr <= 1e-12 * float((df["score"] ** 2).sum()):
        out["skipped"] = (f"runs that share a level scored identically ({df_resid} residual df, zero spread): "
                          "no noise to test the level means against")
        return out
    k = len(levels)
    contrast = np.eye(k) - 1.0 / k  # level mean minus the mean of the level means
    tt = fit.t_test(contrast)
    ci = tt.conf_int(alpha=1 - level)
    ft = fit.f_test(contrast[:-1])  # k - 1 independent contrasts: all level means equal
    out.update(deviation={str(lv): float(tt.effect[j]) for j, lv in enumerate(levels)},
               deviation_ci95={str(lv): [float(ci[j, 0]), float(ci[j, 1])] for j, lv in enumerate(levels)},
               F=float(np.squeeze(ft.fvalue)), df=[int(ft.df_num), int(ft.df_denom)], p_value=float(ft.pvalue),
               residual_std=float(np.sqrt(fit.scale)))
    return out


def factor_effects(runs: Sequence[Mapping[str, Any]], run_scores: Mapping[int, float]) -> dict[str, Any]:
    """Effect of every ``RUN_FACTORS`` factor on one (model, dataset)'s run scores; a factor that
    did not vary says so."""
    return {f: level_effect(run_scores, {int(r["run"]): run_factor_level(f, r) for r in runs}) for f in RUN_FACTORS}


GOLD_FACTOR = "first gold document's position (0 first, 1 last)"


def gold_positions(runs: Sequence[Mapping[str, Any]], instances: Mapping[str, Any]) -> dict[tuple[str, int], float]:
    """``{(instance, run): relative position}`` of the instance's first gold document in the order
    its prompt showed (0 first, 1 last), from each instance's ``extra["gold_documents"]`` and the
    run's recorded document order, through the renderers' own ``shuffle_documents``."""
    from seam_repro.render.common import shuffle_documents

    out: dict[tuple[str, int], float] = {}
    for run in runs:
        for rec in run["instances"]:
            inst = instances.get(rec["id"])
            gold = set(inst.extra.get("gold_documents", ())) if inst is not None else set()
            if not gold:
                continue
            shown = [int(k) for k in shuffle_documents([str(k) for k in range(len(inst.documents))],
                                                       int(run["max_num_docs"]), run["doc_order"])]
            where = [j for j, k in enumerate(shown) if k in gold]
            if where and len(shown) > 1:
                out[(rec["id"], int(run["run"]))] = where[0] / (len(shown) - 1)
    return out


def gold_position_effect(obs: Observations, position: Mapping[tuple[str, int], float], level: float = 0.95) -> dict[str, Any]:
    """Slope of the instance score on the first gold document's relative position, statsmodels OLS
    ``score ~ C(instance) + C(run) + position`` with standard errors clustered on instance.

    Why this model: the position varies within a run (each instance has its own gold documents)
    and within an instance (each run its own order), so run effects absorb the paraphrase, the
    demonstrations and every other run-level draw, and instance effects absorb difficulty; what is
    left is the within-instance, within-run dependence on position. Instances recur across runs, so
    their scores are clustered: t intervals with (instances - 1) df."""
    import pandas as pd
    import statsmodels.formula.api as smf

    keep = [k for k, (i, r) in enumerate(zip(obs.instance, obs.run, strict=True)) if (str(i), int(r)) in position]
    df = pd.DataFrame({"score": obs.y[keep], "instance": obs.instance[keep].astype(str), "run": obs.run[keep]})
    df["position"] = [position[(i, int(r))] for i, r in zip(df["instance"], df["run"], strict=True)]
    n_inst = int(df["instance"].nunique())
    out: dict[str, Any] = {"n_instances": n_inst, "n_scores": len(df)}
    if n_inst < 3 or df.groupby("instance")["position"].nunique().max() < 2:
        out["skipped"] = (f"{n_inst} instance(s) with a gold document over {df['run'].nunique()} run(s), none shown "
                          "at two positions or too few to cluster on (expected at least 3 instances)")
        return out
    codes = df["instance"].astype("category").cat.codes.to_numpy()
    fit = smf.ols("score ~ C(instance) + C(run) + position", data=df).fit(
        cov_type="cluster", cov_kwds={"groups": codes}, use_t=True)
    ci = fit.conf_int(alpha=1 - level).loc["position"]
    out.update(slope=float(fit.params["position"]), slope_ci95=[float(ci[0]), float(ci[1])],
               t=float(fit.tvalues["position"]), df=int(fit.df_resid_inference),
               p_value=float(fit.pvalues["position"]))
    return out


def load_gold_documents(manifest: Mapping[str, Any], data_dir: Any) -> dict[str, dict[str, Any] | None]:
    """``{dataset: {instance id: Instance}}`` of the datasets whose loader records gold documents,
    read from ``data_dir`` and checked against the manifest's file hashes (a mismatch is an error:
    positions from other data would be wrong); ``None`` for a dataset ``data_dir`` lacks, so one
    dataset's data is enough for its own estimate."""
    from pathlib import Path

    from seam_repro.errors import MissingDataError
    from seam_repro.sources.resolve import load_checked_data, resolve_data_path
    from seam_repro.specs import load_suite

    suite = load_suite(manifest["config"].get("suite", "seam"))
    out: dict[str, dict[str, Any] | None] = {}
    for entry in manifest["config"]["datasets"]:
        name = entry["name"]
        try:
            path = resolve_data_path(name, None, data_dir, Path.cwd())
        except MissingDataError:
            out[name] = None
            continue
        recorded = (manifest.get("sources", {}).get("data", {}).get(name) or {}).get("files") or {}
        loaded = load_checked_data(suite.spec(name), path, recorded)
        by_id = {i.instance_id: i for split in loaded.splits.values() for i in split}
        if any(i.extra.get("gold_documents") for i in by_id.values()):
            out[name] = by_id
    return out


def gold_note(dataset: str, data_dir: Any, gold: Mapping[str, Any]) -> str | None:
    """The one line a dataset without a gold-position estimate gets."""
    if data_dir is None:
        return ("gold-document position: not estimated; the run folder records the document order but not "
                "which documents are gold (pass --data-dir to read them where the dataset marks them)")
    if dataset in gold and gold[dataset] is None:
        return f"gold-document position: not estimated; --data-dir {data_dir} has no {dataset} data"
    if dataset not in gold:
        return f"gold-document position: {dataset}'s data marks no gold documents"
    return None


def adjust_p_values(result: Mapping[str, Any]) -> None:
    """Holm-adjust every effect test of the report as one family (statsmodels ``multipletests``),
    written beside each raw p-value as ``p_holm``."""
    from statsmodels.stats.multitest import multipletests

    tests = [eff for entry in result["designs"] for cells in entry["effects"].values()
             for cell in cells.values() for eff in [*cell.get("factors", {}).values(), cell.get("gold_position", {})]
             if "p_value" in eff]
    if tests:
        adjusted = multipletests([t["p_value"] for t in tests], method="holm")[1]
        for t, p in zip(tests, adjusted, strict=True):
            t["p_holm"] = float(p)
            t["n_tests"] = len(tests)
