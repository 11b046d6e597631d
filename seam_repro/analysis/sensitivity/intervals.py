"""Intervals on the variance shares that cover the population shares a design was drawn from.

Not only the shares of the few levels a study drew: 4-12 paraphrases pin a factor's variance down
only to a scaled chi-square on ``L - 1`` df, which resampling the observed levels misses.
``gpq`` (where it applies, see ``share_draws``): generalised pivotal quantities (Weerahandi 1993;
Burdick, Borror & Montgomery 2005, ch. 4), each variance drawn from the chi-square pivot of its sum
of squares and a share's interval the percentiles of the drawn shares; no refit, and near 0 it
stays ``[0, what the sums of squares allow]``. ``parametric``: percentiles of refits on data
simulated from the fitted model (other designs). docs/sensitivity.md gives the coverage
(``benchmarks/bench_sensitivity.py``) that chose ``gpq``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from seam_repro.analysis.sensitivity.design import INSTANCE, RESIDUAL, Observations, check_estimable
from seam_repro.analysis.sensitivity.reml import (
    Complete,
    Fit,
    UnfittableError,
    as_matrix,
    complete_stats,
    fit_complete,
    fit_fast,
    fit_mixedlm,
    shares,
)

LEVELS = (0.90, 0.95)
GPQ_MIN_DRAWS = 2000
"""Pivot draws cost no refit, so at least this many are taken whatever ``--bootstrap`` asks: the
percentiles' own Monte-Carlo error then stays well under the coverage error measured."""


def _pivot_parts(c: Complete) -> tuple[float, int, np.ndarray, np.ndarray]:
    """Residual SS and df (interaction plus the run-mean contrasts within levels, each ``I`` times
    its square) and the between-level contrasts with their eigenvalues ``d`` (variance
    ``s_1 d + s_e / I``) of a design with at most one run-level component."""
    if c.eig is None:
        return c.ss_err + c.n_inst * float(c.u @ c.u), c.df_err + c.n_runs - 1, np.zeros(0), np.zeros(0)
    d, v = c.eig
    between = d > 1e-9 * max(float(d.max()), 1.0)
    return (c.ss_err + c.n_inst * float(np.sum(v[~between] ** 2)), c.df_err + int(np.sum(~between)),
            v[between], d[between])


