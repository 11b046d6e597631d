"""ASO, ranking, AR and ARSD against hand-computed values and a literal loop port of upstream
ASD.py's bootstrap (written here independently of the vectorised code)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

from seam_repro.analysis.aso import (
    AsoParams,
    aso,
    bootstrap_epsilons,
    deepsig_eps_min,
    eps_min_from,
    epsilon,
    pair_aso,
    pair_rng,
    rank_from_table,
    rank_models,
    stability,
    upstream_stored,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))  # make_aso_pairs, the table's writer

PPF_95 = 1.6448536269514722  # Phi^-1(0.95) = -Phi^-1(0.05)


def test_epsilon_on_two_point_quantile_functions() -> None:
    # grid p = 0, 0.005, ..., 0.995; with n = 2, p <= 0.5 (101 points) reads the lower value, the
    # other 99 points the upper one. A=[0,3], B=[1,2]: G-F = +1 on 101 points, -1 on 99.
    assert epsilon([0, 3], [1, 2]) == pytest.approx(101 / 200)
    # A=[1,2], B=[0,4]: G-F = -1 on 101 points, +2 on 99 -> 99*4 / (101*1 + 99*4)
    assert epsilon([1, 2], [0, 4]) == pytest.approx(396 / 497)
    # unsorted input is sorted first
    assert epsilon([3, 0], [2, 1]) == pytest.approx(101 / 200)


def test_epsilon_uneven_sizes_by_hand() -> None:
    # A=[0] (n=1), B=[1,-1] (m=2): F^-1 = 0 everywhere; G^-1 = -1 on 101 points, +1 on 99
    assert epsilon([0], [1, -1]) == pytest.approx(99 / 200)


def test_identical_samples_give_zero_epsilon_upstream_quirk() -> None:
    # upstream returns 0.0 when the denominator is 0, so identical samples "dominate" each other
    a = [1.0, 2.0, 5.0]
    assert epsilon(a, a) == 0.0
    res = aso(a, a, np.random.default_rng(0))
    assert res.sigma > 0
    assert res.eps_min == pytest.approx(res.sigma * PPF_95 / math.sqrt(500))
    assert res.eps_min < 0.1


def test_same_distribution_gives_eps_near_half() -> None:
    res = aso([0, 3], [1, 2], np.random.default_rng(1))
    assert res.epsilon == pytest.approx(0.505)
    assert 0.505 < res.eps_min < 0.6


def test_eps_min_formula_by_hand() -> None:
    assert eps_min_from(0.3, 0.2) == pytest.approx(0.3 + 0.2 * PPF_95 / math.sqrt(1000 * 1000 / 2000))
    assert eps_min_from(0.99, 1.0) == 1.0
    assert eps_min_from(0.0, 0.0) == 0.0
    p = AsoParams(n=10, m=40, alpha=0.1)   # const = sqrt(400/50) = sqrt(8); Phi^-1(0.9) = 1.2815515655446004
    assert eps_min_from(0.1, 0.5, p) == pytest.approx(0.1 + 0.5 * 1.2815515655446004 / math.sqrt(8))


def test_complete_dominance() -> None:
    better, worse = list(range(10, 20)), list(range(10))
    res = aso(better, worse, np.random.default_rng(0))
    assert (res.epsilon, res.sigma, res.eps_min) == (0.0, 0.0, 0.0)
    res = aso(worse, better, np.random.default_rng(0))
    assert (res.epsilon, res.eps_min) == (1.0, 1.0)


def _loop_port(a: list[float], b: list[float], u: np.ndarray, p: AsoParams) -> list[float]:
    """Upstream's bootstrap written as loops over the same uniforms (uniF then uniG per iteration)."""
    def inv(s: np.ndarray, q: float) -> float:
        idx = int(np.ceil(q * len(s)))
        return s[-1] if idx >= len(s) else s[0] if idx == 0 else s[idx - 1]

    f, g, out = np.sort(a), np.sort(b), []
    for it in range(p.b):
        fb = np.sort([inv(f, x) for x in u[it, : p.n]])
        gb = np.sort([inv(g, x) for x in u[it, p.n :]])
        num = den = 0.0
        for q in np.arange(0, 1, p.dp):
            d = inv(gb, q) - inv(fb, q)
            den += d * d * p.dp
            num += max(d, 0) ** 2 * p.dp
        out.append(num / den if den != 0 else 0.0)
    return out


