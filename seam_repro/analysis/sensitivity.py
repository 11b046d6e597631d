"""Which factor moves the score: variance attribution and ranking stability (issue 24).

Model. Per (manifest, model, dataset) the instance scores ``y[i, r]`` (instance ``i``, run ``r``)
are fitted by REML as a linear mixed model with crossed random effects, by statsmodels' ``MixedLM``
(one group, one variance component per effect, as statsmodels documents crossed effects)::

    y = mu + a[instance] + sum_k b_k[level of component k in run r] + e

The components are the manifest's varied factors, each keyed on the level it recorded in a run
(paraphrase index, document order, demonstration set, demonstration order). Factors whose levels
split the runs the same way (in i.i.d. runs every run draws a new order and new demonstrations)
cannot be told apart and form one component named ``a + b``. Generation seeds are drawn per
instance and run, so decoding noise sits in the residual ``e`` with the instance x factor
interaction; a redrawn instance selection acts through the instance component. Shares are each
variance over their sum.

Uncertainty: percentile intervals of a two-way ("pigeonhole", Owen 2007) bootstrap that resamples
instances and runs together, each copy a new level. Resampling instances alone would ignore that a
design's R runs are R draws of each factor, so a factor's share would look far surer than R levels
allow; ``benchmarks/bench_sensitivity.py`` measures the coverage on studies with planted
components. scipy's ``bootstrap`` resamples one axis only, so
the two-way resampling is done here and every fit is statsmodels'.

Effects of recorded choices (any design, SEAM's i.i.d. runs included): each run-level choice with
a few levels (paraphrase index; number of demonstrations and document slots where they vary) gets
per-level deviations of the mean run score and an F test (OLS on run scores, runs being the
factor's replicates); where the dataset marks gold documents and ``--data-dir`` gives the data, the
first gold document's position gets a slope (OLS with instance and run effects, clustered on
instance). All tests of a report are Holm-adjusted together.

Ranking stability: ``P(A above B)`` is the share of bootstrap resamples of the runs (the same runs
for every model, which share the manifest's choices) whose mean ranks A above B (ties count half);
agreement vs runs is scipy's Kendall tau between the ranking by the mean of ``k`` resampled runs
and the ranking by all runs, for ``k`` = 1..R.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from seam_repro.errors import InputError, PrerequisiteError

INSTANCE = "instance"
RESIDUAL = "residual"
LEVEL_FACTORS = ("paraphrase", "document_order", "few_shot_examples", "few_shot_order")
"""Factors with a run-level value a component can be keyed on (see the module docstring)."""


def run_level(factor: str, run: Mapping[str, Any]) -> Any:
    """The level a manifest run records for ``factor`` (hashable)."""
    demos = list(run["demo_indices"])
    if factor == "paraphrase":
        return run["paraphrase_index"]
    if factor == "document_order":
        return tuple(run["doc_order"])
    if factor == "few_shot_examples":
        return tuple(sorted(demos))
    if factor == "few_shot_order":
        return tuple(sorted(range(len(demos)), key=lambda j: demos[j]))
    raise ValueError(factor)


def _partition(levels: Mapping[int, Any]) -> tuple[int, ...]:
    """How the runs are split by their levels, independent of the level values."""
    first: dict[Any, int] = {}
    return tuple(first.setdefault(levels[r], len(first)) for r in sorted(levels))


def components(runs: Sequence[Mapping[str, Any]], factors: Sequence[str], where: str) -> dict[str, dict[int, Any]]:
    """``{component: {run: level}}`` of one dataset's manifest runs: the varied factors with a
    run-level value, merged where they split the runs alike. A named factor that took one level
    over all runs cannot be estimated: one line saying so."""
    by_partition: dict[tuple[int, ...], list[str]] = {}
    levels: dict[str, dict[int, Any]] = {}
    for factor in factors:
        if factor not in LEVEL_FACTORS:
            continue
        lv = {int(r["run"]): run_level(factor, r) for r in runs}
        if len(set(lv.values())) < 2:
            raise InputError(where, f"factor '{factor}' took one level over {len(lv)} runs, too few runs to estimate "
                             "its share; expected at least 2 levels (add runs to the design)",
                             field="config.num_different_runs")
        levels[factor] = lv
        by_partition.setdefault(_partition(lv), []).append(factor)
    return {" + ".join(names): levels[names[0]] for names in by_partition.values()}


def _indicators(labels: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """0/1 design matrix of a label vector, columns in sorted level order (as patsy's C() sorts)."""
    uniq, inverse = np.unique(labels, return_inverse=True)
    z = np.zeros((len(labels), len(uniq)))
    z[np.arange(len(labels)), inverse] = 1.0
    return z, [str(u) for u in uniq]


class UnfittableError(ValueError):
    """The mixed model has no unique fit on these scores (reported per cell, never a crash)."""


FIT_OPTIONS = {"method": "bfgs", "gtol": 1e-10}
"""statsmodels' default stops BFGS at a gradient norm of 1e-5, ~1e-4 off the REML optimum; this
tolerance reaches it (the balanced-design ANOVA solution) to ~1e-8."""


def fit_variance_components(y: np.ndarray, groups: Mapping[str, np.ndarray]) -> dict[str, float]:
    """REML variance of each crossed component and the residual (statsmodels ``MixedLM``)."""
    try:
        from statsmodels.regression.mixed_linear_model import MixedLM, VCSpec
    except ImportError as exc:
        raise PrerequisiteError("sensitivity needs statsmodels: pip install 'seam-repro[sensitivity]'") from exc

    n = len(y)
    names, colnames, mats = [], [], []
    for name, labels in groups.items():
        z, cols = _indicators(np.asarray(labels))
        names.append(name)
        colnames.append([cols])
        mats.append([z])
    model = MixedLM(np.asarray(y, dtype=float), np.ones((n, 1)), np.zeros(n), exog_vc=VCSpec(names, colnames, mats))
    with warnings.catch_warnings():  # boundary fits (a zero component) are expected and reported as 0
        warnings.simplefilter("ignore")
        try:
            fit = model.fit(reml=True, **FIT_OPTIONS)
        except np.linalg.LinAlgError:  # statsmodels inverts the Hessian after the optimum is found;
            try:  # it is singular when a component is confounded with another on this data
                fit = model.fit(reml=True, method="lbfgs")
            except np.linalg.LinAlgError:
                raise UnfittableError(f"components {', '.join(names)} cannot be separated on these scores "
                                      "(singular information matrix)") from None
    out = {name: max(float(v), 0.0) for name, v in zip(names, np.atleast_1d(fit.vcomp), strict=True)}
    out[RESIDUAL] = float(fit.scale)
    return out


def shares(variances: Mapping[str, float]) -> dict[str, float]:
    total = sum(variances.values())
    return {k: (v / total if total > 0 else 0.0) for k, v in variances.items()}


@dataclass(frozen=True)
class Observations:
    """One (model, dataset)'s instance scores with the level of every component in their run."""

    y: np.ndarray
    instance: np.ndarray
    run: np.ndarray
    levels: dict[str, dict[int, Any]]

    def groups(self) -> dict[str, np.ndarray]:
        out = {INSTANCE: self.instance.astype(str)}
        for name, lv in self.levels.items():
            out[name] = np.array([str(lv[int(r)]) for r in self.run])
        return out


def check_estimable(obs: Observations, where: str) -> None:
    """Enough instances and runs for every component and a residual; one line otherwise."""
    n_inst, n_runs = len(set(obs.instance.tolist())), len(set(obs.run.tolist()))
    if n_inst < 2:
        raise InputError(where, f"{n_inst} scored instance; expected at least 2 to estimate the instance share")
    if n_runs < 2:
        raise InputError(where, f"{n_runs} scored run; expected at least 2 runs to estimate any run-level share",
                         field="config.num_different_runs")
    if len(obs.y) <= 1 + len(obs.levels) + 1 + (n_inst - 1):
        raise InputError(where, f"{len(obs.y)} scores leave no residual degrees of freedom; expected more runs",
                         field="config.num_different_runs")


def bootstrap_draws(obs: Observations, n_boot: int, seed: int) -> dict[str, np.ndarray]:
    """Each share refitted on ``n_boot`` two-way resamples (instances x runs, every copy a new level)."""
    rng = np.random.default_rng(seed)
    insts = np.unique(obs.instance)
    runs = np.unique(obs.run)
    row_of = {(i, int(r)): k for k, (i, r) in enumerate(zip(obs.instance, obs.run, strict=True))}
    draws: dict[str, list[float]] = {}
    for _ in range(n_boot):
        pick_i = rng.choice(insts, size=len(insts))
        pick_r = rng.choice(runs, size=len(runs))
        rows, inst_lab, run_new = [], [], []
        seen_run: dict[int, int] = {}
        run_copy = []
        for r in pick_r:
            seen_run[int(r)] = seen_run.get(int(r), -1) + 1
            run_copy.append(seen_run[int(r)])
        for a, i in enumerate(pick_i):
            for b, r in enumerate(pick_r):
                k = row_of.get((i, int(r)))
                if k is not None:
                    rows.append(k)
                    inst_lab.append(a)
                    run_new.append(b)
        idx = np.array(rows)
        groups = {INSTANCE: np.array(inst_lab)}
        for name, lv in obs.levels.items():
            groups[name] = np.array([f"{lv[int(pick_r[b])]}#{run_copy[b]}" for b in run_new])
        if any(len(np.unique(g)) < 2 for g in groups.values()):
            continue  # a resample with one level estimates nothing; the percentiles use the others
        try:
            vc = fit_variance_components(obs.y[idx], groups)
        except UnfittableError:
            continue  # as a one-level resample: the percentiles use the others
        for k, v in shares(vc).items():
            draws.setdefault(k, []).append(v)
    return {k: np.array(v) for k, v in draws.items()}


CI_METHOD = "logit"
"""The interval the report gives. Over 200 simulated studies each (``benchmarks/bench_sensitivity.py``)
the nominal 95 % covered the planted shares 90.5-96 % of the time at 15 instances x 8 runs and at
20 x 10; the percentile interval covered the factor's share 88.5 % at 20 x 10, the basic one 80 %."""
_EPS = 1e-6


def intervals(estimate: Mapping[str, float], draws: Mapping[str, np.ndarray], method: str = CI_METHOD,
              level: float = 0.95) -> dict[str, list[float]]:
    """Intervals of each share from its bootstrap draws, clipped to [0, 1]: ``percentile`` (the
    draws' quantiles), ``basic`` (reflected about the estimate, as scipy's ``bootstrap`` defines
    it) or ``logit`` (basic on the logit scale, widened where needed to contain the estimate; a
    share estimated at 0 keeps [0, upper quantile]).

    Why logit: a variance estimated from R factor levels is spread like a scaled chi-square with
    R - 1 degrees of freedom, skewed right and scaled by the truth, while resampling the R levels
    centres below the estimate; reflecting on a log-like scale turns that scale-type error into the
    right asymmetry. The benchmark measures all three on the same resamples."""
    from scipy.special import expit, logit

    alpha = (1 - level) / 2
    out = {}
    for k, v in draws.items():
        lo, hi = float(np.quantile(v, alpha)), float(np.quantile(v, 1 - alpha))
        est = estimate[k]
        if method == "basic":
            lo, hi = 2 * est - hi, 2 * est - lo
        elif method == "logit" and _EPS < est < 1 - _EPS:
            q_lo, q_hi = (float(logit(np.clip(q, _EPS, 1 - _EPS))) for q in (lo, hi))
            lo, hi = float(expit(2 * logit(est) - q_hi)), float(expit(2 * logit(est) - q_lo))
            lo, hi = min(lo, est), max(hi, est)  # resamples far off the estimate can reflect past it
        elif method == "logit":
            lo = 0.0 if est <= _EPS else lo
        out[k] = [min(max(lo, 0.0), 1.0), min(max(hi, 0.0), 1.0)]
    return out


def attribute(obs: Observations, n_boot: int, seed: int, where: str) -> dict[str, Any]:
    """Variance, share and interval of every component of one (model, dataset)."""
    check_estimable(obs, where)
    variances = fit_variance_components(obs.y, obs.groups())
    share = shares(variances)
    draws = bootstrap_draws(obs, n_boot, seed) if n_boot > 0 else {}
    return {"n_instances": len(set(obs.instance.tolist())), "n_runs": len(set(obs.run.tolist())),
            "n_scores": len(obs.y), "variance": variances, "share": share,
            "share_ci95": intervals(share, draws, CI_METHOD), "bootstrap": n_boot}


# --- ranking stability ------------------------------------------------------------------------------

def ranking_probabilities(run_scores: Mapping[str, np.ndarray], n_boot: int, seed: int) -> dict[str, dict[str, float]]:
    """``P[a][b]``: share of run resamples in which model ``a``'s mean is above ``b``'s (ties half).
    Every model's array holds the same runs in the same order (one manifest)."""
    models = list(run_scores)
    scores = np.vstack([run_scores[m] for m in models])  # models x runs
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, scores.shape[1], size=(n_boot, scores.shape[1]))
    means = scores[:, idx].mean(axis=2)  # models x n_boot
    out: dict[str, dict[str, float]] = {}
    for i, a in enumerate(models):
        out[a] = {}
        for j, b in enumerate(models):
            if i != j:
                out[a][b] = float(np.mean(means[i] > means[j]) + 0.5 * np.mean(means[i] == means[j]))
    return out


