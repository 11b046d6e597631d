"""MuSiQue scoring, two variants reported side by side.

(a) ``upstream_f1``: port of upstream SEAM ``evaluation_classes/question_answering.py::QA``
    (``postprocess`` + ``AnswerMetric``) and ``MusiQue_metrics/answer.py``: find ``\\{.*\\}`` in the
    response, apply upstream's quote fixes, parse it as a Python literal, retry with ``}`` ->
    ``'}``, else keep the raw response; then SQuAD token F1 of ``str(pred)`` vs ``str(gold_dict)``.
    Upstream calls ``eval``; we never do: ``metrics.literal.evaluate`` gives ``eval``'s value
    without running anything, and where ``eval`` might have succeeded (a name such as ``str``, a
    value too large to build) the instance records ``eval_divergence``.
(b) corrected (``corrected``): answer F1/EM against the gold answer and its aliases (max, as the
    official MuSiQue ``metrics/answer.py``), answerability, and a combined score: answer F1 when
    gold is answerable and the model says answerable, 100 when both say unanswerable, else 0.
"""

from __future__ import annotations

import ast
import collections
import json
import re
import string
import warnings
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

from seam_repro.metrics.literal import evaluate
from seam_repro.metrics.scan import brace_span

MAX_LITERAL_CHARS = 20_000
"""Longer ``{...}`` spans are treated as unparseable (a 500-token answer is far shorter)."""
MAX_NESTING = 50
"""Deeper bracket nesting is treated as unparseable (guards the parser's recursion)."""

_DROP_PUNCT = str.maketrans("", "", string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)


