"""The fast CoNLL reader and the linear B3 / per-component CEAF against slower references:
the scorer's own iterative ``s///`` label extraction, one assignment over the whole similarity
matrix, and (when perl and a scorer.pl are at hand) the official scorer on large random files."""

from __future__ import annotations

import os
import random
import re
import shutil
import subprocess
import sys
from math import perm
from pathlib import Path

import pytest

from seam_repro.metrics import coref
from seam_repro.metrics.conll_io import (
    _CLOSE,
    _DOUBLE_ANTECEDENT,
    _OPEN,
    _SINGLE,
    _labels,
    parse_conll_text,
    score_conll_files,
)
from seam_repro.metrics.coref import METRICS, _identify

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
from synth import conll_pair  # noqa: E402

SCORER_SNAPSHOT = Path("/work/.mirror/conll+reference-coreference-scorers/repo/.git")


def _labels_by_removal(info: str) -> tuple[list[str], list[str], list[str]]:
    """The scorer's loop, literally: remove the leftmost match until none is left, per pattern."""
    def drain(pattern: re.Pattern[str], text: str) -> tuple[str, list[str]]:
        out = []
        while (m := pattern.search(text)) is not None:
            text = text[: m.start()] + text[m.end():]
            out.append(m.group(1))
        return text, out

    info, _ = drain(_DOUBLE_ANTECEDENT, info)
    info, singles = drain(_SINGLE, info)
    info, opens = drain(_OPEN, info)
    info, closes = drain(_CLOSE, info)
    return singles, opens, closes


def test_label_fast_paths_equal_iterative_removal() -> None:
    rng = random.Random(7)
    alphabet = ["(", ")", "|", "1", "2", "12", "+", "-", "_", "x", "07"]
    fields = ["(1)", "(12", "3)", "(1)|(2", "(1|2)", "((1)2)", "(1)(2)", "(1+2)", "(01)|1)", "1)|(1)|(3",
              "(12)|(12)", "|", "(", ")", "()", "(1|", "|2)"]
    fields += ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 9))) for _ in range(3000)]
    for info in fields:
        assert _labels(info)[:3] == _labels_by_removal(info), info


def _full_matrix_ceaf(ident: coref._Identified, mention_based: bool) -> float:
    """One assignment over the whole key x response matrix (the previous implementation)."""
    import numpy as np
    from scipy.optimize import linear_sum_assignment

    key, resp = ident.key, ident.response
    ridx = {m: j for j, chain in enumerate(resp) for m in chain}
    sim = np.zeros((len(key), len(resp)))
    for i, chain in enumerate(key):
        for m in chain:
            if m in ridx:
                sim[i, ridx[m]] += 1
    if not mention_based:
        sim = 2 * sim / (np.array([len(c) for c in key], float)[:, None] + np.array([len(c) for c in resp], float)[None, :])
    total = 0.0
    for i, j in zip(*linear_sum_assignment(sim, maximize=True), strict=True):
        total += 1 - (1 - float(sim[i, j]))
    return total


def test_component_ceaf_equals_whole_matrix_assignment() -> None:
    key_text, resp_text = conll_pair(random.Random(3), n_docs=60, n_tokens=120)
    key, resp = parse_conll_text(key_text), parse_conll_text(resp_text)
    for name, doc in key.items():
        for mention_based in (True, False):
            ident = _identify(doc.entities, resp[name].entities)
            assert coref._ceaf(ident, mention_based).recall_num == pytest.approx(
                _full_matrix_ceaf(ident, mention_based), abs=1e-12), (name, mention_based)


def _scorer() -> Path | None:
    env = os.environ.get("CONLL_SCORER", "")
    if env and Path(env).is_file():
        return Path(env)
    return None


