"""Bidirectional-text controls (U+202A-U+202E, U+2066-U+2069, the LRM/RLM/ALM marks) in run text:
a model's output, a gold answer or a display name holding U+202E reorders what a reader sees after it.
Wherever the kit shows such text -- the terminal, report.md, the explorer (view.js does the same) --
each control is shown as a visible tag (``[U+202E]``) instead of acting."""

from __future__ import annotations

import re

BIDI_CONTROLS = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def show_bidi(text: str) -> str:
    """``text`` with every bidirectional control replaced by ``[U+XXXX]``."""
    return BIDI_CONTROLS.sub(lambda m: f"[U+{ord(m.group()):04X}]", text)
