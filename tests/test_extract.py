"""Response extraction: upstream ``get_only_response`` rules (hand cases for each rule and its
precedence) and the documented clean-extraction rules."""

from __future__ import annotations

from seam_repro.scoring.extract import (
    extract,
    extract_clean,
    extract_upstream,
    upstream_generated_text,
    uses_inst_template,
)


def test_upstream_inst_wins_and_uses_first() -> None:
    text = "[INST] q *Answer*: [/INST] A1 [/INST] A2 So, the answer is: x"
    assert extract_upstream(text) == "A1 [/INST] A2 So, the answer is: x"


def test_upstream_fic_last_marker_and_empty() -> None:
    assert extract_upstream("So, the answer is: demo\n\nSo, the answer is:  fused text ") == "fused text"
    assert extract_upstream("demo So, the answer is: a\nSo, the answer is:   ") == "No answer"


def test_upstream_fic_beats_openasp_and_answer() -> None:
    assert extract_upstream("Aspect-based summary: s *Answer*: t So, the answer is: u") == "u"
    assert extract_upstream("*Answer*: t Aspect-based summary: s1 Aspect-based summary: s2") == "s2"


def test_upstream_last_answer_marker() -> None:
    assert extract_upstream("*Answer*: demo\n*Answer*: [[1, 2]]\n") == "[[1, 2]]"


def test_upstream_no_marker_quirk_drops_eight_chars() -> None:
    # rfind gives -1, so upstream slices from len("*Answer*:") - 1 = 8.
    assert extract_upstream("0123456789abc") == "89abc"


def test_upstream_generated_text_reconstruction() -> None:
    prompt = "*Instructions*: x\n*Answer*: "
    assert extract("upstream", prompt=prompt, output=" [[1, 2]]", model_id="meta-llama/Meta-Llama-3-8B-Instruct") == "[[1, 2]]"
    # a fabricated next example is trimmed by rfind for Llama, but not after [/INST] for Mistral
    out = " [[1]]\n\n*Instructions*: y\n*Answer*: [[9]]"
    assert extract("upstream", prompt=prompt, output=out, model_id="meta-llama/x") == "[[9]]"
    assert extract("upstream", prompt=prompt, output=out, model_id="mistralai/Mistral-7B-Instruct-v0.2") == out.strip()
    assert uses_inst_template("mistralai/Mixtral-8x7B-Instruct-v0.1") and not uses_inst_template("google/gemma-1.1-2b-it")
    assert upstream_generated_text("p", "o", inst_template=True) == "[INST] p [/INST]o"


def test_clean_strips_marker_and_cuts_next_example() -> None:
    out = "  *Answer*: {'is_answerable': True, 'answer_content': 'X'}\n\n*Instructions*: Read...\n*Answer*: {}"
    assert extract_clean(out) == "{'is_answerable': True, 'answer_content': 'X'}"
    assert extract_clean("Summary text.\nDocument 1: ```fake```") == "Summary text."
    assert extract_clean("It cites Document 1: and more.") == "It cites Document 1: and more."
    assert extract_clean("answer<|eot_id|>user\n\nmore") == "answer"
    assert extract_clean("So, the answer is: fused\nreview_0: text") == "fused"
    assert extract_clean("   \n") == ""
    assert extract("seam-repro-1", prompt="ignored *Answer*: ", output="0123456789", model_id="m") == "0123456789"