def ranking_agreement(run_scores: Mapping[str, np.ndarray], n_boot: int, seed: int) -> list[dict[str, float]]:
    """For k = 1..R runs: mean Kendall tau (scipy) between the ranking by k resampled runs and by
    all runs, and how often the two rankings are identical."""
    from scipy.stats import kendalltau

    models = list(run_scores)
    scores = np.vstack([run_scores[m] for m in models])
    full = scores.mean(axis=1)
    rng = np.random.default_rng(seed)
    curve = []
    for k in range(1, scores.shape[1] + 1):
        taus, same = [], 0
        for _ in range(n_boot):
            sub = scores[:, rng.integers(0, scores.shape[1], size=k)].mean(axis=1)
            tau = kendalltau(sub, full).statistic
            taus.append(1.0 if np.isnan(tau) else float(tau))  # nan: every mean tied, as the full ranking
            same += bool(np.array_equal(np.argsort(-sub, kind="stable"), np.argsort(-full, kind="stable")))
        curve.append({"runs": k, "kendall_tau": float(np.mean(taus)), "same_ranking": same / n_boot})
    return curve


# --- factor-level effects from recorded choices ----------------------------------------------------

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
        loaded = load_checked_data(suite, name, path, recorded)
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


# --- run folders -> report ---------------------------------------------------------------------------

