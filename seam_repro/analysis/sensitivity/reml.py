"""REML variance components that are right or say so.

Complete designs (every instance scored once in every run, the common case) are fitted here by an
exact REML likelihood that needs no n x n matrix. Write ``Y`` as instances x runs. An orthonormal
transform over instances splits the error contrasts into three independent parts:

* the instance means' spread, ``SS_I`` on ``I - 1`` df, variance ``R s_a + s_e``;
* the instance x run interaction, ``SS_E`` on ``(I - 1)(R - 1)`` df, variance ``s_e``;
* the ``R - 1`` contrasts ``u`` of the run means, covariance ``M = sum_k s_k G_k + (s_e / I) 1``
  with ``G_k`` the contrasts of component ``k``'s level indicator ``Z_k Z_k'``.

so ``-2 log L = df_I log(R s_a + s_e) + SS_I / (R s_a + s_e) + df_E log s_e + SS_E / s_e
+ log det M + u' M^-1 u`` (plus a constant), with an analytic gradient. It equals statsmodels'
``MixedLM`` REML fit (``tests/test_sensitivity.py``); other designs are fitted by ``MixedLM``.

Near a variance of 0 a gradient optimiser stops short of the optimum, so every fit takes the best
of several optimisers, refits each component at 0, and must meet the optimum's conditions or come
back ``converged=False`` with the reason (docs/sensitivity.md, "Fits that are right or say so").
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from seam_repro.analysis.sensitivity.design import INSTANCE, RESIDUAL, Observations
from seam_repro.errors import PrerequisiteError

GRAD_TOL = 1e-4
"""Largest |d(-2 log L)/d log s| inside, and largest negative d(-2 log L)/d s at 0, on data scaled to
unit variance, for a fit to count as converged."""
LOGLIK_TOL = 1e-8
"""A model without a component is kept when its -2 log L is within this of the full model's, or when
it is within ``BOUNDARY_SLACK`` and the optimum's conditions hold at 0 (the full model's optimiser
then stopped short of the boundary)."""
BOUNDARY_SLACK = 1e-3


class UnfittableError(ValueError):
    """The mixed model has no unique fit on these scores (reported per cell, never a crash)."""


@dataclass(frozen=True)
class Fit:
    """One REML fit: variances (score units squared) and how far they can be trusted."""

    variance: dict[str, float]
    loglik: float
    """REML log-likelihood up to a constant of the data (comparable between fits of the same data)."""
    converged: bool
    reason: str = ""
    """Why the fit is not trusted (empty when converged)."""
    boundary: tuple[str, ...] = ()
    """Components whose REML estimate is 0 (the model without them fits as well)."""
    optimiser: str = ""
    tried: dict[str, float] = field(default_factory=dict)
    """-2 log L each optimiser reached (scaled data); the kept fit is the smallest."""


@dataclass(frozen=True)
class Complete:
    """Sufficient statistics of a complete design, scaled to unit variance (see the module docstring)."""

    names: tuple[str, ...]
    n_inst: int
    n_runs: int
    ss_inst: float
    ss_err: float
    u: np.ndarray
    g: np.ndarray
    """(K, R-1, R-1): the run-mean contrasts of each component's indicator."""
    scale: float
    run_levels: tuple[np.ndarray, ...]
    """Per component, the level index of every run (0..L-1)."""
    run_mean: np.ndarray
    """The runs' mean scaled scores (``u`` are their contrasts)."""
    eig: tuple[np.ndarray, np.ndarray] | None = None
    """With one run-level component: ``G``'s eigenvalues ``d`` and ``u`` in its eigenbasis, so that
    the contrasts are independent with variances ``s_1 d + s_e / I`` (the likelihood is then a sum)."""

    @property
    def df_inst(self) -> int:
        return self.n_inst - 1

    @property
    def df_err(self) -> int:
        return (self.n_inst - 1) * (self.n_runs - 1)


