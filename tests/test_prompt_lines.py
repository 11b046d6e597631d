"""The prompt and manifest writers' shortcuts give exactly what the plain code gives.

``records_jsonl`` escapes a run's shared prompt prefix once and splices it into the record's
line, as UTF-8 bytes (``json_string_utf8``: three byte replacements unless a control character
other than the newline is present); ``PrefixHasher`` hashes the prefix once. All are checked
against the plain ``json.dumps(record, ensure_ascii=False, sort_keys=True)`` encoded to UTF-8 and
``sha256_text(prompt)`` on hostile texts: quotes, backslashes, every control character, non-ASCII,
lone surrogates' neighbours, and field values that spell the very key the splice looks for.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seam_repro.hashing import PrefixHasher, sha256_text
from seam_repro.manifest.prompts import json_string_utf8, records_jsonl

TRICKY = ['"prompt": ""', '", "prompt": "', "\\", '"', "\n", "\t", "\x00", "\x1f", "\x7f", "é", "\u2028", "😀", "",
          "\r", "\x08", "\x0c", "\x0b", "ǅ", "\u0100", "\x80", "\\n", "\\u0000", "\n\n"]
CONTROLS = [chr(c) for c in range(0x20)]
texts = st.one_of(st.sampled_from(TRICKY), st.text(st.characters(exclude_categories=("Cs",)), max_size=40),
                  st.lists(st.sampled_from(TRICKY), max_size=6).map("".join))
targets = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), texts),
                       lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(texts, inner, max_size=3)),
                       max_leaves=8)


def _record(prefix: str, block: str, instance_id: str, target: object, aliases: list[str]) -> dict:
    record = {"dataset": "D", "task": "t", "run": 0, "split": "s", "instance_id": instance_id,
              "prompt": prefix + block, "prompt_sha256": sha256_text(prefix + block), "target": target,
              "target_sha256": "0" * 64, "gen_seed": 1}
    if aliases:
        record["answer_aliases"] = aliases
    return record


def _parts(parts: list) -> list:
    """(record, prefix, block) as ``iter_rendered_parts`` yields them: the texts' UTF-8 bytes, one
    ``bytes`` object per prefix."""
    prefixes: dict[str, bytes] = {}
    return [(r, prefixes.setdefault(p, p.encode()), b.encode()) for r, p, b in parts]


def _expected(parts: list) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r, _, _ in parts).encode()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(texts, st.lists(st.tuples(texts, texts, targets, st.lists(texts, max_size=2)),
                                          min_size=1, max_size=3)), min_size=1, max_size=3))
def test_records_jsonl_is_json_dumps(runs: list) -> None:
    parts = []
    for prefix, instances in runs:
        for block, instance_id, target, aliases in instances:
            parts.append((_record(prefix, block, instance_id, target, aliases), prefix, block))
    chunks, n = records_jsonl(_parts(parts))
    assert n == len(parts)
    assert b"".join(chunks) == _expected(parts)


scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), texts, st.lists(st.integers(), max_size=3))
field_keys = st.sampled_from(["dataset", "task", "run", "split", "instance_id", "prompt_sha256", "target",
                              "target_sha256", "gen_seed", "metric", "answer_aliases", "mention_ids", "prompt",
                              "promp", "prompt_", "a", "z", "metric2"])


@settings(max_examples=500, deadline=None)
@given(texts, texts, targets, st.lists(texts, max_size=2), st.booleans(), st.booleans(),
       st.dictionaries(field_keys, scalars, max_size=3), st.lists(field_keys, max_size=2))
def test_records_jsonl_any_record_shape_is_json_dumps(prefix: str, block: str, target: object, aliases: list[str],
                                                      metric: bool, mention_ids: bool, changes: dict,
                                                      dropped: list[str]) -> None:
    """The field-by-field writer of rendered records, and the encoder for every other shape: keys
    missing, unknown or spelling the prompt's, fields of other types (a bool run, an int dataset)."""
    record = _record(prefix, block, "i", target, aliases)
    if metric:
        record["metric"] = "conll_f1"
    if mention_ids:
        record["mention_ids"] = [3, 1, 2]
    record.update({k: v for k, v in changes.items() if k != "prompt"})
    for key in dropped:
        if key != "prompt":
            record.pop(key, None)
    parts = [(record, prefix, block)]
    try:
        expected = _expected(parts)
    except (TypeError, ValueError) as exc:
        with pytest.raises(type(exc)):
            records_jsonl(_parts(parts))
        return
    assert b"".join(records_jsonl(_parts(parts))[0]) == expected


