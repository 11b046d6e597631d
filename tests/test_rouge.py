"""ROUGE geometric mean: hand-computed n-gram counts, the rouge_score library itself, and the
exact upstream float expression."""

from __future__ import annotations

import numpy as np
import pytest
from rouge_score import rouge_scorer

from seam_repro.metrics.rouge import geometric_mean_100, rouge_geo


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
