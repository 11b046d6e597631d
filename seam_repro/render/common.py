"""Pieces every SEAM template shares: the run-level document permutation and document numbering.

Port of upstream SEAM ``datasets_classes/base.py`` (``get_shuffled_documents``, ``get_sample``,
``get_sample2msg``) at seam-benchmark/SEAM@6ad83f4.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def shuffle_documents(documents: Sequence[str], max_num_docs: int, doc_order: Sequence[int]) -> list[str]:
    """Apply the run's permutation of document *slots* and drop empty slots.

    Upstream fills slots ``0..n-1`` of a ``max_num_docs`` list, indexes it with the permutation and
    keeps non-null entries. Two numpy side effects are reproduced on purpose:

    * ``len(documents) > max_num_docs``: the slice assignment grows the list, so documents past
      ``max_num_docs`` are silently dropped (this is how SciCo's off-by-one loses a document);
    * when no slot is empty, numpy builds a fixed-width unicode array, which strips trailing NUL
      characters from every document.
    """
    slots: list[str | None] = list(documents) + [None] * (max_num_docs - len(documents))
    picked = [slots[i] for i in doc_order]
    if len(documents) >= max_num_docs:
        return [d.rstrip("\x00") for d in picked]  # type: ignore[union-attr]
    return [d for d in picked if d is not None]


def number_documents(documents: Sequence[str], before: str = "", after: str = "") -> str:
    """``before`` + ``Document j: ```text``` `` lines joined by newlines (upstream numbering starts
    at 1) + ``after``; a document that is no str (a prompt file's demo) is formatted by the
    f-string as upstream's is."""
    return before + "\n".join([f"Document {j}: ```{doc}```" for j, doc in enumerate(documents, start=1)]) + after


def base_block(instructions: str, documents: Sequence[str], target: Any = "") -> str:
    """The base template of ECB, SciCo and MultiNews (``Dataset.get_sample``).

    ``target`` is formatted with ``str()`` as upstream's f-string does: demo targets that are JSON
    lists render as Python list reprs (``[[25], [75, 3]]``); the test instance passes ``""`` so the
    prompt ends with ``"*Answer*: "`` (trailing space).
    """
    return number_documents(documents, f"*Instructions*: {instructions}\n*The documents*:\n", f"\n*Answer*: {target}")

