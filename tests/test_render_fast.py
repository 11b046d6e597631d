"""The renderers' shortcuts give exactly what the plain upstream-shaped code gives.

Numbered documents are one join of cached fences and the texts, held to upstream's f-strings (any
document type, any count). FuseReviews fills its structure with one join where upstream's
successive ``str.replace`` calls provably give the same text; held here to those replaces on
hostile structures and values: values that spell a later placeholder, stray braces, markers next
to placeholders, placeholders repeated, values of other types (the same errors).
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seam_repro.render.common import number_documents
from seam_repro.render.fusereviews import _fill, _fill_by_replaces, _markers_only, _structure_parts

PIECES = ["{", "}", "{A}", "{COT}", "{INST}", "{H_REV}", "{HIGHLIGHTS}", "{HS}", "{HE}", "A", "HS", "COT}", "{H",
          "{A", "x", " ", "\n", "é", ""]
pieces = st.lists(st.sampled_from(PIECES), max_size=6).map("".join)
plain = st.sampled_from(["", "x", "Review text.", "a b\nc"])
texts = st.one_of(plain, pieces, st.lists(st.sampled_from(["{HS}", "{HE}", "ab", " ", "\n"]), max_size=8).map("".join))
structures = st.one_of(
    st.just("{INST}\n\n{H_REV}\n\nAnswer: The highlighted spans are:\n{HIGHLIGHTS}{COT}\n\nSo, the answer is: {A}"),
    st.lists(st.sampled_from(["{INST}", "{H_REV}", "{HIGHLIGHTS}", "{COT}", "{A}", "\n", "x: ", "}", "{", "{HS}"]),
             max_size=8).map("".join))
reviews = st.dictionaries(st.one_of(st.sampled_from(["review_0", "review_1", "r{A}"]), pieces), texts, max_size=4)


def _reference(structure: str, instructions: str, revs: dict[str, str], answer: str) -> tuple[str, str]:
    # the listing is built the same way on both paths; the filled text is what differs
    _, listing = _fill("", "", revs, "")
    h_rev = "\n".join(f"{name}: {text}" for name, text in revs.items())
    return _fill_by_replaces(structure, instructions, h_rev, listing, answer).strip(), listing


@settings(max_examples=600, deadline=None)
@given(structures, st.one_of(plain, pieces), reviews, st.one_of(plain, pieces))
def test_fusereviews_fill_is_the_successive_replaces(structure: str, instructions: str, revs: dict[str, str],
                                                     answer: str) -> None:
    expected = _reference(structure, instructions, revs, answer)
    assert _fill(structure, instructions, revs, answer) == expected
    known = all(map(_markers_only, revs.values()))
    assert _fill(structure, instructions, revs, answer, known) == expected


@pytest.mark.parametrize(("structure", "answer"), [("{INST}{A}", 5), (7, "a"), ("{A}", None)])
def test_fusereviews_fill_of_other_types_fails_as_the_replaces_do(structure: object, answer: object) -> None:
    with pytest.raises((TypeError, AttributeError)) as plain:
        _reference(structure, "i", {"review_0": "{HS}a{HE}"}, answer)  # type: ignore[arg-type]
    with pytest.raises(plain.type, match=re.escape(str(plain.value))):
        _fill(structure, "i", {"review_0": "{HS}a{HE}"}, answer)  # type: ignore[arg-type]


def test_fusereviews_structure_parts() -> None:
    assert _structure_parts("a{INST}b{A}{A}") == ("a", 0, "b", 4, "", 4, "")
    assert _structure_parts("{HS}{A}") is None and _structure_parts("a}{A}") is None and _structure_parts("{A}}") is None
    assert _markers_only("{HS}a{HE}") and not _markers_only("{HS}a}") and not _markers_only("{H{HS}")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(texts, st.integers(), st.none(), st.lists(st.integers(), max_size=2)), max_size=25),
       st.one_of(plain, pieces), st.one_of(plain, pieces))
def test_number_documents_is_upstreams_f_strings(documents: list, before: str, after: str) -> None:
    numbered = "\n".join([f"Document {j}: ```{doc}```" for j, doc in enumerate(documents, start=1)])
    assert number_documents(documents, before, after) == before + numbered + after
    assert number_documents(tuple(documents)) == numbered
