"""Coreference metrics against the reference scorer's own test cases, textbook definitions
computed independently here, hand-computed multi-document totals, and (optional) the perl scorer.

The perl oracle tests run only when ``$CONLL_SCORER`` points at a checkout's ``scorer.pl`` and
``perl`` is installed; they are skipped otherwise.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import re
import shutil
import subprocess
from fractions import Fraction
from pathlib import Path

import pytest

from seam_repro.errors import InputError
from seam_repro.metrics.conll_io import read_conll_file, score_conll_files
from seam_repro.metrics.coref import (
    METRICS,
    Counts,
    _blanc,
    _identify,
    perl_percent,
    refuses_to_score,
    score_document,
    total,
)

GOLDEN = Path(__file__).resolve().parents[2] / "shared" / "golden" / "conll-reference-scorer"
CASES = json.loads((GOLDEN / "expected_metrics.json").read_text())["cases"] if GOLDEN.is_dir() else []


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_reference_scorer_cases(case: dict) -> None:
    """All 36 cases of test/CorefMetricTestConfig.pm, each metric run alone as test.pl does;
    tolerance is test.pl's: summed |delta| of (R, P, F1) below 1e-4."""
    key = read_conll_file(GOLDEN / case["key_file"]).documents
    resp = read_conll_file(GOLDEN / case["response_file"]).documents
    for metric, exp in case["expected"].items():
        got = total(
            score_document(doc.entities, resp[n].entities if n in resp else [], [metric])
            for n, doc in key.items()
        )
        m = got.metric(metric)
        assert m is not None
        diff = abs(m.recall - exp["recall"]) + abs(m.precision - exp["precision"]) + abs(m.f1 - exp["f1"])
        assert diff < 1e-4, (metric, (m.recall, m.precision, m.f1), exp)


def test_golden_cases_present_or_skipped() -> None:
    if not GOLDEN.is_dir():
        pytest.skip("shared golden files absent")
    assert len(CASES) == 36


def test_hand_computed_tc_a2_counts() -> None:
    """TestCases.README TC-A-2 with letters as mention keys: Key {a}{bc}{def}, Rsp {a}{de}."""
    s = score_document([["a"], ["b", "c"], ["d", "e", "f"]], [["a"], ["d", "e"]])
    assert (s.muc.recall_num, s.muc.recall_den, s.muc.precision_num, s.muc.precision_den) == (1, 3, 1, 1)
    assert Fraction(s.bcub.recall_num).limit_denominator(100) == Fraction(7, 3)
    assert (s.bcub.recall_den, s.bcub.precision_num, s.bcub.precision_den) == (6, 3, 3)
    assert s.ceafe.recall_num == pytest.approx(1.8) and s.ceafe.recall_den == 3 and s.ceafe.precision_den == 2
    assert (s.ceafm.recall_num, s.ceafm.recall_den, s.ceafm.precision_den) == (3, 6, 3)
    assert (s.blanc.coref.recall_num, s.blanc.coref.recall_den, s.blanc.coref.precision_den) == (1, 4, 1)
    assert (s.blanc.noncoref.recall_num, s.blanc.noncoref.recall_den, s.blanc.noncoref.precision_den) == (
        2,
        11,
        2,
    )
    assert (s.mentions.recall_num, s.mentions.recall_den, s.mentions.precision_den) == (3, 6, 3)


def test_multi_document_totals_are_summed_counts_not_mean_of_f1() -> None:
    """Doc 1 = TC-A-2, doc 2 = perfect {x y}{z}: MUC sums to R=(1+1)/(3+1), P=(1+1)/(1+1)."""
    d1 = score_document([["a"], ["b", "c"], ["d", "e", "f"]], [["a"], ["d", "e"]])
    d2 = score_document([["x", "y"], ["z"]], [["x", "y"], ["z"]])
    t = total([d1, d2])
    assert t.n_documents == 2
    assert (t.muc.recall, t.muc.precision) == (0.5, 1.0)
    assert t.muc.f1 == pytest.approx(2 / 3)
    assert t.muc.f1 != pytest.approx((d1.muc.f1 + d2.muc.f1) / 2)
    # B3: recall num 7/3 + 3, den 6 + 3; precision num 3 + 3, den 3 + 3
    assert t.bcub.recall == pytest.approx((7 / 3 + 3) / 9) and t.bcub.precision == 1.0
    assert t.conll_f1 == pytest.approx((t.muc.f1 + t.bcub.f1 + t.ceafe.f1) / 3 * 100)


