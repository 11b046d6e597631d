"""IGCS suite: answer parsing, grounding (checked against the ``fuzzysearch`` library that the
reference ``igcs`` package uses, and against an own dynamic-programming edit distance), token-level
P/R/F1 on hand-counted spaCy tokens, the prompt (Figure 3)."""

from __future__ import annotations

import json
import random

import pytest

pytest.importorskip("spacy")

from seam_repro.errors import InputError  # noqa: E402
from seam_repro.metrics import igcs  # noqa: E402
from seam_repro.render.igcs import igcs_prompt  # noqa: E402

SOURCE = "Alpha beta gamma. Delta epsilon zeta. Eta theta iota."
# spaCy tokens: Alpha beta gamma . Delta epsilon zeta . Eta theta iota .   (indices 0..11)


def test_tokens_carry_source_offsets_and_skip_whitespace():
    text = "Hello,  world!\n It's 3.5%."
    toks = igcs.tokenize(text)
    assert [t for t, _, _ in toks] == ["Hello", ",", "world", "!", "It", "'s", "3.5", "%", "."]
    assert all(text[s:e] == t for t, s, e in toks)


# ----------------------------------------------------------------------------- parsing


@pytest.mark.parametrize(
    ("text", "spans", "valid", "repaired"),
    [
        ('["a b", "c"]', ("a b", "c"), True, False),
        ('```json\n["x"]\n```', ("x",), True, False),
        ('Selected Content: ["x"]', ("x",), True, False),
        ('Here you go: ["x", "y"] Hope it helps.', ("x", "y"), True, False),
        ('["complete", "cut off', ("complete", "cut off"), True, True),
        ('["complete", "also complete"', ("complete", "also complete"), True, True),
        ("[]", (), True, False),
        ("[1, 2]", (), False, False),
        ('{"a": "b"}', (), False, False),
        ("no json at all", (), False, False),
        ("[" * 100_000, (), False, False),
    ],
)
def test_parse_answer(text, spans, valid, repaired):
    got = igcs.parse_answer(text)
    assert (got.spans, got.valid, got.repaired) == (spans, valid, repaired)


# ----------------------------------------------------------------------------- grounding


@pytest.fixture(scope="module")
def index():
    return igcs.SourceIndex(SOURCE)


def test_exact_match_offsets_and_tokens(index):
    g = igcs.ground_span("Delta epsilon", index)
    assert (g.mode, g.doc, g.start, g.end, g.tok_start, g.tok_end) == ("exact", 0, 18, 31, 4, 6)


def test_normalized_match_is_case_insensitive(index):
    g = igcs.ground_span("DELTA EPSILON", index)
    assert (g.mode, g.matched, g.tok_start, g.tok_end) == ("normalized", "Delta epsilon", 4, 6)


def test_partly_covered_tokens_are_included(index):
    g = igcs.ground_span("lta epsil", index)
    assert (g.mode, g.tok_start, g.tok_end) == ("exact", 4, 6)


def test_empty_and_unmatched_spans_are_dropped(index):
    assert igcs.ground_span("   ", index).mode == "empty"
    assert igcs.ground_span("omega", index).mode == "dropped"


LONG = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen"


def test_fuzzy_match_one_substitution():
    ix = igcs.SourceIndex(f"Intro words here. {LONG} and more.")
    span = LONG.replace("seven", "SEVENTY")  # 15 tokens -> 15*15//100 = 2 edits allowed
    g = igcs.ground_span(span, ix)
    assert (g.mode, g.distance, g.matched) == ("fuzzy", 1, LONG)
    assert (g.tok_start, g.tok_end) == (4, 19)


def test_fuzzy_budget_is_15_percent_floor():
    ix = igcs.SourceIndex(LONG)
    three_edits = LONG.replace("two", "x").replace("six", "y").replace("ten", "z")
    assert igcs.ground_span(three_edits, ix).mode == "dropped"  # 3 > floor(2.25)
    six = "one two three four five six"  # 6 tokens -> 0 edits allowed
    assert igcs.ground_span(six.replace("three", "3"), igcs.SourceIndex(six)).mode == "dropped"
    seven = "one two three four five six seven"  # 7 tokens -> 1 edit
    assert igcs.ground_span(seven.replace("three", "3"), igcs.SourceIndex(seven)).mode == "fuzzy"


def test_fuzzy_budget_is_capped_at_ten_tokens():
    words = [f"w{i}" for i in range(100)]
    ix = igcs.SourceIndex(" ".join(words))
    assert igcs.max_distance(100) == 10
    for n_edits, mode in ((10, "fuzzy"), (11, "dropped")):
        span = list(words)
        for i in range(n_edits):
            span[5 + 9 * i] = f"x{i}"
        assert igcs.ground_span(" ".join(span), ix).mode == mode