@pytest.fixture(scope="module")
def scorer_pl(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not shutil.which("perl"):
        pytest.skip("perl is not installed")
    found = _scorer()
    if found is not None:
        return found
    if not (SCORER_SNAPSHOT.is_dir() and shutil.which("git") and shutil.which("tar")):
        pytest.skip("set CONLL_SCORER to a reference-coreference-scorers scorer.pl (no snapshot here either)")
    out = tmp_path_factory.mktemp("scorer")
    archive = subprocess.run(["git", "-C", str(SCORER_SNAPSHOT), "archive", "HEAD"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(out)], input=archive.stdout, check=True)
    return out / "scorer.pl"


_NUM = r"\(([-0-9.e+]+) / ([-0-9.e+]+)\)"


@pytest.mark.slow
def test_large_random_files_equal_perl_scorer(scorer_pl: Path, tmp_path: Path) -> None:
    """Documents of 60-150 tokens with nested and crossing mentions, moved and twinless ones."""
    rng = random.Random(11)
    for trial in range(3):
        key_text, resp_text = conll_pair(rng, n_docs=12, n_tokens=rng.randint(60, 150), entities=(5, 25))
        key, resp = tmp_path / f"k{trial}.conll", tmp_path / f"r{trial}.conll"
        key.write_text(key_text)
        resp.write_text(resp_text)
        out = subprocess.run(["perl", str(scorer_pl), "all", str(key), str(resp)], capture_output=True, text=True,
                             check=True).stdout
        ours = score_conll_files(key, resp, list(METRICS))
        for section in out.split("METRIC ")[1:]:
            name, totals = section.split(":", 1)[0], section.split("====== TOTALS =======")[-1]
            m = ours.metric(name)
            if name == "blanc":
                pat = (f"Coreference links: Recall: {_NUM}.*?Precision: {_NUM}.*?"
                       f"Non-coreference links: Recall: {_NUM}.*?Precision: {_NUM}")
                mine = (m.coref.recall_num, m.coref.recall_den, m.coref.precision_num, m.coref.precision_den,
                        m.noncoref.recall_num, m.noncoref.recall_den, m.noncoref.precision_num,
                        m.noncoref.precision_den)
            else:
                pat = f"\nCoreference: Recall: {_NUM}.*?Precision: {_NUM}"
                mine = (m.recall_num, m.recall_den, m.precision_num, m.precision_den)
            theirs = tuple(float(x) for x in re.search(pat, totals, re.S).groups())  # type: ignore[union-attr]
            assert mine == pytest.approx(theirs, abs=1e-9), (trial, name)


def _scan_reference(text: str) -> tuple[list[str], tuple[int, str] | None]:
    """conll-score's warning scan as first written (a second pass over the file, one regex per
    line and part): the document names, and the first label the scorer's numeric patterns skip."""
    from seam_repro.metrics.conll_io import _BEGIN, _LABEL

    names: list[str] = []
    odd = None
    for n, line in enumerate(text.split("\n"), start=1):
        line = line.rstrip("\r")
        m = _BEGIN.match(line)
        if m:
            names.append(m.group(1))
            continue
        if odd is not None or not line.strip() or line.lstrip().startswith("#"):
            continue
        fields = [f for f in line.split("\t") if f != ""]
        coref = fields[-1].strip() if len(fields) > 1 else ""
        if coref in ("", "-", "_"):
            continue
        for part in coref.split("|"):
            if part and not _LABEL.fullmatch(part):
                odd = (n, part)
                break
    return names, odd


def test_reader_warnings_equal_the_line_by_line_reference() -> None:
    """The names and first non-numeric label conll-score warns about come from the reader's own
    pass; inside scored documents they equal the separate line-by-line scan they replace."""
    from seam_repro.errors import InputError
    from seam_repro.metrics.conll_io import parse_conll_file

    rng = random.Random(5)
    pieces = ["(1)", "(12", "3)", "12)", "-", "_", "(1+2)", "(a)", "x", "", " ", "\xa0", "1+", "((1", "|", "(1)|(x",
              "\r", "#", "(3)|(4)", "(1)(2)", "7"]
    compared = flagged = 0
    for _ in range(1500):
        lines = []
        for _ in range(rng.randint(1, 12)):
            cols = [rng.choice(["w", "", " ", "d", "#c"]) for _ in range(rng.randint(0, 3))]
            lines.append("\t".join(cols + ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 3)))])
                         + rng.choice(["", "\t", "\t \t", "\r", " "]))
        docs = rng.randint(1, 3)
        text = "".join(f"#begin document (d{k % 2}); part 0\n" + "\n".join(lines[k::docs]) + "\n#end document\n"
                       for k in range(docs))
        try:
            got = parse_conll_file(text, "t")
        except InputError:
            continue  # unbalanced mentions: conll-score stops with the error before any warning
        names, odd = _scan_reference(text)
        if docs == 3:  # (d0) twice: only its last block is scored, so the first block is not scanned
            first_end = text.index("#end document") + len("#end document\n")
            names, odd = _scan_reference(text[first_end:])
            names = ["(d0); part 0", *names]
            odd = None if odd is None else (odd[0] + text[:first_end].count("\n"), odd[1])
        assert (list(got.names), got.odd_label) == (names, odd), text
        compared += 1
        flagged += odd is not None
    assert compared > 300 and flagged > 50, (compared, flagged)


