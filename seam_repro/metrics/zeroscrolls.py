"""ZeroSCROLLS metrics: ROUGE geometric mean, F1, accuracy, exponential similarity, concordance index.

Replicates ZeroSCROLLS (Shaham et al., 2023) §3.3 "Automatic Evaluation", with the per-task metric
semantics of the official evaluation script (``tau/zero_scrolls`` metrics: SQuAD-style
normalisation followed by ``unidecode``, ``\\d+\\.?\\d*%`` percentage parsing, ``\\b[A-D]\\b`` option
letters, concordance over summary-id positions). Every public score is on the kit's 0–100 scale.
The prompt structure and context trimming (§3.2) are rendering: ``render/zeroscrolls.py``.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence

from seam_repro.errors import InputError
from seam_repro.metrics.musique import normalize_answer as squad_normalize


def _max_over(fn: Callable[[str, str], float], prediction: str, references: Sequence[str]) -> float:
    """ZeroSCROLLS' ``metric_max_over_ground_truths``: the best score over the references."""
    return max(fn(prediction, ref) for ref in _references(references))


def _references(references: Sequence[str]) -> Sequence[str]:
    """One reference string or several; at least one."""
    if isinstance(references, str):
        references = [references]
    if not references:
        raise InputError("references", "at least one reference is required")
    return references


_ROUGE_TYPES = ("rouge1", "rouge2", "rougeL")


def rouge_geometric_mean(prediction: str, references: Sequence[str], *, use_stemmer: bool = False) -> dict[str, float]:
    """Per-instance ROUGE geometric mean (§3.3): for each of R-1, R-2, R-L the maximal F-measure
    over the references, then ``(R1*R2*RL)^(1/3)``; all ×100. ``use_stemmer=False`` follows the
    (Zero)SCROLLS metric scripts; SEAM's own ``rouge_geo`` stems."""
    from rouge_score import rouge_scorer

    references = _references(references)
    scorer = rouge_scorer.RougeScorer(list(_ROUGE_TYPES), use_stemmer=use_stemmer)
    scores = [scorer.score(ref, prediction) for ref in references]  # rouge-score takes the target first
    best = {t: max(0.0, *(s[t].fmeasure for s in scores)) for t in _ROUGE_TYPES}
    geo = math.prod(best.values()) ** (1 / 3)
    return {"score": 100 * geo, **{t: 100 * v for t, v in best.items()}}


def normalize_answer(text: str) -> str:
    """§3.3 normalisation in the official order: SQuAD's (``musique.normalize_answer``), then
    ``unidecode``."""
    from unidecode import unidecode

    return unidecode(squad_normalize(text))


def _f1_single(prediction: str, reference: str) -> float:
    pred = normalize_answer(prediction).split()
    gold = normalize_answer(reference).split()
    same = sum((Counter(pred) & Counter(gold)).values())
    if same == 0:  # includes empty prediction or reference, as the official script
        return 0.0
    p, r = same / len(pred), same / len(gold)
    return 2 * p * r / (p + r)


def f1(prediction: str, references: Sequence[str]) -> float:
    """Unigram F1 after :func:`normalize_answer`, maximal over references, ×100."""
    return 100 * _max_over(_f1_single, prediction, references)


_OPTION = re.compile(r"\b[A-D]\b")


def first_option_letter(text: str) -> str | None:
    """The first option letter A–D surrounded by word boundaries (case-sensitive, as official)."""
    m = _OPTION.search(text)
    return m.group(0) if m else None


def accuracy(prediction: str, references: Sequence[str]) -> float:
    """100 if the first valid option letter of the prediction equals the reference letter."""

    def one(pred: str, ref: str) -> float:
        gold = first_option_letter(ref)
        if gold is None:
            raise InputError("reference", f"no option letter A-D found in {ref[:60]!r}")
        return 1.0 if first_option_letter(pred) == gold else 0.0

    return 100 * _max_over(one, prediction, references)


_PERCENT = re.compile(r"\d+\.?\d*%")


def first_percentage(text: str) -> float | None:
    """The first ``<number>%`` in the text (e.g. "…so 40% of the reviews…" → 40.0). A number too
    large for a float (hundreds of digits of untrusted output) is no percentage: None, not inf."""
    m = _PERCENT.search(text)
    value = float(m.group(0)[:-1]) if m else None
    return value if value is not None and math.isfinite(value) else None


def exponential_similarity(prediction: str, references: Sequence[str]) -> float:
    """ES(p, p̂) = 2^(−10·|p − p̂|) with p, p̂ as fractions (§3.3), ×100; 0 when the prediction has
    no percentage. A reference without a percentage counts as 0% (official behaviour)."""

    def one(pred: str, ref: str) -> float:
        p_hat = first_percentage(pred)
        if p_hat is None:
            return 0.0
        p = first_percentage(ref) or 0.0
        return 2.0 ** (-10.0 * abs(p - p_hat) / 100)

    return 100 * _max_over(one, prediction, references)


def summary_ids(text: str) -> list[int]:
    """Keep only digits, whitespace and commas (drops prefixes like "Order:"), split into ints.
    A number too long to convert (untrusted output) yields ``[]``, i.e. not a permutation."""
    cleaned = re.sub(r"[^0-9\s,]", "", text).replace(",", " ")
    try:
        return [int(p) for p in cleaned.split()]
    except ValueError:
        return []


def concordance_index(prediction: str, references: Sequence[str]) -> float:
    """Share of summary pairs whose relative order in the prediction matches the reference, ×100;
    0 when the prediction is not a permutation of the reference ids (§3.3). A one-id reference that
    the prediction repeats scores 100 (no pair can be misordered)."""

    def one(pred: str, ref: str) -> float:
        gold = summary_ids(ref)
        if len(set(gold)) != len(gold) or not gold:
            raise InputError("reference", f"not a permutation of distinct summary ids: {ref[:60]!r}")
        got = summary_ids(pred)
        if sorted(got) != sorted(gold):
            return 0.0
        n = len(gold)
        if n < 2:
            return 1.0
        pos = {sid: i for i, sid in enumerate(got)}
        ranks = [pos[sid] for sid in gold]  # predicted position of each id, in gold order
        return _count_increasing_pairs(ranks) / (n * (n - 1) / 2)

    return 100 * _max_over(one, prediction, references)


def _count_increasing_pairs(ranks: list[int]) -> int:
    """Pairs i<j with ranks[i] < ranks[j] (a permutation of 0..n-1), by a Fenwick tree in O(n log n)."""
    tree = [0] * (len(ranks) + 1)
    pairs = 0
    for r in ranks:
        i = r
        while i:  # how many earlier ranks are below r
            pairs += tree[i]
            i &= i - 1
        i = r + 1
        while i < len(tree):
            tree[i] += 1
            i += i & -i
    return pairs
