"""Coreference metrics computed exactly as the official CoNLL scorer does.

Port of ``lib/CorScorer.pm`` from conll/reference-coreference-scorers v8.01 (commit f49f3f8), as run
by ``scorer.pl all`` (which SEAM's ``evaluation_classes/coreference.py`` calls). Behaviour kept:

* mention identification (``IdentifMentions``): a response mention listed again after it was
  matched to a key mention is dropped (counted as "repeated"; the scorer refuses a run once its
  process-wide count exceeds 10, and in ``all`` mode it counts every mention again for each of the 5
  metric passes); a duplicated *twinless* mention is not detected and stays; twinless response
  mentions get fresh ids; a key mention listed twice keeps the id of its last occurrence;
* MUC counts a response link for every mention that has a later mention of the same key entity in
  its response entity; B-cubed and CEAF use the original chains (no Cai & Strube changes), B-cubed
  iterates response mentions only; CEAF-m/e use an optimal assignment (the perl code uses Munkres,
  here ``scipy.optimize.linear_sum_assignment``);
* BLANC (Luo et al., 2014, generalised to system mentions) from the sets of coreference and
  non-coreference links, with the scorer's fallbacks when the key has no link of one kind;
* multi-document totals sum each metric's numerators and denominators over documents (micro
  average), then R = num/den (0 if den = 0), F1 = 2PR/(P+R).

CoNLL-F1 = mean of MUC, B3 and CEAF-e F1. ``printed`` values reproduce what a parser of the perl
output (such as SEAM's ``process_conll_out``) reads: percentages truncated to 2 decimals.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

METRICS: tuple[str, ...] = ("muc", "bcub", "ceafm", "ceafe", "blanc")
"""Metric names and the order in which ``scorer.pl all`` runs them."""
MAX_REPEATED_MENTIONS = 10
"""The scorer exits once more than this many repeated response mentions were seen (v8.01)."""


def perl_percent(value: float) -> float:
    """A fraction as the perl scorer prints it: ``int(x * 10000) / 100`` (truncated, not rounded).

    Kept bit-for-bit, float noise included: an F1 of exactly 0.1 computed as 0.09999999999999999
    prints as 9.99, and SEAM averages those printed numbers. Caveat: for B3 and CEAF the perl
    scorer sums float numerators over documents in random hash order, so at an exact boundary it
    prints e.g. 28.49 or 28.5 from run to run; this function sums in document order."""
    return int(value * 10000) / 100


@dataclass(frozen=True)
class Counts:
    """Recall and precision numerators/denominators of one metric (one document or a sum)."""

    recall_num: float = 0
    recall_den: float = 0
    precision_num: float = 0
    precision_den: float = 0

    def __add__(self, other: Counts) -> Counts:
        return Counts(
            self.recall_num + other.recall_num,
            self.recall_den + other.recall_den,
            self.precision_num + other.precision_num,
            self.precision_den + other.precision_den,
        )

    @property
    def recall(self) -> float:
        return self.recall_num / self.recall_den if self.recall_den else 0.0

    @property
    def precision(self) -> float:
        return self.precision_num / self.precision_den if self.precision_den else 0.0

    @property
    def f1(self) -> float:
        """Same float operations as the scorer's ``ShowRPF`` (so truncated percentages agree)."""
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0


@dataclass(frozen=True)
class BlancCounts:
    """BLANC's two link kinds; R/P/F1 as ``ScoreBLANC`` prints them from summed counts."""

    coref: Counts = Counts()
    noncoref: Counts = Counts()

    def __add__(self, other: BlancCounts) -> BlancCounts:
        return BlancCounts(self.coref + other.coref, self.noncoref + other.noncoref)

    def _rpf(self) -> tuple[float, float, float]:
        c, n = self.coref, self.noncoref
        ra = c.recall_num / c.recall_den if c.recall_den else -1.0
        rr = n.recall_num / n.recall_den if n.recall_den else -1.0
        pa, pr = c.precision, n.precision
        fa = 2 * pa * ra / (pa + ra) if pa + ra else 0.0
        fr = 2 * pr * rr / (pr + rr) if pr + rr else 0.0
        if ra == -1 and rr == -1:
            return 0.0, 0.0, 0.0
        if ra == -1:
            return rr, pr, fr
        if rr == -1:
            return ra, pa, fa
        return (ra + rr) / 2, (pa + pr) / 2, (fa + fr) / 2

    @property
    def recall(self) -> float:
        return self._rpf()[0]

    @property
    def precision(self) -> float:
        return self._rpf()[1]

    @property
    def f1(self) -> float:
        return self._rpf()[2]


def _add_optional(a: Any, b: Any) -> Any:
    """Sum of two optional metric counts (a metric computed on only some documents keeps its sum)."""
    return a if b is None else b if a is None else a + b