@pytest.mark.parametrize(("p", "a", "b", "zeros"), [
    (AsoParams(b=6, n=300, m=200), [20.1, 19.3, 21.7, 20.0, 18.8, 22.4, 20.9], [20.5, 21.1, 19.9, 22.0, 20.2], 0),
    # one run, tied runs, a coarse grid, and uniforms of exactly 0 (quantile_index clips them to the first atom)
    (AsoParams(b=5, n=7, m=3, dp=0.1), [5.0], [1.0, 2.0, 1.0], 9),
], ids=["plain", "edges"])
def test_vectorised_bootstrap_equals_loop_port(p: AsoParams, a: list[float], b: list[float], zeros: int) -> None:
    rng = np.random.default_rng(7)
    u = rng.random((p.b, p.n + p.m))
    u.flat[rng.choice(u.size, zeros, replace=False)] = 0.0

    class Fixed:
        def random(self, shape: tuple[int, int]) -> np.ndarray:
            assert shape == u.shape
            return u

    got = bootstrap_epsilons(a, b, Fixed(), p)  # type: ignore[arg-type]
    np.testing.assert_allclose(got, _loop_port(a, b, u, p), rtol=1e-12, atol=1e-15)


def test_a_pair_computed_twice_is_remembered_and_equal() -> None:
    """A report with ‡ rows ranks a dataset twice; the second ranking takes the first's pairs."""
    scores = {"A": [20.0, 21.5, 19.0], "B": [20.4, 20.9, 21.2]}
    first = rank_models(scores, "MultiNews", AsoParams(seed=11))
    hits = pair_aso.cache_info().hits
    again = rank_models({**scores, "C": [18.0, 18.5]}, "MultiNews", AsoParams(seed=11))
    assert pair_aso.cache_info().hits == hits + 1 and again.pairs[0] == first.pairs[0]
    direct = aso(scores["A"], scores["B"], pair_rng(11, "MultiNews", "A", "B"), AsoParams(seed=11))
    assert first.pairs[0] == {"a": "A", "b": "B", "epsilon": direct.epsilon, "sigma": direct.sigma,
                              "eps_min": direct.eps_min}


def test_shipped_pairs_are_every_paper_pair_and_equal_a_fresh_computation() -> None:
    """The shipped table holds exactly the paper-model pairs a report against the paper ranks
    (``make aso-pairs`` after a reference or constant change), and its numbers are aso()'s, to the bit."""
    import random

    from make_aso_pairs import reference_pairs

    from seam_repro.analysis.aso import known_pairs, pair_digest

    params = AsoParams()
    pairs = reference_pairs()
    digests = [pair_digest(*pair, params) for pair in pairs]
    assert set(digests) == set(known_pairs()) and len(pairs) >= 100
    for i in random.Random(0).sample(range(len(pairs)), 6):
        dataset, a, b, a_runs, b_runs = pairs[i]
        fresh = aso(a_runs, b_runs, pair_rng(params.seed, dataset, a, b), params)
        assert known_pairs()[digests[i]] == (fresh.epsilon, fresh.sigma), pairs[i][:3]
    # another seed, run or name is another digest: computed, not looked up
    dataset, a, b, a_runs, b_runs = pairs[0]
    assert pair_digest(dataset, a, b, a_runs, b_runs, AsoParams(seed=7)) not in known_pairs()
    assert pair_digest(dataset, a, b, [*a_runs[:-1], a_runs[-1] + 1e-12], b_runs, params) not in known_pairs()
    assert pair_digest(dataset, b, a, b_runs, a_runs, params) not in known_pairs()


