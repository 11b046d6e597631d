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

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
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
        return Counts(self.recall_num + other.recall_num, self.recall_den + other.recall_den,
                      self.precision_num + other.precision_num, self.precision_den + other.precision_den)

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
        return CorefScores(self.mentions + other.mentions,
                           *(_add_optional(getattr(self, m), getattr(other, m)) for m in METRICS),
                           n_documents=self.n_documents + other.n_documents,
                           repeated_mentions=self.repeated_mentions + other.repeated_mentions)

    def metric(self, name: str) -> Counts | BlancCounts | None:
        return getattr(self, name)  # type: ignore[no-any-return]

    def _conll_parts(self) -> list[Counts] | None:
        parts = [self.muc, self.bcub, self.ceafe]
        return None if any(p is None for p in parts) else parts  # type: ignore[return-value]

    @property
    def conll_f1(self) -> float | None:
        """Mean of MUC, B3 and CEAF-e F1 on the 0-100 scale (None if one of them is missing)."""
        parts = self._conll_parts()
        return None if parts is None else sum(p.f1 for p in parts) / 3 * 100

    @property
    def conll_f1_printed(self) -> float | None:
        """What SEAM's parser of the perl output computes: the mean of the three F1 percentages
        as printed (truncated to 2 decimals)."""
        parts = self._conll_parts()
        return None if parts is None else sum(perl_percent(p.f1) for p in parts) / 3


@dataclass
class _Identified:
    key: list[list[int]]
    response: list[list[int]]
    mentions: Counts
    repeated: int = 0
    kidx: dict[int, int] = field(default_factory=dict)

    @cached_property
    def overlap(self) -> dict[tuple[int, int], int]:
        """How many elements of key entity i are found in response entity j (non-zero pairs only;
        CEAF and BLANC both use it, so it is counted once per document)."""
        ridx = {m: j for j, chain in enumerate(self.response) for m in chain}
        counts: dict[tuple[int, int], int] = {}
        for i, chain in enumerate(self.key):
            for m in chain:  # perl counts every element of the key chain found in the response chain
                j = ridx.get(m)
                if j is not None:
                    counts[(i, j)] = counts.get((i, j), 0) + 1
        return counts

    @cached_property
    def components(self) -> list[Any]:
        """The connected components of the overlap graph (entities in different components never
        compete in an assignment): a component of one edge as a list of it, a larger one as (edges,
        sorted rows, sorted columns, each edge's (row, column) position among those); built once for
        both CEAF variants."""
        by_row: dict[int, list[int]] = {}
        by_col: dict[int, list[int]] = {}
        for i, j in self.overlap:
            by_row.setdefault(i, []).append(j)
            by_col.setdefault(j, []).append(i)
        seen_rows: set[int] = set()
        components: list[Any] = []
        for start, mine in by_row.items():
            if len(mine) == 1 and len(by_col[mine[0]]) == 1:  # the commonest: one key, one response entity
                components.append([(start, mine[0])])
                continue
            if start in seen_rows:
                continue
            seen_rows.add(start)
            rows, cols, stack, seen_cols = [start], [], [start], set()
            while stack:
                for j in by_row[stack.pop()]:
                    if j not in seen_cols:
                        seen_cols.add(j)
                        cols.append(j)
                        for i in by_col[j]:
                            if i not in seen_rows:
                                seen_rows.add(i)
                                rows.append(i)
                                stack.append(i)
            edges = [(i, j) for i in rows for j in by_row[i]]  # two or more: one edge took the fast path
            rows.sort()
            cols.sort()
            r_at, c_at = {i: n for n, i in enumerate(rows)}, {j: n for n, j in enumerate(cols)}
            components.append((edges, rows, cols, [(r_at[i], c_at[j]) for i, j in edges]))
        return components


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
    """B-cubed, summed mention by mention in the scorer's order (so floats round as perl's do).

    The common count of a response chain and a key entity is found once per chain with one pass
    (linear); when a key mention id occurs in two key entities (a key listing the same span twice),
    the scorer's set-membership count is computed literally instead."""
    key_lens = [len(c) for c in ident.key]
    flat_k = [m for c in ident.key for m in c]
    key_sets = None if len(set(flat_k)) == len(flat_k) else [set(c) for c in ident.key]
    acum_r = acum_p = 0.0
    for chain in ident.response:
        ri = len(chain)
        ks = [ident.kidx.get(m) for m in chain]
        common: dict[int, int] = {}
        if key_sets is None:
            for k in ks:
                if k is not None:
                    common[k] = common.get(k, 0) + 1
        else:
            for k in ks:
                if k is not None and k not in common:
                    common[k] = sum(1 for mr in chain if mr in key_sets[k])
        for k in ks:
            if k is None:  # a twinless mention adds 0 / ri (the scorer's float sum is unchanged)
                continue
            ci, ki = common[k], key_lens[k]
            acum_p += ci / ri
            if ki:
                acum_r += ci / ki
    return Counts(acum_r, sum(key_lens), acum_p, sum(map(len, ident.response)))