@dataclass(frozen=True)
class CorefScores:
    """Scores of one document or the micro-sum over many (``None`` = metric not computed)."""

    mentions: Counts = Counts()
    muc: Counts | None = None
    bcub: Counts | None = None
    ceafm: Counts | None = None
    ceafe: Counts | None = None
    blanc: BlancCounts | None = None
    n_documents: int = 0
    repeated_mentions: int = 0

    def __add__(self, other: CorefScores) -> CorefScores:
        return CorefScores(
            self.mentions + other.mentions,
            *(_add_optional(getattr(self, m), getattr(other, m)) for m in METRICS),
            n_documents=self.n_documents + other.n_documents,
            repeated_mentions=self.repeated_mentions + other.repeated_mentions,
        )

    def metric(self, name: str) -> Counts | BlancCounts | None:
        return getattr(self, name)  # type: ignore[no-any-return]

    @property
    def conll_f1(self) -> float | None:
        """Mean of MUC, B3 and CEAF-e F1 on the 0-100 scale (None if one of them is missing)."""
        parts = [self.muc, self.bcub, self.ceafe]
        if any(p is None for p in parts):
            return None
        return sum(p.f1 for p in parts) / 3 * 100  # type: ignore[union-attr]

    @property
    def conll_f1_printed(self) -> float | None:
        """What SEAM's parser of the perl output computes: the mean of the three F1 percentages
        as printed (truncated to 2 decimals)."""
        parts = [self.muc, self.bcub, self.ceafe]
        if any(p is None for p in parts):
            return None
        return sum(perl_percent(p.f1) for p in parts) / 3  # type: ignore[union-attr]


@dataclass
class _Identified:
    key: list[list[int]]
    response: list[list[int]]
    mentions: Counts
    repeated: int = 0
    kidx: dict[int, int] = field(default_factory=dict)


def _identify(key: Sequence[Sequence[Hashable]], response: Sequence[Sequence[Hashable]]) -> _Identified:
    """The scorer's ``IdentifMentions``: give every mention an integer id (see module docstring)."""
    ids: dict[Hashable, int] = {}
    count = 0
    for entity in key:
        for m in entity:
            ids[m] = count  # a repeated key mention keeps its last id
            count += 1
    mapped: dict[Hashable, int] = {}
    kept_entities: list[list[Hashable]] = []
    repeated = exact = 0
    for entity in response:
        kept = []
        for m in entity:
            if m in mapped:  # only key-matched mentions are in `mapped` at this point
                repeated += 1
                continue
            if m in ids:
                mapped[m] = ids[m]
                exact += 1
            kept.append(m)
        if kept:
            kept_entities.append(kept)
    for entity in kept_entities:
        for m in entity:
            if m not in mapped:
                mapped[m] = count
                count += 1
    key_ids = [[ids[m] for m in entity] for entity in key if entity]
    resp_ids = [[mapped[m] for m in entity] for entity in kept_entities]
    kidx = {m: i for i, chain in enumerate(key_ids) for m in chain}
    return _Identified(key_ids, resp_ids, Counts(exact, len(ids), exact, len(mapped)), repeated, kidx)


def _muc(ident: _Identified) -> Counts:
    correct = 0
    for chain in ident.response:
        later: set[int] = set()
        for m in reversed(chain):
            k = ident.kidx.get(m)
            if k is not None:
                if k in later:
                    correct += 1
                later.add(k)
    key_links = sum(len(c) - 1 for c in ident.key if c)
    resp_links = sum(len(c) - 1 for c in ident.response if c)
    return Counts(correct, key_links, correct, resp_links)


def _bcub(ident: _Identified) -> Counts:
    key_sets = [set(c) for c in ident.key]
    acum_r = acum_p = 0.0
    for chain in ident.response:
        ri = len(chain)
        common: dict[int, int] = {}
        for m in chain:
            k = ident.kidx.get(m)
            if k is None:
                ci, ki = 0, 0
            else:
                if k not in common:
                    common[k] = sum(1 for mr in chain if mr in key_sets[k])
                ci, ki = common[k], len(ident.key[k])
            acum_p += ci / ri
            if ki:
                acum_r += ci / ki
    return Counts(acum_r, sum(map(len, ident.key)), acum_p, sum(map(len, ident.response)))


