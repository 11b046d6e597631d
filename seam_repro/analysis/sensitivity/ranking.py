"""Ranking statements: how sure is "A ranks above B", and how many runs make a ranking stable.

``P(A above B)`` is about a fresh study of the same design: R new runs (new draws of every
run-level choice; the runs are shared by all models, as one manifest's runs are), and whether A's
mean over them is above B's. With ``d_r`` the per-run difference A - B (pairing removes what the
runs share), a fresh study's mean difference is ``N(delta, sigma^2 / R)``, so the probability is
``pi = Phi(delta sqrt(R) / sigma)``. Two statements are reported:

* ``p_above``: the predictive probability given this study, ``T_{R-1}(mean d / (s sqrt(2 / R)))``
  (the fresh mean minus this one is ``t``-distributed with that scale): calibrated in the sense
  that among pairs given ``p`` a fresh study ranks A above B a share ``p`` of the time;
* ``p_above_ci95``: an exact 95 % interval on ``pi`` itself, from the noncentral ``t`` of
  ``mean d / (s / sqrt(R))`` (``pi`` is a fixed number for a fixed margin, and one study cannot
  pin it down when the margin is near the noise: the interval says how far it can be trusted).

``benchmarks/bench_sensitivity.py --ranking`` measures both against simulated fresh studies
(docs/sensitivity.md). Agreement against runs is a bootstrap (``ranking_agreement``).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

NCP_RANGE = 8.0
"""Noncentralities beyond this give a probability within 1e-15 of 0 or 1, so the interval's ends are
searched in [-8, 8] (scipy's noncentral t is also unstable far beyond it)."""


def _root(f: object, increasing: bool) -> float:
    """The root of a monotone ``f`` in [-NCP_RANGE, NCP_RANGE], clamped to the range's end."""
    from scipy.optimize import brentq

    lo, hi = -NCP_RANGE, NCP_RANGE
    f_lo, f_hi = f(lo), f(hi)  # type: ignore[operator]
    if (f_lo >= 0) == increasing:
        return lo
    if (f_hi <= 0) == increasing:
        return hi
    return float(brentq(f, lo, hi))  # type: ignore[arg-type]


def _ncp_interval(t_obs: float, df: int, level: float) -> tuple[float, float]:
    """Exact interval on the noncentrality of a noncentral t observed at ``t_obs``."""
    from scipy.stats import nct

    alpha = (1 - level) / 2
    # scipy gives nan far in a tail; there the probability is 0 or 1 by which side t_obs lies on
    lo = _root(lambda n: float(np.nan_to_num(nct.sf(t_obs, df, n), nan=float(t_obs < n))) - alpha, increasing=True)
    hi = _root(lambda n: float(np.nan_to_num(nct.cdf(t_obs, df, n), nan=float(t_obs > n))) - alpha, increasing=False)
    return lo, hi


def pair_probability(diff: np.ndarray, level: float = 0.95) -> tuple[float, list[float]]:
    """Predictive P(a fresh study ranks A above B) and an interval on the fixed-design probability,
    from the per-run differences A - B."""
    from scipy.stats import norm, t

    r = len(diff)
    mean, sd = float(np.mean(diff)), float(np.std(diff, ddof=1))
    if sd <= 1e-12 * max(1.0, abs(mean)):
        p = 1.0 if mean > 0 else 0.0 if mean < 0 else 0.5
        return p, [p, p]
    p = float(t.cdf(mean / (sd * np.sqrt(2.0 / r)), r - 1))
    lo, hi = _ncp_interval(mean / (sd / np.sqrt(r)), r - 1, level)
    return p, [float(norm.cdf(lo)), float(norm.cdf(hi))]


def ranking_probabilities(run_scores: Mapping[str, np.ndarray],
                          level: float = 0.95) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, list[float]]]]:
    """``(P, CI)``: ``P[a][b]`` the predictive probability that a fresh study ranks ``a`` above
    ``b``, ``CI[a][b]`` the interval on the fixed-design probability. Every model's array holds
    the same runs in the same order (one manifest)."""
    models = list(run_scores)
    p: dict[str, dict[str, float]] = {m: {} for m in models}
    ci: dict[str, dict[str, list[float]]] = {m: {} for m in models}
    for i, a in enumerate(models):
        for b in models[i + 1:]:
            pab, ci_ab = pair_probability(np.asarray(run_scores[a]) - np.asarray(run_scores[b]), level)
            p[a][b], p[b][a] = pab, 1.0 - pab
            ci[a][b], ci[b][a] = ci_ab, [1.0 - ci_ab[1], 1.0 - ci_ab[0]]
    return p, ci


def ranking_agreement(run_scores: Mapping[str, np.ndarray], n_boot: int, seed: int) -> list[dict[str, float]]:
    """For k = 1..R runs: mean Kendall tau (scipy) between the ranking by k resampled runs and by
    all runs, and how often the two rankings are identical."""
    from scipy.stats import kendalltau

    models = list(run_scores)
    scores = np.vstack([run_scores[m] for m in models])
    full = scores.mean(axis=1)
    full_order = np.argsort(-full, kind="stable")
    rng = np.random.default_rng(seed)
    curve = []
    for k in range(1, scores.shape[1] + 1):
        subs = scores[:, rng.integers(0, scores.shape[1], size=(n_boot, k))].mean(axis=2).T  # n_boot x models
        taus = [kendalltau(sub, full).statistic for sub in subs]
        taus = [1.0 if np.isnan(x) else float(x) for x in taus]  # nan: every mean tied, as the full ranking
        same = int(np.sum(np.all(np.argsort(-subs, axis=1, kind="stable") == full_order[None, :], axis=1)))
        curve.append({"runs": k, "kendall_tau": float(np.mean(taus)), "same_ranking": same / n_boot})
    return curve