def _ceaf(ident: _Identified, mention_based: bool) -> Counts:
    """CEAF-m/e: the optimal key/response entity alignment (``scipy.optimize.linear_sum_assignment``
    where perl uses Munkres), solved per connected component of entities that share mentions
    (entities in different components never compete); the chosen similarities are summed in key
    order, as the scorer sums them."""
    key, resp = ident.key, ident.response
    if mention_based:
        den_rec, den_pre = sum(map(len, key)), sum(map(len, resp))
    else:
        den_rec, den_pre = sum(1 for c in key if c), sum(1 for c in resp if c)
    if not key or not resp:
        return Counts(0, den_rec, 0, den_pre)
    counts, components = ident.overlap, ident.components
    if mention_based:
        sim = {ij: float(c) for ij, c in counts.items()}
    else:
        sim = {(i, j): 2 * c / (len(key[i]) + len(resp[j])) for (i, j), c in counts.items()}
    chosen: list[tuple[int, float]] = []
    for component in components:
        if len(component) == 1:  # one key and one response entity
            chosen.append((component[0][0], sim[component[0]]))
            continue
        edges, rows, cols, places = component
        if len(rows) == 1 or len(cols) == 1:  # one entity on a side: its best edge (the first of equals)
            i, j = max(edges, key=lambda e: sim[e])
            chosen.append((i, sim[(i, j)]))
            continue
        import numpy as np
        from scipy.optimize import linear_sum_assignment

        matrix = np.zeros((len(rows), len(cols)))
        for edge, at in zip(edges, places, strict=True):
            matrix[at] = sim[edge]
        picked_r, picked_c = linear_sum_assignment(matrix, maximize=True)
        chosen.extend((rows[a], float(matrix[a, b])) for a, b in zip(picked_r.tolist(), picked_c.tolist(), strict=True))
    total = 0.0
    for _, value in sorted(chosen, key=lambda c: c[0]):
        total += 1 - (1 - value)  # perl stores 1 - sim for Munkres and converts back
    return Counts(total, den_rec, total, den_pre)


def _links(chains: list[list[int]], base: int) -> tuple[set[int], set[int]]:
    """The scorer's sets of coreference links and of non-coreference links (mentions of two different
    chains), a link {x, y} written ``min * base + max``."""
    coref = {min(x, y) * base + max(x, y) for chain in chains for a, x in enumerate(chain)
             for y in chain[a + 1:]}
    noncoref = {min(x, y) * base + max(x, y) for p, first in enumerate(chains) for second in chains[p + 1:]
                for x in first for y in second}
    return coref, noncoref


def _blanc(ident: _Identified) -> BlancCounts:
    key, resp = ident.key, ident.response
    flat_k = [m for c in key for m in c]
    flat_r = [m for c in resp for m in c]
    if len(set(flat_k)) != len(flat_k) or len(set(flat_r)) != len(flat_r):
        # duplicated ids: the scorer's set-of-link-strings semantics, computed literally
        base = max(flat_k + flat_r) + 1
        (kc, kn), (rc, rn) = _links(key, base), _links(resp, base)
        return BlancCounts(Counts(len(kc & rc), len(kc), len(kc & rc), len(rc)),
                           Counts(len(kn & rn), len(kn), len(kn & rn), len(rn)))
    # all ids distinct: count links arithmetically (O(mentions) instead of O(mentions^2)); n * (n - 1)
    # is even, so halving the sum is the sum of the halves
    kc = sum([len(c) * (len(c) - 1) for c in key]) // 2
    rc = sum([len(c) * (len(c) - 1) for c in resp]) // 2
    kn = (len(flat_k) ** 2 - sum([len(c) ** 2 for c in key])) // 2
    rn = (len(flat_r) ** 2 - sum([len(c) ** 2 for c in resp])) // 2
    cell = ident.overlap
    in_k: dict[int, int] = {}
    in_r: dict[int, int] = {}
    for (i, j), n in cell.items():
        in_k[i] = in_k.get(i, 0) + n
        in_r[j] = in_r.get(j, 0) + n
    both = sum(cell.values())
    same_both = sum([n * (n - 1) for n in cell.values()]) // 2
    isect_n = (both * (both - 1) - sum([n * (n - 1) for n in in_k.values()])
               - sum([n * (n - 1) for n in in_r.values()])) // 2 + same_both
    return BlancCounts(Counts(same_both, kc, same_both, rc), Counts(isect_n, kn, isect_n, rn))


def score_document(key: Sequence[Sequence[Hashable]], response: Sequence[Sequence[Hashable]],
                   metrics: Iterable[str] = METRICS) -> CorefScores:
    """Score one document. ``key``/``response`` are entities as lists of hashable mention keys
    (token spans for CoNLL files, mention ids for id matching)."""
    ident = _identify(key, response)
    wanted = set(metrics)
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
    return sum(scores, CorefScores())


def refuses_to_score(repeated: int, n_metric_passes: int) -> bool:
    """True when the perl scorer would exit: its never-reset counter of repeated response
    mentions grows by ``repeated`` per metric pass and must not exceed 10."""
    return repeated * n_metric_passes > MAX_REPEATED_MENTIONS