def _ceaf(ident: _Identified, mention_based: bool) -> Counts:
    key, resp = ident.key, ident.response
    if mention_based:
        den_rec, den_pre = sum(map(len, key)), sum(map(len, resp))
    else:
        den_rec, den_pre = sum(1 for c in key if c), sum(1 for c in resp if c)
    if not key or not resp:
        return Counts(0, den_rec, 0, den_pre)
    import numpy as np
    from scipy.optimize import linear_sum_assignment

    ridx = {m: j for j, chain in enumerate(resp) for m in chain}
    sim = np.zeros((len(key), len(resp)))
    for i, chain in enumerate(key):
        for m in chain:  # perl counts every element of the key chain found in the response chain
            j = ridx.get(m)
            if j is not None:
                sim[i, j] += 1
    if not mention_based:
        sizes_k = np.array([len(c) for c in key], dtype=float)[:, None]
        sizes_r = np.array([len(c) for c in resp], dtype=float)[None, :]
        sim = 2 * sim / (sizes_k + sizes_r)
    rows, cols = linear_sum_assignment(sim, maximize=True)
    total = 0.0
    for i, j in zip(rows.tolist(), cols.tolist(), strict=True):
        total += 1 - (1 - float(sim[i, j]))  # perl stores 1 - sim for Munkres and converts back
    return Counts(total, den_rec, total, den_pre)


def _pairs_coref(chains: list[list[int]]) -> set[tuple[int, int]]:
    out: set[tuple[int, int]] = set()
    for chain in chains:
        for a in range(len(chain)):
            for b in range(a + 1, len(chain)):
                x, y = chain[a], chain[b]
                out.add((x, y) if x <= y else (y, x))
    return out


def _pairs_noncoref(chains: list[list[int]]) -> set[tuple[int, int]]:
    out: set[tuple[int, int]] = set()
    for p in range(len(chains)):
        for q in range(p + 1, len(chains)):
            for x in chains[p]:
                for y in chains[q]:
                    out.add((x, y) if x <= y else (y, x))
    return out


def _c2(n: int) -> int:
    return n * (n - 1) // 2


def _blanc(ident: _Identified) -> BlancCounts:
    key, resp = ident.key, ident.response
    flat_k = [m for c in key for m in c]
    flat_r = [m for c in resp for m in c]
    if len(set(flat_k)) != len(flat_k) or len(set(flat_r)) != len(flat_r):
        # duplicated ids: the scorer's set-of-link-strings semantics, computed literally
        kc, rc, kn, rn = _pairs_coref(key), _pairs_coref(resp), _pairs_noncoref(key), _pairs_noncoref(resp)
        return BlancCounts(
            Counts(len(kc & rc), len(kc), len(kc & rc), len(rc)),
            Counts(len(kn & rn), len(kn), len(kn & rn), len(rn)),
        )
    # all ids distinct: count links arithmetically (O(mentions) instead of O(mentions^2))
    kc = sum(_c2(len(c)) for c in key)
    rc = sum(_c2(len(c)) for c in resp)
    kn = (len(flat_k) ** 2 - sum(len(c) ** 2 for c in key)) // 2
    rn = (len(flat_r) ** 2 - sum(len(c) ** 2 for c in resp)) // 2
    ridx = {m: j for j, chain in enumerate(resp) for m in chain}
    cell: Counter[tuple[int, int]] = Counter()
    in_k: Counter[int] = Counter()
    in_r: Counter[int] = Counter()
    for i, chain in enumerate(key):
        for m in chain:
            j = ridx.get(m)
            if j is not None:
                cell[(i, j)] += 1
                in_k[i] += 1
                in_r[j] += 1
    both = sum(cell.values())
    same_both = sum(_c2(n) for n in cell.values())
    isect_n = _c2(both) - sum(_c2(n) for n in in_k.values()) - sum(_c2(n) for n in in_r.values()) + same_both
    return BlancCounts(Counts(same_both, kc, same_both, rc), Counts(isect_n, kn, isect_n, rn))


def score_document(
    key: Sequence[Sequence[Hashable]],
    response: Sequence[Sequence[Hashable]],
    metrics: Iterable[str] = METRICS,
) -> CorefScores:
    """Score one document. ``key``/``response`` are entities as lists of hashable mention keys
    (token spans for CoNLL files, mention ids for id matching)."""
    ident = _identify(key, response)
    wanted = set(metrics)
    unknown = wanted - set(METRICS)
    if unknown:
        raise ValueError(f"unknown coreference metric(s) {sorted(unknown)}; expected {list(METRICS)}")
    return CorefScores(
        ident.mentions,
        muc=_muc(ident) if "muc" in wanted else None,
        bcub=_bcub(ident) if "bcub" in wanted else None,
        ceafm=_ceaf(ident, True) if "ceafm" in wanted else None,
        ceafe=_ceaf(ident, False) if "ceafe" in wanted else None,
        blanc=_blanc(ident) if "blanc" in wanted else None,
        n_documents=1,
        repeated_mentions=ident.repeated,
    )


def total(scores: Iterable[CorefScores]) -> CorefScores:
    """Micro-sum over documents, as the scorer totals one file."""
    acc = CorefScores()
    for s in scores:
        acc = acc + s
    return acc


def refuses_to_score(repeated: int, n_metric_passes: int) -> bool:
    """True when the perl scorer would exit: its never-reset counter of repeated response
    mentions grows by ``repeated`` per metric pass and must not exceed 10."""
    return repeated * n_metric_passes > MAX_REPEATED_MENTIONS