def test_ties_prefer_earliest_end():
    ix = igcs.SourceIndex("a b c d e f g h q . a b c d e f g h r")
    g = igcs.ground_span("a b c d e f g h z", ix)  # 9 tokens, 1 edit; both copies at distance 1
    assert (g.distance, g.tok_start) == (1, 0)


def test_hinted_document_wins_over_document_order():
    ix = igcs.SourceIndex(["Shared sentence here.", "Other text. Shared sentence here."])
    assert igcs.ground_span("Shared sentence here.", ix).doc == 0
    g = igcs.ground_span("Shared sentence here.", ix, hint_doc=1)
    assert (g.doc, g.start) == (1, 12)


def _edit_distance(a: list[str], b: list[str]) -> int:
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        cur = [i]
        for j, y in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y)))
        prev = cur
    return prev[-1]


@pytest.mark.parametrize("seed", range(30))
def test_fuzzy_distance_agrees_with_fuzzysearch(seed):
    """The minimal token edit distance we find equals the best match fuzzysearch finds (igcs'
    own matcher), and the chosen window really is that far from the span."""
    fuzzysearch = pytest.importorskip("fuzzysearch")
    rng = random.Random(seed)
    vocab = [f"t{i:02d}" for i in range(12)]
    source = [rng.choice(vocab) for _ in range(150)]
    start = rng.randrange(0, 120)
    span = source[start : start + rng.randint(8, 28)]
    for _ in range(rng.randint(0, 4)):
        op, pos = rng.choice("sid"), rng.randrange(len(span))
        if op == "s":
            span[pos] = rng.choice(vocab + ["zz"])
        elif op == "i":
            span.insert(pos, rng.choice(vocab))
        elif len(span) > 1:
            del span[pos]
    ix = igcs.SourceIndex(" ".join(source))
    g = igcs.ground_span(" ".join(span), ix)
    k = igcs.max_distance(len(span))
    ref = [m for m in fuzzysearch.find_near_matches(span, source, max_l_dist=k) if m.end > m.start] if k else []
    if g.mode == "exact":
        assert ref and min(m.dist for m in ref) == 0
        return
    if not ref:
        assert g.mode == "dropped"
        return
    assert g.mode == "fuzzy"
    assert g.distance == min(m.dist for m in ref)
    assert _edit_distance(span, source[g.tok_start : g.tok_end]) == g.distance


# ----------------------------------------------------------------------------- scoring


def test_token_prf_edge_cases():
    assert igcs.token_prf(set(), set())["f1"] == 100.0
    assert igcs.token_prf({(0, 1)}, set())["f1"] == 0.0
    assert igcs.token_prf(set(), {(0, 1)})["f1"] == 0.0
    s = igcs.token_prf({(0, 1), (0, 2), (0, 3)}, {(0, 3), (0, 4)})
    assert (s["precision"], s["recall"]) == (50.0, pytest.approx(100 / 3))
    assert s["f1"] == pytest.approx(100 * 2 * 0.5 * (1 / 3) / (0.5 + 1 / 3))


def test_score_instance_hand_counted(index):
    pred = json.dumps(["Delta epsilon", "Eta theta"])  # tokens {4,5,8,9}
    s = igcs.score_instance(pred, [["Delta epsilon zeta."]], index)  # tokens {4,5,6,7}
    assert (s.precision, s.recall, s.f1, s.valid_format) == (50.0, 50.0, 50.0, True)


def test_score_instance_takes_best_reference(index):
    pred = json.dumps(["Delta epsilon", "Eta theta"])
    s = igcs.score_instance(pred, [["Delta epsilon zeta."], ["Eta theta", "Delta epsilon"]], index)
    assert (s.f1, s.best_reference) == (100.0, 1)


def test_invalid_answer_scores_zero_and_is_flagged(index):
    s = igcs.score_instance("I cannot help with that.", [["Delta epsilon zeta."]], index)
    assert (s.f1, s.valid_format) == (0.0, False)


def test_reference_outside_source_is_an_error(index):
    with pytest.raises(InputError, match="reference 0.*does not occur"):
        igcs.score_instance("[]", [["not in the source"]], index)


# ----------------------------------------------------------------------------- prompting


def test_prompt_template_figure3():
    p = igcs_prompt("Extract salient phrases.", ["D0 text.", "D1 text."])
    assert p == (
        "Extract salient phrases. Output the exact text phrases from the given documents as a valid json array "
        "of strings. Do not change the copied text.\n\ndocument #0:\nD0 text.\n\ndocument #1:\nD1 text."
    )
