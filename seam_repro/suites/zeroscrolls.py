"""ZeroSCROLLS-style prompts, context trimming and metrics.

Replicates ZeroSCROLLS (Shaham et al., 2023) §3.2 "Prompt Structure" / "Accommodations for
ChatBots" and §3.3 "Automatic Evaluation", with the per-task metric semantics of the official
evaluation script (``tau/zero_scrolls`` metrics: SQuAD-style normalisation followed by
``unidecode``, ``\\d+\\.?\\d*%`` percentage parsing, ``\\b[A-D]\\b`` option letters, concordance
over summary-id positions). Every public score is on the kit's 0–100 scale.
"""

from __future__ import annotations

import math
import re
import string
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from seam_repro.errors import InputError

TaskKind = Literal["summarization", "qa", "aggregation"]

OMISSION_NOTE = "[The rest of the {context_name} is omitted]"
"""Appended to a trimmed context (paper Figure 3: "[The rest of the transcript is omitted]")."""

CHAT_QA_SUFFIX = "Do not provide any explanation."
"""Appended to QA and aggregation instructions for chat models (§3.2)."""


# --------------------------------------------------------------------------- prompts


@dataclass(frozen=True)
class PromptTemplate:
    """The generic template of §3.2: instruction, context (with header), query, response header."""

    instruction: str
    context_header: str
    """E.g. ``"Transcript:"``, ``"Report:"``, ``"Reviews:"``."""
    context_name: str
    """What the omission note calls the context, e.g. ``"transcript"``."""
    response_header: str
    """E.g. ``"Answer:"`` or ``"Summary:"``; dropped in the chat variant."""
    query_header: str | None = None
    """E.g. ``"Query:"``; ``None`` for tasks without a query."""
    task_kind: TaskKind = "qa"


QMSUM_TEMPLATE = PromptTemplate(
    instruction=(
        "You are given a meeting transcript and a query containing a question or instruction. "
        "Answer the query in one or more sentences."
    ),
    context_header="Transcript:",
    context_name="transcript",
    query_header="Query:",
    response_header="Answer:",
    task_kind="summarization",
)
"""The worked example of the paper's Figure 3 (QMSum)."""


def build_prompt(
    template: PromptTemplate, context: str, query: str | None = None, *, chat: bool = False, trimmed: bool = False
) -> str:
    """Assemble instruction, context header + context, query header + query and response header.

    ``chat`` omits the response header and, for QA/aggregation, appends "Do not provide any
    explanation." to the instruction (§3.2). ``trimmed`` appends the omission note to the context.
    Blocks are separated by a blank line; each header sits on its own line above its text.
    """
    if template.query_header is not None and query is None:
        raise InputError("zeroscrolls prompt", "the template has a query header but no query was given", field="query")
    if template.query_header is None and query is not None:
        raise InputError("zeroscrolls prompt", "a query was given but the template has no query header", field="query")
    instruction = template.instruction
    if chat and template.task_kind in ("qa", "aggregation"):
        instruction = f"{instruction} {CHAT_QA_SUFFIX}"
    body = context.rstrip()
    if trimmed:
        note = OMISSION_NOTE.format(context_name=template.context_name)
        body = f"{body}\n\n{note}" if body else note
    blocks = [instruction, f"{template.context_header}\n{body}"]
    if template.query_header is not None:
        blocks.append(f"{template.query_header}\n{query}")
    prompt = "\n\n".join(blocks)
    if not chat:
        prompt += f"\n\n{template.response_header}\n"
    return prompt


# --------------------------------------------------------------------------- trimming

Tokenizer = Callable[[str], Sequence[object]]
"""Any encode function: text -> token sequence (only its length is used), e.g.
``lambda t: hf_tokenizer.encode(t, add_special_tokens=False)``."""

_WORD = re.compile(r"\S+")


def whitespace_tokenize(text: str) -> list[str]:
    """Default tokenizer: maximal runs of non-whitespace characters."""
    return text.split()


@dataclass(frozen=True)
class TrimmedPrompt:
    prompt: str
    trimmed: bool
    n_tokens: int
    """Tokens of the whole prompt under the tokenizer used."""
    context_words_kept: int
    context_words_total: int