def _parse_by_lines(data: str, source: str) -> tuple[dict, tuple[str, ...], object]:
    """The reader as first written: the whole file split into lines, begin/end lines found by a
    pass over every line, every document read by ``_parse_document``."""
    import bisect

    from seam_repro.metrics.conll_io import _END, _begin_name, _parse_document, _split_lines

    lines = _split_lines(data.encode("utf-8", errors="surrogateescape").decode("utf-8", errors="surrogateescape"))
    last_begin: dict[str, int] = {}
    names = []
    for i in [i for i, line in enumerate(lines) if "begin document" in line]:
        name = _begin_name(lines[i])
        if name is not None:
            names.append(name)
            last_begin.pop(name, None)
            last_begin[name] = i
    ends = [i for i, line in enumerate(lines) if "end document" in line and _END.search(line)]
    docs, odd = {}, None
    for name, i in last_begin.items():
        after = bisect.bisect_right(ends, i)
        docs[name], found = _parse_document(lines, i, ends[after] if after < len(ends) else None, name, source)
        if found is not None and (odd is None or found[0] < odd[0]):
            odd = found
    return docs, tuple(names), odd


def _random_conll(rng: random.Random) -> str:
    fields = ["-", "_", "-", "-", "-", "-", "(1)", "(12)", "(2", "2)", "(1", "1)", "(1)|(2", "2)|(3)", "1)|(1", "(01)",
              "(1+2)", "(x)", "x", "7", "", "((1)2)", "(3)(4)", "-\r", "(1)\r", "\xa0", "(\udcff)"]
    ends = ["", "", "", "", "\t", "\r", " ", "\t\t"]
    if rng.random() < 0.5:  # a tidy file: what the fast path reads itself
        fields, ends = fields[:16], [""]
    out = []
    for _ in range(rng.randint(1, 5)):
        kind = rng.random()
        if kind < 0.7:
            out.append(rng.choice(["#begin document ", "# begin document ", "#begin document", "  #begin document "])
                       + rng.choice(["(d0); part 0", "(d1); part 0", "x", "id=1", "", "(d0); part 0\r"]))
        for _ in range(rng.randint(0, 8)):
            r = rng.random()
            if r < 0.08:
                out.append(rng.choice(["", " ", "\t", " \t ", "\r", "\x0b", "\x0c"]))
            elif r < 0.12:
                out.append(rng.choice(["# a comment", "#end of nothing", "x #begin document nested end document"]))
            else:
                cols = [rng.choice(["d", "w", "", " ", "0"]) for _ in range(rng.randint(0, 3))]
                coref = "|".join(rng.choice(fields) for _ in range(rng.choice([1, 1, 1, 2])))
                out.append(" " * (rng.random() < 0.05) + "\t".join([*cols, coref]) + rng.choice(ends))
        if rng.random() < 0.85:
            out.append(rng.choice(["#end document", "#end document\r", "# end document x", "#end  document"]))
    return "\n".join(out) + rng.choice(["\n", "", "\n\n", "\t"])


