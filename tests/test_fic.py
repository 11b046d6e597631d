"""FuseReviews metric: the scoring math against HF ``generate`` (the call fic-evaluation makes) on a
tiny random T5, hand-computed aggregation with patched probabilities, the NLI prompt text, and the
loading path (local directory works, offline hub id fails clearly)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("spacy")

from seam_repro.errors import MissingDataError  # noqa: E402
from seam_repro.metrics import fic  # noqa: E402

WORDS = ["yes", "no", "En", "##tail", "##ment", "Con", "##tra", "##diction", "Neutral", "the", "room",
         "was", "clean", "staff", "friendly", "hotel", "near", "tower", "Premise", "Hypothesis", "#", ":",
         ".", ",", "Read", "and", "Options", "Input", "Response", SUMMARY := fic.SUMMARY_DELIM]


def tiny_tokenizer() -> Any:
    """WordPiece tokenizer where "Entailment" is three tokens, like a subword vocabulary."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {"<pad>": 0, "</s>": 1, "<unk>": 2}
    for w in WORDS:
        vocab.setdefault(w, len(vocab))
    tk = Tokenizer(models.WordPiece(vocab=vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tk.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 1)])
    return PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="<pad>", eos_token="</s>", unk_token="<unk>",
                                   model_max_length=512, additional_special_tokens=[SUMMARY])


def tiny_t5(seed: int, vocab_size: int) -> Any:
    from transformers import T5Config, T5ForConditionalGeneration

    torch.manual_seed(seed)
    cfg = T5Config(vocab_size=vocab_size, d_model=16, d_ff=32, d_kv=8, num_layers=1, num_decoder_layers=1,
                   num_heads=2, decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)
    return T5ForConditionalGeneration(cfg).eval()


@pytest.fixture(scope="module")
def scorer() -> fic.FicScorer:
    tok = tiny_tokenizer()
    import spacy

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    return fic.FicScorer((tok, tiny_t5(0, len(tok))), (tok, tiny_t5(1, len(tok))), (nlp, "blank"))


SENTENCES = ["the room was clean .", "staff friendly", "hotel near the tower", "clean clean room",
             "the the the", "tower", "Neutral room", "no yes no", "friendly staff was clean ."]


def test_tokens_and_prompt(scorer: fic.FicScorer) -> None:
    assert len(scorer.entailment_ids) == 3 and scorer.n_steps == 3
    assert scorer.yes_id == scorer.cov_tok.convert_tokens_to_ids("yes")
    expected = ("### Instruction: Read the following and determine if the hypothesis can be inferred from the "
                "premise. \n Options: Entailment, Contradiction, or Neutral \n\n ### Input: \n Premise: a b\n "
                "Hypothesis: c \n\n ### Response (choose only one of the options from above):")
    assert fic.nli_prompt("a   b", "c") == expected


def test_entailment_matches_hf_generate(scorer: fic.FicScorer) -> None:
    """Our step loop equals HF generate's output_scores wherever generate produced all steps."""
    premise = "the room was clean , staff friendly"
    ours = scorer.sentence_entailment(premise, SENTENCES)
    compared = 0
    for sentence, value in zip(SENTENCES, ours, strict=True):
        ids = scorer.faith_tok([fic.nli_prompt(premise, sentence)], return_tensors="pt")["input_ids"]
        out = scorer.faith_model.generate(ids, min_length=1, max_new_tokens=3, output_scores=True,
                                          return_dict_in_generate=True, num_beams=1, do_sample=False)
        if len(out.scores) < 3:
            continue  # generate stopped at EOS; upstream would have crashed on this batch
        probs = [torch.softmax(out.scores[i], dim=1)[0, t] for i, t in enumerate(scorer.entailment_ids)]
        assert value == pytest.approx(float(probs[0] * probs[1] * probs[2]), rel=1e-5)
        compared += 1
    assert compared >= 3, "test model stopped early too often to compare"


def test_coverage_matches_hf_generate(scorer: fic.FicScorer) -> None:
    pred = "the room was clean . staff friendly"
    aligns = ["room clean", "staff was friendly", "near the tower"]
    ours = scorer.alignment_yes(pred, aligns)
    ids = scorer.cov_tok([f"{a} {SUMMARY} {pred}" for a in aligns], padding=True, return_tensors="pt")["input_ids"]
    # transformers 4.34 (upstream's) inferred this mask from pad ids when generate got bare input_ids.
    out = scorer.cov_model.generate(ids, attention_mask=(ids != 0).long(), min_length=1, max_new_tokens=4, output_scores=True,
                                    return_dict_in_generate=True, num_beams=1, do_sample=False)
    expected = torch.softmax(out.scores[0], dim=1)[:, scorer.yes_id]
    assert ours == pytest.approx([float(v) for v in expected], rel=1e-5)


