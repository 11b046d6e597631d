"""CoNLL reader (the reference scorer's reading rules), SEAM two-column writers, and the
``conll-score`` command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from seam_repro.commands.conll import conll_score
from seam_repro.errors import InputError
from seam_repro.metrics.conll_io import (
    chains_from_assignment,
    gold_assignment,
    parse_conll_file,
    read_conll_file,
    seam_gold_text,
    seam_prediction_text,
)

GOLDEN = Path(__file__).resolve().parents[2] / "shared" / "golden" / "conll-reference-scorer"
needs_golden = pytest.mark.skipif(not GOLDEN.is_dir(), reason="shared golden files absent")


def test_reader_rules_hand_built() -> None:
    text = (
        "#begin document (a); part 0\n"
        "d\t0\t0\tA\t(1\n"  # token 0 opens entity 1
        "\n"  # blank: not a token
        "d\t0\t1\tB\t(1)|1)\n"  # singles first (token 1), then closes -> (0,1)
        "   \t \n"  # whitespace only: not a token
        "d\t0\t2\tC\t(01)\t\n"  # trailing tab dropped; label '01' is not '1'
        "d\t0\t3\tD\t_\n"
        "d\t0\t4\tE\t(2+3)|(2)\n"  # double antecedent discarded
        "d\t0\t5\tF\t1)|(1\n"  # opens before closes on one line -> one-token mention (5,5)
        "#end document\n"
        "not in any document\t(9)\n"
    )
    docs = parse_conll_file(text, "t.conll").documents
    doc = docs["(a); part 0"]
    assert doc.n_tokens == 6
    # entity order = first appearance of the label: 1, 01, 2
    assert doc.entities == (((1, 1), (0, 1), (5, 5)), ((2, 2),), ((4, 4),))


@needs_golden
def test_tc_a_key_spans_as_scorer_reads_them() -> None:
    """Spans printed by scorer.pl's verbose output for TC-A.key (the blank line between the two
    sentences is not a token)."""
    doc = read_conll_file(GOLDEN / "DataFiles/TC-A.key").documents["(LuoTestCase); "]
    assert doc.entities == (((0, 1),), ((3, 6), (9, 9)), ((11, 12), (14, 14), (16, 18)))
    assert doc.n_tokens == 20


def test_duplicate_document_name_last_wins_and_crlf() -> None:
    text = "#begin document x\r\nd\t(0)\r\nd\t(0)\r\n#end document\r\n#begin document x\r\nd\t(5)\r\n#end document\r\n"
    docs = parse_conll_file(text.encode(), "t").documents
    assert list(docs) == ["x"] and docs["x"].entities == (((0, 0),),)


def test_missing_end_document_is_accepted_like_perl() -> None:
    docs = parse_conll_file("#begin document y\nd\t(3)\nd\t(3)\n", "t").documents
    assert docs["y"].entities == (((0, 0), (1, 1)),)


@pytest.mark.parametrize(
    ("text", "where", "what"),
    [
        ("#begin document x\na\t-\nb\t1)\n#end document\n", "t.conll:3", "never opened"),
        ("#begin document x\na\t(4\nb\t-\n#end document\n", "t.conll:2", "never closed"),
        ("#begin document x\na\t(4\n", "t.conll:2", "end of the file"),
        ("just text\n", "t.conll", "no '#begin document"),
    ],
)
def test_reader_errors_name_file_line_and_expectation(text: str, where: str, what: str) -> None:
    with pytest.raises(InputError) as err:
        parse_conll_file(text, "t.conll")
    msg = str(err.value)
    assert msg.startswith(where) and what in msg and "\n" not in msg


def test_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read"):
        read_conll_file(tmp_path / "missing.conll")


def test_seam_writers_exact_format() -> None:
    gold = seam_gold_text([("36", [[5, 1], [3]]), ("7", [])])
    assert gold == (
        "#begin document id=36\n1\t(0)\n3\t(1)\n5\t(0)\n#end document\n#begin document id=7\n#end document\n"
    )
    pred = seam_prediction_text([("36", {5: 0, 1: 0, 12: 1, 4: 1})])
    assert pred == "#begin document id=36\n1\t(0)\n4\t(1)\n5\t(0)\n12\t(1)\n#end document\n"
    # the scorer reads them back by line position
    doc = parse_conll_file(gold, "g").documents["id=36"]
    assert doc.entities == (((0, 0), (2, 2)), ((1, 1),))


def test_gold_assignment_last_cluster_wins_and_validates() -> None:
    assert gold_assignment([[1, 2], [2, 3]]) == {1: 0, 2: 1, 3: 1}
    assert chains_from_assignment({3: 1, 1: 0, 2: 1}) == [[1], [2, 3]]
    with pytest.raises(InputError, match="expected int mention ids"):
        gold_assignment([[1, "2"]], "gold", "t1")
    with pytest.raises(InputError, match="list of clusters"):
        gold_assignment("[[1]]")
    with pytest.raises(InputError, match="line break"):
        seam_gold_text([("a\nb", [[1]])])


@needs_golden
def test_cli_json_matches_reference_expectations() -> None:
    case = next(
        c for c in json.loads((GOLDEN / "expected_metrics.json").read_text())["cases"] if c["id"] == "A4"
    )
    res = CliRunner().invoke(
        conll_score, [str(GOLDEN / case["key_file"]), str(GOLDEN / case["response_file"]), "--json"]
    )
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    for metric, exp in case["expected"].items():
        for field in ("recall", "precision", "f1"):
            assert out["metrics"][metric][field] == pytest.approx(exp[field], abs=1e-4)
    f1 = [out["metrics"][m]["f1"] for m in ("muc", "bcub", "ceafe")]
    assert out["conll_f1"] == pytest.approx(sum(f1) / 3 * 100)


@needs_golden
def test_cli_text_has_scorer_totals_lines() -> None:
    res = CliRunner().invoke(
        conll_score, [str(GOLDEN / "DataFiles/TC-A.key"), str(GOLDEN / "DataFiles/TC-A-2.response")]
    )
    assert res.exit_code == 0
    # the exact line scorer.pl prints for this case (TestCases.README: CEAFe R=0.6 P=0.9 F=0.72)
    assert "Coreference: Recall: (1.8 / 3) 60%\tPrecision: (1.8 / 2) 90%\tF1: 72%\n" in res.output
    assert res.output.startswith("CoNLL score")
    assert res.output.count("METRIC ") == 5


def test_cli_bad_file_raises_input_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.conll"
    bad.write_text("#begin document x\na\t2)\n#end document\n")
    res = CliRunner().invoke(conll_score, [str(bad), str(bad), "--metric", "muc"])
    assert isinstance(res.exception, InputError)
    assert str(res.exception).startswith(f"{bad}:2")