def _solve_level_variance(v: np.ndarray, d: np.ndarray, noise: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Per draw, the ``s >= 0`` with ``sum_j v_j^2 / (s d_j + noise) = target`` (0 where even s = 0
    gives less): the pivot of a one-way random effect with unequal replication, by bisection."""
    v2 = v ** 2
    def total(s: np.ndarray) -> np.ndarray:
        return np.sum(v2[None, :] / (s[:, None] * d[None, :] + noise[:, None]), axis=1)
    lo = np.zeros_like(target)
    hi = np.full_like(target, float(np.sum(v2 / d))) / target
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        above = total(mid) > target
        lo, hi = np.where(above, mid, lo), np.where(above, hi, mid)
    return np.where(total(np.zeros_like(target)) > target, 0.5 * (lo + hi), 0.0)


def per_run_component(c: Complete) -> int | None:
    """With two run-level components one of which has a level per run (SEAM's i.i.d. runs: a new
    document order and demonstration set each run, beside a paraphrase drawn from a few), the index
    of that one; else None."""
    if len(c.names) != 2:
        return None
    unique = [k for k, code in enumerate(c.run_levels) if len(set(code.tolist())) == c.n_runs]
    other = [k for k in range(2) if k not in unique]
    return unique[0] if len(unique) == 1 and len(set(c.run_levels[other[0]].tolist())) < c.n_runs else None


def _nested_draws(c: Complete, k_run: int, lam_e: np.ndarray, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """The two run-level components' pivots when one has a level per run: the run-mean contrasts
    within a paraphrase give ``s_run + s_e / I``; those between paraphrases add ``s_p d``."""
    k_p = 1 - k_run
    d, q = np.linalg.eigh(c.g[k_p])
    v = q.T @ c.u
    between = d > 1e-9 * max(float(d.max()), 1.0)
    n_within = int(np.sum(~between))
    lam_w = float(np.sum(v[~between] ** 2)) / rng.chisquare(n_within, len(lam_e))
    s_run = np.maximum(lam_w - lam_e / c.n_inst, 0.0)
    s_p = _solve_level_variance(v[between], d[between], lam_w, rng.chisquare(int(np.sum(between)), len(lam_e)))
    return {c.names[k_p]: s_p, c.names[k_run]: s_run}


def gpq_draws(c: Complete, n_draws: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Share draws from the generalised pivotal quantities of the variances: ``s_e = SS_E / chi2``;
    ``s_a = (SS_I / chi2 - s_e) / R`` floored at 0; a run-level component's ``s`` solves its
    contrasts' sum of squares ``= chi2(L - 1)`` (``per_run_component`` designs: see ``_nested_draws``)."""
    k_run = per_run_component(c)
    if k_run is not None:
        ss_e, df_e = c.ss_err, c.df_err
    else:
        ss_e, df_e, v, d = _pivot_parts(c)
    lam_e = ss_e / rng.chisquare(df_e, n_draws)
    var = {INSTANCE: np.maximum(c.ss_inst / rng.chisquare(c.df_inst, n_draws) - lam_e, 0.0) / c.n_runs}
    if k_run is not None:
        var.update(_nested_draws(c, k_run, lam_e, rng))
    elif c.names:
        var[c.names[0]] = _solve_level_variance(v, d, lam_e / c.n_inst, rng.chisquare(len(v), n_draws))
    var[RESIDUAL] = lam_e
    total = sum(var.values())
    return {k: x / total for k, x in var.items()}


def _converged_shares(refits: Iterable[Fit | None]) -> tuple[dict[str, np.ndarray], int]:
    """The shares of every converged refit, and how many did not converge (left out)."""
    out: dict[str, list[float]] = {}
    failed = 0
    for refit in refits:
        if refit is None or not refit.converged:
            failed += 1
            continue
        for k, v in shares(refit.variance).items():
            out.setdefault(k, []).append(v)
    return {k: np.array(v) for k, v in out.items()}, failed


def parametric_draws(c: Complete, fit: Fit, n_draws: int, rng: np.random.Generator) -> tuple[dict[str, np.ndarray], int]:
    """Share draws from refits of statistics simulated from ``fit`` (complete designs); and how
    many refits did not converge (left out)."""
    s2 = c.scale ** 2
    p = np.array([fit.variance[INSTANCE], *(fit.variance[n] for n in c.names), fit.variance[RESIDUAL]]) / s2
    lam = c.n_runs * p[0] + p[-1]
    m = np.tensordot(p[1:-1], c.g, axes=1) + (p[-1] / c.n_inst) * np.eye(c.n_runs - 1)
    chol = np.linalg.cholesky(m)
    return _converged_shares(fit_fast(Complete(
        c.names, c.n_inst, c.n_runs, float(lam * rng.chisquare(c.df_inst)), float(p[-1] * rng.chisquare(c.df_err)),
        chol @ rng.standard_normal(c.n_runs - 1), c.g, 1.0, c.run_levels, c.run_mean)) for _ in range(n_draws))


def mixedlm_draws(obs: Observations, fit: Fit, n_draws: int, rng: np.random.Generator) -> tuple[dict[str, np.ndarray], int]:
    """Share draws from statsmodels refits of data simulated from ``fit`` (designs that are not complete)."""
    groups = obs.groups()
    codes = {k: np.unique(v, return_inverse=True)[1] for k, v in groups.items()}

    def refit() -> Fit | None:
        y = rng.normal(0.0, np.sqrt(fit.variance[RESIDUAL]), len(obs.y))
        for k, code in codes.items():
            y += rng.normal(0.0, np.sqrt(fit.variance[k]), code.max() + 1)[code]
        try:
            return fit_mixedlm(y, groups)
        except UnfittableError:
            return None

    return _converged_shares(refit() for _ in range(n_draws))


def percentile_intervals(estimate: Mapping[str, float], draws: Mapping[str, np.ndarray],
                         level: float) -> dict[str, list[float]]:
    """Percentile interval of each share's draws, widened to contain the estimate (a refit or
    pivot can put both percentiles on one side of a share estimated at exactly 0)."""
    alpha = (1 - level) / 2
    out = {}
    for k, v in draws.items():
        if len(v) == 0:
            continue
        lo, hi = float(np.quantile(v, alpha)), float(np.quantile(v, 1 - alpha))
        out[k] = [max(min(lo, estimate[k]), 0.0), min(max(hi, estimate[k]), 1.0)]
    return out


def share_draws(obs: Observations, fit: Fit, n_draws: int, seed: int,
                method: str | None = None) -> tuple[dict[str, np.ndarray], int, str]:
    """Draws of every share by ``method``, refits that failed, and the method used. Default:
    ``gpq`` where the pivots are independent (complete design with at most one run-level
    component, or two of which one has a level per run), ``parametric`` otherwise."""
    rng = np.random.default_rng(seed)
    mat = as_matrix(obs)
    if mat is None:
        return (*mixedlm_draws(obs, fit, n_draws, rng), "parametric")
    c = complete_stats(*mat)
    if method is None:
        method = "gpq" if len(obs.levels) <= 1 or per_run_component(c) is not None else "parametric"
    if method == "gpq":
        return gpq_draws(c, max(n_draws, GPQ_MIN_DRAWS), rng), 0, "gpq"
    return (*parametric_draws(c, fit, n_draws, rng), "parametric")


def fit_of(obs: Observations) -> tuple[Fit, Complete | None]:
    mat = as_matrix(obs)
    if mat is None:
        return fit_mixedlm(obs.y, obs.groups()), None
    c = complete_stats(*mat)
    return fit_complete(c), c


def attribute(obs: Observations, n_boot: int, seed: int, where: str, method: str | None = None) -> dict[str, Any]:
    """Variance, share and intervals of every component of one (model, dataset); a fit that did
    not converge gives its reason and no numbers (``not_converged``)."""
    check_estimable(obs, where)
    fit, c = fit_of(obs)
    out: dict[str, Any] = {"n_instances": len(set(obs.instance.tolist())), "n_runs": len(set(obs.run.tolist())),
                           "n_scores": len(obs.y), "bootstrap": n_boot, "optimiser": fit.optimiser,
                           "boundary": list(fit.boundary), "fit_path": "complete" if c is not None else "mixedlm"}
    if not fit.converged:
        out["not_converged"] = fit.reason
        return out
    share = shares(fit.variance)
    out.update(variance=fit.variance, share=share, reml_loglik=fit.loglik)
    if n_boot > 0:
        draws, failed, used = share_draws(obs, fit, n_boot, seed, method)
        for level in LEVELS:
            out[f"share_ci{round(100 * level)}"] = percentile_intervals(share, draws, level)
        out.update(ci_method=used, draws_failed=failed)
    return out