@dataclass
class _Group:
    """The scored models of one manifest (its runs share every recorded choice)."""

    digest: str
    manifest: dict[str, Any]
    where: str
    models: dict[str, Any]
    """label -> ``ModelScores``."""


def _groups(run_dirs: Sequence[Any]) -> list[_Group]:
    from pathlib import Path

    from seam_repro.analysis.aggregate import load_run_dir
    from seam_repro.run.store import read_run_records, run_manifest_path

    groups: dict[str, _Group] = {}
    for run_dir in run_dirs:
        records = read_run_records(Path(run_dir))
        if records.manifest is None or not records.manifest.frozen:
            raise InputError(run_manifest_path(Path(run_dir)), "missing or unfrozen; sensitivity reads the "
                             "choices recorded in the run folder's frozen manifest (replay writes it)")
        tm = records.manifest
        group = groups.setdefault(tm.manifest["digest"], _Group(tm.manifest["digest"], tm.manifest, str(tm.path), {}))
        for ms in load_run_dir(Path(run_dir), records):
            label = ms.label
            if label in group.models:
                raise InputError(run_dir, f"model '{label}' is scored twice for manifest {tm.manifest['digest'][:12]} "
                                 f"(also in {group.models[label].source}); expected each model once per manifest")
            group.models[label] = ms
    return list(groups.values())


