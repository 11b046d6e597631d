"""The prompt writers' shortcuts give exactly what the plain code gives.

``records_jsonl`` escapes a run's shared prompt prefix once and splices it into ``json.dumps``
output; ``PrefixHasher`` hashes the prefix once. Both are checked against the plain
``json.dumps(record, ensure_ascii=False, sort_keys=True)`` and ``sha256_text(prompt)`` on hostile
texts: quotes, backslashes, every control character, non-ASCII, lone surrogates' neighbours, and
field values that spell the very key the splice looks for.
"""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from seam_repro.hashing import PrefixHasher, sha256_text
from seam_repro.manifest.prompts import records_jsonl

TRICKY = ['"prompt": ""', '", "prompt": "', "\\", '"', "\n", "\t", "\x00", "\x1f", "\x7f", "é", "\u2028", "😀", ""]
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


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(texts, st.lists(st.tuples(texts, texts, targets, st.lists(texts, max_size=2)),
                                          min_size=1, max_size=3)), min_size=1, max_size=3))
def test_records_jsonl_is_json_dumps(runs: list) -> None:
    parts = []
    for prefix, instances in runs:
        for block, instance_id, target, aliases in instances:
            parts.append((_record(prefix, block, instance_id, target, aliases), prefix, block))
    text, n = records_jsonl(parts)
    assert n == len(parts)
    assert text == "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r, _, _ in parts)


def test_records_jsonl_splices_the_key_not_a_value_that_spells_it() -> None:
    # sorted keys put answer_aliases and instance_id before prompt: both spell the key the splice finds
    record = _record('P"', '"prompt": ""', '"prompt": ""', '"prompt": ""', ['"prompt": ""'])
    text, _ = records_jsonl([(record, 'P"', '"prompt": ""')])
    assert json.loads(text) == record
    assert text == json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n"


@settings(max_examples=200, deadline=None)
@given(texts, st.lists(texts, min_size=1, max_size=4))
def test_prefix_hasher_is_sha256_of_the_whole_text(prefix: str, blocks: list[str]) -> None:
    hasher = PrefixHasher(prefix)
    assert [hasher.hexdigest(b) for b in blocks] == [sha256_text(prefix + b) for b in blocks]
