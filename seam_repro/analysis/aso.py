"""Almost Stochastic Order (ASO) ranking, average rank (AR) and ARSD.

Port of upstream SEAM ``scripts/evaluation/ASD.py`` (the Dror et al. 2019 script: ``calc_dominance``),
the ranking part of ``scripts/evaluation/statistical_analysis.py`` (pairwise ``tab``, summed-epsilon
ranking, dominance column) and ``scripts/evaluation/compare_models.py`` (AR, ARSD).

Semantics kept on purpose (each matters for matching the paper's numbers):

* ``epsilon`` integrates on the grid ``np.arange(0, 1, dp)`` with the empirical quantile function
  ``F[ceil(p*n) - 1]`` (``F[0]`` at ``p*n == 0``) and returns 0.0 when the denominator is 0, so two
  *identical* samples give epsilon 0 (each "dominates" the other), not 0.5. This quirk is upstream's.
* sigma is ``np.std`` (ddof=0) of B bootstrap epsilons, each computed from N and M draws from the
  empirical quantile functions, and ``eps_min = clip(eps - sigma * ppf(alpha) / sqrt(N*M/(N+M)), 0, 1)``
  with N = M = 1000 (the bootstrap sizes, not the number of runs).
* ``tab[a][b] = round(eps_min(a > b), 2)`` and ``tab[b][a] = 1 - tab[a][b]`` (the reverse is not
  recomputed); pairs are visited in the order the models are given, the earlier model as ``a``.
* ARSD as published divides the (mean, std) that ``ranking_asd.csv`` stores, i.e. x100 and rounded
  to 0.1 on the scale of upstream's ``results.json`` (``UPSTREAM_SCALE``, ``upstream_stored``), and
  skips a dataset whose stored mean is not > 0; ``stability(..., "unrounded")`` is the clean one.

What differs: upstream draws from the unseeded global ``np.random``; here every pair gets its own
``numpy.random.Generator`` derived from a recorded root seed and the (dataset, a, b) names, so a
table is repeatable and adding a model does not change the other pairs. The bootstrap is vectorised
(counts per atom instead of sorting 1000 draws), which gives the same distribution of epsilons.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

DP = 0.005
N_DRAWS = 1000
B_ITERATIONS = 1000
ALPHA = 0.05
DEFAULT_SEED = 42


@dataclass(frozen=True)
class AsoParams:
    """The constants of upstream ``calc_dominance`` plus the root seed this kit records."""

    dp: float = DP
    n: int = N_DRAWS
    m: int = N_DRAWS
    b: int = B_ITERATIONS
    alpha: float = ALPHA
    seed: int = DEFAULT_SEED

    def as_dict(self) -> dict[str, float | int]:
        return {"dp": self.dp, "N": self.n, "M": self.m, "B": self.b, "alpha": self.alpha, "seed": self.seed}


@dataclass(frozen=True)
class AsoResult:
    epsilon: float
    """Point estimate on the observed samples (upstream ``eps_FnGm``)."""
    sigma: float
    """Population std of the bootstrap epsilons."""
    eps_min: float
    """Minimal epsilon for which A is almost stochastically greater than B (small = A better)."""


def quantile_index(p: np.ndarray, n: int) -> np.ndarray:
    """0-based index used by upstream ``invF``: ``ceil(p*n)-1``, clipped to ``[0, n-1]``."""
    x = np.asarray(p, dtype=float) * n
    np.ceil(x, out=x)  # in place: the bootstrap calls this on B x N arrays
    np.clip(x, 1, n, out=x)
    x -= 1
    return x.astype(np.intp)


def epsilon(a: Sequence[float], b: Sequence[float], dp: float = DP) -> float:
    """Upstream ``epsilon(dp)`` with F = sorted A and G = sorted B: the share of the squared
    quantile distance where B lies above A. Accumulated in upstream's order so it is bit-equal."""
    f, g = np.sort(np.asarray(a, dtype=float)), np.sort(np.asarray(b, dtype=float))
    p = np.arange(0, 1, dp)
    diff = g[quantile_index(p, len(g))] - f[quantile_index(p, len(f))]
    s = se = 0.0
    for d in diff.tolist():
        pos = max(d, 0)
        s = s + d * d * dp
        se = se + pos * pos * dp
    return se / s if s != 0 else 0.0


