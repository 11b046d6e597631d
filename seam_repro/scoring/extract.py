"""Response extraction: turn a model's raw text into the answer that gets scored.

Two extractors, one per protocol profile:

* ``extract_upstream`` — exact port of upstream SEAM
  ``evaluation_classes/eval_base_class.py::Eval.get_only_response``. Upstream applies it to the HF
  pipeline's ``generated_text``, which *includes the prompt*; ``upstream_generated_text`` rebuilds
  that string from the prompt record and the stored continuation so the port sees what upstream saw.
* ``extract_clean`` — for outputs that are only the continuation (chat-formatted generation, the
  ``seam-repro-1`` profile). Rules, in order:

  1. Undo decoding artefacts: drop chat end-of-turn markers that survived decoding
     (``<|eot_id|>``, ``</s>``, ``<end_of_turn>``, ...) and everything after the first one.
  2. Strip whitespace, then drop ONE leading answer marker the model echoed from the prompt
     (``*Answer*:``, ``Answer:``, ``So, the answer is:``, ``Aspect-based summary:``), and strip again.
  3. Cut a fabricated next example: the text is cut at the first line that starts a new prompt block
     (``*Instructions*:``, ``*Question*:``, ``*The documents*:``, ``The provided documents:``,
     ``Aspect label:``, ``Document 1:``, ``review_0:``, or a second ``*Answer*:`` /
     ``So, the answer is:`` line). Only line starts count, so a summary that quotes
     "Document 1" mid-sentence is kept.
  4. Strip again. An empty result stays empty (validity marks it as a format failure; nothing is
     substituted, unlike upstream's ``"No answer"``).
"""

from __future__ import annotations

import re

# Upstream markers, spelled exactly as in eval_base_class.py.
INST_END = "[/INST]"
FIC_MARKER = "So, the answer is:"
ASP_MARKER = "Aspect-based summary:"
ANSWER_MARKER = "*Answer*:"
FIC_EMPTY = "No answer"


def extract_upstream(generated_text: str) -> str:
    """Port of upstream ``get_only_response`` (applied to prompt + continuation, as upstream did).

    Rule order matters and is kept: ``[/INST]`` (first occurrence) wins over the FuseReviews marker
    (last occurrence; empty becomes ``"No answer"``), which wins over the OpenASP marker (last),
    else the text after the last ``*Answer*:``. Note the quirk kept on purpose: with no
    ``*Answer*:`` at all, ``rfind`` returns -1 and the first ``len("*Answer*:") - 1`` characters
    are dropped, exactly as upstream does.
    """
    pred = generated_text
    if INST_END in pred:
        return pred[pred.find(INST_END) + len(INST_END) :].strip()
    if FIC_MARKER in pred:
        pred = pred[pred.rfind(FIC_MARKER) + len(FIC_MARKER) :].strip()
        return FIC_EMPTY if pred == "" else pred
    if ASP_MARKER in pred:
        return pred[pred.rfind(ASP_MARKER) + len(ASP_MARKER) :].strip()
    return pred[pred.rfind(ANSWER_MARKER) + len(ANSWER_MARKER) :].strip()


def uses_inst_template(model_id: str) -> bool:
    """True for the model families whose decoded chat template keeps ``[INST] ... [/INST]`` as text
    (Mistral/Mixtral in SEAM's model list), so upstream's rule 1 fired for them."""
    return model_id.split("/")[0].lower() == "mistralai" or "mistral" in model_id.lower().split("/")[-1]


def upstream_generated_text(prompt: str, output: str, *, inst_template: bool = False) -> str:
    """Rebuild upstream's ``generated_text`` (decoded prompt + continuation).

    Only the answer markers in the prompt influence ``extract_upstream``; the chat-template header
    text (``"user\\n\\n"`` for Llama-3, ``"user\\n"`` for Gemma) contains none, so the user message
    stands in for the decoded template, wrapped in ``[INST] ... [/INST]`` for Mistral-style models.
    """
    if inst_template:
        return f"[INST] {prompt} [/INST]{output}"
    return prompt + output


MAX_OUTPUT_BEYOND_PROMPT = 65_536
"""Characters of a stored output scored beyond its prompt's length; the rest is cut before extraction, the
instance is marked ``valid_format`` false and its line says so (``details.output_capped``). Model
output is untrusted and every metric's work grows with it (10 MB took minutes). A generated answer is
at most ``max_new_tokens`` tokens (500 in SEAM: ~2,500 characters, and 65,536 even if every token were
128 characters), and an output that repeats its prompt (imports) is allowed the prompt's length on top,
so no real output is cut."""


def cap_output(output: str, prompt: str) -> tuple[str, dict[str, int] | None]:
    """``output`` cut to ``len(prompt) + MAX_OUTPUT_BEYOND_PROMPT`` characters, and the record of the
    cut (``None`` when nothing was cut)."""
    limit = len(prompt) + MAX_OUTPUT_BEYOND_PROMPT
    if len(output) <= limit:
        return output, None
    return output[:limit], {"chars": len(output), "scored_chars": limit}


_END_OF_TURN = ("<|eot_id|>", "<|end_of_text|>", "<end_of_turn>", "<eos>", "</s>", "<|im_end|>", "<|endoftext|>")
_LEADING_MARKERS = (ANSWER_MARKER, FIC_MARKER, ASP_MARKER, "Answer:", "**Answer**:", "**Answer:**")
_NEXT_EXAMPLE = re.compile(
    r"^[ \t]*(?:\*Instructions\*:|\*Question\*:|\*The documents\*:|The provided documents:|Aspect label:"
    r"|Document 1:|review_0:|\*Answer\*:|So, the answer is:)",
    re.MULTILINE,
)


def extract_clean(output: str) -> str:
    """Answer text of a continuation-only output (rules in the module docstring)."""
    cut = min((i for i in (output.find(m) for m in _END_OF_TURN) if i >= 0), default=len(output))
    text = output[:cut].strip()
    for marker in _LEADING_MARKERS:
        if text.startswith(marker):
            text = text[len(marker) :].lstrip()
            break
    match = _NEXT_EXAMPLE.search(text)
    return (text if match is None else text[: match.start()]).strip()


def extract(profile: str, *, prompt: str, output: str, model_id: str, upstream_prompt_text: str | None = None) -> str:
    """The profile's extraction: ``upstream`` ports SEAM; ``seam-repro-1`` uses ``extract_clean``.

    ``upstream_prompt_text``: the decoded text of a truncated prompt (recorded at generation on the
    upstream prompt path). Upstream's ``generated_text`` began with it, not with the full prompt, and
    right truncation cuts exactly the tail markers extraction looks for, so it is used when given."""
    if profile == "upstream":
        if upstream_prompt_text is not None:
            return extract_upstream(upstream_prompt_text + output)
        return extract_upstream(upstream_generated_text(prompt, output, inst_template=uses_inst_template(model_id)))
    return extract_clean(output)
