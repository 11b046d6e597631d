"""Response parsing (upstream rules, no eval), adversarial input, and run scoring in the
``upstream`` (line-position) and ``corrected`` (mention-id) modes with hand-computed values."""

from __future__ import annotations

import ast
import os
import random
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from seam_repro.metrics.conll_io import seam_gold_text, seam_prediction_text
from seam_repro.metrics.coref_parse import parse_clusters, score_run


def conll_texts(gold, pred) -> tuple[str, str]:
    """The gold and prediction files upstream would hand to the perl scorer for this run."""
    parsed = {str(iid): parse_clusters(text) for iid, text in pred}
    return seam_gold_text(gold), seam_prediction_text((i, p.mention_to_cluster) for i, p in parsed.items())


def upstream_reference(response: str) -> tuple[list[list[int]], dict[int, int], bool] | None:
    """Upstream ``_postprocess`` re-stated with ``ast.literal_eval`` standing in for ``eval`` (same
    values and same SyntaxErrors for these literals). None where upstream would crash."""
    lists = []
    suffix = 0
    try:
        for it in re.finditer(r"\[[\d, ]+\]", response):
            lists.append(ast.literal_eval(response[it.start() : it.end()]))
            suffix = max(it.end(), suffix)
        rest = response[suffix:]
        tail = re.search(r"\[[\d, ]+", rest)
        if tail is not None:
            lists.append(ast.literal_eval(rest[tail.start() : tail.end()] + "]"))
    except (SyntaxError, ValueError):
        return None
    mapping = {}
    for i, cluster in enumerate(c for c in lists if len(c) > 1):
        for m in cluster:
            mapping[m] = i
    return lists, mapping, len(lists) > 0


@pytest.mark.parametrize(
    ("text", "lists", "mapping", "ok"),
    [
        ("[[1, 2], [3]]", [[1, 2], [3]], {1: 0, 2: 0}, True),
        (
            "The clusters are [[4, 5, 6], [7, 8]] and that is it.",
            [[4, 5, 6], [7, 8]],
            {4: 0, 5: 0, 6: 0, 7: 1, 8: 1},
            True,
        ),
        ("[[1, 2], [2, 3], [9, 10", [[1, 2], [2, 3], [9, 10]], {1: 0, 2: 1, 3: 1, 9: 2, 10: 2}, True),
        (
            "[[1, 2]] then [3, 4 and [5, 6",
            [[1, 2], [3, 4]],
            {1: 0, 2: 0, 3: 1, 4: 1},
            True,
        ),  # first open list only
        ("[ ]", [[]], {}, True),  # an empty list counts as "correct format" upstream
        ("no lists here", [], {}, False),
        ("[[1,], [00, 2]]", [[1], [0, 2]], {0: 0, 2: 0}, True),
    ],
)
def test_upstream_rules_hand_cases(text: str, lists: list, mapping: dict, ok: bool) -> None:
    p = parse_clusters(text)
    assert [list(x) for x in p.lists] == lists
    assert p.mention_to_cluster == mapping
    assert p.upstream_format_ok is ok
    assert p.upstream_would_crash == ()


def test_inputs_that_crash_upstream_eval_are_flagged_and_skipped() -> None:
    p = parse_clusters("[[1 2], [01], [3, 4], [١, 2], [" + "7" * 4301 + "]]")
    assert [list(x) for x in p.lists] == [[3, 4]]
    assert len(p.upstream_would_crash) == 4
    assert upstream_reference("[[1 2]]") is None  # the oracle agrees upstream raises


def test_parser_matches_upstream_reference_on_random_strings() -> None:
    rng = random.Random(7)
    alphabet = "[[[]]],,,    0123456789xa\n"
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        ref = upstream_reference(text)
        got = parse_clusters(text)
        if ref is None:
            assert got.upstream_would_crash, text
        else:
            assert not got.upstream_would_crash, text
            assert ([list(x) for x in got.lists], got.mention_to_cluster, got.upstream_format_ok) == ref, text


