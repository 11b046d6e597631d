"""IGCS-style content selection: parse span answers, ground them in the source, score by tokens.

Replicates Amar et al., "A Unifying Scheme for Extractive Content Selection Tasks" (IGCS): §3.3
token-level P/R/F1 over source token indices (max over references by F1, macro average), §5.3 +
App. G grounding (exact, then case/whitespace-insensitive, then closest token-level Levenshtein
match within min(⌊0.15·len⌋, 10) tokens, else dropped; a span of a document-level answer is
searched in its own document first); with the edge-case semantics of the reference package
``igcs`` (grounding/__init__.py, grounding/tokenization.py, evaluate/evaluation_functions.py).
Tokens come from spaCy's rule-based English tokenizer (``spacy.blank("en")``, whitespace tokens
dropped) so no model download is needed; the paper used ``en_core_web_sm``, whose tokenizer rules
are the same.
"""

from __future__ import annotations

import bisect
import functools
import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from seam_repro.datasets.igcs import fold
from seam_repro.errors import InputError, PrerequisiteError

MAX_DIST_ABS = 10

# --------------------------------------------------------------------------- tokens


@functools.lru_cache(maxsize=1)
def _nlp() -> Any:
    try:
        import spacy
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise PrerequisiteError("IGCS metrics need spaCy: pip install 'seam-repro[igcs]'") from exc
    return spacy.blank("en")


def tokenize(text: str) -> list[tuple[str, int, int]]:
    """``(text, start, end)`` character spans of spaCy tokens, whitespace tokens dropped."""
    nlp = _nlp()
    if len(text) >= nlp.max_length:
        nlp.max_length = len(text) + 1  # the rule-based tokenizer has no memory problem here
    return [(t.text, t.idx, t.idx + len(t.text)) for t in nlp(text) if not t.is_space]


def _code(i: int) -> str:
    """Token id -> one character, skipping the surrogate range, so token sequences are strings."""
    return chr(i if i < 0xD800 else i + 0x800)


class SourceIndex:
    """The source documents tokenised once, for grounding many spans quickly."""

    def __init__(self, documents: Sequence[str] | str):
        docs = (documents,) if isinstance(documents, str) else tuple(documents)
        if not docs:
            raise InputError("source", "at least one source document is required")
        self.documents: tuple[str, ...] = docs
        self.folded = tuple(fold(d) for d in docs)
        self.vocab: dict[str, int] = {}
        self.starts: list[list[int]] = []
        self.ends: list[list[int]] = []
        self.ids: list[np.ndarray] = []
        self.encoded: list[str] = []
        for doc in docs:
            toks = tokenize(doc)
            ids = [self.vocab.setdefault(t, len(self.vocab)) for t, _, _ in toks]
            self.starts.append([s for _, s, _ in toks])
            self.ends.append([e for _, _, e in toks])
            self.ids.append(np.asarray(ids, dtype=np.int64))
            self.encoded.append("".join(map(_code, ids)))

    def n_tokens(self, doc: int) -> int:
        return len(self.starts[doc])

    def token_range(self, doc: int, start: int, end: int) -> tuple[int, int]:
        """Tokens overlapping the characters ``[start, end)`` (partly covered tokens count)."""
        first = bisect.bisect_right(self.ends[doc], start)
        last = bisect.bisect_left(self.starts[doc], end)
        return first, max(first, last)


# --------------------------------------------------------------------------- parsing


@dataclass(frozen=True)
class ParsedAnswer:
    spans: tuple[str, ...]
    valid: bool
    """False when the text is not a JSON array of strings (then ``spans`` is empty)."""
    repaired: bool = False
    """True when a truncated array was closed with ``"]`` / ``]`` to parse (as igcs does)."""


_FENCE = re.compile(r"^\s*```\w*\s*\n(.*?)\n?```\s*$", re.S)


def parse_answer(text: str) -> ParsedAnswer:
    """Parse a model answer as a JSON array of strings, safely (``json`` only, never eval).

    Tries, in order: the whole text (after a "Selected Content:" preamble and a single ```` ``` ````
    fence), the slice from the first ``[`` to the last ``]`` (drops chatter around the array), and
    the text closed with ``"]`` or ``]`` (a generation cut by the token limit).
    """
    body = text.strip().removeprefix("Selected Content:").strip()
    fence = _FENCE.match(body)
    if fence:
        body = fence.group(1).strip()
    candidates: list[tuple[str, bool]] = [(body, False)]
    lo, hi = body.find("["), body.rfind("]")
    if 0 <= lo < hi:
        candidates.append((body[lo : hi + 1], False))
    if lo >= 0:
        candidates += [(body[lo:] + "]", True), (body[lo:] + '"]', True)]
    for cand, repaired in candidates:
        try:
            value = json.loads(cand, strict=False)
        except (ValueError, RecursionError):
            continue
        if isinstance(value, list):
            valid = all(isinstance(v, str) for v in value)
            return ParsedAnswer(tuple(value), True, repaired) if valid else ParsedAnswer((), False)
    return ParsedAnswer((), False)