def design_label(manifest: Mapping[str, Any]) -> dict[str, Any]:
    from seam_repro.design import design_of

    return design_of(manifest["config"]) or {"kind": "iid", "factors": list(LEVEL_FACTORS)}


def _observations(ds: Any, levels: dict[str, dict[int, Any]]) -> Observations | str:
    """The instance scores of one ``DatasetScores`` or why there are none to attribute."""
    rows = [it for it in ds.instances if it.score is not None]
    if not rows:
        return "run-level scores only (coreference micro CoNLL-F1): no per-instance scores to attribute"
    y = np.array([it.score for it in rows], dtype=float)
    if np.all(y == y[0]):  # a zero total would make every share 0/0
        return f"every score is {y[0]:g}: no variance to attribute"
    return Observations(y, np.array([it.instance_id for it in rows]), np.array([it.run for it in rows]), levels)


def _run_matrix(models: Mapping[str, Any], dataset: str | None) -> tuple[dict[str, np.ndarray], list[int]]:
    """Run scores of every model that has ``dataset`` (None: the mean over the datasets every model
    scored), on the runs they all have."""
    per: dict[str, dict[int, float]] = {}
    if dataset is None:
        common = set.intersection(*(set(ms.datasets) - set(ms.unscored) for ms in models.values()))
        for label, ms in models.items():
            runs = set.intersection(*(set(ms.datasets[d].runs) for d in common)) if common else set()
            per[label] = {r: float(np.mean([ms.datasets[d].runs[r] for d in sorted(common)])) for r in runs}
    else:
        per = {label: dict(ms.datasets[dataset].runs) for label, ms in models.items()
               if dataset in ms.datasets and dataset not in ms.unscored}
    if not per:
        return {}, []
    runs = sorted(set.intersection(*(set(v) for v in per.values())))
    return {label: np.array([v[r] for r in runs]) for label, v in per.items()}, runs