@pytest.mark.parametrize(
    ("text", "valid"),
    [
        ("[[1, 2], [3]]", True),
        (" [[1,2],[3],]\n", True),
        ("[]", True),
        ("[[1, 2]] because", False),
        ("[1, 2]", False),
        ("[[[1]]]", False),
        ("[[1 2]]", False),
        ("[[1,,2]]", False),
        ("[[1]][[2]]", False),
        ("[[-1]]", False),
    ],
)
def test_strict_validity(text: str, valid: bool) -> None:
    assert parse_clusters(text).valid is valid


@pytest.mark.parametrize(
    "text",
    [
        "[" * 1_000_000,
        "[" * 200_000 + "1" + "]" * 200_000,
        "[" + "1, " * 200_000,
        "[" + " " * 500_000,
        "[[" + "9" * 100_000 + "]]",
        "\udcff\udcfe[[1, 2]]\x00\ufffd" * 1000,
        "[1" * 300_000,
    ],
)
def test_adversarial_input_neither_crashes_nor_hangs(text: str) -> None:
    start = time.process_time()  # CPU time: a loaded machine's waiting does not count, backtracking does
    p = parse_clusters(text)
    assert time.process_time() - start < 3.0
    assert isinstance(p.valid, bool)


# ---- run scoring -------------------------------------------------------------------------------

GOLD = [("t1", [[1, 2, 3], [4, 5]])]


def test_upstream_mode_matches_by_line_position_hand_computed() -> None:
    """Gold lines 1,2,3 (cluster 0), 4,5 (cluster 1); the model answers [[4, 5]]. Its file has two
    lines, which the scorer reads as gold positions 0 and 1 = mentions 1 and 2 (cluster 0).
    Upstream: MUC R=1/3 P=1; B3 R=(2/3+2/3)/5=4/15 P=1; CEAF-e phi=4/5 -> R=2/5 P=4/5.
    By id:    MUC R=1/3 P=1; B3 R=2/5 P=1;               CEAF-e phi=1   -> R=1/2 P=1."""
    up = score_run(GOLD, [("t1", "[[4, 5]]")], "upstream")
    by_id = score_run(GOLD, [("t1", "[[4, 5]]")], "corrected")
    assert up.scores.muc.f1 == pytest.approx(0.5) == by_id.scores.muc.f1
    assert (up.scores.bcub.recall, up.scores.bcub.f1) == (pytest.approx(4 / 15), pytest.approx(8 / 19))
    assert (by_id.scores.bcub.recall, by_id.scores.bcub.f1) == (pytest.approx(2 / 5), pytest.approx(4 / 7))
    assert up.scores.ceafe.f1 == pytest.approx(8 / 15) and by_id.scores.ceafe.f1 == pytest.approx(2 / 3)
    assert up.conll_f1 == pytest.approx((1 / 2 + 8 / 19 + 8 / 15) / 3 * 100)
    assert by_id.conll_f1 == pytest.approx((1 / 2 + 4 / 7 + 2 / 3) / 3 * 100)


def test_invented_id_in_same_line_slot_scores_perfect_upstream() -> None:
    """[[1, 2], [3, 99]] against [[1, 2], [3, 4]]: four lines with labels 0,0,1,1 in both files,
    so the scorer sees a perfect answer; by id, 99 is an invented mention (MUC R=P=1/2)."""
    gold = [("t", [[1, 2], [3, 4]])]
    pred = [("t", "[[1, 2], [3, 99]]")]
    assert score_run(gold, pred, "upstream").conll_f1 == pytest.approx(100.0)
    corrected = score_run(gold, pred, "corrected")
    assert (corrected.scores.muc.recall, corrected.scores.muc.precision) == (0.5, 0.5)
    assert set(corrected.instances[0].parsed.mention_to_cluster) - {1, 2, 3, 4} == {99}