# --------------------------------------------------------------------------- grounding

Mode = Literal["exact", "normalized", "fuzzy", "dropped", "empty"]


@dataclass(frozen=True)
class GroundedSpan:
    text: str
    mode: Mode
    doc: int = -1
    start: int = -1
    """Character offsets ``[start, end)`` in ``documents[doc]``; -1 when not grounded."""
    end: int = -1
    tok_start: int = -1
    tok_end: int = -1
    distance: int = 0
    """Token edits of a fuzzy match (0 otherwise)."""
    matched: str = ""
    """The source text the span was grounded to."""

    @property
    def grounded(self) -> bool:
        return self.doc >= 0


def max_distance(n_tokens: int) -> int:
    """Allowed token edits: ⌊0.15·n⌋ (in integer arithmetic) capped at ``MAX_DIST_ABS``."""
    return min(n_tokens * 15 // 100, MAX_DIST_ABS)


def _fuzzy_in_doc(index: SourceIndex, doc: int, pattern: str, p_ids: np.ndarray, k: int) -> tuple[int, int, int] | None:
    """Best ``(distance, tok_end, tok_start)`` window of one document, or None beyond ``k``.

    Only windows of length L±k can be within k edits; of those, a window must hold at least
    max(L, m) − k tokens that occur in the span (each edit spoils at most one aligned token), a
    filter computed with prefix sums in numpy. Survivors are scored in C by rapidfuzz.
    """
    from rapidfuzz import process
    from rapidfuzz.distance import Levenshtein

    n, L = index.n_tokens(doc), len(pattern)
    hits = np.concatenate(([0], np.cumsum(np.isin(index.ids[doc], p_ids))))
    if hits[-1] < L - k:
        return None
    starts_all, lens_all = [], []
    for m in range(max(1, L - k), min(n, L + k) + 1):
        s = np.arange(n - m + 1)
        ok = s[(hits[s + m] - hits[s]) >= max(L, m) - k]
        starts_all.append(ok)
        lens_all.append(np.full(len(ok), m))
    starts, lens = np.concatenate(starts_all), np.concatenate(lens_all)
    text = index.encoded[doc]
    best: tuple[int, int, int] | None = None
    for chunk in range(0, len(starts), 50_000):
        cs, cl = starts[chunk : chunk + 50_000], lens[chunk : chunk + 50_000]
        windows = [text[a : a + b] for a, b in zip(cs.tolist(), cl.tolist(), strict=True)]
        dist = process.cdist([pattern], windows, scorer=Levenshtein.distance, score_cutoff=k, dtype=np.int32)[0]
        ends = cs + cl
        top = np.lexsort((cs, ends, dist))[0]  # distance, then earliest end, then earliest start
        cand = (int(dist[top]), int(ends[top]), int(cs[top]))
        if cand[0] <= k and (best is None or cand < best):
            best = cand
    return best


def ground_span(
    span: str, index: SourceIndex, *, hint_doc: int | None = None, fuzzy: bool = True
) -> GroundedSpan:
    """Locate one answer span in the source (App. G).

    1. exact substring, 2. substring after lowercasing and whitespace→space, 3. the closest token
    window by token-level Levenshtein distance within :func:`max_distance` (lowest distance, then
    hinted document, then document order, then earliest end, then earliest start — igcs' order),
    else ``dropped``. Documents are searched hinted-first (document-level inference).
    """
    if not span.strip():
        return GroundedSpan(span, "empty")
    order = list(range(len(index.documents)))
    if hint_doc is not None and 0 <= hint_doc < len(order):
        order.insert(0, order.pop(hint_doc))
    for mode, hay, needle in (("exact", index.documents, span), ("normalized", index.folded, fold(span))):
        for d in order:
            pos = hay[d].find(needle)
            if pos >= 0:
                a, b = index.token_range(d, pos, pos + len(span))
                end = pos + len(span)
                return GroundedSpan(span, mode, d, pos, end, a, b, 0, index.documents[d][pos:end])  # type: ignore[arg-type]
    if not fuzzy:
        return GroundedSpan(span, "dropped")
    toks = [t for t, _, _ in tokenize(span)]
    k = max_distance(len(toks))
    if k == 0:
        return GroundedSpan(span, "dropped")
    fresh = iter(range(len(index.vocab), len(index.vocab) + len(toks)))
    p_ids = [index.vocab.get(t, -1) for t in toks]
    p_ids = [i if i >= 0 else next(fresh) for i in p_ids]
    pattern = "".join(map(_code, p_ids))
    known = np.asarray([i for i in p_ids if i < len(index.vocab)], dtype=np.int64)
    found = []
    for rank, d in enumerate(order):
        hit = _fuzzy_in_doc(index, d, pattern, known, k)
        if hit is not None:
            found.append((hit[0], rank, hit[1], hit[2], d))
    if not found:
        return GroundedSpan(span, "dropped")
    dist, _, t_end, t_start, d = min(found)
    start, end = index.starts[d][t_start], index.ends[d][t_end - 1]
    return GroundedSpan(span, "fuzzy", d, start, end, t_start, t_end, dist, index.documents[d][start:end])


def ground_answer(
    spans: Sequence[str] | Sequence[tuple[str, int]], index: SourceIndex, *, fuzzy: bool = True
) -> list[GroundedSpan]:
    """Ground every span; a ``(span, doc)`` pair hints the document it came from."""
    out = []
    for item in spans:
        text, hint = (item, None) if isinstance(item, str) else item
        out.append(ground_span(text, index, hint_doc=hint, fuzzy=fuzzy))
    return out


# --------------------------------------------------------------------------- scoring


def token_ids(spans: Sequence[GroundedSpan]) -> set[tuple[int, int]]:
    """The ``(document, token)`` indices a selection covers; ungrounded spans add nothing."""
    out: set[tuple[int, int]] = set()
    for g in spans:
        if g.grounded:
            out.update((g.doc, t) for t in range(g.tok_start, g.tok_end))
    return out


def token_prf(reference: set[tuple[int, int]], prediction: set[tuple[int, int]]) -> dict[str, float]:
    """Token-level precision/recall/F1 ×100; both empty → 100, exactly one empty → 0 (igcs)."""
    if not reference and not prediction:
        return {"precision": 100.0, "recall": 100.0, "f1": 100.0}
    same = len(reference & prediction)
    if same == 0:
        return {"precision": 0.0, "recall": 0.0, "f1": 0.0}
    p, r = same / len(prediction), same / len(reference)
    return {"precision": 100 * p, "recall": 100 * r, "f1": 100 * 2 * p * r / (p + r)}


@dataclass(frozen=True)
class InstanceScore:
    precision: float
    recall: float
    f1: float
    valid_format: bool
    best_reference: int
    grounded: tuple[GroundedSpan, ...] = field(repr=False)

    def details(self) -> dict[str, Any]:
        return {"precision": self.precision, "recall": self.recall, "best_reference": self.best_reference,
                "n_spans": len(self.grounded), "modes": dict(Counter(g.mode for g in self.grounded))}


def ground_reference(spans: Sequence[str], index: SourceIndex, where: str = "reference") -> list[GroundedSpan]:
    """Reference spans must occur in the source (exact or case/whitespace-insensitive)."""
    out = ground_answer(list(spans), index, fuzzy=False)
    for i, g in enumerate(out):
        if not g.grounded:
            raise InputError(where, f"span {i} ({g.text[:50]!r}) does not occur in the source", field="spans")
    return out


def score_instance(
    prediction: str | Sequence[str], references: Sequence[Sequence[str]], index: SourceIndex
) -> InstanceScore:
    """Parse (when given raw text), ground and score one answer against every reference; the
    reference with the highest F1 wins (first one on ties)."""
    if isinstance(prediction, str):
        parsed = parse_answer(prediction)
        spans, valid = parsed.spans, parsed.valid
    else:
        spans, valid = tuple(prediction), True
    if not references:
        raise InputError("references", "at least one reference selection is required")
    grounded = tuple(ground_answer(spans, index))
    pred_ids = token_ids(grounded)
    best, best_i = None, -1
    for i, ref in enumerate(references):
        scores = token_prf(token_ids(ground_reference(ref, index, f"reference {i}")), pred_ids)
        if best is None or scores["f1"] > best["f1"]:
            best, best_i = scores, i
    assert best is not None
    return InstanceScore(best["precision"], best["recall"], best["f1"], valid, best_i, grounded)