def test_reader_equals_the_line_by_line_reader_on_random_files(monkeypatch: pytest.MonkeyPatch) -> None:
    """Documents, names, warning and errors (message included) of the reader equal those of the
    reader as first written, on random files full of what the fast path must decline."""
    from seam_repro.errors import InputError
    from seam_repro.metrics import conll_io
    from seam_repro.metrics.conll_io import parse_conll_file

    outcomes = {"docs": 0, "odd": 0, "error": 0, "read plain": 0, "declined": 0}
    plain = conll_io._read_plain_document

    def counted(*args: object) -> object:
        doc = plain(*args)  # type: ignore[arg-type]
        outcomes["declined" if doc is None else "read plain"] += 1
        return doc

    monkeypatch.setattr(conll_io, "_read_plain_document", counted)
    rng = random.Random(16)
    for _ in range(6000):
        text = _random_conll(rng)
        try:
            expected = _parse_by_lines(text, "t")
        except InputError as exc:
            with pytest.raises(InputError) as got:
                parse_conll_file(text, "t", require_documents=False)
            assert str(got.value) == str(exc), text
            outcomes["error"] += 1
            continue
        got = parse_conll_file(text, "t", require_documents=False)
        assert (got.documents, got.names, got.odd_label) == expected, text
        assert list(got.documents) == list(expected[0]), text
        outcomes["docs"] += bool(got.documents)
        outcomes["odd"] += got.odd_label is not None
    assert min(outcomes.values()) > 300, outcomes


def _scipy_choice(weights: dict[tuple[int, int], float], n_rows: int, n_cols: int) -> tuple[tuple[int, float], ...]:
    """The (row, similarity) pairs of positive similarity that scipy's solver chooses."""
    import numpy as np
    from scipy.optimize import linear_sum_assignment

    matrix = np.zeros((n_rows, n_cols))
    for (i, j), value in weights.items():
        matrix[i, j] = value
    picked = zip(*linear_sum_assignment(matrix, maximize=True), strict=True)
    return tuple(sorted((int(i), float(matrix[i, j])) for i, j in picked if matrix[i, j] > 0))


@pytest.fixture
def own_solver(monkeypatch: pytest.MonkeyPatch) -> None:
    """The kit's own solver for every group it can solve (no work budget, scipy not yet loaded)."""
    monkeypatch.setattr(coref, "_LSA", None)
    monkeypatch.setattr(coref, "_SOLVER_WORK_LIMIT", float("inf"))


def test_own_assignment_lists_what_scipy_chooses(own_solver: None) -> None:
    """On random matrices full of ties (CEAF-e's similarities 2c/(a+b) of small entities, and
    CEAF-m's counts), scipy's choice is always among the options the kit's own solver lists, and
    with integral weights the one option's total is scipy's; both solvers' sizes are covered."""
    rng = random.Random(16)
    fractions = sorted({2 * c / (a + b) for a in range(1, 6) for b in range(1, 6) for c in range(1, min(a, b) + 1)})
    seen = {"enumerated": 0, "certified": 0, "tied": 0, "declined": 0}
    for trial in range(4000):
        n_rows, n_cols = rng.randint(2, 9), rng.randint(2, 9)
        if trial % 10 == 0:
            n_rows, n_cols = rng.randint(10, 30), rng.randint(10, 30)
        integral = trial % 3 == 0
        density = rng.choice([0.2, 0.4, 0.7])
        weights = {(i, j): float(rng.randint(1, 4)) if integral else rng.choice(fractions)
                   for i in range(n_rows) for j in range(n_cols) if rng.random() < density}
        if not weights:
            continue
        matrix = [[weights.get((i, j), 0.0) for j in range(n_cols)] for i in range(n_rows)]
        options = coref._own_assignment(matrix, integral)
        if options is None:
            seen["declined"] += 1
            continue
        seen["enumerated" if perm(max(n_rows, n_cols), min(n_rows, n_cols)) <= 60 else "certified"] += 1
        seen["tied"] += len(options) > 1
        theirs = _scipy_choice(weights, n_rows, n_cols)
        if integral:
            assert len(options) == 1
            assert sum(v for _, v in options[0]) == sum(v for _, v in theirs), (weights, n_rows, n_cols)
        else:
            assert theirs in options, (weights, n_rows, n_cols)
    assert min(seen["enumerated"], seen["certified"], seen["tied"]) > 200, seen
    assert seen["declined"] < seen["certified"] / 20, seen


