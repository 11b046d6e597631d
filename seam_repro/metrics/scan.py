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


_INT_RUN = r"\[(?=[, ]*+\d)[\d, ]*+"
r"""A ``[`` and the maximal ``[\d, ]`` run after it, holding a digit: possessive, so nothing is
given back, and runs cannot overlap (``[`` is not in the class), so a search is linear."""
_CLOSED_INT_LIST = re.compile(_INT_RUN + r"\]")
_OPEN_INT_LIST_AT_END = re.compile(_INT_RUN + r"\n?\Z")


def has_closed_int_list(text: str) -> bool:
    """``re.search(r"\\[[\\d, ]*\\d[\\d, ]*\\]", text) is not None``: a bracketed run of digits,
    commas and spaces holding at least one digit."""
    return _CLOSED_INT_LIST.search(text) is not None


def has_open_int_list_at_end(text: str) -> bool:
    """``re.search(r"\\[[\\d, ]*\\d[\\d, ]*$", text) is not None``: such a run left open at the end
    of the text (``$`` also matches before one final ``\\n``)."""
    return _OPEN_INT_LIST_AT_END.search(text) is not None