def trim_to_budget(
    template: PromptTemplate,
    context: str,
    max_tokens: int,
    query: str | None = None,
    *,
    tokenizer: Tokenizer = whitespace_tokenize,
    chat: bool = False,
) -> TrimmedPrompt:
    """Build the prompt, trimming the *end* of the context so the whole prompt fits ``max_tokens``.

    Instruction, query and response header are always kept (as ZeroSCROLLS' ``process_model_input``
    keeps the query suffix); a trimmed context ends with the omission note. The cut falls on a word
    boundary and the longest fitting prefix is found by binary search over the number of context
    words, so any tokenizer (whitespace, BPE) can be passed in as an encode function.
    """
    if max_tokens <= 0:
        raise InputError("zeroscrolls prompt", f"max_tokens must be positive, got {max_tokens}", field="max_tokens")
    full = build_prompt(template, context, query, chat=chat)
    n_full = len(tokenizer(full))
    words = list(_WORD.finditer(context))
    if n_full <= max_tokens:
        return TrimmedPrompt(full, False, n_full, len(words), len(words))

    def prompt_with(k: int) -> str:
        prefix = context[: words[k - 1].end()] if k > 0 else ""
        return build_prompt(template, prefix, query, chat=chat, trimmed=True)

    lo, hi = 0, len(words)  # invariant: prompt_with(lo) fits (checked below), prompt_with(hi) does not
    n_lo = len(tokenizer(prompt_with(0)))
    if n_lo > max_tokens:
        raise InputError(
            "zeroscrolls prompt",
            f"instruction, query and omission note alone take {n_lo} tokens, more than the budget of {max_tokens}",
            field="max_tokens",
        )
    while hi - lo > 1:
        mid = (lo + hi) // 2
        n_mid = len(tokenizer(prompt_with(mid)))
        if n_mid <= max_tokens:
            lo, n_lo = mid, n_mid
        else:
            hi = mid
    return TrimmedPrompt(prompt_with(lo), True, n_lo, lo, len(words))


# --------------------------------------------------------------------------- metrics


def _max_over(fn: Callable[[str, str], float], prediction: str, references: Sequence[str]) -> float:
    """ZeroSCROLLS' ``metric_max_over_ground_truths``: the best score over the references."""
    if isinstance(references, str):
        references = [references]
    if not references:
        raise InputError("references", "at least one reference is required")
    return max(fn(prediction, ref) for ref in references)


_ROUGE_TYPES = ("rouge1", "rouge2", "rougeL")


def rouge_geometric_mean(prediction: str, references: Sequence[str], *, use_stemmer: bool = False) -> dict[str, float]:
    """Per-instance ROUGE geometric mean (§3.3): for each of R-1, R-2, R-L the maximal F-measure
    over the references, then ``(R1*R2*RL)^(1/3)``; all ×100.

    ``use_stemmer=False`` follows the (Zero)SCROLLS metric scripts; SEAM's own ``rouge_geo`` stems.
    """
    from rouge_score import rouge_scorer

    if isinstance(references, str):
        references = [references]
    if not references:
        raise InputError("references", "at least one reference is required")
    scorer = rouge_scorer.RougeScorer(list(_ROUGE_TYPES), use_stemmer=use_stemmer)
    best = dict.fromkeys(_ROUGE_TYPES, 0.0)
    for ref in references:
        scores = scorer.score(ref, prediction)  # rouge-score takes the target first
        for t in _ROUGE_TYPES:
            best[t] = max(best[t], scores[t].fmeasure)
    geo = math.prod(best.values()) ** (1 / 3)
    return {"score": 100 * geo, **{t: 100 * v for t, v in best.items()}}


ARTICLES = r"\b(a|an|the)\b"
"""The "stopwords" of §3.3 as Rajpurkar et al. (2016) and the official script remove them."""


def normalize_answer(text: str) -> str:
    """§3.3 normalisation in the official order: lowercase, drop ASCII punctuation, drop articles,
    collapse whitespace, then transliterate to ASCII (``unidecode``)."""
    from unidecode import unidecode

    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCT)
    text = re.sub(ARTICLES, " ", text)
    return unidecode(" ".join(text.split()))


_PUNCT = frozenset(string.punctuation)


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


def exponential_similarity(
    prediction: str, references: Sequence[str], *, d: float = 2.0, c: float = 10.0
) -> float:
    """ES(p, p̂) = d^(−c·|p − p̂|) with p, p̂ as fractions (§3.3), ×100; 0 when the prediction has
    no percentage. A reference without a percentage counts as 0% (official behaviour)."""

    def one(pred: str, ref: str) -> float:
        p_hat = first_percentage(pred)
        if p_hat is None:
            return 0.0
        p = first_percentage(ref)
        p = 0.0 if p is None else p
        return d ** (-c * abs(p - p_hat) / 100)

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
        concordant = _count_increasing_pairs(ranks)
        return concordant / (n * (n - 1) / 2)

    return 100 * _max_over(one, prediction, references)


def _count_increasing_pairs(seq: list[int]) -> int:
    """Pairs i<j with seq[i] < seq[j] (distinct values), by merge counting in O(n log n)."""
    n = len(seq)
    inversions = 0
    arr = list(seq)
    width = 1
    while width < n:
        merged: list[int] = []
        for lo in range(0, n, 2 * width):
            left, right = arr[lo : lo + width], arr[lo + width : lo + 2 * width]
            i = j = 0
            while i < len(left) and j < len(right):
                if left[i] <= right[j]:
                    merged.append(left[i])
                    i += 1
                else:
                    merged.append(right[j])
                    inversions += len(left) - i
                    j += 1
            merged.extend(left[i:])
            merged.extend(right[j:])
        arr = merged
        width *= 2
    return n * (n - 1) // 2 - inversions
