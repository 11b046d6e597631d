"""Linear-time equivalents of the regular expressions used to find answers in model output.

Backtracking regexes such as ``\\{.*\\}`` are quadratic on adversarial text: 200 KB of ``{`` with
no ``}`` makes ``re.search`` try every start and scan to the end of the line from each (minutes).
Each function here gives exactly the span or answer of the regex named in its docstring (property
tests compare them on generated short inputs) in one or two passes over the text.

Python's ``.`` matches anything but ``\\n`` (without DOTALL); ``\\d`` on str patterns matches exactly
the characters for which ``str.isdecimal()`` is true (sre's ``Py_UNICODE_ISDECIMAL``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

Span = tuple[int, int]


def brace_span(text: str, *, greedy: bool = True, dotall: bool = False) -> Span | None:
    """Span of ``re.search(r"\\{.*\\}" or r"\\{.*?\\}", text, re.DOTALL if dotall else 0)``.

    The regex starts at the leftmost ``{`` that has a ``}`` after it within reach of ``.`` (its
    line, or the whole text under DOTALL); the greedy form ends at the last such ``}``, the lazy one
    at the first."""
    start = text.find("{")
    while start >= 0:
        stop = text.find("\n", start)
        if dotall or stop < 0:
            stop = len(text)
        end = text.rfind("}", start, stop) if greedy else text.find("}", start, stop)
        if end > start:
            return start, end + 1
        start = text.find("{", stop)
    return None


_RUN = re.compile(r"\[[\d, ]*")
r"""A ``[`` and the maximal ``[\d, ]`` run after it: one greedy class, nothing after it to backtrack
for, and runs cannot overlap (``[`` is not in the class), so ``finditer`` is linear."""
_DIGIT = re.compile(r"\d")


def _list_runs(text: str) -> Iterator[tuple[int, int, bool]]:
    """For each ``[``: (its position, end of the run after it, whether the run holds a digit)."""
    for m in _RUN.finditer(text):
        yield m.start(), m.end(), _DIGIT.search(text, m.start(), m.end()) is not None


def has_closed_int_list(text: str) -> bool:
    """``re.search(r"\\[[\\d, ]*\\d[\\d, ]*\\]", text) is not None``: a bracketed run of digits,
    commas and spaces holding at least one digit."""
    return any(digit and end < len(text) and text[end] == "]" for _, end, digit in _list_runs(text))


def has_open_int_list_at_end(text: str) -> bool:
    """``re.search(r"\\[[\\d, ]*\\d[\\d, ]*$", text) is not None``: such a run left open at the end
    of the text (``$`` also matches before one final ``\\n``)."""
    n = len(text)
    return any(digit and (end == n or (end == n - 1 and text[end] == "\n"))
               for _, end, digit in _list_runs(text))
