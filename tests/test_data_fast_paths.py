"""Fast paths of reading and rendering the datasets, each checked against the exact slow path it
stands in for (same values, same one-line errors on bad input)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from test_files import _depth_by_hand


def _nested(rng: random.Random, depth: int) -> object:
    if depth == 0 or rng.random() < 0.25:
        return rng.choice([1, "x", 'q"[', "]}", "é{", "€]", "\U0001f600[", None, True, "[[", "{"])
    if rng.random() < 0.5:
        return [_nested(rng, depth - 1) for _ in range(rng.randint(0, 3))]
    return {rng.choice(["k", "[", "é", "}"]) + str(i): _nested(rng, depth - 1) for i in range(rng.randint(0, 3))}


def test_depth_guard_without_escapes_matches_a_character_walk() -> None:
    """Texts with no backslash take the quote-splitting path (and deep ones the pair peeling):
    JSON documents with brackets in strings and non-ASCII text, cut or not, balanced or not."""
    from seam_repro.files import _depth_exceeds

    rng = random.Random(16)
    flagged = unescaped = 0
    for _ in range(3000):
        text = json.dumps(_nested(rng, rng.randint(0, 12)), ensure_ascii=rng.random() < 0.2)
        if rng.random() < 0.3 and text:
            cut = rng.randrange(len(text))
            text = text[:cut] + text[cut + 1:]
        unescaped += "\\" not in text
        for limit in (1, 2, 3, 5, 8):
            expected = _depth_by_hand(text) > limit
            assert _depth_exceeds(text, limit) == expected, (text, limit)
            flagged += expected
    assert flagged > 1000 and unescaped > 1000, (flagged, unescaped)


@pytest.mark.parametrize("depth", [63, 64, 65, 100_000])
def test_depth_guard_at_and_past_the_limit(depth: int) -> None:
    from seam_repro.files import MAX_JSON_DEPTH, _depth_exceeds

    for text in ("[" * depth + "]" * depth, '{"a":' * depth + "1" + "}" * depth, "[" * depth,
                 "[" * depth + '"]' + "]" * depth, "[" * depth + "]" * depth + "]", "][" * depth):
        assert _depth_exceeds(text, MAX_JSON_DEPTH) == (_depth_by_hand(text) > MAX_JSON_DEPTH), text[:80]


def test_depth_guard_on_long_ascii_texts_skips_no_check() -> None:
    """Long ASCII texts skip the opener count: shallow, deep, unbalanced and in-string brackets
    past 64 KiB of filler get the character walk's answer."""
    from seam_repro.files import MAX_JSON_DEPTH, _depth_exceeds

    filler = "a" * 70_000
    for core in ("[]", "[" * 65 + "]" * 65, '["' + "[" * 80 + '"]', "{" * 64 + "}" * 64, "]" * 70 + "[" * 64,
                 '"' + "[" * 70, "[" * 70 + '"\\"]' + "]" * 70):
        for text in (filler + core, core + filler, '"' + filler + '"' + core):
            assert _depth_exceeds(text, MAX_JSON_DEPTH) == (_depth_by_hand(text) > MAX_JSON_DEPTH), core


def _outcome(fn, *args):
    from seam_repro.errors import InputError

    try:
        out = fn(*args)
    except InputError as exc:
        return ("error", str(exc))
    return ("ok", out, [tuple(map(type, t)) for t in out] if isinstance(out, tuple) else None)


def _tokens_and_ids(fn, rows: object) -> tuple:
    """``fn``'s tokens (the ``_outcome`` form: checked with their field types) and token id set."""
    tokens, ids = fn(Path("test.json"), "d", rows)
    assert ids == {t.token_id for t in tokens}
    return tokens