def analyse(run_dirs: Sequence[Any], n_boot: int = 200, seed: int = 42, data_dir: Any = None) -> dict[str, Any]:
    """Attribution, ranking stability and noise floor of scored run folders (see the module docstring)."""
    from seam_repro import __version__

    result: dict[str, Any] = {"kit_version": __version__, "seed": seed, "bootstrap": n_boot, "designs": [],
                              "noise_floor": {}}
    groups = _groups(run_dirs)
    for g_index, group in enumerate(groups):
        design = design_label(group.manifest)
        named = design["kind"] != "iid"
        entry: dict[str, Any] = {"manifest_digest": group.digest, "manifest": group.where, "design": design,
                                 "profile": group.manifest["profile"], "attribution": {}, "ranking": {},
                                 "effects": {}}
        datasets = [d["name"] for d in group.manifest["config"]["datasets"]]
        gold = load_gold_documents(group.manifest, data_dir) if data_dir is not None else {}
        entry["gold_notes"] = {d: note for d in datasets if (note := gold_note(d, data_dir, gold))}
        for d_index, dataset in enumerate(datasets):
            runs = [r for r in group.manifest["runs"] if r["dataset"] == dataset]
            where = f"{group.where}: {dataset}"
            levels = components(runs, design["factors"], where) if named else _iid_components(runs)
            cell: dict[str, Any] = {}
            for m_index, (label, ms) in enumerate(sorted(group.models.items())):
                ds = ms.datasets.get(dataset)
                if ds is None or dataset in ms.unscored:
                    cell[label] = {"skipped": ms.unscored.get(dataset, "not scored")}
                    continue
                obs = _observations(ds, levels)
                if isinstance(obs, str):
                    cell[label] = {"skipped": obs}
                    continue
                try:
                    cell[label] = attribute(obs, n_boot, seed + 1000 * g_index + 100 * d_index + m_index,
                                            f"{where}: {label}")
                except UnfittableError as err:
                    cell[label] = {"skipped": str(err)}
            entry["attribution"][dataset] = cell
            entry["effects"][dataset] = {
                label: ({"skipped": ms.unscored.get(dataset, "not scored")}
                        if dataset not in ms.datasets or dataset in ms.unscored
                        else {"factors": factor_effects(runs, ms.datasets[dataset].runs)})
                for label, ms in sorted(group.models.items())}
            if gold.get(dataset):
                position = gold_positions(runs, gold[dataset])
                for label, ms in sorted(group.models.items()):
                    eff = entry["effects"][dataset][label]
                    obs = _observations(ms.datasets[dataset], levels) if "factors" in eff else None
                    if obs is not None:
                        eff["gold_position"] = (gold_position_effect(obs, position) if not isinstance(obs, str)
                                                else {"skipped": obs})
            entry["ranking"][dataset] = _ranking(group.models, dataset, n_boot, seed + d_index)
        entry["ranking"]["all"] = _ranking(group.models, None, n_boot, seed)
        result["designs"].append(entry)
    result["noise_floor"] = _noise_floor(groups)
    adjust_p_values(result)
    return result


