"""MuSiQue metrics: SQuAD F1 by hand, upstream's str(dict) F1 and parsing quirks by hand, safety of
the literal parser on adversarial text, and the corrected answer/answerability scores."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from seam_repro.metrics import musique as m

GOLD = {"is_answerable": True, "answer_content": "Paris"}


def test_squad_f1_and_normalisation() -> None:
    assert m.normalize_answer("The  Rap-A-Lot, Records!") == "rapalot records"
    assert m.token_f1("Rap-A-Lot Records", "Rap-A-Lot") == pytest.approx(2 / 3)
    assert m.token_f1("", "") == 1.0 and m.token_f1("a", "x") == 0.0  # "a" normalises to nothing
    assert m.exact_match("the Paris", "paris.") == 1.0


def test_upstream_str_dict_f1_by_hand() -> None:
    # gold tokens: isanswerable true answercontent paris (4)
    f1, is_dict = m.upstream_f1("{'is_answerable': True, 'answer_content': 'Paris, France'}", GOLD)
    assert is_dict and f1 == pytest.approx(100 * 8 / 9)  # P = 4/5, R = 1
    f1, is_dict = m.upstream_f1("Paris", GOLD)
    assert not is_dict and f1 == pytest.approx(40.0)  # P = 1, R = 1/4
    f1, _ = m.upstream_f1('{"is_answerable": true, "answer_content": "Paris"}', GOLD)  # JSON: NameError upstream
    assert f1 == pytest.approx(100.0)  # raw string still has the same four tokens


def test_upstream_quote_fixes_and_retry() -> None:
    assert m.upstream_postprocess_detail("x {'is_answerable': True, 'answer_content': 'Mary's house'} y")[0] == {
        "is_answerable": True, "answer_content": "Mary's house"}
    assert m.upstream_postprocess_detail("{'is_answerable': True, 'answer_content': 'Paris}")[0] == GOLD
    # the "'s" fix breaks a value that starts with a lower-case s, so upstream keeps the raw text
    raw = "{'is_answerable': True, 'answer_content': 'sam'}"
    assert m.upstream_postprocess_detail(raw)[0] == raw
    assert m.upstream_postprocess_detail("{1, 2}")[0] == {1, 2}
    assert m.upstream_postprocess_detail("no braces")[0] == "no braces"


@pytest.mark.parametrize("text", [
    "{'a': __import__('os').system('echo pwned')}",
    "{'a': " + "[" * 2000 + "]" * 2000 + "}",
    "{'a': " + "9" * 6000 + "}",
    "{" * 100_000 + "}" * 100_000,
    "{'a': (lambda: 1)()}",
    "{'a': 1e999999}",
])
def test_adversarial_never_executes_or_crashes(text: str) -> None:
    value = m.upstream_postprocess_detail(text)[0]
    f1, _ = m.upstream_f1(text, GOLD)
    assert 0.0 <= f1 <= 100.0
    assert m.corrected(text, GOLD).pred_answerable is None or isinstance(value, dict)


def test_corrected_aliases_and_combined() -> None:
    q = m.corrected('{"is_answerable": true, "answer_content": "City of Light"}', GOLD, ["City of Light"])
    assert (q.answer_f1, q.answer_em, q.combined, q.pred_answerable) == (100.0, 100.0, 100.0, True)
    q = m.corrected("{'is_answerable': 'no', 'answer_content': ''}", {"is_answerable": False, "answer_content": "X"})
    assert q.combined == 100.0 and q.pred_answerable is False and q.gold_answerable is False
    q = m.corrected("{'is_answerable': False, 'answer_content': 'Paris'}", GOLD)
    assert q.answer_f1 == 100.0 and q.combined == 0.0
    q = m.corrected("I think Paris", GOLD)
    assert q.pred_answerable is None and q.answer_f1 == pytest.approx(100 * 2 * (1 / 3) / (1 + 1 / 3)) and q.combined == 0


def test_answerability_f1_by_hand() -> None:
    # positives = answerable; pairs: TP, FN (pred False), FP (gold False pred True), unknown on gold True -> FN
    pairs = [(True, True), (True, False), (False, True), (True, None), (False, False), (False, None)]
    assert m.answerability_f1(pairs) == pytest.approx(100 * 2 * 1 / (2 * 1 + 2 + 2))
    assert m.answerability_f1([(False, False)]) is None


REALDATA = Path(__file__).resolve().parents[2] / "shared" / "realdata" / "musique" / "musique_train_first10.jsonl"


def test_real_records_aliases_and_upstream_parity() -> None:
    """Real MuSiQue records: an alias answer is a full corrected match; upstream's str-dict F1 of a
    correctly formatted exact answer is 100 (same token bag as the gold dict)."""
    if not REALDATA.is_file():
        pytest.skip("shared/realdata/musique not present")
    records = [json.loads(line) for line in REALDATA.read_text("utf-8").splitlines() if line.strip()]
    assert len(records) == 10
    for rec in records:
        target = {"is_answerable": rec["answerable"], "answer_content": rec["answer"]}
        alias = (rec["answer_aliases"] or [rec["answer"]])[-1]
        q = m.corrected(json.dumps({"is_answerable": True, "answer_content": alias}), target, rec["answer_aliases"])
        assert (q.answer_f1, q.combined) == (100.0, 100.0), rec["id"]
        f1, is_dict = m.upstream_f1(repr(target), target)
        assert f1 == 100.0, rec["id"]
        # upstream's "'s"/"'t" quote fix breaks values starting with s/t ("the Anglican Communion"),
        # so those fall back to the raw string (same tokens, but not counted as a dict)
        assert is_dict == (not rec["answer"].startswith(("s", "t"))), rec["id"]


def test_normalize_answer_equals_squads_per_character_form() -> None:
    """normalize_answer drops punctuation with one str.translate; SQuAD's answer.py (which upstream's
    MuSiQue metric copies) does it character by character. Same text on random mixes of ASCII
    punctuation, non-ASCII punctuation (kept by both), articles and whitespace."""
    import random
    import re
    import string

    from seam_repro.metrics.musique import normalize_answer

    def squad(s: str) -> str:
        exclude = set(string.punctuation)
        s = "".join(ch for ch in s.lower() if ch not in exclude)
        return " ".join(re.sub(r"\b(a|an|the)\b", " ", s).split())

    rng = random.Random(28)
    alphabet = list(string.punctuation) + list("«»—–…¿é ÉİK\t\n") + ["the", "A", "an", " ", "x", "Paris"]
    for _ in range(500):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        assert normalize_answer(text) == squad(text), text