def test_ecb_token_rows_column_check_equals_the_row_check() -> None:
    """``_tokens`` checks columns in C and builds tokens with ``tuple.__new__``; the row-by-row
    reference gives the same tokens (same value types too) or the same one-line error."""
    from seam_repro.datasets.ecb import _tokens, _tokens_checked

    good = [[0, 1, "Two", True, True], [0, 2, "leaders", True, False], [1, 3, "x", False, True]]
    rng = random.Random(7)
    odd_values = [0, 1, True, False, "s", None, 1.5, [], {}, -3]
    cases: list[object] = [good, [], None, {}, "rows", [good[0][:4]], [[True, 1, "a", True]], [[0, 1, "a", False]]]
    for _ in range(3000):
        rows = [list(r) for r in good[: rng.randint(1, 3)]]
        for _ in range(rng.randint(0, 2)):
            i = rng.randrange(len(rows))
            choice = rng.random()
            if choice < 0.15:
                rows[i] = rng.choice([None, "row", (0, 1, "a", True), {"a": 1}, 5])
            elif choice < 0.3 and isinstance(rows[i], list):
                rows[i] = rows[i][: rng.randint(0, 4)]
            elif isinstance(rows[i], list) and rows[i]:
                rows[i][rng.randrange(len(rows[i]))] = rng.choice(odd_values)
        cases.append(rows)
    errors = 0
    for rows in cases:
        fast, slow = _outcome(_tokens_and_ids, _tokens, rows), _outcome(_tokens_and_ids, _tokens_checked, rows)
        assert fast == slow, rows
        errors += fast[0] == "error"
    assert 500 < errors < len(cases) - 500


ROOT = Path(__file__).resolve().parents[1]
REAL_ECB = ROOT.parent / "shared" / "realdata" / "ecbplus"


def _ecb_folders(tmp_path: Path) -> list[Path]:
    """The shipped ECB+ fixture and, where ../shared/realdata is present, real topics 36-40
    converted from the ECB+ XML."""
    folders = [ROOT / "manifests" / "fixtures" / "ecb"]
    if REAL_ECB.is_dir():
        from seam_repro.datasets.ecb_xml import convert

        convert(REAL_ECB, REAL_ECB / "ECBplus_coreference_sentences.csv", tmp_path / "ecb")
        folders.append(tmp_path / "ecb")
    return folders


def test_ecb_load_equals_the_row_by_row_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from seam_repro.datasets import ecb

    for folder in _ecb_folders(tmp_path):
        fast = ecb.load(folder)
        with monkeypatch.context() as m:
            m.setattr(ecb, "_tokens", ecb._tokens_checked)
            slow = ecb.load(folder)
        assert fast == slow
        tokens = [d.tokens for split in fast.splits.values() for i in split for d in i.documents]
        assert tokens and all(type(t).__name__ == "Token" for doc in tokens for t in doc)


def _layout_by_rows(tokens: tuple) -> tuple:
    """The ECB+ document layout one row at a time (as first written): texts, first row per token
    id, the annotated span's texts in token-id order (stable) and each row's place in it."""
    texts = tuple(t.text for t in tokens)
    first_row: dict[int, int] = {}
    for row, tok in enumerate(tokens):
        first_row.setdefault(tok.token_id, row)
    annotated = [t.token_id for t in tokens if t.is_annotated]
    if not annotated:
        return texts, first_row, None, {}
    lo, hi = min(annotated), max(annotated)
    rows = sorted((r for r, tok in enumerate(tokens) if lo <= tok.token_id <= hi), key=lambda r: tokens[r].token_id)
    return texts, first_row, tuple(texts[r] for r in rows), {r: n for n, r in enumerate(rows)}