def _iid_components(runs: Sequence[Mapping[str, Any]]) -> dict[str, dict[int, Any]]:
    """i.i.d. runs: every factor with a run-level value that took more than one level."""
    varied = [f for f in LEVEL_FACTORS if len({run_level(f, r) for r in runs}) > 1]
    return components(runs, varied, "") if varied else {}


def _ranking(models: Mapping[str, Any], dataset: str | None, n_boot: int, seed: int) -> dict[str, Any]:
    scores, runs = _run_matrix(models, dataset)
    if len(scores) < 2 or len(runs) < 2:
        return {"skipped": f"{len(scores)} model(s) over {len(runs)} common run(s); expected at least 2 of each"}
    return {"models": list(scores), "runs": runs, "mean": {m: float(v.mean()) for m, v in scores.items()},
            "p_above": ranking_probabilities(scores, n_boot, seed),
            "agreement": ranking_agreement(scores, n_boot, seed)}


def _noise_floor(groups: Sequence[_Group]) -> dict[str, Any]:
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


# --- report folder -----------------------------------------------------------------------------------

def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _design_name(design: Mapping[str, Any]) -> str:
    if design["kind"] == "one-factor":
        return "one-factor: " + ", ".join(design["factors"])
    return design["kind"]


def markdown(result: Mapping[str, Any]) -> str:
    """One table of variance shares per (design, dataset), then ranking stability and noise floor."""
    lines = ["# Which factor moves the score?", "",
             f"Shares of score variance (REML, statsmodels MixedLM) with 95% intervals from "
             f"{result['bootstrap']} two-way bootstrap resamples (instances x runs), seed {result['seed']}.", ""]
    for entry in result["designs"]:
        for dataset, cells in entry["attribution"].items():
            comps = sorted({c for cell in cells.values() if "share" in cell for c in cell["share"]},
                           key=lambda c: (c == RESIDUAL, c != INSTANCE, c))
            lines += [f"## {dataset} — {_design_name(entry['design'])} (manifest {entry['manifest_digest'][:12]})", ""]
            if not comps:
                lines += ["; ".join(f"{m}: {c['skipped']}" for m, c in cells.items()), ""]
                continue
            lines += ["| model | " + " | ".join(comps) + " | instances | runs |",
                      "|---|" + "---|" * (len(comps) + 2)]
            for model, cell in cells.items():
                if "skipped" in cell:
                    lines.append(f"| {model} | " + " | ".join("—" for _ in comps) + f" | {cell['skipped']} | |")
                    continue
                parts = []
                for c in comps:
                    ci = cell["share_ci95"].get(c)
                    parts.append(_pct(cell["share"][c]) + (f" [{_pct(ci[0])}, {_pct(ci[1])}]" if ci else ""))
                lines.append(f"| {model} | " + " | ".join(parts) + f" | {cell['n_instances']} | {cell['n_runs']} |")
            lines.append("")
        lines += _effects_markdown(entry)
        lines += [f"### Ranking stability — {_design_name(entry['design'])}", ""]
        for dataset, rk in entry["ranking"].items():
            if "skipped" in rk:
                lines.append(f"- {dataset}: {rk['skipped']}")
                continue
            order = sorted(rk["models"], key=lambda m: -rk["mean"][m])
            pairs = ", ".join(f"P({a} > {b}) = {rk['p_above'][a][b]:.2f}" for a, b in zip(order, order[1:], strict=False))
            stable = next((p["runs"] for p in rk["agreement"] if p["same_ranking"] >= 0.95), None)
            lines.append(f"- {dataset}: {pairs}; same ranking in >= 95% of resamples from "
                         f"{stable if stable is not None else 'more than ' + str(len(rk['runs']))} run(s)")
        lines.append("")
    if result["noise_floor"]:
        lines += ["## Decoding-noise floor", "", "| dataset | model | noise std | SEAM std | std beyond noise |",
                  "|---|---|---|---|---|"]
        for ds, models in result["noise_floor"].items():
            for model, r in models.items():
                seam = f"{r['seam_std']:.2f}" if "seam_std" in r else "—"
                beyond = f"{r['std_beyond_noise']:.2f}" if "std_beyond_noise" in r else "—"
                lines.append(f"| {ds} | {model} | {r['noise_std']:.2f} | {seam} | {beyond} |")
        lines.append("")
    return "\n".join(lines)