def _resampled_quantiles(atoms: np.ndarray, u: np.ndarray, grid_idx: np.ndarray) -> np.ndarray:
    """Quantiles at ``grid_idx`` of each row's sorted resample ``atoms[quantile_index(u)]``.

    Sorting a resample of sorted atoms only groups equal atom indices, so the value at sorted
    position j is the first atom whose cumulative count exceeds j. The counts are one bincount of
    ``ceil(u*n)`` (0 only for u == 0, which ``quantile_index`` clips to the first atom, as the
    cumulative sum does here); along the sorted grid a row's atom steps up where the grid reaches a
    cumulative count, so the answer is a cumulative sum of those steps."""
    rows, n, grid = len(u), len(atoms), len(grid_idx)
    bins = np.ceil(u * n).astype(np.intp)
    bins += np.arange(0, rows * (n + 1), n + 1)[:, None]
    cum = np.bincount(bins.ravel(), minlength=rows * (n + 1)).reshape(rows, n + 1).cumsum(axis=1)[:, 1:]
    steps = np.searchsorted(grid_idx, cum, side="left")  # atom j+1 starts at the first grid point >= cum[j]
    steps += np.arange(0, rows * (grid + 1), grid + 1)[:, None]
    pos = np.bincount(steps.ravel(), minlength=rows * (grid + 1)).reshape(rows, grid + 1).cumsum(axis=1)
    return atoms[pos[:, :grid]]


def bootstrap_epsilons(
    a: Sequence[float], b: Sequence[float], rng: np.random.Generator, params: AsoParams = AsoParams()
) -> np.ndarray:
    """B epsilons of upstream's bootstrap loop; each iteration draws N then M uniforms, as upstream."""
    f, g = np.sort(np.asarray(a, dtype=float)), np.sort(np.asarray(b, dtype=float))
    p = np.arange(0, 1, params.dp)
    u = rng.random((params.b, params.n + params.m))
    fq = _resampled_quantiles(f, u[:, : params.n], quantile_index(p, params.n))
    gq = _resampled_quantiles(g, u[:, params.n :], quantile_index(p, params.m))
    d = gq - fq
    denom = (d * d * params.dp).sum(axis=1)
    numer = (np.maximum(d, 0) ** 2 * params.dp).sum(axis=1)
    out = np.zeros(params.b)
    np.divide(numer, denom, out=out, where=denom != 0)
    return out


def eps_min_from(eps: float, sigma: float, params: AsoParams = AsoParams()) -> float:
    """The upstream confidence bound: ``clip(eps - (1/const) * sigma * ppf(alpha), 0, 1)``."""
    from scipy.special import ndtri  # what scipy.stats.norm.ppf computes, without importing scipy.stats

    const = np.sqrt((1.0 * params.n * params.m) / (params.n + params.m + 0.0))
    return float(min(max(eps - (1 / const) * sigma * ndtri(params.alpha), 0.0), 1.0))


def aso(
    a: Sequence[float], b: Sequence[float], rng: np.random.Generator, params: AsoParams = AsoParams()
) -> AsoResult:
    """eps_min for "A is almost stochastically greater than B" (upstream ``calc_dominance``)."""
    if len(a) == 0 or len(b) == 0:
        raise ValueError("ASO needs at least one score per model")
    if not (np.isfinite(np.asarray(a, dtype=float)).all() and np.isfinite(np.asarray(b, dtype=float)).all()):
        # NaN compares false everywhere: eps_min would be NaN and every ranking sum NaN (input order)
        raise ValueError("ASO needs finite scores (rank_models leaves NaN runs out and lists them)")
    eps = epsilon(a, b, params.dp)
    sigma = float(np.std(bootstrap_epsilons(a, b, rng, params)))
    return AsoResult(eps, sigma, eps_min_from(eps, sigma, params))


