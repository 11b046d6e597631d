"""Exact prompt text per dataset, written by hand from the upstream rules (upstream-seam.md §3).

Each expectation is spelled out character by character, not produced by the renderer, so any drift
in separators, spacing, numbering, permutation or quirks fails here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from render_helpers import few_shots, render_instance

from seam_repro.instances import Document, Instance, Mention, Token
from seam_repro.render.common import shuffle_documents
from seam_repro.render.context import RunContext
from seam_repro.specs import load_suite

SHARED = Path(__file__).resolve().parents[2] / "shared"
UPSTREAM_PROMPTS = SHARED / "seam" / "upstream-6ad83f4" / "prompts"


def upstream_prompt_file(name: str) -> dict:
    path = UPSTREAM_PROMPTS / f"{name}.json"
    if not path.exists():
        pytest.skip(f"{path} not present")
    return json.loads(path.read_text(encoding="utf-8"))


def ctx(name: str, pf: dict, *, para: int = 0, demos: tuple[int, ...] = (), max_docs: int = 3,
        order: tuple[int, ...] = (2, 0, 1), profile: str = "upstream") -> RunContext:
    return RunContext(load_suite("seam").spec(name), profile, pf, para, demos, max_docs, order)


# --- document permutation -------------------------------------------------------------------

def test_shuffle_fills_slots_then_drops_empty_ones():
    # slots [a, b, None, None]; order (3, 1, 0, 2) -> [None, b, a, None] -> [b, a]
    assert shuffle_documents(["a", "b"], 4, (3, 1, 0, 2)) == ["b", "a"]


def test_shuffle_drops_documents_beyond_max_like_numpy_slice_growth():
    # 4 docs but max 3: the slot list grows to 4, the permutation of 3 slots never picks 'd'
    assert shuffle_documents(["a", "b", "c", "d"], 3, (2, 0, 1)) == ["c", "a", "b"]


def test_shuffle_full_slots_strip_trailing_nul_as_numpy_unicode_arrays_do():
    assert shuffle_documents(["a\x00", "b"], 2, (1, 0)) == ["b", "a"]
    assert shuffle_documents(["a\x00", "b"], 3, (0, 1, 2)) == ["a\x00", "b"]


# --- MultiNews: base template ---------------------------------------------------------------

def test_multinews_test_block_exact():
    pf = upstream_prompt_file("MultiNews")
    inst = Instance("MultiNews", "test", "7", 7, (Document("0", "First story."), Document("1", " Second story.")),
                    target="– A summary.")
    c = ctx("MultiNews", pf, para=1, max_docs=3, order=(2, 0, 1))
    prompt, target = render_instance(inst, c, few_shots(c))
    instr = pf["prompts"][1]["instructions"]
    assert prompt == (
        "\n\n"
        f"*Instructions*: {instr}\n"
        "*The documents*:\n"
        "Document 1: ```First story.```\n"
        "Document 2: ``` Second story.```\n"
        "*Answer*: "
    )
    assert target == "– A summary."


def test_multinews_demo_block_uses_run_permutation_and_target():
    pf = upstream_prompt_file("MultiNews")
    demo = pf["demonstrations"][2]
    n = len(demo["documents"])
    order = tuple(reversed(range(n)))
    c = ctx("MultiNews", pf, para=0, demos=(2,), max_docs=n, order=order)
    docs = "\n".join(f"Document {j + 1}: ```{d}```" for j, d in enumerate(reversed(demo["documents"])))
    expected = (f"*Instructions*: {pf['prompts'][0]['instructions']}\n*The documents*:\n{docs}\n"
                f"*Answer*: {demo['target']}")
    assert few_shots(c) == expected


# --- OpenASP: no instruction in upstream ----------------------------------------------------

def test_openasp_upstream_has_no_instruction_and_corrected_has_it():
    pf = upstream_prompt_file("OpenASP")
    inst = Instance("OpenASP", "test", "g", "g", (Document("a", "S1 S2"),), aspect_label="Casualties",
                    target="x\ny")
    c = ctx("OpenASP", pf, para=4, max_docs=2, order=(1, 0))
    prompt, _ = render_instance(inst, c, few_shots(c))
    assert prompt == ("\n\nAspect label: Casualties\n\nThe provided documents:\n"
                      "Document 1: ```S1 S2```\nAspect-based summary: ")
    c1 = ctx("OpenASP", pf, para=4, max_docs=2, order=(1, 0), profile="seam-repro-1")
    prompt1, _ = render_instance(inst, c1, few_shots(c1))
    assert prompt1.startswith(f"\n\n*Instructions*: {pf['prompts'][4]['instructions']}\nAspect label: Casualties")


# --- MuSiQue: '??', missing space, no output format -------------------------------------------

def test_musique_upstream_quirks_exact():
    pf = upstream_prompt_file("MusiQue")
    inst = Instance("MusiQue", "val", "2hop__1_2", "2hop__1_2", (Document("0", "P0"), Document("1", "P1")),
                    question="Who wrote it?", target={"is_answerable": False, "answer_content": "X"})
    c = ctx("MusiQue", pf, para=3, max_docs=20, order=tuple(range(19, -1, -1)))
    prompt, target = render_instance(inst, c, few_shots(c))
    instr = pf["prompts"][3]["instructions"]
    assert prompt == (
        "\n\n"
        f"*Instructions*:{instr} \n"
        "*Question*: Who wrote it?? *The documents*:\n"
        "Document 1: ```P1```\n"
        "Document 2: ```P0```\n"
        "*Answer*: "
    )
    assert target == {"is_answerable": False, "answer_content": "X"}


def test_musique_demo_answer_is_python_dict_repr_upstream_and_json_corrected():
    pf = upstream_prompt_file("MusiQue")
    demo = pf["demonstrations"][0]
    c = ctx("MusiQue", pf, demos=(0,), max_docs=20, order=tuple(range(20)))
    block = few_shots(c)
    ans = demo["answer"]
    assert block.endswith(f"*Answer*: {{'is_answerable': {ans['is_answerable']}, "
                          f"'answer_content': '{ans['answer_content']}'}}")
    assert f"*Question*: {demo['question']}? *The documents*:\n" in block
    c1 = ctx("MusiQue", pf, demos=(0,), max_docs=20, order=tuple(range(20)), profile="seam-repro-1")
    block1 = few_shots(c1)
    assert block1.endswith(json.dumps(ans))
    assert pf["prompts"][0]["output_format"] in block1


# --- ECB+: marking, cut to annotated span, sorted docs, set-ordered clusters ------------------

def _tok(i: int, text: str, annotated: bool = True) -> Token:
    return Token(0, i, text, annotated)


def test_ecb_marks_cut_sort_and_targets():
    pf = upstream_prompt_file("ECB")
    d1 = Document("36_1ecb", tokens=(_tok(0, "Intro", False), _tok(1, "Police"), _tok(2, "arrested"),
                                     _tok(3, "a"), _tok(4, "man"), _tok(5, "Bye", False)))
    d2 = Document("36_2ecb", tokens=(_tok(0, "A"), _tok(1, "man"), _tok(2, "was"), _tok(3, "held")))
    mentions = (Mention(10, "36_1ecb", (2,)), Mention(11, "36_1ecb", (3, 4)), Mention(10, "36_2ecb", (3,)),
                Mention(12, "36_2ecb", (0, 1)))
    inst = Instance("ECB", "test_events", "36", "36", (d1, d2), mentions=mentions)
    c = ctx("ECB", pf, para=0, max_docs=2, order=(1, 0))
    prompt, target = render_instance(inst, c, few_shots(c), mention_ids=(9, 1, 0, 3))
    # doc1 cut to tokens 1..4 -> "Police [arrested](9) [a man](1)"; doc2 -> "[A man](3) was [held](0)"
    # sorted alphabetically: "Police..." < "[A..." ('P' 0x50 < '[' 0x5b); order (1, 0) swaps them.
    assert prompt.endswith(
        "*The documents*:\n"
        "Document 1: ```[A man](3) was [held](0)```\n"
        "Document 2: ```Police [arrested](9) [a man](1)```\n"
        "*Answer*: "
    )
    # cluster 10 -> set {9, 0} iterates as [0, 9]? CPython small-int sets iterate by hash bucket:
    # 8-slot table, 9 % 8 = 1 and 0 % 8 = 0 -> [0, 9]
    assert target == [[0, 9], [1], [3]]


def test_ecb_cluster_order_follows_cpython_set_iteration_not_sorting():
    pf = upstream_prompt_file("ECB")
    doc = Document("d", tokens=tuple(_tok(i, f"t{i}") for i in range(3)))
    inst = Instance("ECB", "test_events", "1", "1", (doc,), mentions=(Mention(5, "d", (0,)), Mention(5, "d", (1,))))
    c = ctx("ECB", pf, max_docs=1, order=(0,))
    # ids 3 and 8: 8 % 8 = 0 sorts before 3 % 8 = 3 in an 8-slot table -> [8, 3]
    _, target = render_instance(inst, c, few_shots(c), mention_ids=(3, 8))
    assert target == [[8, 3]]


def test_ecb_nested_marks_on_a_shared_token():
    pf = upstream_prompt_file("ECB")
    doc = Document("d", tokens=(_tok(0, "big"), _tok(1, "storm")))
    inst = Instance("ECB", "test_events", "1", "1", (doc,), mentions=(Mention(1, "d", (0, 1)), Mention(2, "d", (1,))))
    c = ctx("ECB", pf, max_docs=1, order=(0,))
    prompt, _ = render_instance(inst, c, few_shots(c), mention_ids=(4, 7))
    assert "Document 1: ```[big [storm](4)](7)```" in prompt


# --- SciCo: paragraphs, newline per paragraph, off-by-one ------------------------------------

def test_scico_paragraph_grouping_and_off_by_one_drop():
    pf = upstream_prompt_file("SciCo")
    inst = Instance("SciCo", "test", "5", 5, (), paragraphs=(("deep", "nets"), ("more", "text"), ("last",)),
                    paragraph_doc_ids=(0, 0, 1), mentions=(Mention(3, paragraph=0, start=0, end=1),
                                                         Mention(3, paragraph=2, start=0, end=0)))
    # upstream max_num_docs = largest doc index = 1 -> only one slot: document 2 is dropped
    c = ctx("SciCo", pf, max_docs=1, order=(0,))
    prompt, target = render_instance(inst, c, few_shots(c), mention_ids=(42, 17))
    assert prompt.endswith("*The documents*:\nDocument 1: ```[deep nets](42)\nmore text\n```\n*Answer*: ")
    assert target == [[42, 17]]


# --- FuseReviews: {HS}/{HE}, listing, permutation, strip, direct concatenation ----------------

def test_fusereviews_test_block_exact():
    pf = upstream_prompt_file("FuseReviews")
    texts = [f"Review {i} text." for i in range(8)]
    docs = tuple(Document(str(i), texts[i], highlights=((0, 6),) if i in (0, 3) else ()) for i in range(8))
    inst = Instance("FuseReviews", "validation", "0", 0, docs, review_alignments=("b", "a"))
    order = (3, 0, 1, 2, 4, 5, 6, 7)
    c = ctx("FuseReviews", pf, para=2, demos=(), max_docs=8, order=order)
    prompt, target = render_instance(inst, c, few_shots(c))
    instr = pf["prompts"][2]["instructions"]
    reviews = ["{HS}Review{HE} 3 text.", "{HS}Review{HE} 0 text."] + [f"Review {i} text." for i in (1, 2, 4, 5, 6, 7)]
    rev_lines = "\n".join(f"review_{i}: {t}" for i, t in enumerate(reviews))
    listing = "review_0:\n 1. Review\nreview_1:\n 1. Review\n" + "\n".join(
        f"review_{i}:\n " for i in range(2, 8))
    assert prompt == (f"{instr}\n\n{rev_lines}\n\nAnswer: The highlighted spans are:\n{listing}\n\n"
                      "So, the answer is:")
    assert target == {"highlights_concat": listing, "review_side_alignments": ["b", "a"]}


def test_fusereviews_demos_joined_by_demo_sep_then_test_block_directly():
    pf = upstream_prompt_file("FuseReviews")
    c = ctx("FuseReviews", pf, para=0, demos=(1,), max_docs=8, order=tuple(range(8)))
    demos = few_shots(c)
    assert demos.endswith(f"So, the answer is: {pf['demos'][1]['output'].strip()}" + pf["demo_sep"])
    docs = tuple(Document(str(i), "t") for i in range(8))
    prompt, _ = render_instance(Instance("FuseReviews", "validation", "0", 0, docs), c, demos)
    assert prompt.startswith(demos) and prompt[len(demos):].startswith(pf["prompts"][0]["instructions"])


def test_fusereviews_overlapping_highlights_upstream_error_corrected_merge():
    from seam_repro.errors import InputError

    pf = upstream_prompt_file("FuseReviews")
    docs = (Document("0", "abcdefgh", highlights=((0, 4), (2, 6))),) + tuple(Document(str(i), "t") for i in range(1, 8))
    inst = Instance("FuseReviews", "validation", "0", 0, docs)
    with pytest.raises(InputError, match="overlap"):
        render_instance(inst, ctx("FuseReviews", pf, max_docs=8, order=tuple(range(8))), "")
    c1 = ctx("FuseReviews", pf, max_docs=8, order=tuple(range(8)), profile="seam-repro-1")
    prompt, _ = render_instance(inst, c1, "")
    assert "review_0: {HS}abcdef{HE}gh" in prompt