def _num(x: float) -> str:
    return f"{x:.2f}"


def _effects_markdown(entry: Mapping[str, Any]) -> list[str]:
    """Per dataset: one row per (model, factor that varied) with each level's deviation of the mean
    run score, its 95% interval and run count, and the F test of no effect; one line for the rest."""
    lines: list[str] = []
    for dataset, cells in entry.get("effects", {}).items():
        rows, notes = [], []
        for model, cell in cells.items():
            if "skipped" in cell:
                notes.append(f"- {model}: {cell['skipped']}")
                continue
            for factor, eff in cell["factors"].items():
                name = RUN_FACTORS[factor]
                if "deviation" not in eff:
                    notes.append(f"- {model}, {name}: {eff['skipped']}")
                    continue
                levels = "; ".join(f"{lv}: {_num(eff['deviation'][lv])} [{_num(eff['deviation_ci95'][lv][0])}, "
                                   f"{_num(eff['deviation_ci95'][lv][1])}] (n={eff['n_runs_per_level'][lv]})"
                                   for lv in eff["levels"])
                rows.append(f"| {model} | {name} | {levels} | F = {eff['F']:.2f} ({eff['df'][0]}, {eff['df'][1]}) | "
                            f"{eff['p_value']:.3f} | {eff['p_holm']:.3f} |")
            gp = cell.get("gold_position")
            if gp is not None and "slope" in gp:
                rows.append(f"| {model} | {GOLD_FACTOR} | slope: {_num(gp['slope'])} [{_num(gp['slope_ci95'][0])}, "
                            f"{_num(gp['slope_ci95'][1])}] ({gp['n_instances']} instances, {gp['n_scores']} scores) | "
                            f"t = {gp['t']:.2f} ({gp['df']}) | {gp['p_value']:.3f} | {gp['p_holm']:.3f} |")
            elif gp is not None:
                notes.append(f"- {model}, gold-document position: {gp['skipped']}")
        lines += [f"### {dataset}: effects of recorded choices on the run score — {_design_name(entry['design'])}", ""]
        if rows:
            lines += ["Deviation of each level's mean run score from the mean over levels, 95% t interval, runs "
                      "at that level (n); F test of no effect (OLS on run scores). Gold position: change of the "
                      "instance score from first to last place (OLS with instance and run effects, clustered "
                      "on instance). p Holm-adjusted over every test in this report.", "",
                      "| model | factor | estimate [95% CI] (n) | test (df) | p | p Holm |",
                      "|---|---|---|---|---|---|", *rows, ""]
        gold_line = entry.get("gold_notes", {}).get(dataset)
        lines += [*notes, *([f"- {gold_line}"] if gold_line else []), ""]
    return lines


