"""Output-format validity per task: does the extracted response have the form the prompt asked for?

Upstream SEAM records a "correct format" flag for QA (``type(pred) is dict`` in
``question_answering.py``) and coreference (at least one bracketed int list in ``coreference.py``)
and never reports it; the paper's analysis correlates it with scores. We record it for every task:

* ``qa``: a ``{...}`` span that parses (JSON or Python literal, never ``eval``) to a dict with an
  ``is_answerable`` key;
* ``coreference``: at least one list holding an integer, ``[1, 2]`` or a trailing unclosed one
  (stricter than upstream's ``\\[[\\d, ]+\\]``, which also accepts ``[ ]``);
* ``summarization`` / ``fic``: non-empty after stripping.
"""

from __future__ import annotations

from seam_repro.metrics.musique import parse_answer_dict
from seam_repro.metrics.scan import has_closed_int_list, has_open_int_list_at_end

TASKS: tuple[str, ...] = ("coreference", "summarization", "qa", "fic")


def is_valid(task: str, response: str) -> bool:
    """True when ``response`` (already extracted) has the task's expected output form."""
    if task == "qa":
        return parse_answer_dict(response) is not None
    if task == "coreference":
        return has_closed_int_list(response) or has_open_int_list_at_end(response)
    if task in ("summarization", "fic"):
        return response.strip() != ""
    raise ValueError(f"unknown task '{task}'; expected one of {', '.join(TASKS)}")
