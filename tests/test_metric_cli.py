"""``seam-repro metric``: every suite's names are listed, scores printed as one JSON object equal to
hand values / the libraries, and bad input gives one-line errors with exit status 2."""

from __future__ import annotations

import dataclasses
import json
import sys

import pytest

from seam_repro.cli import main
from seam_repro.metrics import registry as reg

ALL_NAMES = {
    "rouge_geo", "musique_f1", "musique_corrected", "conll_f1", "conll_f1_corrected", "fic_f1", "zeroscrolls_rouge_geo", "zeroscrolls_f1",
    "zeroscrolls_accuracy", "zeroscrolls_exp_similarity", "zeroscrolls_concordance_index", "igcs_token_f1",
}


def run(monkeypatch, capsys, *args: str) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "argv", ["seam-repro", "metric", *args])
    code = 0
    try:
        main()
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_list_names_every_suite(monkeypatch, capsys):
    code, out, _ = run(monkeypatch, capsys, "--list")
    names = {line.split("\t")[0] for line in out.splitlines()}
    assert code == 0 and names == ALL_NAMES == set(reg.METRICS)


@pytest.mark.parametrize(
    ("name", "pred", "refs", "expected"),
    [
        ("zeroscrolls_exp_similarity", "so 40% of the reviews are positive", ["60%"], 25.0),
        ("zeroscrolls_f1", "The big red car", ["red truck", "big red car"], 100.0),
        ("zeroscrolls_accuracy", "Answer: (C)", ["C"], 100.0),
        ("zeroscrolls_concordance_index", "Order: 2, 1, 3", ["1, 2, 3"], 100 * 2 / 3),
        ("zeroscrolls_rouge_geo", "the cat sat on the mat", ["the cat was on the mat"], 100 * (5 / 6 * 3 / 5 * 5 / 6) ** (1 / 3)),
    ],
)
def test_zeroscrolls_scores(monkeypatch, capsys, name, pred, refs, expected):
    code, out, _ = run(monkeypatch, capsys, name, pred, *refs)
    result = json.loads(out)
    assert code == 0 and out.count("\n") == 1
    assert result["metric"] == name and result["suite"] == "zeroscrolls" and result["valid_format"] is True
    assert result["score"] == pytest.approx(expected)


def test_igcs_with_source_files_and_at_file(monkeypatch, capsys, tmp_path):
    pytest.importorskip("spacy")
    (tmp_path / "d0.txt").write_text("Alpha beta gamma. Delta epsilon zeta.", encoding="utf-8")
    (tmp_path / "d1.txt").write_text("Eta theta iota.", encoding="utf-8")
    (tmp_path / "answer.txt").write_text('Sure: ["Delta epsilon", "Eta theta iota."]', encoding="utf-8")
    code, out, _ = run(monkeypatch, capsys, "igcs_token_f1", f"@{tmp_path / 'answer.txt'}", '["Delta epsilon zeta.", "Eta theta"]',
                       "--source", str(tmp_path / "d0.txt"), "--source", str(tmp_path / "d1.txt"))
    result = json.loads(out)
    # pred tokens {d0: Delta epsilon; d1: Eta theta iota .} = 6, gold {d0: Delta epsilon zeta .; d1: Eta theta} = 6,
    # shared 4 -> P = R = F = 2/3
    assert code == 0 and result["score"] == pytest.approx(100 * 2 / 3)
    assert result["details"]["modes"] == {"exact": 2}


def test_double_at_is_a_literal(monkeypatch, capsys):
    code, out, _ = run(monkeypatch, capsys, "zeroscrolls_f1", "@@/no/such/file", "@@/no/such/file")
    assert code == 0 and json.loads(out)["score"] == 100.0


def test_rouge_geo_matches_rouge_score_directly(monkeypatch, capsys):
    pytest.importorskip("seam_repro.metrics.rouge")
    from rouge_score import rouge_scorer

    pred, gold = "the cats were sitting on mats", "a cat sat on the mat"
    s = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True).score(gold, pred)
    expected = 100 * (s["rouge1"].fmeasure * s["rouge2"].fmeasure * s["rougeL"].fmeasure) ** (1 / 3)
    code, out, _ = run(monkeypatch, capsys, "rouge_geo", pred, gold)
    assert code == 0 and json.loads(out)["score"] == pytest.approx(expected)


