"""Fast paths of reading and rendering the datasets, each checked against the exact slow path it
stands in for (same values, same one-line errors on bad input)."""

from __future__ import annotations

import json
import random

import pytest


def _depth_by_hand(text: str) -> int:
    """Deepest bracket nesting outside JSON strings, one character at a time (the reference)."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            escaped, in_string = (False, True) if escaped else (ch == "\\", ch != '"')
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


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