def complete_stats(y: np.ndarray, run_levels: Mapping[str, np.ndarray]) -> Complete:
    """Statistics of an instances x runs score matrix ``y`` and each component's level per run."""
    from scipy.linalg import helmert

    n_inst, n_runs = y.shape
    scale = float(np.std(y)) or 1.0
    z = (y - y.mean()) / scale
    inst_mean, run_mean = z.mean(axis=1), z.mean(axis=0)
    ss_inst = float(n_runs * np.sum((inst_mean - inst_mean.mean()) ** 2))
    inter = z - inst_mean[:, None] - run_mean[None, :] + z.mean()
    h = helmert(n_runs)  # x R, orthonormal rows orthogonal to the ones vector
    g, codes = [], []
    for lv in run_levels.values():
        _, code = np.unique(np.asarray(lv), return_inverse=True)
        ind = np.zeros((n_runs, code.max() + 1))
        ind[np.arange(n_runs), code] = 1.0
        hz = h @ ind
        g.append(hz @ hz.T)
        codes.append(code)
    u = h @ run_mean
    eig = None
    if len(g) == 1:
        d, q = np.linalg.eigh(g[0])
        eig = (np.clip(d, 0.0, None), q.T @ u)
    return Complete(tuple(run_levels), n_inst, n_runs, ss_inst, float(np.sum(inter ** 2)), u,
                    np.array(g).reshape(len(g), n_runs - 1, n_runs - 1), scale, tuple(codes), run_mean, eig)


def objective(c: Complete, p: np.ndarray) -> tuple[float, np.ndarray]:
    """-2 REML log-likelihood (up to a constant) and its gradient at ``p = (s_a, s_1..s_K, s_e)``."""
    s_a, s_k, s_e = p[0], p[1:-1], max(p[-1], 1e-12)
    lam = c.n_runs * s_a + s_e
    f = c.df_inst * np.log(lam) + c.ss_inst / lam + c.df_err * np.log(s_e) + c.ss_err / s_e
    d_lam = c.df_inst / lam - c.ss_inst / lam ** 2
    grad = np.empty_like(p)
    grad[0] = c.n_runs * d_lam
    g_e = d_lam + c.df_err / s_e - c.ss_err / s_e ** 2
    if len(s_k) <= 1:  # at most one run-level component: M is diagonal in a fixed basis
        d, v = c.eig if c.eig is not None else (np.zeros(c.n_runs - 1), c.u)
        m = (s_k[0] if len(s_k) else 0.0) * d + s_e / c.n_inst
        if np.any(m <= 0):
            return np.inf, np.zeros_like(p)
        q = v ** 2 / m
        dm = 1.0 / m - q / m  # d/dm of log m + v^2/m, per contrast
        if len(s_k):
            grad[1] = float(np.sum(dm * d))
        grad[-1] = g_e + float(np.sum(dm)) / c.n_inst
        return float(f + float(np.sum(np.log(m)) + np.sum(q))), grad
    m = np.tensordot(s_k, c.g, axes=1) + (s_e / c.n_inst) * np.eye(c.n_runs - 1)
    try:
        chol = np.linalg.cholesky(m)
    except np.linalg.LinAlgError:
        return np.inf, np.zeros_like(p)
    m_inv = np.linalg.inv(m)
    w = m_inv @ c.u
    for k in range(len(s_k)):
        grad[1 + k] = np.sum(m_inv * c.g[k]) - float(w @ c.g[k] @ w)
    grad[-1] = g_e + (np.trace(m_inv) - float(w @ w)) / c.n_inst
    return float(f + 2 * np.sum(np.log(np.diag(chol))) + float(c.u @ w)), grad


def moment_start(c: Complete) -> np.ndarray:
    """ANOVA-like starting point: each variance from its mean square, floored above 0."""
    s_e = c.ss_err / max(c.df_err, 1)
    s_a = max((c.ss_inst / max(c.df_inst, 1) - s_e) / c.n_runs, 0.05)
    s_k = [max(float(c.u @ c.u) / max(c.n_runs - 1, 1) / max(len(c.names), 1), 0.05) for _ in c.names]
    return np.array([s_a, *s_k, max(s_e, 1e-3)])


