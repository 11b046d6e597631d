"""ZeroSCROLLS suite: hand-computed metric values, the paper's worked examples (§3.3), scipy's
Kendall tau as an independent check of the concordance index, and trimming invariants."""

from __future__ import annotations

import math
import random

import pytest
from scipy.stats import kendalltau

from seam_repro.errors import InputError
from seam_repro.metrics import zeroscrolls as zs
from seam_repro.render import zeroscrolls as prompt

# ----------------------------------------------------------------------------- prompts

QMSUM_TEMPLATE = prompt.PromptTemplate(
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

REPORT = prompt.PromptTemplate(
    instruction="Summarize the report.",
    context_header="Report:",
    context_name="report",
    response_header="Summary:",
    task_kind="summarization",
)


def test_prompt_structure_matches_figure3_layout():
    p = prompt.build_prompt(QMSUM_TEMPLATE, "A: hello.\nB: costs are high.", "What about costs?")
    assert p == (
        QMSUM_TEMPLATE.instruction
        + "\n\nTranscript:\nA: hello.\nB: costs are high.\n\nQuery:\nWhat about costs?\n\nAnswer:\n"
    )


def test_chat_variant_drops_response_header_and_adds_no_explanation_for_qa():
    qa = prompt.PromptTemplate("Answer the question.", "Article:", "article", "Answer:", "Question:", "qa")
    p = prompt.build_prompt(qa, "Text.", "Why?", chat=True)
    assert p == "Answer the question. Do not provide any explanation.\n\nArticle:\nText.\n\nQuestion:\nWhy?"
    # summarization instructions are not changed in chat mode (§3.2 only names QA/aggregation)
    assert prompt.build_prompt(REPORT, "Text.", chat=True) == "Summarize the report.\n\nReport:\nText."


def test_query_header_and_query_must_agree():
    with pytest.raises(InputError, match="query"):
        prompt.build_prompt(QMSUM_TEMPLATE, "ctx")
    with pytest.raises(InputError, match="query"):
        prompt.build_prompt(REPORT, "ctx", "q?")


# ----------------------------------------------------------------------------- trimming

CONTEXT = " ".join(f"w{i}" for i in range(1, 101))


def test_no_trim_when_prompt_fits():
    r = prompt.trim_to_budget(REPORT, CONTEXT, 1000)
    assert not r.trimmed and r.prompt == prompt.build_prompt(REPORT, CONTEXT)
    assert r.n_tokens == 3 + 1 + 100 + 1


def test_trim_keeps_exactly_the_words_that_fit_hand_count():
    # overhead: instruction 3 + "Report:" 1 + note "[The rest of the report is omitted]" 7 + "Summary:" 1 = 12
    r = prompt.trim_to_budget(REPORT, CONTEXT, 50)
    kept = " ".join(f"w{i}" for i in range(1, 39))
    assert r.trimmed and r.context_words_kept == 38 and r.n_tokens == 50
    assert r.prompt == f"Summarize the report.\n\nReport:\n{kept}\n\n[The rest of the report is omitted]\n\nSummary:\n"


def test_trim_keeps_query_and_note_precedes_it():
    r = prompt.trim_to_budget(QMSUM_TEMPLATE, CONTEXT, 60, "What did they decide?")
    assert r.trimmed and r.n_tokens <= 60
    assert r.prompt.endswith("\n\n[The rest of the transcript is omitted]\n\nQuery:\nWhat did they decide?\n\nAnswer:\n")


def test_trim_is_maximal_under_a_character_tokenizer():
    """With a tokenizer whose counts do not follow words, the kept prefix still fits and one more
    word would not."""
    chars = list
    r = prompt.trim_to_budget(REPORT, CONTEXT, 200, tokenizer=chars)
    assert r.trimmed and len(r.prompt) <= 200
    one_more = " ".join(f"w{i}" for i in range(1, r.context_words_kept + 2))
    assert len(prompt.build_prompt(REPORT, one_more, trimmed=True)) > 200


def test_budget_below_fixed_parts_is_a_clear_error():
    with pytest.raises(InputError, match="budget of 5"):
        prompt.trim_to_budget(REPORT, CONTEXT, 5)


# ----------------------------------------------------------------------------- ROUGE


def test_rouge_geometric_mean_hand_computed():
    # R1: 5 of 6 unigrams shared -> 5/6; R2: the-cat, on-the, the-mat shared of 5 -> 3/5; RL: LCS 5 -> 5/6
    r = zs.rouge_geometric_mean("the cat sat on the mat", ["the cat was on the mat"])
    assert r["rouge1"] == pytest.approx(100 * 5 / 6)
    assert r["rouge2"] == pytest.approx(100 * 3 / 5)
    assert r["rougeL"] == pytest.approx(100 * 5 / 6)
    assert r["score"] == pytest.approx(100 * (5 / 6 * 3 / 5 * 5 / 6) ** (1 / 3))


def test_rouge_max_is_taken_per_type_before_the_geometric_mean():
    pred = "alpha beta gamma delta"
    ref_a = "alpha beta omega gamma"  # R1 .75, R2 1/3, RL .75
    ref_b = "gamma delta"  # R1 2/3, R2 .5, RL 2/3
    r = zs.rouge_geometric_mean(pred, [ref_a, ref_b])
    assert r["score"] == pytest.approx(100 * (0.75 * 0.5 * 0.75) ** (1 / 3))
    per_ref_best = max(zs.rouge_geometric_mean(pred, [x])["score"] for x in (ref_a, ref_b))
    assert per_ref_best == pytest.approx(100 * (2 / 3 * 0.5 * 2 / 3) ** (1 / 3))
    assert r["score"] > per_ref_best + 4  # the paper's variant differs from max of per-reference means


def test_rouge_stemming_is_optional():
    plain = zs.rouge_geometric_mean("cats running", ["cat run"])
    stemmed = zs.rouge_geometric_mean("cats running", ["cat run"], use_stemmer=True)
    assert plain["score"] == 0.0 and stemmed["score"] == pytest.approx(100.0)


# ----------------------------------------------------------------------------- F1


@pytest.mark.parametrize(
    ("pred", "gold", "expected"),
    [
        ("The Eiffel Tower!", "eiffel tower", 100.0),  # case, punctuation, article
        ("Café Müller", "cafe muller", 100.0),  # Unicode -> ASCII
        ("a cat", "the cat", 100.0),  # articles are the removed stopwords
        ("red big car", "big red truck", 100 * 2 / 3),  # P = R = 2/3
        ("big", "big red truck", 50.0),  # P=1, R=1/3 -> F=0.5
        ("", "anything", 0.0),
        ("nothing shared", "at all", 0.0),
    ],
)
def test_f1_hand_computed(pred, gold, expected):
    assert zs.f1(pred, [gold]) == pytest.approx(expected)


def test_f1_is_max_over_references():
    assert zs.f1("big red truck", ["small car", "red truck", "truck"]) == pytest.approx(100 * 0.8)


def test_normalisation_order_follows_official_script():
    # punctuation goes before transliteration, so an em dash survives as unidecode's ASCII "--"
    assert zs.normalize_answer("The  Naïve—Test, an idea") == "naive--test idea"


# ----------------------------------------------------------------------------- accuracy


@pytest.mark.parametrize(
    ("pred", "expected"),
    [("The answer is (B).", 100.0), ("B", 100.0), ("I think C, not B", 0.0), ("bacon", 0.0), ("", 0.0)],
)
def test_accuracy_first_option_letter(pred, expected):
    assert zs.accuracy(pred, ["(B)"]) == expected


def test_accuracy_reference_without_letter_is_an_error():
    with pytest.raises(InputError, match="option letter"):
        zs.accuracy("B", ["none"])


# ----------------------------------------------------------------------------- exponential similarity

PAPER_OUTPUT = "Out of 50 reviews, 20 are positive and 30 are negative, so 40% of the reviews are positive 60% are negative."


def test_exponential_similarity_parses_paper_example():
    assert zs.first_percentage(PAPER_OUTPUT) == 40.0
    assert zs.exponential_similarity(PAPER_OUTPUT, ["40%"]) == pytest.approx(100.0)


@pytest.mark.parametrize(("gold", "expected"), [("50%", 50.0), ("30%", 50.0), ("60%", 25.0), ("45%", 100 * 2**-0.5)])
def test_exponential_similarity_halves_every_ten_points(gold, expected):
    assert zs.exponential_similarity(PAPER_OUTPUT, [gold]) == pytest.approx(expected)


def test_exponential_similarity_non_percentage_scores_zero():
    assert zs.exponential_similarity("about forty percent", ["40%"]) == 0.0
    assert zs.exponential_similarity("12.5% positive", ["10%"]) == pytest.approx(100 * 2**-0.25)


# ----------------------------------------------------------------------------- concordance index


def test_concordance_hand_computed():
    assert zs.concordance_index("2, 1, 3, 4", ["1, 2, 3, 4"]) == pytest.approx(100 * 5 / 6)
    assert zs.concordance_index("Order: 4, 3, 2, 1", ["1, 2, 3, 4"]) == 0.0
    assert zs.concordance_index("Order: 3, 1, 2", ["3, 1, 2"]) == 100.0


def test_concordance_not_a_permutation_scores_zero():
    assert zs.concordance_index("1, 2, 2", ["1, 2, 3"]) == 0.0
    assert zs.concordance_index("1, 2", ["1, 2, 3"]) == 0.0
    assert zs.concordance_index("9" * 5000, ["1, 2"]) == 0.0  # too long to be a number, no crash


@pytest.mark.parametrize("seed", range(5))
def test_concordance_equals_kendall_tau_rescaled(seed):
    rng = random.Random(seed)
    n = rng.randint(3, 40)
    gold = list(range(1, n + 1))
    rng.shuffle(gold)
    pred = list(gold)
    rng.shuffle(pred)
    pos_gold = {s: i for i, s in enumerate(gold)}
    pos_pred = {s: i for i, s in enumerate(pred)}
    tau = kendalltau([pos_gold[s] for s in gold], [pos_pred[s] for s in gold]).statistic
    got = zs.concordance_index(", ".join(map(str, pred)), [" ".join(map(str, gold))])
    assert got == pytest.approx(100 * (tau + 1) / 2)
    assert not math.isnan(got)


def test_reference_must_be_a_permutation():
    with pytest.raises(InputError, match="permutation"):
        zs.concordance_index("1, 2", ["1, 1"])
