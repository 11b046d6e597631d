"""Pieces every SEAM template shares: the run-level document permutation and document numbering.

Port of upstream SEAM ``datasets_classes/base.py`` (``get_shuffled_documents``, ``get_sample``,
``get_sample2msg``) at seam-benchmark/SEAM@6ad83f4.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

T = TypeVar("T")

IDENTITY_CACHE_LIMIT = 100_000
"""Entries an identity cache holds before it starts over (a bound on memory, never on results)."""


def by_identity(cache: dict[tuple[Any, ...], tuple[Any, Any]], obj: Any, build: Callable[[], T],
                *options: Any) -> T:
    """``build()`` once per process for the object ``obj`` itself (and ``options``), for values
    derived from records that cannot be hashed (an ``Instance`` holds a mapping) or whose hash
    would walk thousands of tokens on every run. The object is kept with its value, so its ``id``
    is never another object's while the entry lives."""
    key = (id(obj), *options)
    hit = cache.get(key)
    if hit is not None and hit[0] is obj:
        return hit[1]
    value = build()
    if len(cache) > IDENTITY_CACHE_LIMIT:
        cache.clear()
    cache[key] = (obj, value)
    return value


def shuffle_documents(documents: Sequence[str], max_num_docs: int, doc_order: Sequence[int]) -> list[str]:
    """Apply the run's permutation of document *slots* and drop empty slots.

    Upstream fills slots ``0..n-1`` of a ``max_num_docs`` list, indexes it with the permutation and
    keeps non-null entries. Two numpy side effects are reproduced on purpose:

    * ``len(documents) > max_num_docs``: the slice assignment grows the list, so documents past
      ``max_num_docs`` are silently dropped (this is how SciCo's off-by-one loses a document);
    * when no slot is empty, numpy builds a fixed-width unicode array, which strips trailing NUL
      characters from every document.
    """
    n = len(documents)
    if n >= max_num_docs:
        slots: list[str | None] = list(documents)
    else:
        slots = list(documents) + [None] * (max_num_docs - n)
    picked = [slots[i] for i in doc_order]
    if n >= max_num_docs:
        return [d.rstrip("\x00") for d in picked]  # type: ignore[union-attr]
    return [d for d in picked if d is not None]


@functools.cache
def _openings(n: int) -> tuple[str, ...]:
    """What precedes each of ``n`` documents' text in ``number_documents``: its numbered opening
    fence and, from the second on, the previous document's closing fence and a newline."""
    return tuple(f"```\nDocument {j}: ```"[4 if j == 1 else 0:] for j in range(1, n + 1))


def number_documents(documents: Sequence[str], before: str = "", after: str = "") -> str:
    """``before`` + ``Document j: ```text``` `` lines joined by newlines (upstream numbering starts
    at 1) + ``after``, as one join of the texts and the cached fences: one f-string a document,
    their join and the caller's f-string around it copied every ~4 KB block three times."""
    n = len(documents)
    if not n:
        return before + after
    pieces = [before] * (2 * n + 2)  # before, opening 1, document 1, ..., opening n, document n, closing
    pieces[1:2 * n:2] = _openings(n)
    pieces[2:2 * n + 1:2] = documents
    pieces[-1] = "```" + after
    try:
        return "".join(pieces)
    except TypeError:  # a document that is no str (a prompt file's demo, say): formatted as upstream's f-string does
        return before + "\n".join([f"Document {j}: ```{doc}```" for j, doc in enumerate(documents, start=1)]) + after


def base_block(instructions: str, documents: Sequence[str], target: Any = "") -> str:
    """The base template of ECB, SciCo and MultiNews (``Dataset.get_sample``).

    ``target`` is formatted with ``str()`` as upstream's f-string does: demo targets that are JSON
    lists render as Python list reprs (``[[25], [75, 3]]``); the test instance passes ``""`` so the
    prompt ends with ``"*Answer*: "`` (trailing space).
    """
    return number_documents(documents, f"*Instructions*: {instructions}\n*The documents*:\n", f"\n*Answer*: {target}")