def test_perl_percent_truncates_with_float_noise() -> None:
    assert perl_percent(0.5) == 50
    assert perl_percent(0.66666) == 66.66
    assert perl_percent(0.09999999999999999) == 9.99  # perl prints 9.99 for this F1, SEAM averages it


def test_blanc_fallbacks_when_key_has_one_link_kind() -> None:
    # key with a single entity has no non-coreference links: BLANC = coreference part only
    s = score_document([["a", "b", "c"]], [["a", "b"], ["c"]], ["blanc"])
    assert s.blanc.noncoref.recall_den == 0
    assert (s.blanc.recall, s.blanc.precision) == (pytest.approx(1 / 3), 1.0)
    # key of one mention: no links at all -> 0
    s = score_document([["a"]], [["a"]], ["blanc"])
    assert (s.blanc.recall, s.blanc.precision, s.blanc.f1) == (0.0, 0.0, 0.0)


def _naive_links(chains: list[list[int]]) -> tuple[set, set]:
    coref = {tuple(sorted(p)) for c in chains for p in itertools.combinations(c, 2)}
    non = {tuple(sorted((x, y))) for a, b in itertools.combinations(chains, 2) for x in a for y in b}
    return coref, non


def _random_partition(rng: random.Random, items: list) -> list[list]:
    chains: list[list] = []
    for m in items:
        if chains and rng.random() < 0.6:
            rng.choice(chains).append(m)
        else:
            chains.append([m])
    return chains


def test_blanc_counting_formula_equals_link_sets() -> None:
    """The O(n) link counts equal the scorer's link-set definition (computed naively here)."""
    rng = random.Random(5)
    for _ in range(200):
        k = _random_partition(rng, rng.sample(range(40), rng.randint(1, 15)))
        r = _random_partition(rng, rng.sample(range(45), rng.randint(0, 15)))
        ident = _identify(k, r)
        got = _blanc(ident)
        kc, kn = _naive_links(ident.key)
        rc, rn = _naive_links(ident.response)
        assert (got.coref.recall_num, got.coref.recall_den, got.coref.precision_den) == (
            len(kc & rc),
            len(kc),
            len(rc),
        )
        assert (got.noncoref.recall_num, got.noncoref.recall_den, got.noncoref.precision_den) == (
            len(kn & rn),
            len(kn),
            len(rn),
        )


def test_blanc_with_repeated_ids_equals_link_sets() -> None:
    """Where an id occurs twice (a key listing a span twice, a repeated twinless response
    mention) the link sets are built literally; they equal the naive definition here."""
    from seam_repro.metrics.coref import Counts, _Identified

    rng = random.Random(6)
    repeated = 0
    for _ in range(300):
        k = _random_partition(rng, [rng.randrange(12) for _ in range(rng.randint(1, 12))])
        r = _random_partition(rng, [rng.randrange(14) for _ in range(rng.randint(1, 12))])
        got = _blanc(_Identified(k, r, Counts()))
        kc, kn = _naive_links(k)
        rc, rn = _naive_links(r)
        assert (got.coref.recall_num, got.coref.recall_den, got.coref.precision_den) == (len(kc & rc), len(kc), len(rc))
        assert (got.noncoref.recall_num, got.noncoref.recall_den, got.noncoref.precision_den) == (
            len(kn & rn), len(kn), len(rn))
        repeated += len({m for c in k for m in c}) < sum(map(len, k))
    assert repeated > 100