def test_musique_corrected_uses_aliases(monkeypatch, capsys):
    pytest.importorskip("seam_repro.metrics.musique")
    target = json.dumps({"is_answerable": True, "answer_content": "New York City"})
    pred = json.dumps({"is_answerable": True, "answer_content": "NYC"})
    code, out, _ = run(monkeypatch, capsys, "musique_corrected", pred, target, "NYC")
    assert code == 0 and json.loads(out)["score"] == 100.0


def test_conll_f1_perfect_prediction(monkeypatch, capsys):
    pytest.importorskip("seam_repro.metrics.coref_parse")
    code, out, _ = run(monkeypatch, capsys, "conll_f1", "[[1, 2], [3, 4]]", "[[1, 2], [3, 4]]")
    assert code == 0 and json.loads(out)["score"] == pytest.approx(100.0)


def test_conll_corrected_matches_by_id_where_upstream_matches_by_line(monkeypatch, capsys):
    """Gold mention 3 is a singleton, so the prediction file lists 1, 2, 4, 5 only: upstream's
    line-position matching reads them as mentions 1-4 and misaligns {4, 5}; id matching does not.
    Corrected by hand: MUC 1, B3 R 4/5 P 1 -> 8/9, CEAF-e R 2/3 P 1 -> 0.8; mean 0.8963."""
    pytest.importorskip("seam_repro.metrics.coref_parse")
    args = ("[[1, 2], [4, 5]]", "[[1, 2], [3], [4, 5]]")
    _, out_up, _ = run(monkeypatch, capsys, "conll_f1", *args)
    code, out_fix, _ = run(monkeypatch, capsys, "conll_f1_corrected", *args)
    assert code == 0 and json.loads(out_fix)["score"] == pytest.approx(100 * (1 + 8 / 9 + 0.8) / 3)
    assert json.loads(out_up)["score"] < json.loads(out_fix)["score"] - 10


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["nope", "a", "b"], "unknown metric 'nope'; known: conll_f1"),
        (["zeroscrolls_f1", "a"], "at least one REFERENCE"),
        (["igcs_token_f1", '["x"]', '["x"]'], "--source"),
        (["rouge_geo", "a", "b", "c"], "takes 1 REFERENCE, got 2"),
        (["musique_f1", "x", "not json"], "reference 0: field 'musique': not valid JSON"),
        (["zeroscrolls_f1", "@/nonexistent/pred.txt", "x"], "/nonexistent/pred.txt: prediction file not found"),
        (["zeroscrolls_accuracy", "B", "no letter here"], "no option letter"),
    ],
)
def test_bad_input_is_one_line_exit_2(monkeypatch, capsys, args, needle):
    code, out, err = run(monkeypatch, capsys, *args)
    assert code == 2 and out == "" and needle in err and err.count("\n") == 1


def test_non_utf8_file_names_the_file(monkeypatch, capsys, tmp_path):
    bad = tmp_path / "pred.bin"
    bad.write_bytes(b"ok \xff\xfe")
    code, _, err = run(monkeypatch, capsys, "zeroscrolls_f1", f"@{bad}", "x")
    assert code == 2 and str(bad) in err and "not UTF-8" in err


def test_unimportable_module_is_listed_but_errors_when_used(monkeypatch, capsys):
    spec = dataclasses.replace(reg.METRICS["rouge_geo"], module="seam_repro.metrics._not_written_yet")
    monkeypatch.setitem(reg.METRICS, "rouge_geo", spec)
    code, out, _ = run(monkeypatch, capsys, "--list")
    line = next(x for x in out.splitlines() if x.startswith("rouge_geo\t"))
    assert code == 0 and "[unavailable:" in line
    code, _, err = run(monkeypatch, capsys, "rouge_geo", "a", "b")
    assert code == 2 and "seam_repro.metrics._not_written_yet, which cannot be imported" in err


def test_every_suite_metric_is_registered_with_a_known_extraction_and_aggregation():
    from seam_repro.scoring.loop import AGGREGATIONS
    from seam_repro.specs import load_suite, shipped_suites

    for spec in reg.METRICS.values():
        assert spec.aggregation in AGGREGATIONS, spec.name
        assert set(spec.extraction) <= {"upstream", "clean"}, spec.name
    named = {m for s in shipped_suites() for d in load_suite(s).datasets.values() for m in d.metrics.values()}
    assert named <= set(reg.METRICS), named - set(reg.METRICS)
    assert "musique_combined" not in named  # the name that scoring once wrote instead of musique_corrected