# --- SQuAD answer normalisation (as MusiQue_metrics/answer.py) -------------------------------------
def normalize_answer(text: str) -> str:
    """Lower-case, drop ASCII punctuation, drop articles a/an/the, collapse whitespace. (SQuAD's
    per-character ``''.join(ch for ch in text if ch not in exclude)``, as one ``translate``.)"""
    text = text.lower().translate(_DROP_PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def _tokens(text: str) -> list[str]:
    return normalize_answer(text).split() if text else []


def token_f1(gold: str, pred: str) -> float:
    """SQuAD token-multiset F1 in [0, 1]; if either side has no tokens, 1 iff both have none."""
    gold_toks, pred_toks = _tokens(gold), _tokens(pred)
    if not gold_toks or not pred_toks:
        return float(gold_toks == pred_toks)
    same = sum((collections.Counter(gold_toks) & collections.Counter(pred_toks)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred_toks), same / len(gold_toks)
    return (2 * precision * recall) / (precision + recall)


def exact_match(gold: str, pred: str) -> float:
    return float(normalize_answer(gold) == normalize_answer(pred))


# --- safe literal parsing -------------------------------------------------------------------------
def _nesting(text: str) -> int:
    """Deepest bracket nesting: the highest running count of openers minus closers."""
    return max(accumulate(((ch in "([{") - (ch in ")]}") for ch in text), initial=0))


def _python_literal(text: str) -> Any:
    """``ast.literal_eval`` of ``text`` (which executes nothing), or None where it fails."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes such as '\_' warn while parsing
            value = ast.literal_eval(text)
        str(value)  # huge ints can parse yet fail to print; treat as unparseable
    except Exception:  # SyntaxError, ValueError, TypeError, MemoryError, RecursionError
        return None
    return value


def upstream_postprocess_detail(response: str) -> tuple[Any, str | None]:
    """Upstream ``QA.postprocess`` on an already-extracted response: (a value as ``eval`` gave it or
    the response string, None or why ``eval`` itself might have given something else)."""
    span = brace_span(response)  # re.search(r'\{.*\}', response)
    if span is None:
        return response, None
    str_dict = response[span[0] : span[1]]
    # Upstream's quote fixes, character for character.
    str_dict = str_dict.replace("'s", "\\'s").replace("'t", "\\'t").replace("s' ", "s\\' ")
    str_dict = str_dict.replace("\\\\_", "_").replace("\\_", "_")
    divergence = None
    for attempt in (str_dict, str_dict.replace("}", "'}")):
        outcome = evaluate(attempt)
        if outcome.ok:
            return outcome.value, divergence
        if outcome.status != "raises" and divergence is None:
            divergence = f"{outcome.status}: {outcome.detail}"
    return response, divergence


def upstream_f1(response: str, target: dict[str, Any]) -> tuple[float, bool]:
    """(F1 x100 of ``str(pred)`` vs ``str(gold dict)``, whether pred parsed to a dict) as upstream."""
    score, details = upstream_score(response, target)
    return score, details["parsed_dict"]


def upstream_score(response: str, target: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    """Upstream's per-instance ``all_f1`` (x100) and details: ``parsed_dict`` (upstream's
    "follows format") and, when set, ``eval_divergence``."""
    pred, divergence = upstream_postprocess_detail(response)
    details: dict[str, Any] = {"parsed_dict": type(pred) is dict}
    if divergence is not None:
        details["eval_divergence"] = divergence
    return 100.0 * token_f1(str(dict(target)), str(pred)), details


# --- corrected scoring ----------------------------------------------------------------------------
def _coerce_bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "yes", "false", "no"):
        return value.strip().lower() in ("true", "yes")
    return None


def parse_answer_dict(response: str) -> dict[str, Any] | None:
    """The first ``{...}`` span that parses (JSON, then Python literal) to a dict with
    ``is_answerable``; None otherwise. Used by the corrected metric and by format validity."""
    for greedy in (True, False):
        for dotall in (False, True):
            found = brace_span(response, greedy=greedy, dotall=dotall)
            if found is None:
                continue
            span = response[found[0] : found[1]]
            candidates: list[Any] = []
            if len(span) <= MAX_LITERAL_CHARS and _nesting(span) <= MAX_NESTING:
                try:
                    candidates.append(json.loads(span))
                except (ValueError, RecursionError):
                    pass
                candidates.append(_python_literal(span))
            candidates.append(upstream_postprocess_detail(span)[0])
            for value in candidates:
                if isinstance(value, dict) and "is_answerable" in value:
                    return value
    return None


@dataclass(frozen=True)
class QAScore:
    """Corrected MuSiQue scores of one instance (0-100 except the booleans)."""

    answer_f1: float
    answer_em: float
    pred_answerable: bool | None
    gold_answerable: bool
    combined: float


def corrected(response: str, target: dict[str, Any], aliases: list[str] | tuple[str, ...] = ()) -> QAScore:
    """Answer F1/EM (max over answer + aliases), answerability and the combined score."""
    parsed = parse_answer_dict(response)
    if parsed is None:
        pred_answerable, answer = None, response
    else:
        pred_answerable = _coerce_bool(parsed.get("is_answerable"))
        content = parsed.get("answer_content", "")
        answer = content if isinstance(content, str) else str(content)
    golds = [str(target["answer_content"]), *[str(a) for a in aliases]]
    f1 = 100.0 * max(token_f1(g, answer) for g in golds)
    em = 100.0 * max(exact_match(g, answer) for g in golds)
    gold_answerable = bool(target["is_answerable"])
    if gold_answerable and pred_answerable is True:
        combined = f1
    elif not gold_answerable and pred_answerable is False:
        combined = 100.0
    else:
        combined = 0.0
    return QAScore(f1, em, pred_answerable, gold_answerable, combined)


def answerability_f1(pairs: list[tuple[bool, bool | None]]) -> float | None:
    """Binary F1 x100 with "answerable" as the positive class over (gold, pred) pairs; an
    unparseable prediction (None) counts as the wrong label. None when there is no positive at all."""
    tp = fp = fn = 0
    for gold, pred in pairs:
        label = (not gold) if pred is None else pred
        tp += gold and label
        fp += (not gold) and label
        fn += gold and not label
    if tp + fp + fn == 0:
        return None
    return 100.0 * 2 * tp / (2 * tp + fp + fn)


def version(kind: str) -> str:
    """Metric version strings: ``upstream`` (``musique_f1``) or ``corrected`` (``musique_corrected``)."""
    if kind == "upstream":
        return "musique_f1/upstream-str-dict-squad-f1/safe-eval-v2"
    return "musique_corrected/answer-f1-aliases+answerability/v2"