def _textbook(key: list[list[int]], resp: list[list[int]]) -> dict[str, tuple[float, float]]:
    """MUC (Vilain et al. 1995), B3 (Bagga & Baldwin 1998), CEAF-e/m (Luo 2005, brute force) for
    a response over exactly the key's mentions: the textbook definitions all apply unchanged."""

    def muc_r(a: list[list[int]], b: list[list[int]]) -> float:
        where = {m: i for i, c in enumerate(b) for m in c}
        num = sum(len(c) - len({where[m] for m in c}) for c in a)
        den = sum(len(c) - 1 for c in a)
        return num / den if den else 0.0

    def b3_r(a: list[list[int]], b: list[list[int]]) -> float:
        where = {m: set(c) for c in b for m in c}
        return sum(len(set(c) & where[m]) / len(c) for c in a for m in c) / sum(map(len, a))

    def ceaf(phi) -> float:  # type: ignore[no-untyped-def]
        big, small = (key, resp) if len(key) >= len(resp) else (resp, key)
        best = 0.0
        for perm in itertools.permutations(range(len(big)), len(small)):
            pairs = [(big[j], small[i]) for i, j in enumerate(perm)]
            best = max(best, sum(phi(x, y) for x, y in pairs))
        return best

    def phi_e(x: list[int], y: list[int]) -> float:
        return 2 * len(set(x) & set(y)) / (len(x) + len(y))

    def phi_m(x: list[int], y: list[int]) -> float:
        return len(set(x) & set(y))

    ce, cm = ceaf(phi_e), ceaf(phi_m)
    n = sum(map(len, key))
    return {
        "muc": (muc_r(key, resp), muc_r(resp, key)),
        "bcub": (b3_r(key, resp), b3_r(resp, key)),
        "ceafe": (ce / len(key), ce / len(resp)),
        "ceafm": (cm / n, cm / n),
    }


def test_metrics_match_textbook_definitions_on_gold_mentions() -> None:
    rng = random.Random(11)
    for _ in range(150):
        mentions = rng.sample(range(100), rng.randint(1, 9))
        key = _random_partition(rng, mentions)
        resp = _random_partition(rng, rng.sample(mentions, len(mentions)))
        got = score_document(key, resp)
        for name, (r, p) in _textbook(key, resp).items():
            m = got.metric(name)
            assert (m.recall, m.precision) == (pytest.approx(r), pytest.approx(p)), (name, key, resp)


def test_repeated_mention_refusal_counts_every_metric_pass() -> None:
    assert not refuses_to_score(10, 1) and refuses_to_score(11, 1)
    assert refuses_to_score(3, 5) and not refuses_to_score(2, 5)
    s = score_document([["a"], ["b", "c"]], [["b", "c"], ["b", "x"], ["b"]])
    assert s.repeated_mentions == 2  # 'b' listed again twice after matching the key
    # a duplicated twinless mention is not detected as repeated (scorer behaviour)
    assert score_document([["a"]], [["x", "y"], ["x"]]).repeated_mentions == 0


@pytest.mark.skipif(not GOLDEN.is_dir(), reason="shared golden files absent")
def test_tc_a9_all_metrics_refused_like_scorer_pl_all() -> None:
    """TC-A-9 repeats one mention 10 times: fine for one metric, refused by `scorer.pl all`."""
    with pytest.raises(InputError, match="repeated"):
        score_conll_files(GOLDEN / "DataFiles/TC-A.key", GOLDEN / "DataFiles/TC-A-9.response", list(METRICS))
    s = score_conll_files(GOLDEN / "DataFiles/TC-A.key", GOLDEN / "DataFiles/TC-A-9.response", ["muc"])
    assert s.muc.recall == pytest.approx(1 / 3)


def test_counts_zero_denominators() -> None:
    c = Counts(0, 0, 0, 0)
    assert (c.recall, c.precision, c.f1) == (0.0, 0.0, 0.0)


# ---- optional oracle: the perl scorer itself -------------------------------------------------

SCORER = os.environ.get("CONLL_SCORER", "")
needs_perl = pytest.mark.skipif(
    not (SCORER and Path(SCORER).is_file() and shutil.which("perl")),
    reason="set CONLL_SCORER to a reference-coreference-scorers scorer.pl (and install perl) to run",
)
_NUM = r"\(([-0-9.e+]+) / ([-0-9.e+]+)\)"