def test_ceaf_with_own_solver_equals_scipy_everywhere(monkeypatch: pytest.MonkeyPatch, own_solver: None) -> None:
    """CEAF-m/e totals with the kit's own solver are bit-for-bit those of scipy's solver on every
    component (the implementation before it), on random documents with small entities (many
    tied similarities) as well as the bench's kind."""
    rng = random.Random(4)
    docs = []
    for n_tokens, entities in ((40, (3, 12)), (120, (10, 30)), (300, (20, 40))):
        key_text, resp_text = conll_pair(rng, n_docs=40, n_tokens=n_tokens, entities=entities)
        key, resp = parse_conll_text(key_text), parse_conll_text(resp_text)
        docs += [(doc.entities, resp[name].entities) for name, doc in key.items()]
    ours = [(coref._ceaf(_identify(k, r), True), coref._ceaf(_identify(k, r), False)) for k, r in docs]
    monkeypatch.setattr(coref, "_own_assignment", lambda *args: None)
    theirs = [(coref._ceaf(_identify(k, r), True), coref._ceaf(_identify(k, r), False)) for k, r in docs]
    assert ours == theirs


def test_ties_whose_totals_differ_go_to_scipy() -> None:
    """Key entity 1 or 3 may take response entity 5 (similarity 0.1 either way); summed in key
    order with entities 0 and 2 the two choices give different floats, so scipy's choice is used."""
    chosen = [(0, 0.2), (2, 0.9)]
    options = [[(3, 0.1)], [(1, 0.1)]]
    assert coref._ceaf_total(chosen + options[0]) != coref._ceaf_total(chosen + options[1])
    picked = coref._settle_ties(chosen, [([1, 3], [[0.1], [0.1]], options)])  # key rows 1 and 3, response 5
    scipy_rows = [(1, 3)[i] for i, _ in _scipy_choice({(0, 0): 0.1, (1, 0): 0.1}, 2, 1)]
    assert [row for row, value in picked if value > 0] == scipy_rows
    same = [[(1, 0.5)], [(3, 0.5)]]  # 0.1 + 0.5 + 0.3 in either order: one float, no scipy needed
    assert coref._settle_ties([(0, 0.25), (2, 0.25)], [([1, 3], [[0.5], [0.5]], same)]) == [(1, 0.5)]


def test_past_its_work_budget_or_once_scipy_is_loaded_large_groups_go_to_scipy(monkeypatch: pytest.MonkeyPatch) -> None:
    square = [[1.0 if (i + j) % 3 else 0.5 for j in range(6)] for i in range(6)]
    monkeypatch.setattr(coref, "_LSA", None)
    monkeypatch.setattr(coref, "_SOLVER_WORK", [0])
    assert coref._own_assignment(square, True) is not None
    monkeypatch.setattr(coref, "_SOLVER_WORK", [coref._SOLVER_WORK_LIMIT + 1])
    assert coref._own_assignment(square, True) is None
    assert coref._own_assignment([[1.0, 0.5], [0.5, 1.0]], False) == [((0, 1.0), (1, 1.0))]  # small: still solved
    monkeypatch.setattr(coref, "_SOLVER_WORK", [0])
    monkeypatch.setattr(coref, "_LSA", object())
    assert coref._own_assignment(square, True) is None