def test_instance_math_with_patched_probabilities(scorer: fic.FicScorer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Mean over sentences, mean over alignments, hmean x100 — checked by hand."""
    fresh = fic.FicScorer((scorer.faith_tok, scorer.faith_model), (scorer.cov_tok, scorer.cov_model),
                          (scorer.nlp, "blank"))
    seen: dict[str, Any] = {}

    def fake_entail(premise: str, sentences: list[str]) -> list[float]:
        seen["sentences"] = sentences
        return [0.9, 0.3]

    monkeypatch.setattr(fresh, "sentence_entailment", fake_entail)
    monkeypatch.setattr(fresh, "alignment_yes", lambda pred, aligns: [0.5, 0.0, 0.25, 0.25])
    res = fresh.score("The room was clean. Staff were nice.", {"highlights_concat": "x",
                      "review_side_alignments": ["a", "b", "c", "d"]})
    assert seen["sentences"] == ["The room was clean.", "Staff were nice."]
    assert res.faithfulness == pytest.approx(0.6)
    assert res.coverage == pytest.approx(0.25)
    assert res.f1 == pytest.approx(100 * 2 * 0.6 * 0.25 / 0.85)
    empty = fresh.score("   ", {"highlights_concat": "x", "review_side_alignments": ["a"]})
    assert (empty.f1, empty.reason) == (0.0, "empty response")
    nogold = fresh.score("text", {"highlights_concat": "x", "review_side_alignments": []})
    assert nogold.f1 is None and nogold.reason


def test_hmean_zero() -> None:
    assert fic.hmean_100(0.8, 0.0) == 0.0
    assert fic.hmean_100(0.5, 0.5) == pytest.approx(50.0)


def test_load_from_local_dir(tmp_path: Path, scorer: fic.FicScorer, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real loading path (AutoTokenizer/AutoModelForSeq2SeqLM) on saved tiny models."""
    for name, model in (("faith", scorer.faith_model), ("cov", scorer.cov_model)):
        scorer.faith_tok.save_pretrained(tmp_path / name)
        model.save_pretrained(tmp_path / name)
    monkeypatch.setenv("SEAM_REPRO_FIC_FAITHFULNESS_MODEL", str(tmp_path / "faith"))
    monkeypatch.setenv("SEAM_REPRO_FIC_COVERAGE_MODEL", str(tmp_path / "cov"))
    loaded = fic.FicScorer.from_pins()
    assert loaded.pins is not None and loaded.pins[0].revision is None
    assert "split=" in loaded.version() and str(tmp_path / "faith") in loaded.version()
    assert loaded.alignment_yes("room clean", ["room"]) == pytest.approx(scorer.alignment_yes("room clean", ["room"]))


def test_offline_hub_model_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("SEAM_REPRO_FIC_FAITHFULNESS_MODEL", "seam-repro-test/no-such-model")
    monkeypatch.setenv("SEAM_REPRO_FIC_FAITHFULNESS_REVISION", "0" * 40)
    with pytest.raises(MissingDataError, match=r"faithfulness model seam-repro-test/no-such-model@0{40} is not available"):
        fic.FicScorer.from_pins()


def test_unpinned_revision_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    faith, cov = fic.load_pins()
    assert faith.revision and len(faith.revision) == 40
    with pytest.raises(MissingDataError, match="no pinned revision"):
        fic._load(fic.ModelPin("lovodkin93/multi-review-fic-coverage-evaluator", None), "coverage")


def test_hub_models_are_read_from_the_local_cache_unless_download_is_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    import transformers

    seen: list[dict] = []

    def refuse(name: str, **kwargs: object) -> None:
        seen.append(dict(kwargs))
        raise OSError("not cached")

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", refuse)
    pin = fic.ModelPin("org/model", "1" * 40)
    with pytest.raises(MissingDataError, match="pass --fic-download"):
        fic._load(pin, "faithfulness")
    with pytest.raises(MissingDataError, match="offline or not cached"):
        fic._load(pin, "faithfulness", allow_download=True)
    assert seen[0].get("local_files_only") is True and "local_files_only" not in seen[1]
    assert seen[1]["revision"] == "1" * 40