def plot_shares(result: Mapping[str, Any], out: Any) -> None:
    """Stacked horizontal bars: one bar per (design, dataset, model), one colour per component."""
    from seam_repro.analysis.plots import _pyplot

    plt = _pyplot()
    bars = [(f"{_design_name(e['design'])} | {ds} | {m}", cell["share"])
            for e in result["designs"] for ds, cells in e["attribution"].items()
            for m, cell in cells.items() if "share" in cell]
    comps = sorted({c for _, s in bars for c in s}, key=lambda c: (c == RESIDUAL, c != INSTANCE, c))
    fig, ax = plt.subplots(figsize=(11, 1.6 + 0.45 * max(len(bars), 1)))
    cmap = plt.get_cmap("tab10")
    for y, (_, share) in enumerate(bars):
        left = 0.0
        for k, c in enumerate(comps):
            ax.barh(y, share.get(c, 0.0), left=left, color=cmap(k % 10), label=c if y == 0 else None)
            left += share.get(c, 0.0)
    ax.set_yticks(range(len(bars)), [b[0] for b in bars], fontsize=8)
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of score variance")
    ax.invert_yaxis()
    if bars:
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    else:
        ax.text(0.5, 0.5, "no per-instance scores to attribute", ha="center", transform=ax.transAxes)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def plot_agreement(result: Mapping[str, Any], out: Any) -> None:
    """Mean Kendall tau with the all-runs ranking vs number of runs, one line per (design, dataset)."""
    from seam_repro.analysis.plots import _pyplot

    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    drawn = 0
    for e in result["designs"]:
        for ds, rk in e["ranking"].items():
            if "agreement" in rk:
                pts = rk["agreement"]
                ax.plot([p["runs"] for p in pts], [p["kendall_tau"] for p in pts], marker="o",
                        lw=2.5 if ds == "all" else 1, label=f"{ds} ({_design_name(e['design'])})")
                drawn += 1
    if drawn:
        ax.legend(fontsize=7)
    else:
        ax.text(0.5, 0.5, "ranking stability needs at least two models", ha="center", transform=ax.transAxes)
    ax.set_xlabel("runs")
    ax.set_ylabel("Kendall tau with the ranking by all runs")
    ax.set_ylim(-1.05, 1.05)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


REPORT_FILES = ("sensitivity.md", "sensitivity.json", "variance_shares.png", "ranking_agreement.png")


def write_sensitivity_report(result: Mapping[str, Any], out_dir: Any) -> list[Any]:
    """Write the Markdown tables, the JSON and both plots into ``out_dir``; returns the paths."""
    import json
    from pathlib import Path

    from seam_repro.files.atomic import atomic_write_text, ensure_dir

    out = Path(out_dir)
    ensure_dir(out)
    md, js, shares_png, agree_png = (out / n for n in REPORT_FILES)
    atomic_write_text(md, markdown(result) + "\n")
    atomic_write_text(js, json.dumps(result, indent=1, sort_keys=True) + "\n")
    plot_shares(result, shares_png)
    plot_agreement(result, agree_png)
    return [md, js, shares_png, agree_png]