def test_a_report_against_the_paper_computes_only_its_own_models_pairs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ranked as a report ranks them (its own model first, then the paper's), only the pairs with
    the new model run the bootstrap; each is equal whether looked up or computed."""
    from seam_repro.analysis import aso as aso_module
    from seam_repro.analysis.reference import load_reference
    from seam_repro.analysis.report import collect_entries

    calls: list[int] = []
    real = aso_module.aso
    monkeypatch.setattr(aso_module, "aso", lambda *a, **k: calls.append(1) or real(*a, **k))
    pair_aso.cache_clear()
    entries = collect_entries([], load_reference("paper"))["MusiQue"]
    scores = {"mine": [30.0, 31.0, 29.5], **{e.model: e.runs for e in entries}}
    looked_up = rank_models(scores, "MusiQue")
    assert len(calls) == len(entries)
    monkeypatch.setattr(aso_module, "known_pairs", dict)
    pair_aso.cache_clear()
    assert rank_models(scores, "MusiQue").pairs == looked_up.pairs
    pair_aso.cache_clear()


def test_seeded_repeatability_and_pair_independence() -> None:
    rng = np.random.default_rng(3)
    scores = {m: list(rng.normal(mu, 1.0, 10)) for m, mu in (("A", 20), ("B", 20.3), ("C", 19.8))}
    r1 = rank_models(scores, "MultiNews", AsoParams(seed=5))
    r2 = rank_models(scores, "MultiNews", AsoParams(seed=5))
    assert r1.pairs == r2.pairs and r1.order == r2.order
    r3 = rank_models(scores, "MultiNews", AsoParams(seed=6))
    assert [p["sigma"] for p in r3.pairs] != [p["sigma"] for p in r1.pairs]
    # adding a model leaves the existing pairs untouched (per-pair generators)
    r4 = rank_models({**scores, "D": [0.0] * 10}, "MultiNews", AsoParams(seed=5))
    old = {(p["a"], p["b"]): p["eps_min"] for p in r1.pairs}
    assert all(old[(p["a"], p["b"])] == p["eps_min"] for p in r4.pairs if (p["a"], p["b"]) in old)


def test_ranking_table_by_hand() -> None:
    tab = {"A": {"B": 0.2, "C": 0.0}, "B": {"A": 0.8, "C": 0.3}, "C": {"A": 1.0, "B": 0.7}}
    order, dom, sums = rank_from_table(tab, ["C", "B", "A"])
    assert order == ["A", "B", "C"]
    assert sums == pytest.approx({"A": 0.2, "B": 1.1, "C": 1.7})
    assert dom == [0.8, 0.7, None]          # 1 - tab[A][B], 1 - tab[B][C]


def test_ranking_ties_keep_model_order() -> None:
    tab = {"X": {"Y": 0.5}, "Y": {"X": 0.5}}
    assert rank_from_table(tab, ["X", "Y"])[0] == ["X", "Y"]
    assert rank_from_table(tab, ["Y", "X"])[0] == ["Y", "X"]


def test_rank_models_complete_dominance() -> None:
    scores = {"low": list(range(10)), "high": list(range(20, 30)), "mid": list(range(10, 20))}
    r = rank_models(scores, "ECB")
    assert r.order == ["high", "mid", "low"]
    assert r.dominance == [1.0, 1.0, None]
    assert r.table["low"]["high"] == 1.0 and r.table["high"]["low"] == 0.0


def test_missing_model_excluded_from_ar_denominator() -> None:
    a, b, c = list(range(20, 30)), list(range(10, 20)), list(range(10))
    rankings = {"MultiNews": rank_models({"A": a, "B": b, "C": c}, "MultiNews"),
                "ECB": rank_models({"B": a, "A": b}, "ECB")}           # C is NA on ECB
    stats = {"MultiNews": {"A": (24.5, 2.0), "B": (14.5, 1.0), "C": (4.5, 0.5)},
             "ECB": {"B": (24.5, 2.0), "A": (14.5, 1.0)}}
    st = stability(rankings, stats)
    assert st.average_rank == {"A": 1.5, "B": 1.5, "C": 3.0}
    assert st.ranked_in["C"] == ["MultiNews"]
    # ARSD: A = mean(2/24.5, 1/14.5)*100; C = 0.5/4.5*100 (one dataset only)
    assert st.arsd["A"] == pytest.approx((2 / 24.5 + 1 / 14.5) / 2 * 100)
    assert st.arsd["C"] == pytest.approx(0.5 / 4.5 * 100)
    assert st.arsd_by_dataset["ECB"] == pytest.approx((2 / 24.5 + 1 / 14.5) / 2 * 100)


def test_arsd_zero_mean_reported_not_divided() -> None:
    rankings = {"D1": rank_models({"A": [1.0, 2.0], "Z": [0.0, 0.0]}, "D1"),
                "D2": rank_models({"A": [3.0, 5.0], "Z": [0.0, 0.08]}, "D2")}
    stats = {"D1": {"A": (1.5, 0.5), "Z": (0.0, 0.0)}, "D2": {"A": (4.0, 1.0), "Z": (0.04, 0.04)}}
    st = stability(rankings, stats)
    assert st.arsd["Z"] is None                      # 0.04 rounds to 0.0 as in upstream's ranking_asd.csv
    assert st.arsd_excluded == {"Z": ["D1", "D2"]}
    assert st.arsd["A"] == pytest.approx((0.5 / 1.5 + 1.0 / 4.0) / 2 * 100)


def test_upstream_csv_values_by_hand() -> None:
    """ranking_asd.csv stores round(results.json value * 100, 1): ROUGE and CoNLL-F1 are already
    0-100 in results.json, so they keep three decimals of the 0-100 scale; MuSiQue and FuseReviews one."""
    assert upstream_stored(21.7824, "MultiNews") == 2178.2 and upstream_stored(0.6936, "OpenASP") == 69.4
    assert upstream_stored(0.03, "SciCo") == 3.0 and upstream_stored(0.0004, "ECB") == 0.0
    assert upstream_stored(21.7824, "FuseReviews") == 21.8 and upstream_stored(0.04, "MusiQue") == 0.0
    assert upstream_stored(0.25, "QMSumMini") == 0.2    # upstream never scored it: its 0-1 assumption (rint)


def test_arsd_as_published_by_hand() -> None:
    """Rounding to 0.001 (ROUGE, CoNLL) vs 0.1 changes ARSD and the mean > 0 cut-off; the kit used
    0.1 everywhere before, giving 0.7/21.8 on MultiNews and leaving SciCo's 0.03 out."""
    a, b = [20.0 + r for r in range(10)], [float(r) for r in range(10)]
    rankings = {ds: rank_models({"A": a, "B": b}, ds) for ds in ("MultiNews", "SciCo", "MusiQue")}
    stats = {"MultiNews": {"A": (21.7824, 0.6936), "B": (4.5, 2.87)},
             "SciCo": {"A": (30.0, 1.0), "B": (0.03, 0.02)},
             "MusiQue": {"A": (21.7824, 0.6936), "B": (0.04, 0.01)}}
    st = stability(rankings, stats)
    assert st.rule == "as published"
    assert st.arsd["A"] == pytest.approx((69.4 / 2178.2 + 100.0 / 3000.0 + 0.7 / 21.8) / 3 * 100, abs=1e-12)
    assert st.arsd["B"] == pytest.approx((287.0 / 450.0 + 2.0 / 3.0) / 2 * 100, abs=1e-12)
    assert st.arsd_excluded == {"B": ["MusiQue"]}       # SciCo's 0.03 is stored as 3.0 and counted
    assert st.arsd_by_dataset["MultiNews"] == pytest.approx((69.4 / 2178.2 + 287.0 / 450.0) / 2 * 100, abs=1e-12)
    clean = stability(rankings, stats, "unrounded")
    assert clean.arsd["B"] == pytest.approx((2.87 / 4.5 + 0.02 / 0.03 + 0.01 / 0.04) / 3 * 100, abs=1e-12)
    assert clean.arsd_excluded == {}
    with pytest.raises(ValueError, match="unknown ARSD rule"):
        stability(rankings, stats, "rounded")


def test_nan_run_is_left_out_and_listed() -> None:
    """A NaN (or None) run is a run without a score: the model is ranked over the runs it has. Before,
    NaN made every eps_min and sum NaN, and the ranking came back in input order."""
    low, high = [float(r) for r in range(10)], [20.0 + r for r in range(10)]
    r = rank_models({"low": low[:3] + [math.nan] + low[4:], "high": [None, *high[1:]]}, "ECB")
    assert r.order == ["high", "low"] and r.dominance == [1.0, None]
    assert r.missing_runs == {"low": [3], "high": [0]}
    same = rank_models({"low": low[:3] + low[4:], "high": high[1:]}, "ECB")
    assert (r.table, r.sums, r.order) == (same.table, same.sums, same.order) and same.missing_runs == {}
    with pytest.raises(ValueError, match="ECB: low has an infinite run score"):
        rank_models({"low": [1.0, math.inf], "high": high}, "ECB")
    with pytest.raises(ValueError, match="ECB: low has no run with a score"):
        rank_models({"low": [math.nan, math.nan], "high": high}, "ECB")
    with pytest.raises(ValueError, match="finite scores"):
        aso([1.0, math.nan], high, np.random.default_rng(0))
    with pytest.raises(ValueError, match="ECB: high has mean nan"):
        stability({"ECB": same}, {"ECB": {"high": (math.nan, 1.0), "low": (4.0, 1.0)}})


@pytest.mark.slow  # importing deepsig imports torch
def test_deepsig_cross_check_if_installed() -> None:
    pytest.importorskip("deepsig")
    better, worse = [float(x) for x in range(10, 20)], [float(x) for x in range(10)]
    assert deepsig_eps_min(better, worse, seed=1, iterations=100) == pytest.approx(0.0, abs=1e-9)
    rng = np.random.default_rng(0)
    a, b = list(rng.normal(21, 1, 10)), list(rng.normal(20, 1, 10))
    ours = aso(a, b, np.random.default_rng(1)).eps_min
    theirs = deepsig_eps_min(a, b, seed=1, iterations=200)
    assert theirs is not None and 0.0 <= theirs <= 1.0
    # deepsig's CI term uses the real n=m=10, so it is the more conservative of the two
    assert theirs >= ours - 1e-9
