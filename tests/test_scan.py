"""Linear-time scanners against the regexes they replace: identical results on generated short
inputs, and no hang on the adversarial outputs that made the regexes quadratic."""

from __future__ import annotations

import re
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seam_repro.metrics import musique, validity
from seam_repro.metrics.scan import brace_span, has_closed_int_list, has_open_int_list_at_end

TEXT = st.text(alphabet=st.sampled_from(list("{}[]1 ,\n\t x'٣")), max_size=30)


def _span(pattern: str, text: str, flags: int = 0):
    m = re.search(pattern, text, flags)
    return None if m is None else m.span()


@settings(max_examples=4000, deadline=None)
@given(TEXT)
def test_brace_span_equals_regex(text: str) -> None:
    assert brace_span(text) == _span(r"\{.*\}", text)
    assert brace_span(text, dotall=True) == _span(r"\{.*\}", text, re.DOTALL)
    assert brace_span(text, greedy=False) == _span(r"\{.*?\}", text)
    assert brace_span(text, greedy=False, dotall=True) == _span(r"\{.*?\}", text, re.DOTALL)


@settings(max_examples=4000, deadline=None)
@given(TEXT)
def test_int_list_scanners_equal_regex(text: str) -> None:
    assert has_closed_int_list(text) == (re.search(r"\[[\d, ]*\d[\d, ]*\]", text) is not None)
    assert has_open_int_list_at_end(text) == (re.search(r"\[[\d, ]*\d[\d, ]*$", text) is not None)


ADVERSARIAL = ["{" * 200_000, "[" + "1 " * 100_000 + "x", "{" + "1 " * 100_000 + "x", "[" * 200_000,
               ("{'a': " * 50_000) + "\n" + "}"]


@pytest.mark.parametrize("text", ADVERSARIAL, ids=["braces", "open-list", "open-dict", "brackets", "dict-lines"])
def test_adversarial_outputs_score_fast(text: str) -> None:
    start = time.process_time()  # CPU time: a loaded machine's waiting does not count, backtracking does
    for task in ("qa", "coreference"):
        validity.is_valid(task, text)
    musique.upstream_f1(text, {"is_answerable": True, "answer_content": "x"})
    musique.corrected(text, {"is_answerable": True, "answer_content": "x"})
    assert time.process_time() - start < 5.0