def test_ecb_layout_equals_the_row_by_row_layout(tmp_path: Path) -> None:
    """Consecutive token ids take the one-slice path, others the filter-and-sort path; both give the
    row-by-row layout (random documents, and every document of the fixture and real topics)."""
    from seam_repro.datasets import ecb
    from seam_repro.instances import Token
    from seam_repro.render.coref import _layout

    rng = random.Random(11)
    documents = []
    for _ in range(2000):
        n = rng.randint(0, 12)
        kind = rng.random()
        if kind < 0.4:  # consecutive ids, the corpus's numbering
            first_id = rng.randint(0, 3)
            ids = list(range(first_id, first_id + n))
        else:
            ids = sorted(rng.randint(0, 15) for _ in range(n)) if kind < 0.7 else [rng.randint(0, 15) for _ in range(n)]
        documents.append(tuple(Token(rng.randint(0, 3), tid, f"w{k}", rng.random() < 0.5) for k, tid in enumerate(ids)))
    for folder in _ecb_folders(tmp_path):
        documents += [d.tokens for split in ecb.load(folder).splits.values() for i in split for d in i.documents]
    for tokens in documents:
        layout = _layout(tokens)
        texts, first_row, parts, position = _layout_by_rows(tokens)
        assert (layout.texts, layout.parts) == (texts, parts), tokens
        probes = [t.token_id + d for t in tokens for d in (-1, 0, 1)] + [-1, 0, 16, 1.0, 2.5, True, "3", None]
        assert [layout.row(tid) for tid in probes] == [first_row.get(tid) for tid in probes], tokens
        assert [layout.place(r) for r in range(-1, len(tokens) + 2)] == [position.get(r) for r in range(-1, len(tokens) + 2)]


@pytest.mark.parametrize("text", ['{"a": [1, 2.5, "x"]}', "\ufeff{}", "NaN", '{"t": -Infinity}', "[1e400]", "[1e5]",
                                  '{"a": }', "", "  ", "[1] [2]", '"\\ud800"', "0", '{"a": 1, "a": 2}', "[" * 70 + "]" * 70])
def test_shared_strict_decoder_equals_json_loads_with_hooks(text: str) -> None:
    """parse_json_text keeps one strict decoder instead of one per ``json.loads`` call: same values,
    same one-line errors (the BOM check ``json.loads`` makes itself included)."""
    from seam_repro.errors import InputError
    from seam_repro.files import _finite_float, _reject_constant, parse_json_text

    def reference() -> object:
        if _depth_by_hand(text) > 64:
            return ("error", "JSON nested deeper than 64 levels")
        try:
            return ("ok", json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float))
        except json.JSONDecodeError as exc:
            return ("error", f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})")
        except ValueError as exc:
            return ("error", f"not valid JSON ({exc})")

    try:
        got: object = ("ok", parse_json_text(text, "f.json"))
    except InputError as exc:
        got = ("error", str(exc).removeprefix("f.json: "))
    assert got == reference()


def test_ecb_mention_fast_check_agrees_with_the_field_by_field_check() -> None:
    """``_mention_if_valid`` accepts exactly the rows ``_mention`` accepts, with the same result;
    every other row is left to ``_mention`` (and its one-line error)."""
    from seam_repro.datasets.ecb import _mention, _mention_if_valid
    from seam_repro.errors import InputError
    from seam_repro.instances import Token

    docs = {"d1": (Token(0, 1, "a", True), Token(0, 2, "b", True), Token(0, 5, "c", False)), "d2": (Token(0, 1, "x", True),)}
    doc_tokens = {d: {t.token_id for t in toks} for d, toks in docs.items()}
    good = {"doc_id": "d1", "topic": "36", "cluster_id": 17642655532934542, "tokens_ids": [1, 2], "m_id": "16"}
    odd_values = [None, True, False, 0, 1, 2, 5, 7, -1, 1.0, "36", "d1", "d2", "d9", [], [1], [True], [1, "2"], [2, 1],
                  [1, 9], [5, 1, 2], {}, {"a": 1}]
    rng = random.Random(5)
    rows: list[object] = [good, None, [], "row", 3]
    for _ in range(4000):
        row = dict(good)
        for _ in range(rng.randint(0, 2)):
            key = rng.choice(["doc_id", "topic", "cluster_id", "tokens_ids", "extra"])
            if rng.random() < 0.15:
                row.pop(key, None)
            else:
                row[key] = rng.choice(odd_values)
        rows.append(row)
    accepted = 0
    for i, row in enumerate(rows):
        fast = _mention_if_valid(row, docs, doc_tokens)
        try:
            slow = _mention(Path("test_events.json"), i, row, docs, doc_tokens)
        except InputError:
            assert fast is None, row
        else:
            assert fast == slow and type(fast[0]) is type(slow[0]), row
            accepted += 1
    assert 500 < accepted < len(rows) - 500