def test_run_is_micro_summed_over_instances() -> None:
    """t1 as above (MUC 1/3, 1/1) + t2 gold [[7, 8], [9]] answered [[7, 8]] (MUC 1/1, 1/1):
    run MUC = (1+1)/(3+1) recall, (1+1)/(1+1) precision -> F1 2/3, not the mean 0.75."""
    gold = GOLD + [("t2", [[7, 8], [9]])]
    run = score_run(gold, [("t1", "[[4, 5]]"), ("t2", "[[7, 8]]")], "upstream")
    assert (run.scores.muc.recall, run.scores.muc.precision) == (0.5, 1.0)
    assert run.scores.n_documents == 2
    assert [i.instance_id for i in run.instances] == ["t1", "t2"]
    assert run.instances[1].scores.muc.f1 == 1.0
    assert all(i.parsed.upstream_format_ok and i.parsed.valid for i in run.instances)


def test_missing_and_unparseable_predictions() -> None:
    gold = GOLD + [("t2", [[7, 8]])]
    run = score_run(gold, [("t1", "I cannot tell."), ("zzz", "[[1, 2]]")], "upstream")
    assert run.conll_f1 == 0.0
    assert run.instances[0].parsed is not None and not run.instances[0].parsed.upstream_format_ok
    assert run.instances[1].parsed is None
    assert not any(i.parsed and i.parsed.upstream_format_ok for i in run.instances)


def test_conll_texts_are_upstreams_files() -> None:
    gold_text, pred_text = conll_texts(GOLD, [("t1", "[[5, 4], [1]]")])
    assert gold_text == "#begin document id=t1\n1\t(0)\n2\t(0)\n3\t(0)\n4\t(1)\n5\t(1)\n#end document\n"
    assert pred_text == "#begin document id=t1\n4\t(0)\n5\t(0)\n#end document\n"


SCORER = os.environ.get("CONLL_SCORER", "")


@pytest.mark.skipif(
    not (SCORER and Path(SCORER).is_file() and shutil.which("perl")),
    reason="set CONLL_SCORER to a reference-coreference-scorers scorer.pl (and install perl) to run",
)
def test_upstream_mode_equals_perl_on_seam_files(tmp_path: Path) -> None:
    """Random runs written as SEAM writes them and scored by scorer.pl all: every printed F1
    equals ours (B3/CEAF within 0.01: perl sums documents in random hash order)."""
    rng = random.Random(99)
    for trial in range(6):
        gold, pred = [], []
        for i in range(rng.randint(1, 5)):
            ids = rng.sample(range(1, 60), rng.randint(1, 20))
            clusters: list[list[int]] = []
            for m in ids:
                (rng.choice(clusters).append(m) if clusters and rng.random() < 0.5 else clusters.append([m]))
            gold.append((f"t{i}", clusters))
            pool = ids + [rng.randrange(1, 80) for _ in range(3)]
            pred.append(
                (f"t{i}", str([rng.sample(pool, rng.randint(1, 4)) for _ in range(rng.randint(0, 5))]))
            )
        g, p = tmp_path / f"g{trial}", tmp_path / f"p{trial}"
        g_text, p_text = conll_texts(gold, pred)
        g.write_text(g_text)
        p.write_text(p_text)
        out = subprocess.run(
            ["perl", SCORER, "all", str(g), str(p)], capture_output=True, text=True, check=True
        )
        assert out.stderr == ""
        printed = {}
        for section in out.stdout.split("METRIC ")[1:]:
            name = section.split(":", 1)[0]
            line = re.findall(r"(?:\nCoreference|BLANC): Recall:.*F1: ([0-9.]+)%", section)[-1]
            printed[name] = float(line)
        run = score_run(gold, pred, "upstream")
        for name in ("muc", "blanc"):
            assert int(run.scores.metric(name).f1 * 10000) / 100 == printed[name], (trial, name)
        for name in ("bcub", "ceafm", "ceafe"):
            assert int(run.scores.metric(name).f1 * 10000) / 100 == pytest.approx(
                printed[name], abs=0.0100001
            )