def perl_counts(key: Path, resp: Path) -> dict[str, tuple[float, ...]]:
    """Run ``scorer.pl all`` and read the TOTALS counts of every metric."""
    out = subprocess.run(
        ["perl", SCORER, "all", str(key), str(resp)], capture_output=True, text=True, check=True
    )
    assert out.stderr == ""
    got: dict[str, tuple[float, ...]] = {}
    for section in out.stdout.split("METRIC ")[1:]:
        name, tot = section.split(":", 1)[0], section.split("====== TOTALS =======")[-1]
        if name == "blanc":
            pat = f"Coreference links: Recall: {_NUM}.*?Precision: {_NUM}.*?Non-coreference links: Recall: {_NUM}.*?Precision: {_NUM}"
        else:
            pat = f"\nCoreference: Recall: {_NUM}.*?Precision: {_NUM}"
        got[name] = tuple(float(x) for x in re.search(pat, tot, re.S).groups())  # type: ignore[union-attr]
    return got


def _conll_doc(rng: random.Random, name: str) -> str:
    n_tok = rng.randint(3, 14)
    fields: dict[int, list[str]] = {t: [] for t in range(n_tok)}
    spans = set()
    for e in range(rng.randint(1, 5)):
        for _ in range(rng.randint(1, 3)):
            s = rng.randrange(n_tok)
            end = min(n_tok - 1, s + rng.choice([0, 0, 1, 2]))
            if (s, end) in spans:
                continue  # no repeated spans: `all` would refuse them
            spans.add((s, end))
            if s == end:
                fields[s].append(f"({e})")
            else:
                fields[s].append(f"({e}")
                fields[end].append(f"{e})")
    rows = [f"#begin document ({name}); part 000"]
    rows += [f"{name}\t0\t{t}\tw\t{'|'.join(fields[t]) or '-'}" for t in range(n_tok)]
    return "\n".join(rows + ["#end document", ""])


@needs_perl
def test_random_multi_document_files_match_perl(tmp_path: Path) -> None:
    rng = random.Random(2024)
    for trial in range(8):
        key, resp = tmp_path / f"k{trial}", tmp_path / f"r{trial}"
        key.write_text("".join(_conll_doc(rng, f"d{i}") for i in range(3)))
        resp.write_text("".join(_conll_doc(rng, f"d{i}") for i in range(3) if i != 1))
        expected = perl_counts(key, resp)
        ours = score_conll_files(key, resp, list(METRICS))
        for name in METRICS:
            m = ours.metric(name)
            vals = (
                (
                    m.coref.recall_num,
                    m.coref.recall_den,
                    m.coref.precision_num,
                    m.coref.precision_den,
                    m.noncoref.recall_num,
                    m.noncoref.recall_den,
                    m.noncoref.precision_num,
                    m.noncoref.precision_den,
                )
                if name == "blanc"
                else (m.recall_num, m.recall_den, m.precision_num, m.precision_den)
            )
            assert vals == pytest.approx(expected[name], abs=1e-9), (trial, name)


@needs_perl
@pytest.mark.slow
def test_large_random_files_match_perl(tmp_path: Path) -> None:
    """Documents of 60-150 tokens with nested and crossing mentions, moved and twinless ones: CEAF's
    larger assignment components included (moved here from the retired test_conll_fast)."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from synth import conll_pair

    rng = random.Random(11)
    for trial in range(3):
        key_text, resp_text = conll_pair(rng, n_docs=12, n_tokens=rng.randint(60, 150), entities=(5, 25))
        key, resp = tmp_path / f"k{trial}.conll", tmp_path / f"r{trial}.conll"
        key.write_text(key_text)
        resp.write_text(resp_text)
        expected = perl_counts(key, resp)
        ours = score_conll_files(key, resp, list(METRICS))
        for name in METRICS:
            m = ours.metric(name)
            vals = ((m.coref.recall_num, m.coref.recall_den, m.coref.precision_num, m.coref.precision_den,
                     m.noncoref.recall_num, m.noncoref.recall_den, m.noncoref.precision_num, m.noncoref.precision_den)
                    if name == "blanc" else (m.recall_num, m.recall_den, m.precision_num, m.precision_den))
            assert vals == pytest.approx(expected[name], abs=1e-9), (trial, name)