def _minimise(c: Complete, start: np.ndarray, method: str, fixed: frozenset[int] = frozenset()) -> np.ndarray:
    """One optimiser's optimum from ``start``; indices in ``fixed`` held at 0."""
    from scipy.optimize import minimize

    n = len(start)
    free = [j for j in range(n) if j not in fixed]

    def full(q: np.ndarray) -> np.ndarray:
        p = np.zeros(n)
        p[free] = q
        return p

    if method == "nelder-mead":  # unconstrained on square roots, so 0 is reachable
        res = minimize(lambda r: objective(c, full(r ** 2))[0], np.sqrt(start[free]), method="Nelder-Mead",
                       options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 4000 * n})
        return full(res.x ** 2)
    bounds = [(0.0, None)] * (len(free) - 1) + [(1e-10, None)]
    if method == "powell":
        res = minimize(lambda q: objective(c, full(q))[0], start[free], method="Powell", bounds=bounds,
                       options={"xtol": 1e-10, "ftol": 1e-13, "maxiter": 20000})
        return full(res.x)

    def fg(q: np.ndarray) -> tuple[float, np.ndarray]:
        f, g = objective(c, full(q))
        return f, g[free]

    res = minimize(fg, start[free], jac=True, method="L-BFGS-B", bounds=bounds,
                   options={"ftol": 1e-15, "gtol": 1e-10, "maxiter": 2000})
    return full(res.x)


def kkt_violation(c: Complete, p: np.ndarray) -> float:
    """How far ``p`` is from a constrained optimum: the largest |gradient on the log scale| of a
    positive variance, or negative gradient of one at 0 (0 at an exact optimum)."""
    _, g = objective(c, p)
    worst = 0.0
    for j in range(len(p)):
        worst = max(worst, abs(g[j] * p[j]) if p[j] > 1e-9 else max(-g[j], 0.0))
    return worst


def fit_complete(c: Complete, optimisers: tuple[str, ...] = ("l-bfgs-b", "powell", "nelder-mead")) -> Fit:
    """REML fit of a complete design: the best of ``optimisers``, then every component tried at 0."""
    start = moment_start(c)
    tried: dict[str, float] = {}
    best_p, best_f, best_name = start, np.inf, ""
    for name in optimisers:
        p = _minimise(c, start, name)
        f = objective(c, p)[0]
        tried[name] = f
        if f < best_f:
            best_p, best_f, best_name = p, f, name
    fixed: set[int] = set()
    for j in np.argsort(best_p[:-1]):  # smallest variance first
        trial = frozenset(fixed | {int(j)})
        p = _minimise(c, np.where([k in trial for k in range(len(best_p))], 0.0, np.maximum(best_p, 1e-3)),
                      "l-bfgs-b", trial)
        f = objective(c, p)[0]
        if f <= best_f + LOGLIK_TOL or (f <= best_f + BOUNDARY_SLACK and kkt_violation(c, p) <= GRAD_TOL):
            fixed, best_p, best_f = set(trial), p, min(f, best_f)
            best_name = best_name if "without" in best_name else f"{best_name}, then without"
    return _checked(c, best_p, best_f, best_name, tried, fixed)


def _checked(c: Complete, p: np.ndarray, f: float, name: str, tried: dict[str, float], fixed: set[int]) -> Fit:
    names = (INSTANCE, *c.names)
    p = p.copy()
    p[list(fixed)] = 0.0
    violation = kkt_violation(c, p)
    reason = "" if violation <= GRAD_TOL else (
        f"no optimiser reached the REML optimum: gradient {violation:.2g} (tolerance {GRAD_TOL:g}); "
        f"-2 log L by optimiser: " + ", ".join(f"{k} {v:.6f}" for k, v in tried.items()))
    s2 = c.scale ** 2
    variance = {INSTANCE: float(p[0]) * s2, **{name: float(v) * s2 for name, v in zip(c.names, p[1:-1], strict=True)},
                RESIDUAL: float(p[-1]) * s2}
    return Fit(variance, -0.5 * f, not reason, reason,
               tuple(names[j] for j in range(len(names)) if p[j] == 0.0), name, tried)


def fit_fast(c: Complete) -> Fit:
    """One optimiser and the zero check only (bootstrap refits, where speed matters more than a
    second opinion); still marked when the optimum's conditions fail."""
    p = _minimise(c, moment_start(c), "l-bfgs-b")
    fixed = {j for j in range(len(p) - 1) if p[j] < 1e-9}
    return _checked(c, p, objective(c, p)[0], "l-bfgs-b", {}, fixed)