def pair_rng(seed: int, dataset: str, a: str, b: str) -> np.random.Generator:
    """Independent generator per (dataset, a, b) derived from the root seed by hashing the names."""
    digest = hashlib.sha256(f"{dataset}\0{a}\0{b}".encode()).digest()
    key = tuple(int.from_bytes(digest[i : i + 4], "big") for i in range(0, 16, 4))
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=key))


KNOWN_PAIRS = "data/reference/aso_pairs.json"
"""The paper's models paired with each other as every ``--reference paper`` report pairs them
(written by ``make aso-pairs``, tools/make_aso_pairs.py): the same 120 pairs in every report, most
of its bootstrap work, so they are computed once, when the kit is built."""


def pair_digest(dataset: str, a: str, b: str, a_runs: Sequence[float], b_runs: Sequence[float],
                params: AsoParams) -> str:
    """sha256 of everything a pair's result depends on: the names (they seed its generator), both
    samples (exact, as hex floats) and the constants."""
    doc = [dataset, a, b, [float(x).hex() for x in a_runs], [float(x).hex() for x in b_runs], params.as_dict()]
    return hashlib.sha256(json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8")).hexdigest()


@lru_cache(maxsize=1)
def known_pairs() -> dict[str, tuple[float, float]]:
    """digest -> (epsilon, sigma) of :data:`KNOWN_PAIRS` (floats as JSON writes them: exact)."""
    from importlib import resources

    doc = json.loads(resources.files("seam_repro").joinpath(KNOWN_PAIRS).read_text("utf-8"))
    return {digest: (float(eps), float(sigma)) for digest, (eps, sigma) in doc["pairs"].items()}


@lru_cache(maxsize=4096)
def pair_aso(dataset: str, a: str, b: str, a_runs: tuple[float, ...], b_runs: tuple[float, ...],
             params: AsoParams = AsoParams()) -> AsoResult:
    """:func:`aso` of one named pair with its own generator (:func:`pair_rng`), or the same result
    read from :func:`known_pairs`. Remembered: a report ranks a dataset twice when it has ‡ rows
    (comparable models, then every model), and a pair's result depends only on what the key holds,
    so the second ranking reuses the first's pairs."""
    known = known_pairs().get(pair_digest(dataset, a, b, a_runs, b_runs, params))
    if known is not None:
        return AsoResult(known[0], known[1], eps_min_from(known[0], known[1], params))
    return aso(a_runs, b_runs, pair_rng(params.seed, dataset, a, b), params)


@dataclass(frozen=True)
class Ranking:
    """One dataset's ASO ranking, shaped like upstream ``ranking_asd.csv``."""

    dataset: str
    order: list[str]
    """Models, best first (ascending summed epsilon; ties keep the given model order)."""
    dominance: list[float | None]
    """``1 - tab[r_i][r_{i+1}]``, ``None`` for the last model."""
    sums: dict[str, float]
    table: dict[str, dict[str, float]]
    """``tab[a][b]`` as upstream builds it (rounded eps_min for computed pairs, 1 - that reversed)."""
    pairs: list[dict[str, float | str]] = field(default_factory=list)
    """Every computed pair with epsilon, sigma and unrounded eps_min (for audit)."""
    missing_runs: dict[str, list[int]] = field(default_factory=dict)
    """Per model, the positions of the NaN (or None) runs left out; the model is ranked on the others."""

    def rank_of(self, model: str) -> int:
        return self.order.index(model) + 1


def rank_models(
    scores: Mapping[str, Sequence[float]], dataset: str, params: AsoParams = AsoParams()
) -> Ranking:
    """Pairwise ASO table and summed-epsilon ranking of the models in ``scores`` (given order).

    A NaN or None run is a run without a score: it is left out, the model is ranked over the runs
    it has (ASO takes samples of different sizes) and ``Ranking.missing_runs`` lists it. An infinite
    score, or a model with no run left, is a ``ValueError`` naming the dataset and model."""
    scores, missing = present_runs(scores, dataset)
    models = list(scores)
    tab: dict[str, dict[str, float]] = {m: {} for m in models}
    pairs: list[dict[str, float | str]] = []
    for i, a in enumerate(models):
        for bname in models[i + 1 :]:
            res = pair_aso(dataset, a, bname, tuple(scores[a]), tuple(scores[bname]), params)
            # np.round on a float64, as upstream's round(np.float64, 2) does
            r = float(np.round(np.float64(res.eps_min), 2))
            tab[a][bname] = r
            tab[bname][a] = 1 - r
            pairs.append({"a": a, "b": bname, "epsilon": res.epsilon, "sigma": res.sigma, "eps_min": res.eps_min})
    order, dom, sums = rank_from_table(tab, models)
    return Ranking(dataset, order, dom, sums, tab, pairs, missing)


def present_runs(scores: Mapping[str, Sequence[float | None]], dataset: str
                 ) -> tuple[dict[str, list[float]], dict[str, list[int]]]:
    """Each model's finite runs, and the positions of its NaN/None runs (only models that have some)."""
    present: dict[str, list[float]] = {}
    missing: dict[str, list[int]] = {}
    for model, values in scores.items():
        arr = np.asarray(list(values), dtype=float)  # None -> NaN
        if np.isinf(arr).any():
            raise ValueError(f"{dataset}: {model} has an infinite run score; expected finite numbers "
                             "(NaN or None for a run without a score)")
        gone = np.flatnonzero(np.isnan(arr))
        if len(gone) == len(arr):
            raise ValueError(f"{dataset}: {model} has no run with a score; leave it out of the ranking")
        present[model] = [float(v) for v in arr[~np.isnan(arr)]]
        if len(gone):
            missing[model] = [int(i) for i in gone]
    return present, missing


def rank_from_table(
    tab: Mapping[str, Mapping[str, float]], models: Sequence[str]
) -> tuple[list[str], list[float | None], dict[str, float]]:
    """Upstream's ranking of a pairwise table: ascending sum of ``tab[k][other]`` (summed in model
    order, as upstream sums ``tab[k].values()``), ties kept in model order (stable sort), and the
    dominance column ``1 - tab[r_i][r_{i+1}]`` (rounded to 2 decimals to drop float noise)."""
    sums = {k: sum(tab[k][o] for o in models if o != k) for k in models}
    order = sorted(models, key=lambda k: sums[k])
    dom: list[float | None] = [round(1 - tab[order[i]][order[i + 1]], 2) for i in range(len(order) - 1)]
    if order:
        dom.append(None)
    return order, dom, sums


UPSTREAM_SCALE: dict[str, float] = {"MultiNews": 100.0, "OpenASP": 100.0, "ECB": 100.0, "SciCo": 100.0,
                                    "MusiQue": 1.0, "FuseReviews": 1.0}
"""A perfect score as upstream's ``results.json`` holds it: ROUGE and CoNLL-F1 on 0-100, MuSiQue's
and FuseReviews' F1 on 0-1, so ``ranking_asd.csv`` (x100, rounded to 0.1) holds ``(2178.2, 69.4)``
for ROUGE 21.782 ± 0.694. A dataset upstream never scored gets 1.0, the scale it assumes."""

ARSD_RULES = ("as published", "unrounded")
"""``as published``: upstream ``compare_models.py`` on the (mean, std) ``ranking_asd.csv`` stores
(``upstream_stored``); ``unrounded``: the unrounded statistics. Either counts a dataset with mean > 0."""


def upstream_stored(value: float, dataset: str) -> float:
    """The number upstream's ``ranking_asd.csv`` stores for a 0-100 ``value`` on ``dataset``:
    ``round(value_in_results_json * 100, 1)``, with the float64 rounding ``round(np.float64, 1)`` does."""
    return float(np.round(np.float64(value) * UPSTREAM_SCALE.get(dataset, 1.0), 1))


@dataclass(frozen=True)
class Stability:
    """AR and ARSD across datasets (upstream ``compare_models.py``)."""

    average_rank: dict[str, float]
    ranked_in: dict[str, list[str]]
    """Datasets each model was ranked on (the AR denominator)."""
    arsd: dict[str, float | None]
    """Mean over datasets of std/mean*100; ``None`` when no dataset has a mean > 0."""
    arsd_excluded: dict[str, list[str]]
    """Datasets left out of a model's ARSD because its mean (as the rule reads it) is not > 0."""
    arsd_by_dataset: dict[str, float | None]
    rule: str = ARSD_RULES[0]


def stability(rankings: Mapping[str, Ranking], stats: Mapping[str, Mapping[str, tuple[float, float]]],
              rule: str = ARSD_RULES[0]) -> Stability:
    """AR and ARSD. ``stats[dataset][model] = (mean, std)`` on the 0-100 scale; ``rule`` in ``ARSD_RULES``.

    A model absent from a dataset's ranking (e.g. Gemma-7B on ECB, NA in the paper) has no rank
    there and that dataset is not in its AR denominator. A dataset whose mean (stored or unrounded,
    per ``rule``) is not > 0 is left out of the ARSD instead of dividing by zero, and listed.
    """
    if rule not in ARSD_RULES:
        raise ValueError(f"unknown ARSD rule {rule!r}; expected one of {ARSD_RULES}")
    ranks: dict[str, list[int]] = {}
    ranked_in: dict[str, list[str]] = {}
    rsd: dict[str, list[float]] = {}
    excluded: dict[str, list[str]] = {}
    by_ds: dict[str, float | None] = {}
    for ds, ranking in rankings.items():
        ds_rsd = []
        for pos, model in enumerate(ranking.order):
            ranks.setdefault(model, []).append(pos + 1)
            ranked_in.setdefault(model, []).append(ds)
            mean, std = stats[ds][model]
            if not (math.isfinite(mean) and math.isfinite(std)):
                raise ValueError(f"{ds}: {model} has mean {mean} and std {std}; expected finite numbers")
            if rule == "as published":
                mean, std = upstream_stored(mean, ds), upstream_stored(std, ds)
            rsd.setdefault(model, [])
            if mean > 0:
                rsd[model].append(std / mean)
                ds_rsd.append(std / mean)
            else:
                excluded.setdefault(model, []).append(ds)
        by_ds[ds] = float(np.mean(ds_rsd)) * 100 if ds_rsd else None
    ar = {m: float(np.mean(r)) for m, r in ranks.items()}
    arsd = {m: (float(np.mean(v)) * 100 if v else None) for m, v in rsd.items()}
    return Stability(ar, ranked_in, arsd, excluded, by_ds, rule)


def deepsig_eps_min(a: Sequence[float], b: Sequence[float], seed: int, iterations: int = B_ITERATIONS) -> float | None:
    """deepsig's ``aso`` for the same pair, or ``None`` when deepsig (GPL, optional) is not installed.

    deepsig uses the real sample sizes in its confidence term, so it is expected to be more
    conservative than upstream's ASD.py; the difference is reported, never used for ranking."""
    try:
        from deepsig import aso as deepsig_aso
    except Exception:
        return None
    return float(deepsig_aso(list(a), list(b), seed=seed, show_progress=False, num_jobs=1,
                             num_bootstrap_iterations=iterations))