def _ecb_documents_by_parts(instance, mention_ids) -> list[str]:  # type: ignore[no-untyped-def]
    """The marked documents as first written: copy every part, put the marked ones in, join."""
    from seam_repro.render.coref import _layout

    docs = {d.doc_id: d for d in instance.documents}
    marked: dict[str, dict[int, str]] = {}
    for k, m in enumerate(instance.mentions):
        layout = _layout(docs[m.doc_id].tokens)
        texts = marked.setdefault(m.doc_id, {})
        row = layout.row(m.token_ids[0])
        texts[row] = f"[{texts.get(row, layout.texts[row])}"
        row = layout.row(m.token_ids[-1])
        texts[row] = f"{texts.get(row, layout.texts[row])}]({mention_ids[k]})"
    used = []
    for doc_id in dict.fromkeys(m.doc_id for m in instance.mentions):
        layout = _layout(docs[doc_id].tokens)
        parts = list(layout.parts)
        for row, text in marked[doc_id].items():
            if layout.place(row) is not None:
                parts[layout.place(row)] = text
        used.append(" ".join(parts))
    return used


def test_ecb_marked_documents_equal_the_part_by_part_join(tmp_path: Path) -> None:
    """Marked documents are cut from the joined unmarked text; the same strings as replacing parts
    and joining them, for every topic of the fixture and real topics, with random mention ids, and
    for random documents (unsorted ids, shared tokens, marks outside the annotated span)."""
    from seam_repro.datasets import ecb
    from seam_repro.instances import Document, Instance, Mention, Token
    from seam_repro.render.coref import ecb_documents

    rng = random.Random(2)
    instances = [i for folder in _ecb_folders(tmp_path) for split in ecb.load(folder).splits.values() for i in split]
    for n in range(300):
        documents = []
        for d in range(rng.randint(1, 3)):
            ids = [rng.randint(0, 9) for _ in range(rng.randint(1, 10))]
            if rng.random() < 0.5:
                ids.sort()
            tokens = tuple(Token(0, tid, rng.choice(["a", "bb", "", "é"]), rng.random() < 0.7) for tid in ids)
            if any(t.is_annotated for t in tokens):
                documents.append(Document(doc_id=f"d{d}", tokens=tokens))
        mentions = tuple(Mention(cluster_id=rng.randint(0, 3), doc_id=doc.doc_id,
                                 token_ids=tuple(rng.choice(doc.tokens).token_id for _ in range(rng.randint(1, 3))))
                         for doc in documents for _ in range(rng.randint(0, 4)))
        instances.append(Instance(dataset="ECB", split="test_events", instance_id=str(n), raw_id=n,
                                  documents=tuple(documents), mentions=mentions))
    for instance in instances:
        ids = rng.sample(range(1000), len(instance.mentions))
        assert ecb_documents(instance, ids) == _ecb_documents_by_parts(instance, ids)
    assert sum(len(i.mentions) for i in instances) > 1000


def test_fusereviews_marked_spans_equal_the_regex() -> None:
    """The str.find scan for ``{HS}...{HE}`` spans finds what ``re.findall`` with the lazy DOTALL
    pattern found (markers back to back, nested, unclosed, newlines)."""
    import re

    from seam_repro.render.fusereviews import _marked_spans

    pattern = re.compile(r"\{HS\}(.*?)\{HE\}", re.DOTALL)
    rng = random.Random(9)
    pieces = ["{HS}", "{HE}", "{H", "S}", "E}", "a", "\n", " ", "é", "{", "}"]
    for _ in range(20000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 14)))
        assert _marked_spans(text) == pattern.findall(text), text