def as_matrix(obs: Observations) -> tuple[np.ndarray, dict[str, np.ndarray]] | None:
    """Instances x runs scores and each component's level per run, or None if any (instance, run)
    is missing or scored twice (then the general fit is used)."""
    insts, i_code = np.unique(obs.instance, return_inverse=True)
    runs, r_code = np.unique(obs.run, return_inverse=True)
    if len(obs.y) != len(insts) * len(runs):
        return None
    y = np.full((len(insts), len(runs)), np.nan)
    y[i_code, r_code] = obs.y
    if np.isnan(y).any():
        return None
    levels = {name: np.array([str(lv[int(r)]) for r in runs]) for name, lv in obs.levels.items()}
    return y, levels


def shares(variances: Mapping[str, float]) -> dict[str, float]:
    total = sum(variances.values())
    return {k: (v / total if total > 0 else 0.0) for k, v in variances.items()}


# --- the general path: statsmodels MixedLM -----------------------------------------------------------

MIXEDLM_METHODS = ("bfgs", "lbfgs", "powell", "nm")


def _mixedlm(y: np.ndarray, groups: Mapping[str, np.ndarray]) -> Any:
    try:
        from statsmodels.regression.mixed_linear_model import MixedLM, VCSpec
    except ImportError as exc:
        raise PrerequisiteError("sensitivity needs statsmodels: pip install 'seam-repro[sensitivity]'") from exc
    n = len(y)
    names, colnames, mats = [], [], []
    for name, labels in groups.items():
        uniq, inverse = np.unique(np.asarray(labels), return_inverse=True)
        z = np.zeros((n, len(uniq)))
        z[np.arange(n), inverse] = 1.0
        names.append(name)
        colnames.append([[str(u) for u in uniq]])
        mats.append([z])
    return MixedLM(np.asarray(y, dtype=float), np.ones((n, 1)), np.zeros(n), exog_vc=VCSpec(names, colnames, mats))


def _one_mixedlm(y: np.ndarray, groups: Mapping[str, np.ndarray], method: str) -> tuple[Any, str]:
    """One statsmodels fit and its warning text ('' when silent); None when it cannot be fitted."""
    model = _mixedlm(y, groups)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            fit = model.fit(reml=True, method=method, **({"gtol": 1e-10} if method == "bfgs" else {}))
        except (np.linalg.LinAlgError, ValueError):
            return None, "singular information matrix"
    return fit, "; ".join(sorted({str(w.message).splitlines()[0] for w in caught}))


def fit_mixedlm(y: np.ndarray, groups: Mapping[str, np.ndarray]) -> Fit:
    """statsmodels REML by several optimisers (best likelihood kept), each component also refitted
    without it; not converged when the kept fit is not (its warning is the reason)."""
    y = np.asarray(y, dtype=float)
    scale = float(np.std(y)) or 1.0
    z = (y - y.mean()) / scale
    best, best_warn, tried = None, "", {}
    for method in MIXEDLM_METHODS:
        fit, warn = _one_mixedlm(z, groups, method)
        if fit is not None:
            tried[method] = -2 * float(fit.llf)
            tol = 1e-6  # statsmodels' optimisers agree to about this on the log-likelihood
            better = best is None or fit.llf > best[0].llf + tol
            as_good_and_cleaner = best is not None and fit.llf >= best[0].llf - tol and best_warn and not warn
            if better or as_good_and_cleaner:
                best, best_warn = (fit, method, list(groups)), warn
    if best is None:
        raise UnfittableError(f"components {', '.join(groups)} cannot be separated on these scores "
                              "(singular information matrix)")
    for name in list(groups):
        sub = {k: v for k, v in groups.items() if k != name and k in best[2]}
        if len(sub) == len(best[2]) or not sub:
            continue
        fit, warn = _one_mixedlm(z, sub, "lbfgs")
        if fit is not None and fit.llf >= best[0].llf - 1e-6:
            best, best_warn = (fit, f"{best[1]}, then without {name}", list(sub)), warn
    fit, name, kept = best
    vc = dict(zip(kept, np.atleast_1d(fit.vcomp), strict=True))
    variance = {k: max(float(vc.get(k, 0.0)), 0.0) * scale ** 2 for k in groups}
    variance[RESIDUAL] = float(fit.scale) * scale ** 2
    ok = bool(fit.converged) and "converge" not in best_warn.lower()
    return Fit(variance, float(fit.llf), ok, "" if ok else f"statsmodels MixedLM ({name}): {best_warn or 'not converged'}",
               tuple(k for k in groups if variance[k] == 0.0), name, tried)

