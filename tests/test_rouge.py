"""ROUGE geometric mean: hand-computed n-gram counts, the rouge_score library itself, and the
exact upstream float expression."""

from __future__ import annotations

import numpy as np
import pytest
from rouge_score import rouge_scorer

from seam_repro.metrics.rouge import geometric_mean_100, lcs_length, rouge_geo


def upstream_geo(vals: list[float]) -> float:
    """statistical_analysis.py: per-metric arrays over samples, product over metrics (axis 0)."""
    per_metric = [np.array([v]) for v in vals]
    return float((np.prod(per_metric, axis=0) ** (1 / len(vals)) * 100)[0])


def test_hand_computed() -> None:
    # target 6 tokens, prediction 3: R1 F = 2/3, R2 = 2 of 2 pred / 5 gold bigrams -> F = 4/7, LCS 3 -> 2/3
    r = rouge_geo("the cat sat", "the cat sat on the mat")
    assert (r.rouge1, r.rouge2, r.rougeL) == pytest.approx((2 / 3, 4 / 7, 2 / 3))
    assert r.geo == pytest.approx((2 / 3 * 4 / 7 * 2 / 3) ** (1 / 3) * 100)


def test_stemming_only_long_tokens_and_zero_bigrams() -> None:
    assert rouge_geo("running dogs", "run dog").geo == pytest.approx(100.0)
    assert rouge_geo("dog cat", "cat dog").geo == 0.0  # R2 = 0 zeroes the instance
    assert rouge_geo("", "some gold").geo == 0.0


@pytest.mark.parametrize("pred,gold", [("A quick brown fox jumps.", "The quick brown fox jumped over dogs."),
                                       ("Storms hit the coast; thousands evacuated.", "Thousands were evacuated as storms hit.")])
def test_matches_library_and_upstream_expression(pred: str, gold: str) -> None:
    lib = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True).score(pred, gold)  # upstream order
    vals = [lib[t].fmeasure for t in ("rouge1", "rouge2", "rougeL")]
    r = rouge_geo(pred, gold)
    assert [r.rouge1, r.rouge2, r.rougeL] == vals
    assert r.geo == upstream_geo(vals) == geometric_mean_100(*vals)


def _random_text(rng: np.random.Generator, n: int, vocab: list[str]) -> str:
    return " ".join(rng.choice(vocab, size=n)) + rng.choice(["", ".", "!"])


def test_bit_parallel_lcs_equals_the_library_table() -> None:
    """lcs_length against rouge_score's own DP table on random token lists: small alphabets (many
    matches, long common runs), large ones, empty and one-sided cases, both argument orders."""
    from rouge_score.rouge_scorer import _lcs_table

    rng = np.random.default_rng(28)
    for trial in range(300):
        k = int(rng.integers(1, 12 if trial % 2 else 200))
        a = [f"w{x}" for x in rng.integers(0, k, size=int(rng.integers(0, 90)))]
        b = [f"w{x}" for x in rng.integers(0, k, size=int(rng.integers(0, 90)))]
        want = _lcs_table(a, b)[-1][-1] if a and b else 0
        assert lcs_length(a, b) == lcs_length(b, a) == want, (a, b)


def test_rouge_geo_equals_the_library_on_random_and_long_texts() -> None:
    """The same three F values as rouge_score's RougeScorer (the upstream call), bit for bit, with
    stemming, punctuation and repeats; up to a few thousand tokens where the library is still quick."""
    lib = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)
    vocab = ["running", "runs", "the", "storm", "storms", "hit", "coast", "Coast,", "evacuated", "thousands",
             "dogs", "dog", "a", "1990s", "é", "--", "it's", "generously", "generous"]
    rng = np.random.default_rng(7)
    for n_pred, n_gold in [(0, 5), (5, 0), (3, 3), (40, 25), (300, 120), (2500, 260)]:
        for _ in range(4):
            pred, gold = _random_text(rng, n_pred, vocab), _random_text(rng, n_gold, vocab)
            want = lib.score(gold, pred)
            r = rouge_geo(pred, gold)
            assert [r.rouge1, r.rouge2, r.rougeL] == [want[t].fmeasure for t in ("rouge1", "rouge2", "rougeL")]


def test_rouge_is_linear_in_the_prediction() -> None:
    """Old main: rouge_score's len(gold) x len(prediction) table, ~57 s and gigabytes for a 10 MB
    prediction against a MultiNews-length summary. Now 2 million tokens against 300 take well
    under the bound (generous: the machine is shared)."""
    import time

    gold = " ".join(f"w{i % 150}" for i in range(300))
    pred = ["w1", "w7", "x", "w3"] * 500_000
    t = time.process_time()  # CPU time: a loaded machine's waiting does not count, quadratic work does
    n = lcs_length(gold.split(), pred)
    assert time.process_time() - t < 5.0
    assert n == 6  # gold holds w1, w3, w7 twice each; the prediction offers them in every order


def test_the_version_is_read_from_the_package_metadata_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every scored summary records the metric version; it was read from disk for each one."""
    import importlib.metadata

    from seam_repro.metrics import rouge

    calls: list[str] = []
    real = importlib.metadata.version
    monkeypatch.setattr(importlib.metadata, "version", lambda name: calls.append(name) or real(name))
    rouge.version.cache_clear()
    first = rouge.version()
    assert all(rouge.version() == first for _ in range(5))
    assert calls == ["rouge-score"] and f"rouge-score=={real('rouge-score')}/" in first