def test_records_jsonl_circular_and_deep_values_fail_as_json_dumps_does() -> None:
    circular: list = [1]
    circular.append(circular)
    deep: list = []
    for _ in range(5000):
        deep = [deep]
    for value in (circular, {"a": circular}, deep):
        for key in ("target", "mention_ids", "answer_aliases"):
            record = {**_record("P", "B", "i", None, []), key: value}
            with pytest.raises((ValueError, RecursionError)) as plain:
                json.dumps(record, ensure_ascii=False, sort_keys=True)
            with pytest.raises(plain.type, match=str(plain.value)[:20] or None):
                records_jsonl(_parts([(record, "P", "B")]))


def test_records_jsonl_writes_the_parts_not_the_records_prompt() -> None:
    # iter_rendered_parts leaves "prompt" empty (prefix + block is never joined for writing)
    record = _record("P\n", "B", "i", None, [])
    chunks, _ = records_jsonl([({**record, "prompt": ""}, b"P\n", b"B")])
    assert b"".join(chunks) == (json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n").encode()


def test_records_jsonl_splices_the_key_not_a_value_that_spells_it() -> None:
    # sorted keys put answer_aliases and instance_id before prompt: both spell the key the splice finds
    record = _record('P"', '"prompt": ""', '"prompt": ""', '"prompt": ""', ['"prompt": ""'])
    for shape in ({}, {"extra": '"prompt": ""'}):  # the field-by-field writer, then the encoder
        data = b"".join(records_jsonl(_parts([({**record, **shape}, 'P"', '"prompt": ""')]))[0])
        assert json.loads(data) == {**record, **shape}
        assert data == (json.dumps({**record, **shape}, ensure_ascii=False, sort_keys=True) + "\n").encode()


@settings(max_examples=500, deadline=None)
@given(st.one_of(texts, st.lists(st.sampled_from(TRICKY + CONTROLS), max_size=12).map("".join),
                 st.text(st.characters(exclude_categories=("Cs",)), max_size=200)))
def test_json_string_utf8_is_json_dumps(text: str) -> None:
    assert json_string_utf8(text.encode()) == json.dumps(text, ensure_ascii=False)[1:-1].encode()


def test_json_string_utf8_every_ascii_character_alone_and_in_text() -> None:
    for c in map(chr, range(0x80)):
        for text in (c, f"a\n{c}\"b\\", f"é{c}😀\n"):
            assert json_string_utf8(text.encode()) == json.dumps(text, ensure_ascii=False)[1:-1].encode(), repr(text)


@pytest.mark.parametrize("text", ["\ud800", "a\n\udfff", "\x01\ud83d"])
def test_lone_surrogate_fails_as_encoding_json_dumps_does(text: str) -> None:
    # the parts are UTF-8 bytes: a prompt with a lone surrogate fails where it is encoded, as
    # encoding json.dumps's text does (and as its sha256 does)
    with pytest.raises(UnicodeEncodeError):
        json.dumps(text, ensure_ascii=False).encode()
    with pytest.raises(UnicodeEncodeError):
        PrefixHasher("P").hexdigest_utf8(text.encode())
    with pytest.raises(UnicodeEncodeError):
        PrefixHasher(text)


@settings(max_examples=200, deadline=None)
@given(texts, st.lists(texts, min_size=1, max_size=4))
def test_prefix_hasher_is_sha256_of_the_whole_text(prefix: str, blocks: list[str]) -> None:
    hasher = PrefixHasher(prefix)
    assert [hasher.hexdigest_utf8(b.encode()) for b in blocks] == [sha256_text(prefix + b) for b in blocks]
    assert hasher.prefix_utf8 == prefix.encode()
